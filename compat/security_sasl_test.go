package compat

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// saslBroker starts a broker with a PLAINTEXT listener (inter-broker, for
// the admin client that sets up SCRAM credentials), a SASL_PLAINTEXT
// listener serving PLAIN and SCRAM, and a SASL_SSL one serving SCRAM-SHA-512.
// It returns the broker and the CA of the SASL_SSL listener.
func saslBroker(t *testing.T) (*testutil.Node, *testcerts.CA) {
	t.Helper()
	ca := testcerts.NewCA(t, "samsa-test-ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	n := testutil.StartBroker(t, map[string]string{
		"listeners":                                           "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"inter.broker.listener.name":                          "PLAINTEXT",
		"auto.create.topics.enable":                           "true",
		"sasl.enabled.mechanisms":                             "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
		"listener.name.sasl_ssl.sasl.enabled.mechanisms":      "SCRAM-SHA-512",
		"ssl.keystore.type":                                   "PEM",
		"ssl.keystore.certificate.chain":                      leaf.CertPEM(),
		"ssl.keystore.key":                                    leaf.KeyPEM(t),
	})
	return n, ca
}

// franz-go authenticates with PLAIN (users from the JAAS config) and with
// SCRAM-SHA-256 and -512 (credentials set with kadm's
// AlterUserSCRAMs, read back with DescribeUserSCRAMs), over
// SASL_PLAINTEXT and SASL_SSL; a wrong password, an unknown user and a
// mechanism the listener does not enable fail with Kafka's errors.
func TestFranzSASL(t *testing.T) {
	n, ca := saslBroker(t)
	addrs := n.Addrs()
	ctx := testCtx(t, 60*time.Second)
	adm := newAdmin(t, addrs[0])
	// A user is altered once per request, as Kafka 4 requires: two
	// mechanisms in one are DUPLICATE_RESOURCE and change nothing.
	both := func() []kadm.UpsertSCRAM { // kadm fills in the salt of what it is given
		return []kadm.UpsertSCRAM{
			{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
			{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret-512"},
		}
	}
	if res, err := adm.AlterUserSCRAMs(ctx, nil, both()); err != nil || !errors.Is(res["bob"].Err, kerr.DuplicateResource) {
		t.Errorf("two mechanisms of bob in one request: %v %+v, want DUPLICATE_RESOURCE", err, res)
	}
	if d, _ := adm.DescribeUserSCRAMs(ctx, "bob"); d["bob"].Err == nil {
		t.Errorf("bob has credentials after a refused request: %+v", d["bob"])
	}
	for _, up := range both() {
		if res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{up}); err != nil || res["bob"].Err != nil {
			t.Fatalf("%v: %v %+v", up.Mechanism, err, res)
		}
	}
	described, err := adm.DescribeUserSCRAMs(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["bob"]; d.Err != nil || len(d.CredInfos) != 2 {
		t.Fatalf("DescribeUserSCRAMs: %+v", d)
	}

	tlsOpt := kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	good := []struct {
		name string
		addr string
		opts []kgo.Opt
	}{
		{"PLAIN", addrs[1], []kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}},
		{"SCRAM-SHA-256", addrs[1], []kgo.Opt{kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism())}},
		{"SCRAM-SHA-512 over SASL_SSL", addrs[2], []kgo.Opt{tlsOpt, kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret-512"}.AsSha512Mechanism())}},
	}
	for i, g := range good {
		topic := fmt.Sprintf("sasl-%d", i)
		cl := newKgo(t, g.addr, append(g.opts, kgo.AllowAutoTopicCreation())...)
		produceAll(t, cl, &kgo.Record{Topic: topic, Value: []byte(g.name)})
		got := consumeExact(t, g.addr, topic, map[int32]int64{0: 0}, 1, 20*time.Second, g.opts...)
		if string(got[0].Value) != g.name {
			t.Errorf("%s: consumed %q", g.name, got[0].Value)
		}
	}

	bad := []struct {
		name string
		addr string
		opts []kgo.Opt
		want *kerr.Error
	}{
		{"PLAIN wrong password", addrs[1], []kgo.Opt{kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism())}, kerr.SaslAuthenticationFailed},
		{"PLAIN unknown user", addrs[1], []kgo.Opt{kgo.SASL(plain.Auth{User: "carol", Pass: "x"}.AsMechanism())}, kerr.SaslAuthenticationFailed},
		{"SCRAM wrong password", addrs[1], []kgo.Opt{kgo.SASL(scram.Auth{User: "bob", Pass: "nope"}.AsSha256Mechanism())}, kerr.SaslAuthenticationFailed},
		{"SCRAM unknown user", addrs[1], []kgo.Opt{kgo.SASL(scram.Auth{User: "carol", Pass: "x"}.AsSha512Mechanism())}, kerr.SaslAuthenticationFailed},
		{"PLAIN not enabled on SASL_SSL", addrs[2], []kgo.Opt{tlsOpt, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}, kerr.UnsupportedSaslMechanism},
	}
	for _, b := range bad {
		cl := newKgo(t, b.addr, append(b.opts, kgo.RetryTimeout(time.Second))...)
		err := cl.Ping(testCtx(t, 10*time.Second))
		if !errors.Is(err, b.want) {
			t.Errorf("%s: Ping = %v, want %v", b.name, err, b.want)
		}
	}

	// Deleting a credential ends its use; deleting it again is
	// RESOURCE_NOT_FOUND.
	del := []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha256}}
	if res, err := adm.AlterUserSCRAMs(ctx, del, nil); err != nil || res["bob"].Err != nil {
		t.Fatalf("delete: %v %+v", err, res)
	}
	if res, _ := adm.AlterUserSCRAMs(ctx, del, nil); !errors.Is(res["bob"].Err, kerr.ResourceNotFound) {
		t.Errorf("second delete: %+v", res["bob"])
	}
	cl := newKgo(t, addrs[1], kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism()), kgo.RetryTimeout(time.Second))
	if err := cl.Ping(testCtx(t, 10*time.Second)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("after deleting the credential: %v", err)
	}
	// kadm refuses too few iterations itself: ask by hand.
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "dave", 1, 100, []byte("salt"), bytes.Repeat([]byte{1}, 32)
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	alter.Upsertions = append(alter.Upsertions, up)
	resp, err := alter.RequestWith(ctx, newKgo(t, addrs[0]))
	if err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.UnacceptableCredential.Code {
		t.Errorf("100 iterations: %v %+v", err, resp)
	}
}

