package compat

// Features together, as deployments run them: a three-broker cluster per
// inter-broker security setting, the authorizer on (the brokers super
// users, the client with ACLs of its own), and in each transactions,
// consumer groups, a share group and replication.

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

// interBrokerSetting is one way a cluster's brokers reach each other: the
// INTERNAL listener's protocol (inter.broker.listener.name) and how the
// brokers and the client authenticate on it.
type interBrokerSetting struct {
	name string
	// props are the brokers' properties for the INTERNAL listener (and,
	// for PLAINTEXT, a CLIENT one: there every connection is ANONYMOUS).
	props func(t *testing.T, ca *testcerts.CA) map[string]string
	// broker is the brokers' principal, a super user.
	broker string
	// client is the client's principal and how it connects to listener
	// (an index into a node's Addrs).
	client     string
	listener   int
	clientOpts func(t *testing.T, ca *testcerts.CA) []kgo.Opt
	// scram: the brokers' and the client's SCRAM credentials are created
	// (through the ADMIN listener) once the cluster is up.
	scram bool
}

const securedPlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";`

// securedTLSProps are a TLS listener's key, issued by ca for the brokers,
// and its trust in ca.
func securedTLSProps(t *testing.T, ca *testcerts.CA) map[string]string {
	leaf := ca.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	return map[string]string{
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.certificate.chain": leaf.CertPEM(),
		"ssl.keystore.key":               leaf.KeyPEM(t),
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.certificates":    ca.CertPEM(),
	}
}

func securedTLSOpt(ca *testcerts.CA, certs ...tls.Certificate) kgo.Opt {
	return kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12, Certificates: certs})
}

