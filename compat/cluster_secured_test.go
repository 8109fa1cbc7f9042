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
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
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
	// configure returns the brokers' properties for the INTERNAL listener
	// (and, for PLAINTEXT, a CLIENT one: there every connection is
	// ANONYMOUS) and the client's options to connect to listener.
	configure func(t *testing.T, ca *testcerts.CA) (map[string]string, []kgo.Opt)
	// broker is the brokers' principal, a super user.
	broker string
	// client is the client's principal; it connects to listener (an
	// index into a node's Addrs).
	client   string
	listener int
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
		configure: func(*testing.T, *testcerts.CA) (map[string]string, []kgo.Opt) {
			return map[string]string{
				"listeners":                                    "ADMIN://127.0.0.1:0,INTERNAL://127.0.0.1:0,CLIENT://127.0.0.1:0",
				"listener.security.protocol.map":               "ADMIN:PLAINTEXT,INTERNAL:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
				"listener.name.client.sasl.enabled.mechanisms": "PLAIN",
				"listener.name.client.plain.sasl.jaas.config":  securedPlainJAAS,
			}, []kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}
		},
		broker: "User:ANONYMOUS", client: "User:alice", listener: 2,
	},
	{
		name: "SSL-mTLS",
		configure: func(t *testing.T, ca *testcerts.CA) (map[string]string, []kgo.Opt) {
			p := securedTLSProps(t, ca)
			p["listener.security.protocol.map"] = "ADMIN:PLAINTEXT,INTERNAL:SSL"
			p["listener.name.internal.ssl.client.auth"] = "required"
			return p, []kgo.Opt{securedTLSOpt(ca, ca.Issue(t, pkix.Name{CommonName: "alice"}, nil).TLSCertificate())}
		},
		broker: "User:CN=broker", client: "User:CN=alice", listener: 1,
	},
	{
		name: "SASL_PLAINTEXT-PLAIN",
		configure: func(*testing.T, *testcerts.CA) (map[string]string, []kgo.Opt) {
			return map[string]string{
				"listener.security.protocol.map":                 "ADMIN:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
				"sasl.mechanism.inter.broker.protocol":           "PLAIN",
				"listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
				"listener.name.internal.plain.sasl.jaas.config":  securedPlainJAAS,
				// Sessions end: the brokers' connections authenticate
				// again (KIP-368) as the clients' do.
				"listener.name.internal.connections.max.reauth.ms": "5000",
			}, []kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}
		},
		broker: "User:broker", client: "User:alice", listener: 1,
	},
	{
		name: "SASL_SSL-SCRAM",
		configure: func(t *testing.T, ca *testcerts.CA) (map[string]string, []kgo.Opt) {
			p := securedTLSProps(t, ca)
			p["listener.security.protocol.map"] = "ADMIN:PLAINTEXT,INTERNAL:SASL_SSL"
			p["sasl.mechanism.inter.broker.protocol"] = "SCRAM-SHA-512"
			p["listener.name.internal.sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
			p["listener.name.internal.scram-sha-512.sasl.jaas.config"] = `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`
			return p, []kgo.Opt{securedTLSOpt(ca), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())}
		},
		broker: "User:broker", client: "User:alice", listener: 1, scram: true,
	},
	{
		// Kafka's unsecured login and validator; the brokers' tokens
		// live 8 s, so their sessions end and they log in again.
		name: "SASL_PLAINTEXT-OAUTHBEARER",
		configure: func(*testing.T, *testcerts.CA) (map[string]string, []kgo.Opt) {
			return map[string]string{
					"listener.security.protocol.map":                      "ADMIN:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
					"sasl.mechanism.inter.broker.protocol":                "OAUTHBEARER",
					"listener.name.internal.sasl.enabled.mechanisms":      "OAUTHBEARER",
					"listener.name.internal.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker" unsecuredLoginListClaim_scope=",kafka" unsecuredLoginLifetimeSeconds="8" unsecuredValidatorRequiredScope="kafka";`,
				}, []kgo.Opt{kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
					return oauth.Auth{Token: unsecuredToken("alice", "kafka")}, nil
				}))}
		},
		broker: "User:broker", client: "User:alice", listener: 1,
	},
	{
		// Signed JWTs (RS256, a JWKS file) validated with Kafka's
		// OAuthBearerValidatorCallbackHandler; the brokers log in with
		// OAuthBearerLoginCallbackHandler, asking a token endpoint with
		// the client-credentials grant.
		name:      "SASL_SSL-OAUTHBEARER-OIDC",
		configure: oidcSetting,
		broker:    "User:broker", client: "User:alice", listener: 1,
	},
}

// oidcSetting is the OIDC setting's brokers and client: an RS256 key
// published as a JWKS file, a token endpoint (httptest) that gives the
// brokers' client id a token for User:broker, and alice's own token.
func oidcSetting(t *testing.T, ca *testcerts.CA) (map[string]string, []kgo.Opt) {
	signer := newRSASigner(t, "oidc-1")
	jwks := testcerts.WriteFile(t, t.TempDir(), "jwks.json", jwksOf(t, signer))
	token := func(sub string) string {
		now := time.Now()
		return signer.sign(t, map[string]any{"sub": sub, "aud": "samsa", "iss": "https://issuer.test",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	}
	brokerToken, aliceToken := token("broker"), token("alice")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if err := r.ParseForm(); err != nil || !ok || id != "broker" || secret != "broker-secret" || r.Form.Get("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, brokerToken)
	}))
	t.Cleanup(srv.Close)
	p := securedTLSProps(t, ca)
	for k, v := range map[string]string{
		"listener.security.protocol.map":                                         "ADMIN:PLAINTEXT,INTERNAL:SASL_SSL",
		"sasl.mechanism.inter.broker.protocol":                                   "OAUTHBEARER",
		"listener.name.internal.sasl.enabled.mechanisms":                         "OAUTHBEARER",
		"listener.name.internal.oauthbearer.sasl.jaas.config":                    `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="broker" clientSecret="broker-secret";`,
		"listener.name.internal.oauthbearer.sasl.server.callback.handler.class":  "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"listener.name.internal.oauthbearer.sasl.login.callback.handler.class":   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
		"listener.name.internal.oauthbearer.sasl.oauthbearer.jwks.endpoint.url":  "file://" + jwks,
		"listener.name.internal.oauthbearer.sasl.oauthbearer.token.endpoint.url": srv.URL,
		"org.apache.kafka.sasl.oauthbearer.allowed.urls":                         "file://" + jwks + "," + srv.URL,
		"sasl.oauthbearer.expected.audience":                                     "samsa",
		"sasl.oauthbearer.expected.issuer":                                       "https://issuer.test",
	} {
		p[k] = v
	}
	return p, []kgo.Opt{securedTLSOpt(ca), kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		return oauth.Auth{Token: aliceToken}, nil
	}))}
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
	opts  []kgo.Opt    // the client's security options
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
	brokerProps, clientOpts := set.configure(t, ca)
	maps.Copy(props, brokerProps)
	c := &securedCluster{Cluster: testutil.StartCluster(t, 3, props), set: set, opts: clientOpts}
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
	base := append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, c.opts...)
	return newKgo(t, seeds[0], append(base, opts...)...)
}

// TestClusterSecuredInterBroker is the combination run: for each
// inter-broker security setting, a three-broker cluster with the
// authorizer on and, together and beside a CPU hog,
//   - transactions, committed and aborted, one of them in flight while its
//     coordinator restarts: each reaches CompleteCommit or CompleteAbort,
//     and the transactional id's next InitProducerId answers at once;
//   - read_committed readers of them: a classic consumer group, a KIP-848
//     one and a share group (share.isolation.level=read_committed,
//     share.auto.offset.reset=earliest, set before it subscribed): every
//     committed record read, no aborted one ever;
//   - acks=all produce while that broker restarts: no acknowledged record
//     lost, and every ISR full again afterwards.
//
// Before the brokers dialled their WriteTxnMarkers, KIP-890 verification
// and share-state connections through the inter-broker listener's
// security, the transactions of every secured setting never completed.
func TestClusterSecuredInterBroker(t *testing.T) {
	for _, set := range interBrokerSettings {
		t.Run(set.name, func(t *testing.T) {
			c := startSecuredCluster(t, set)
			runSecuredWorkload(t, c)
		})
	}
}

const (
	securedTxnTopic  = "sec-txn"
	securedAcksTopic = "sec-acks"
	securedTxnID     = "sec-txn-id"
	securedShareG    = "sec-share"
	securedPerTxn    = 20
)

func runSecuredWorkload(t *testing.T, c *securedCluster) {
	ctx := testCtx(t, 4*time.Minute)
	for _, topic := range []string{securedTxnTopic, securedAcksTopic} {
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
	c.waitACLs(t, ctx)
	admin := newClusterKgo(t, c.Cluster)
	setGroupConfig(t, admin, securedShareG, "share.auto.offset.reset", "earliest")
	setGroupConfig(t, admin, securedShareG, "share.isolation.level", "read_committed")

	startCPUHog(t)
	acks := startAcksProducer(t, ctx, c)

	txn := c.client(t, kgo.TransactionalID(securedTxnID), kgo.TransactionTimeout(time.Minute),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	committed, aborted := map[string]bool{}, map[string]bool{}
	var readers []*securedReader
	for round, commit := range []bool{true, false, true, false, true} {
		if round == 1 {
			// The readers subscribe once a transaction was committed:
			// from the earliest offset, the share group by its config.
			readers = []*securedReader{
				startSecuredReader(t, ctx, "classic group", c.client(t, kgo.ConsumerGroup("sec-classic"), kgo.ConsumeTopics(securedTxnTopic),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))),
				startSecuredReader(t, ctx, "KIP-848 group", c.client(t, kgo.ConsumerGroup("sec-848"), kgo.ConsumeTopics(securedTxnTopic),
					kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer(),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))),
				startSecuredReader(t, ctx, "share group", c.client(t, kgo.ShareGroup(securedShareG), kgo.ConsumeTopics(securedTxnTopic))),
			}
		}
		// The third transaction is in flight while its coordinator
		// restarts, and so is the acks=all producer.
		var restart func()
		if round == 2 {
			acks.waitAcked(t, 30)
			restart = func() { c.restartTxnCoordinator(t, ctx) }
		}
		runSecuredTxn(t, ctx, c, txn, round, commit, restart, committed, aborted)
	}
	acks.waitAcked(t, acks.count()+30) // acknowledged after the restart too
	acks.stop()

	for _, r := range readers {
		r.waitCommitted(t, committed)
	}
	for _, r := range readers {
		r.stop()
		r.checkNoAborted(t, aborted)
	}
	checkInitProducerIDPrompt(t, ctx, c)
	for p := range int32(3) {
		checkAcked(t, c.Cluster, securedAcksTopic, p, acks.acked(p))
	}
	for _, topic := range []string{securedTxnTopic, securedAcksTopic} {
		for p := range int32(3) {
			waitISR(t, c.Cluster, topic, p, 3, 30*time.Second)
		}
	}
}

// waitACLs waits until every broker's authorizer has the client's ACLs
// (each learns them from etcd a moment after CreateAcls): the client may
// describe its topic, its group and its transactional id.
func (c *securedCluster) waitACLs(t *testing.T, ctx context.Context) {
	t.Helper()
	cl := c.client(t)
	for _, n := range c.Nodes {
		id := n.NodeID()
		testutil.Eventually(t, 30*time.Second, func() error {
			md := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(securedTxnTopic)
			md.Topics = append(md.Topics, mt)
			mresp, err := md.RequestWith(ctx, cl.Broker(int(id)))
			if err != nil {
				return err
			}
			for _, tp := range mresp.Topics {
				if err := kerr.ErrorForCode(tp.ErrorCode); err != nil {
					return fmt.Errorf("broker %d: metadata of %s: %w", id, securedTxnTopic, err)
				}
			}
			dg := kmsg.NewPtrDescribeGroupsRequest()
			dg.Groups = []string{"sec-classic"}
			gresp, err := dg.RequestWith(ctx, cl.Broker(int(id)))
			if err != nil {
				return err
			}
			for _, g := range gresp.Groups {
				if g.ErrorCode == kerr.GroupAuthorizationFailed.Code {
					return fmt.Errorf("broker %d: DescribeGroups: %w", id, kerr.GroupAuthorizationFailed)
				}
			}
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{securedTxnID}
			fresp, err := fc.RequestWith(ctx, cl.Broker(int(id)))
			if err != nil {
				return err
			}
			for _, co := range fresp.Coordinators {
				if co.ErrorCode == kerr.TransactionalIDAuthorizationFailed.Code {
					return fmt.Errorf("broker %d: FindCoordinator: %w", id, kerr.TransactionalIDAuthorizationFailed)
				}
			}
			return nil
		})
	}
}

// startCPUHog burns one core (of GOMAXPROCS, at least one) until the test
// ends: the brokers' timers and heartbeats run late, as on a loaded CI
// machine.
func startCPUHog(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)/2) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 1 << 20 {
					x += i
				}
			}
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// restartTxnCoordinator restarts the broker coordinating securedTxnID.
func (c *securedCluster) restartTxnCoordinator(t *testing.T, ctx context.Context) {
	t.Helper()
	var coord int32 = -1
	testutil.Eventually(t, 30*time.Second, func() error {
		r := c.admin.FindTxnCoordinators(ctx, securedTxnID)[securedTxnID]
		coord = r.NodeID
		return r.Err
	})
	t.Logf("restarting broker %d, the transaction's coordinator", coord)
	c.Node(coord).Restart()
}

// runSecuredTxn runs one transaction of securedPerTxn records, calling
// restart (when not nil) between its two halves, ends it and waits until
// DescribeTransactions shows it complete.
func runSecuredTxn(t *testing.T, ctx context.Context, c *securedCluster, cl *kgo.Client, round int, commit bool, restart func(), committed, aborted map[string]bool) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for j := range securedPerTxn {
		v := fmt.Sprintf("t%d-%d", round, j)
		recs = append(recs, &kgo.Record{Topic: securedTxnTopic, Value: []byte(v)})
		if commit {
			committed[v] = true
		} else {
			aborted[v] = true
		}
	}
	if err := cl.ProduceSync(tctx, recs[:securedPerTxn/2]...).FirstErr(); err != nil {
		t.Fatalf("transaction %d: produce: %v", round, err)
	}
	if restart != nil {
		restart()
	}
	if err := cl.ProduceSync(tctx, recs[securedPerTxn/2:]...).FirstErr(); err != nil {
		t.Fatalf("transaction %d: produce: %v", round, err)
	}
	if err := cl.EndTransaction(tctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("transaction %d: end (commit %v): %v", round, commit, err)
	}
	want := "CompleteAbort"
	if commit {
		want = "CompleteCommit"
	}
	// The coordinator writes the markers to the partition leaders over
	// the inter-broker listener.
	testutil.Eventually(t, 30*time.Second, func() error {
		d, err := c.admin.DescribeTransactions(tctx, securedTxnID)
		if err != nil {
			return err
		}
		if st := d[securedTxnID].State; st != want {
			return fmt.Errorf("transaction %d: state %s, want %s", round, st, want)
		}
		return nil
	})
}

// checkInitProducerIDPrompt: a producer starting over with the
// transactional id is answered at once, nothing being left pending.
func checkInitProducerIDPrompt(t *testing.T, ctx context.Context, c *securedCluster) {
	t.Helper()
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
}

// securedReader polls a consumer (of a group or a share group) in the
// background and counts what it reads. Groups may read a record again
// after a rebalance and share groups after a member's session ends, so
// only what was read matters, not how often.
type securedReader struct {
	who string
	stopper
	mu   sync.Mutex
	seen map[string]bool // guarded by mu
}

// stopper ends a background loop and waits for it.
type stopper struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (s *stopper) stop() {
	s.cancel()
	s.wg.Wait()
}

func startSecuredReader(t *testing.T, ctx context.Context, who string, cl *kgo.Client) *securedReader {
	r := &securedReader{who: who, seen: map[string]bool{}}
	rctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for rctx.Err() == nil {
			fs := cl.PollFetches(rctx)
			fs.EachError(func(topic string, p int32, err error) {
				if rctx.Err() == nil {
					t.Logf("%s: fetch %s-%d: %v (retried)", who, topic, p, err)
				}
			})
			r.mu.Lock()
			for _, rec := range fs.Records() {
				r.seen[string(rec.Value)] = true
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *securedReader) waitCommitted(t *testing.T, committed map[string]bool) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		var missing []string
		for v := range committed {
			if !r.seen[v] {
				missing = append(missing, v)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return fmt.Errorf("%s: %d of %d committed records not read (%v)", r.who, len(missing), len(committed), missing[:min(5, len(missing))])
		}
		return nil
	})
}

func (r *securedReader) checkNoAborted(t *testing.T, aborted map[string]bool) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for v := range aborted {
		if r.seen[v] {
			n++
		}
	}
	if n > 0 {
		t.Errorf("%s: read %d records of aborted transactions", r.who, n)
	}
}

// acksProducer produces with acks=all, one record to each partition at a
// time, and keeps what was acknowledged.
type acksProducer struct {
	stopper
	mu      sync.Mutex
	byPart  [3][]ackedRecord // guarded by mu
	total   int              // guarded by mu
	advance chan struct{}    // closed and replaced at each acknowledgement
}

func startAcksProducer(t *testing.T, ctx context.Context, c *securedCluster) *acksProducer {
	a := &acksProducer{advance: make(chan struct{})}
	cl := c.client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	pctx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for i := 0; pctx.Err() == nil; i++ {
			var recs []*kgo.Record
			for p := range int32(3) {
				recs = append(recs, &kgo.Record{Topic: securedAcksTopic, Partition: p, Value: []byte(fmt.Sprintf("a%d-%d", i, p))})
			}
			res := cl.ProduceSync(pctx, recs...)
			a.mu.Lock()
			for _, r := range res {
				if r.Err == nil {
					a.byPart[r.Record.Partition] = append(a.byPart[r.Record.Partition], ackedRecord{offset: r.Record.Offset, value: string(r.Record.Value)})
					a.total++
				}
			}
			close(a.advance)
			a.advance = make(chan struct{})
			a.mu.Unlock()
		}
	}()
	t.Cleanup(a.stop)
	return a
}

func (a *acksProducer) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.total
}

func (a *acksProducer) acked(p int32) []ackedRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.byPart[p])
}

// waitAcked waits until n records were acknowledged.
func (a *acksProducer) waitAcked(t *testing.T, n int) {
	t.Helper()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for {
		a.mu.Lock()
		total, advance := a.total, a.advance
		a.mu.Unlock()
		if total >= n {
			return
		}
		select {
		case <-advance:
		case <-deadline.C:
			t.Fatalf("acks=all producer: %d of %d records acknowledged after 60s", total, n)
		}
	}
}