// rawConn is a connection speaking the Kafka protocol by hand.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	corr int32
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t: t, c: c}
}

func (r *rawConn) send(req kmsg.Request) {
	r.t.Helper()
	r.corr++
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
	if _, err := r.c.Write(f.AppendRequest(nil, req, r.corr)); err != nil {
		r.t.Fatal(err)
	}
}

// frame reads one size-prefixed frame; io.EOF once the broker closed.
func (r *rawConn) frame() ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r.c, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(r.c, b)
	return b, err
}

// roundTrip sends req and decodes its response (a flexible response
// header's tags are taken to be none, as samsa sends them).
func (r *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	r.send(req)
	b, err := r.frame()
	if err != nil {
		r.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := b[4:]
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) && len(body) > 0 {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		r.t.Fatal(err)
	}
	return resp
}

// closed checks that the broker closed the connection.
func (r *rawConn) closed(what string) {
	r.t.Helper()
	if b, err := r.frame(); err == nil || !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isReset(err) {
		r.t.Errorf("%s: connection not closed (read %x, %v)", what, b, err)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// What an unauthenticated peer may do on a SASL listener, and Kafka's
// answer to what it may not: only ApiVersions and the SASL requests; a
// mechanism not enabled is UNSUPPORTED_SASL_MECHANISM, a SaslAuthenticate
// before the handshake ILLEGAL_SASL_STATE, another request or a frame over
// sasl.server.max.receive.size a closed connection. SaslHandshake v0
// with raw tokens (the framing before KIP-152) authenticates.
func TestSASLStateMachine(t *testing.T) {
	n, _ := saslBroker(t)
	addr := n.Addrs()[1]
	handshake := func(v int16, mech string) *kmsg.SASLHandshakeRequest {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = v, mech
		return req
	}

	c := dialRaw(t, addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	c.send(av)
	if _, err := c.frame(); err != nil {
		t.Fatalf("ApiVersions before authentication: %v", err)
	}
	hs := c.roundTrip(handshake(1, "GSSAPI")).(*kmsg.SASLHandshakeResponse)
	if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(hs.SupportedMechanisms) != 3 {
		t.Errorf("GSSAPI: %+v", hs)
	}
	c.closed("mechanism not enabled")

	c = dialRaw(t, addr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 1, []byte("\x00alice\x00alice-secret")
	if resp := c.roundTrip(auth).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("SaslAuthenticate before SaslHandshake: %+v", resp)
	}
	c.closed("token before the handshake")

	c = dialRaw(t, addr)
	c.send(kmsg.NewPtrMetadataRequest())
	c.closed("Metadata before authentication")

	c = dialRaw(t, addr)
	big := binary.BigEndian.AppendUint32(nil, 512<<10+1)
	c.c.Write(append(big, bytes.Repeat([]byte{0}, 1024)...))
	c.closed("a pre-authentication frame over sasl.server.max.receive.size")

	// v0: the PLAIN token goes raw, and so does the (empty) answer.
	c = dialRaw(t, addr)
	if hs := c.roundTrip(handshake(0, "PLAIN")).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
		t.Fatalf("SaslHandshake v0: %+v", hs)
	}
	tok := []byte("\x00alice\x00alice-secret")
	c.c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...))
	if b, err := c.frame(); err != nil || len(b) != 0 {
		t.Fatalf("raw PLAIN token: %x, %v", b, err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 4
	if resp := c.roundTrip(md).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
		t.Errorf("Metadata after raw authentication: %+v", resp)
	}
	// After authentication SaslHandshake is ILLEGAL_SASL_STATE.
	if hs := c.roundTrip(handshake(1, "PLAIN")).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != kerr.IllegalSaslState.Code {
		t.Errorf("SaslHandshake after authentication: %+v", hs)
	}

	// A wrong raw token closes the connection with no answer.
	c = dialRaw(t, addr)
	c.roundTrip(handshake(0, "PLAIN"))
	tok = []byte("\x00alice\x00wrong")
	c.c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...))
	c.closed("a wrong raw token")
}