var interBrokerSettings = []interBrokerSetting{
	{
		name: "PLAINTEXT",
		props: func(*testing.T, *testcerts.CA) map[string]string {
			return map[string]string{
				"listeners":                                    "ADMIN://127.0.0.1:0,INTERNAL://127.0.0.1:0,CLIENT://127.0.0.1:0",
				"listener.security.protocol.map":               "ADMIN:PLAINTEXT,INTERNAL:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
				"listener.name.client.sasl.enabled.mechanisms": "PLAIN",
				"listener.name.client.plain.sasl.jaas.config":  securedPlainJAAS,
			}
		},
		broker: "User:ANONYMOUS", client: "User:alice", listener: 2,
		clientOpts: func(*testing.T, *testcerts.CA) []kgo.Opt {
			return []kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}
		},
	},
	{
		name: "SSL-mTLS",
		props: func(t *testing.T, ca *testcerts.CA) map[string]string {
			p := securedTLSProps(t, ca)
			p["listener.security.protocol.map"] = "ADMIN:PLAINTEXT,INTERNAL:SSL"
			p["listener.name.internal.ssl.client.auth"] = "required"
			return p
		},
		broker: "User:CN=broker", client: "User:CN=alice", listener: 1,
		clientOpts: func(t *testing.T, ca *testcerts.CA) []kgo.Opt {
			return []kgo.Opt{securedTLSOpt(ca, ca.Issue(t, pkix.Name{CommonName: "alice"}, nil).TLSCertificate())}
		},
	},
	{
		name: "SASL_PLAINTEXT-PLAIN",
		props: func(*testing.T, *testcerts.CA) map[string]string {
			return map[string]string{
				"listener.security.protocol.map":                 "ADMIN:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
				"sasl.mechanism.inter.broker.protocol":           "PLAIN",
				"listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
				"listener.name.internal.plain.sasl.jaas.config":  securedPlainJAAS,
			}
		},
		broker: "User:broker", client: "User:alice", listener: 1,
		clientOpts: func(*testing.T, *testcerts.CA) []kgo.Opt {
			return []kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}
		},
	},
	{
		name: "SASL_SSL-SCRAM",
		props: func(t *testing.T, ca *testcerts.CA) map[string]string {
			p := securedTLSProps(t, ca)
			p["listener.security.protocol.map"] = "ADMIN:PLAINTEXT,INTERNAL:SASL_SSL"
			p["sasl.mechanism.inter.broker.protocol"] = "SCRAM-SHA-512"
			p["listener.name.internal.sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
			p["listener.name.internal.scram-sha-512.sasl.jaas.config"] = `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`
			return p
		},
		broker: "User:broker", client: "User:alice", listener: 1, scram: true,
		clientOpts: func(_ *testing.T, ca *testcerts.CA) []kgo.Opt {
			return []kgo.Opt{securedTLSOpt(ca), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())}
		},
	},
	{
		name: "SASL_PLAINTEXT-OAUTHBEARER",
		props: func(*testing.T, *testcerts.CA) map[string]string {
			return map[string]string{
				"listener.security.protocol.map":                      "ADMIN:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
				"sasl.mechanism.inter.broker.protocol":                "OAUTHBEARER",
				"listener.name.internal.sasl.enabled.mechanisms":      "OAUTHBEARER",
				"listener.name.internal.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker" unsecuredLoginListClaim_scope=",kafka" unsecuredValidatorRequiredScope="kafka";`,
			}
		},
		broker: "User:broker", client: "User:alice", listener: 1,
		clientOpts: func(*testing.T, *testcerts.CA) []kgo.Opt {
			return []kgo.Opt{kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
				return oauth.Auth{Token: unsecuredToken("alice", "kafka")}, nil
			}))}
		},
	},
}

// unsecuredToken is an unsecured JWS (alg none) for sub with scope, valid
// for an hour, as Kafka's unsecured login module makes one.
func unsecuredToken(sub, scope string) string {
	now := time.Now()
	claims, _ := json.Marshal(map[string]any{"sub": sub, "scope": []string{scope}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(claims) + "."
}

// securedCluster is a running cluster of one setting.
type securedCluster struct {
	*testutil.Cluster
	set   interBrokerSetting
	ca    *testcerts.CA
	admin *kadm.Client // ANONYMOUS on the ADMIN listener: a super user
}

// startSecuredCluster starts three brokers whose INTERNAL listener is the
// setting's inter-broker listener, with the authorizer on.
func startSecuredCluster(t *testing.T, set interBrokerSetting) *securedCluster {
	t.Helper()
	ca := testcerts.NewCA(t, "samsa-test-ca")
	props := map[string]string{
		"listeners":                      "ADMIN://127.0.0.1:0,INTERNAL://127.0.0.1:0",
		"inter.broker.listener.name":     "INTERNAL",
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found": "false",
		// The ADMIN listener (User:ANONYMOUS) is the test's admin.
		"super.users":                                  "User:ANONYMOUS;" + set.broker,
		"offsets.topic.num.partitions":                 "6",
		"transaction.state.log.num.partitions":         "6",
		"share.coordinator.state.topic.num.partitions": "6",
		"group.share.heartbeat.interval.ms":            "500",
		"group.consumer.heartbeat.interval.ms":         "500",
	}
	maps.Copy(props, set.props(t, ca))
	c := &securedCluster{Cluster: testutil.StartCluster(t, 3, props), set: set, ca: ca}
	c.admin = kadm.NewClient(newClusterKgo(t, c.Cluster))
	ctx := testCtx(t, time.Minute)
	if set.scram {
		var us []kadm.UpsertSCRAM
		for _, u := range []string{"broker", "alice"} {
			us = append(us, kadm.UpsertSCRAM{User: u, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: u + "-secret"})
		}
		res, err := c.admin.AlterUserSCRAMs(ctx, nil, us)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("AlterUserSCRAMs: %v", err)
		}
	}
	// The client may use the topics, groups and transactional ids named
	// sec-*, and nothing else.
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow(set.client).Topics("sec-").Operations(kadm.OpRead, kadm.OpWrite, kadm.OpDescribe),
		kadm.NewACLs().Allow(set.client).Groups("sec-").Operations(kadm.OpRead),
		kadm.NewACLs().Allow(set.client).TransactionalIDs("sec-").Operations(kadm.OpWrite),
	} {
		b.ResourcePatternType(kadm.ACLPatternPrefixed)
		res, err := c.admin.CreateACLs(ctx, b)
		for _, r := range res {
			err = errors.Join(err, r.Err)
		}
		if err != nil {
			t.Fatalf("CreateACLs: %v", err)
		}
	}
	return c
}

// client is a kgo client of the setting's client principal, seeded with
// every broker's client listener.
func (c *securedCluster) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	var seeds []string
	for _, n := range c.Nodes {
		seeds = append(seeds, n.Addrs()[c.set.listener])
	}
	base := append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, c.set.clientOpts(t, c.ca)...)
	return newKgo(t, seeds[0], append(base, opts...)...)
}

// TestClusterSecuredInterBroker runs, for each inter-broker security
// setting, a three-broker cluster with the authorizer on, and in it
// transactions (committed and aborted, read by read_committed classic and
// KIP-848 consumer groups; each reaches CompleteCommit or CompleteAbort
// and the transactional id's next InitProducerId answers at once), a
// share group (share.auto.offset.reset earliest) and replication with
// full ISRs. Before the brokers dialled their WriteTxnMarkers and
// share-state connections through the inter-broker listener's security, a
// committed transaction stayed in PrepareCommit on every secured setting.
func TestClusterSecuredInterBroker(t *testing.T) {
	for _, set := range interBrokerSettings {
		t.Run(set.name, func(t *testing.T) {
			c := startSecuredCluster(t, set)
			runSecuredWorkload(t, c)
		})
	}
}

const (
	securedTxnTopic   = "sec-txn"
	securedShareTopic = "sec-share"
	securedTxnID      = "sec-txn-id"
	securedPerTxn     = 20
)

func runSecuredWorkload(t *testing.T, c *securedCluster) {
	ctx := testCtx(t, 3*time.Minute)
	for _, topic := range []string{securedTxnTopic, securedShareTopic} {
		createReplicatedTopic(t, c.Cluster, topic, 3, 3, map[string]*string{"min.insync.replicas": strp("2")})
	}

	// The client is refused what its ACLs do not allow.
	outsider := c.client(t, kgo.RequiredAcks(kgo.AllISRAcks()))
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	err := outsider.ProduceSync(pctx, &kgo.Record{Topic: "other", Value: []byte("x")}).FirstErr()
	cancel()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce to a topic without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Three transactions: committed, aborted, committed.
	committed, aborted := runSecuredTxns(t, c, ctx)

	// read_committed readers: a classic group and a KIP-848 one.
	for _, g := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"sec-classic", nil},
		{"sec-848", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer()}},
	} {
		cl := c.client(t, append([]kgo.Opt{kgo.ConsumerGroup(g.name), kgo.ConsumeTopics(securedTxnTopic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted())}, g.opts...)...)
		checkCommittedRead(t, ctx, g.name, cl, committed, aborted)
	}

	// A share group reads what was produced before it subscribed.
	securedShare(t, c, ctx)

	for _, topic := range []string{securedTxnTopic, securedShareTopic} {
		for p := range int32(3) {
			waitISR(t, c.Cluster, topic, p, 3, 30*time.Second)
		}
	}
}

// runSecuredTxns commits, aborts and commits a transaction of
// securedPerTxn records each, waits for each to complete (DescribeTransactions:
// CompleteCommit, CompleteAbort) and then asks for the transactional id's
// producer id again, which must be answered at once. It returns the values
// committed and aborted.
func runSecuredTxns(t *testing.T, c *securedCluster, ctx context.Context) (committed, aborted map[string]bool) {
	t.Helper()
	committed, aborted = map[string]bool{}, map[string]bool{}
	cl := c.client(t, kgo.TransactionalID(securedTxnID), kgo.TransactionTimeout(time.Minute),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i, commit := range []bool{true, false, true} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for j := range securedPerTxn {
			v := fmt.Sprintf("t%d-%d", i, j)
			recs = append(recs, &kgo.Record{Topic: securedTxnTopic, Value: []byte(v)})
			if commit {
				committed[v] = true
			} else {
				aborted[v] = true
			}
		}
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := cl.ProduceSync(tctx, recs...).FirstErr(); err != nil {
			t.Fatalf("transaction %d: produce: %v", i, err)
		}
		if err := cl.EndTransaction(tctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("transaction %d: end (commit %v): %v", i, commit, err)
		}
		cancel()
		want := "CompleteAbort"
		if commit {
			want = "CompleteCommit"
		}
		// The markers are written by the coordinator to the partition
		// leaders, over the inter-broker listener.
		testutil.Eventually(t, 20*time.Second, func() error {
			d, err := c.admin.DescribeTransactions(ctx, securedTxnID)
			if err != nil {
				return err
			}
			if st := d[securedTxnID].State; st != want {
				return fmt.Errorf("transaction %d: state %s, want %s", i, st, want)
			}
			return nil
		})
	}
	// A producer starting over with the same transactional id is answered
	// at once: nothing is left pending.
	start := time.Now()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(securedTxnID), 60000
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ictx, c.client(t))
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("InitProducerId on %s after the transactions: %v (after %v)", securedTxnID, err, time.Since(start))
	}
	return committed, aborted
}

// checkCommittedRead polls cl until it read every committed value, and
// fails on an aborted one or one read twice.
func checkCommittedRead(t *testing.T, ctx context.Context, who string, cl *kgo.Client, committed, aborted map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for len(seen) < len(committed) && rctx.Err() == nil {
		fs := cl.PollFetches(rctx)
		fs.EachError(func(topic string, p int32, err error) {
			if rctx.Err() == nil {
				t.Errorf("%s: fetch %s-%d: %v", who, topic, p, err)
			}
		})
		for _, r := range fs.Records() {
			v := string(r.Value)
			if aborted[v] {
				t.Errorf("%s: read %s of an aborted transaction", who, v)
			}
			if seen[v] {
				t.Errorf("%s: read %s twice", who, v)
			}
			seen[v] = true
		}
	}
	if len(seen) < len(committed) {
		t.Errorf("%s: read %d of %d committed records", who, len(seen), len(committed))
	}
}

// securedShare produces to a topic, sets the share group's
// share.auto.offset.reset to earliest, and reads every record through the
// share group (kgo's share consumer); the share-partitions' state lives in
// __share_group_state, whose leaders the share-partitions' leaders reach
// over the inter-broker listener.
func securedShare(t *testing.T, c *securedCluster, ctx context.Context) {
	t.Helper()
	const group = "sec-share-g"
	p := c.client(t, kgo.RequiredAcks(kgo.AllISRAcks()))
	want := map[string]bool{}
	var recs []*kgo.Record
	for i := range 60 {
		v := fmt.Sprint("s", i)
		want[v] = true
		recs = append(recs, &kgo.Record{Topic: securedShareTopic, Value: []byte(v)})
	}
	produceAll(t, p, recs...)
	setGroupConfig(t, newClusterKgo(t, c.Cluster), group, "share.auto.offset.reset", "earliest")
	sc := c.client(t, kgo.ShareGroup(group), kgo.ConsumeTopics(securedShareTopic))
	seen := map[string]bool{}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for len(seen) < len(want) && rctx.Err() == nil {
		fs := sc.PollFetches(rctx)
		fs.EachError(func(topic string, p int32, err error) {
			if rctx.Err() == nil {
				t.Logf("share fetch %s-%d: %v", topic, p, err)
			}
		})
		for _, r := range fs.Records() {
			seen[string(r.Value)] = true
		}
	}
	if len(seen) < len(want) {
		t.Errorf("the share group read %d of %d records", len(seen), len(want))
	}
}