// Three brokers whose inter-broker listener is SASL_SSL with SCRAM-SHA-512,
// with the authorizer on and no access where no ACL grants it, replicate:
// each follower authenticates to the leaders as the user of its JAAS config
// (the credential created once the cluster is up, as kafka-configs.sh
// would), a super user, so acks=all produces are acknowledged only once the
// followers fetched over TLS as that user. A client with ACLs on the topic
// and its group produces with acks=all and reads back through its group
// over SASL_SSL; one without them is refused with Kafka's errors.
func TestClusterReplicatesOverSASLSSL(t *testing.T) {
	ca := testcerts.NewCA(t, "samsa-test-ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	c := testutil.StartCluster(t, 3, map[string]string{
		"listeners":                                             "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
		"listener.security.protocol.map":                        "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
		"inter.broker.listener.name":                            "INTERNAL",
		"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
		"listener.name.internal.sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		"listener.name.internal.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`,
		"ssl.keystore.type":                                     "PEM",
		"ssl.keystore.certificate.chain":                        leaf.CertPEM(),
		"ssl.keystore.key":                                      leaf.KeyPEM(t),
		"ssl.truststore.type":                                   "PEM",
		"ssl.truststore.certificates":                           ca.CertPEM(),
		"authorizer.class.name":                                 "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found":                        "false",
		// The PLAINTEXT listener (User:ANONYMOUS) is the test's admin.
		"super.users": "User:broker;User:ANONYMOUS",
	})
	adm := kadm.NewClient(newClusterKgo(t, c))
	ctx := testCtx(t, 2*time.Minute)
	var scrams []kadm.UpsertSCRAM
	for _, u := range []string{"broker", "alice", "mallory"} {
		scrams = append(scrams, kadm.UpsertSCRAM{User: u, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: u + "-secret"})
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, scrams); err != nil {
		t.Fatal(err)
	}
	replicateAcksAll(t, c, "sasl-replicated")

	const topic, group = "sasl-authorized", "sasl-authorized-g"
	createReplicatedTopic(t, c, topic, 3, 3, nil)
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics(topic).Operations(kadm.OpWrite, kadm.OpRead),
		kadm.NewACLs().Allow("User:alice").Groups(group).Operations(kadm.OpRead),
	} {
		res, err := adm.CreateACLs(ctx, b)
		if err == nil {
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var internal []string
	for _, n := range c.Running() {
		internal = append(internal, n.Addrs()[1])
	}
	tlsOpt := kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12})
	as := func(user string, opts ...kgo.Opt) *kgo.Client {
		return newKgo(t, internal[0], append([]kgo.Opt{kgo.SeedBrokers(internal...), tlsOpt,
			kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha512Mechanism())}, opts...)...)
	}
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(fmt.Sprint(i))})
	}
	// The authorizer learns a new ACL from etcd a moment after CreateAcls.
	alice := as("alice", kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	testutil.Eventually(t, 30*time.Second, func() error {
		return alice.ProduceSync(ctx, recs[0]).FirstErr()
	})
	produceAll(t, alice, recs[1:]...)
	for p := range int32(3) {
		waitISR(t, c, topic, p, 3, 30*time.Second)
	}
	reader := as("alice", kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < len(recs) && ctx.Err() == nil {
		fs := reader.PollFetches(ctx)
		for _, fe := range fs.Errors() {
			if ctx.Err() == nil {
				t.Fatalf("alice's group read: %v", fe.Err)
			}
		}
		for _, r := range fs.Records() {
			seen[string(r.Value)] = true
		}
	}
	if len(seen) != len(recs) {
		t.Fatalf("alice's group read %d of %d records", len(seen), len(recs))
	}
	if err := reader.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("alice commits: %v", err)
	}

	mallory := as("mallory", kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := mallory.ProduceSync(pctx, recs[0]).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("mallory's produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if md, err := kadm.NewClient(mallory).Metadata(ctx, topic); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(md.Topics[topic].Err, kerr.TopicAuthorizationFailed) {
		t.Errorf("mallory's metadata of %s: %v %v, want TOPIC_AUTHORIZATION_FAILED", topic, err, md.Topics[topic].Err)
	}
	off, err := kadm.NewClient(mallory).FetchOffsets(ctx, group)
	if !errors.Is(err, kerr.GroupAuthorizationFailed) && !errors.Is(off.Error(), kerr.GroupAuthorizationFailed) {
		t.Errorf("mallory's OffsetFetch of %s: %v %v, want GROUP_AUTHORIZATION_FAILED", group, err, off.Error())
	}
}

// Kafka's Java client (the console producer and consumer of Kafka 4.4)
// produces and consumes over SASL_SSL with SCRAM-SHA-512, the most common
// secured Kafka set-up.
func TestJavaClientSASLSSL(t *testing.T) {
	t.Parallel()
	n, ca := saslBroker(t)
	adm := newAdmin(t, n.Addrs()[0])
	if _, err := adm.AlterUserSCRAMs(testCtx(t, 30*time.Second), nil, []kadm.UpsertSCRAM{
		{User: "java", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "java-secret"},
	}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	props := fmt.Sprintf(`security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="java" password="java-secret";
ssl.truststore.type=PEM
ssl.truststore.location=%s
`, testcerts.WriteFile(t, dir, "ca.pem", []byte(ca.CertPEM())))
	runConsoleRoundTrip(t, n.Addrs()[2], dir, testcerts.WriteFile(t, dir, "client.properties", []byte(props)), "java-sasl")
}

// KIP-368: with connections.max.reauth.ms SaslAuthenticate tells the
// session's lifetime; a client re-authenticates on its connection (as
// the same principal: another one is refused), a connection that goes on
// past its session is closed, and franz-go, which re-authenticates by
// itself, produces throughout several lifetimes.
func TestSASLReauthentication(t *testing.T) {
	const lifetime = 1500
	n := testutil.StartBroker(t, map[string]string{
		"listeners":                                           "SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name":                          "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                             "PLAIN",
		"sasl.mechanism.inter.broker.protocol":                plainMechanism,
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
		"connections.max.reauth.ms":                           fmt.Sprint(lifetime),
		"auto.create.topics.enable":                           "true",
	})
	addr := n.Addr()
	login := func(c *rawConn, user string) *kmsg.SASLAuthenticateResponse { return saslLogin(t, c, user) }
	metadata := func(c *rawConn) {
		t.Helper()
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 4
		if resp := c.roundTrip(md).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
			t.Fatalf("Metadata: %+v", resp)
		}
	}

	c := dialRaw(t, addr)
	if resp := login(c, "alice"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != lifetime {
		t.Fatalf("SaslAuthenticate: %+v, want a session lifetime of %d ms", resp, lifetime)
	}
	metadata(c)
	if resp := login(c, "alice"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != lifetime {
		t.Fatalf("re-authentication: %+v", resp)
	}
	metadata(c)
	if resp := login(c, "admin"); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Errorf("re-authentication as another principal: %+v", resp)
	}
	c.closed("re-authentication as another principal")

	c = dialRaw(t, addr)
	login(c, "alice")
	testutil.Eventually(t, 10*time.Second, func() error {
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 4
		c.send(md)
		if _, err := c.frame(); err != nil {
			return nil // closed: the session ended
		}
		return errors.New("the connection still serves after its session")
	})

	cl := newKgo(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.AllowAutoTopicCreation())
	for start := time.Now(); time.Since(start) < 3*lifetime*time.Millisecond; {
		produceAll(t, cl, &kgo.Record{Topic: "reauth", Value: []byte("x")})
	}
}

const plainMechanism = "PLAIN"

// saslLogin authenticates c with PLAIN as user (password user-secret).
func saslLogin(t *testing.T, c *rawConn, user string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	return saslFirst(t, c, "PLAIN", []byte("\x00"+user+"\x00"+user+"-secret"))
}

// saslFirst sends SaslHandshake v1 for mech, which must succeed, and a
// SaslAuthenticate v1 with the client's first message.
func saslFirst(t *testing.T, c *rawConn, mech string, msg []byte) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech
	if resp := c.roundTrip(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
		t.Fatalf("SaslHandshake %s: %+v", mech, resp)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 1, msg
	return c.roundTrip(auth).(*kmsg.SASLAuthenticateResponse)
}
