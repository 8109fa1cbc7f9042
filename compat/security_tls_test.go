package compat

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

// tlsBroker starts a broker with a PLAINTEXT listener (first: the
// inter-broker one) and an SSL listener whose key is issued by ca, with
// the extra properties given; it returns the broker and the SSL address.
func tlsBroker(t *testing.T, ca *testcerts.CA, extra map[string]string) (*testutil.Node, string) {
	t.Helper()
	leaf := ca.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	props := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
		"inter.broker.listener.name":     "PLAINTEXT",
		"auto.create.topics.enable":      "true",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.certificate.chain": leaf.CertPEM(),
		"ssl.keystore.key":               leaf.KeyPEM(t),
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.certificates":    ca.CertPEM(),
	}
	for k, v := range extra {
		props[k] = v
	}
	n := testutil.StartBroker(t, props)
	return n, n.Addrs()[1]
}

// franz-go produces and consumes over an SSL listener (kgo.DialTLSConfig),
// and the record bytes of its fetches go through the copy path (no
// sendfile under TLS).
func TestFranzTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "samsa-test-ca")
	n, addr := tlsBroker(t, ca, nil)
	tc := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	cl := newKgo(t, addr, kgo.DialTLSConfig(tc), kgo.AllowAutoTopicCreation())
	produceAll(t, cl, &kgo.Record{Topic: "tls", Value: []byte("over tls")})
	got := consumeExact(t, addr, "tls", map[int32]int64{0: 0}, 1, 20*time.Second, kgo.DialTLSConfig(tc))
	if string(got[0].Value) != "over tls" {
		t.Errorf("consumed %q", got[0].Value)
	}
	if n.CopiedFileBytes() == 0 {
		t.Error("a fetch over TLS copied no record bytes through user space")
	}
	// A client that does not trust the broker's CA fails its handshake.
	other := testcerts.NewCA(t, "other-ca")
	bad := newKgo(t, addr, kgo.DialTLSConfig(&tls.Config{RootCAs: other.Pool(), ServerName: "127.0.0.1"}))
	if err := bad.Ping(testCtx(t, 5*time.Second)); err == nil {
		t.Error("a client that does not trust the broker's certificate connected")
	}
}

// ssl.client.auth=required (mTLS): a client with a certificate from the
// trusted CA is served, one without a certificate, with one from another
// CA or with an expired one is refused; each refusal leaves a log line and
// no effect on the connection that is served.
func TestFranzMutualTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "samsa-test-ca")
	_, addr := tlsBroker(t, ca, map[string]string{
		"listener.name.ssl.ssl.client.auth": "required",
	})
	alice := ca.Issue(t, pkix.Name{CommonName: "alice"}, nil)
	good := newKgo(t, addr, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1",
		Certificates: []tls.Certificate{alice.TLSCertificate()}}), kgo.AllowAutoTopicCreation())
	produceAll(t, good, &kgo.Record{Topic: "mtls", Value: []byte("1")})

	expired := ca.Issue(t, pkix.Name{CommonName: "old"}, func(c *x509.Certificate) { c.NotAfter = time.Now().Add(-time.Hour) })
	stranger := testcerts.NewCA(t, "other-ca").Issue(t, pkix.Name{CommonName: "mallory"}, nil)
	for name, cert := range map[string]*tls.Certificate{"no certificate": nil, "expired": ptr(expired.TLSCertificate()), "untrusted CA": ptr(stranger.TLSCertificate())} {
		cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
		if cert != nil {
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
		}
		cl := newKgo(t, addr, kgo.DialTLSConfig(cfg), kgo.RetryTimeout(2*time.Second))
		if err := cl.Ping(testCtx(t, 5*time.Second)); err == nil {
			t.Errorf("%s: connected to a listener requiring client certificates", name)
		}
	}
	produceAll(t, good, &kgo.Record{Topic: "mtls", Value: []byte("2")})
}

func ptr[T any](v T) *T { return &v }

// Bytes that are no TLS ClientHello on an SSL listener close that
// connection; the listener goes on serving TLS.
func TestTLSGarbageClientHello(t *testing.T) {
	ca := testcerts.NewCA(t, "samsa-test-ca")
	_, addr := tlsBroker(t, ca, nil)
	for _, garbage := range [][]byte{
		bytes.Repeat([]byte{0xff}, 64),
		{0x16, 0x03, 0x01, 0xff, 0xff, 1, 2, 3},                            // a handshake record claiming 64 KiB, cut short
		[]byte("\x00\x00\x00\x0a\x00\x12\x00\x03\x00\x00\x00\x01\x00\x00"), // a plaintext ApiVersions
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(garbage)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Errorf("%x: %v (want the connection closed)", garbage, err)
		}
		if len(b) > 0 && b[0] != 0x15 { // at most a TLS alert
			t.Errorf("%x: the broker answered %x", garbage, b)
		}
	}
	cl := newKgo(t, addr, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}))
	if err := cl.Ping(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// Kafka's own Java client (the console producer and consumer of Kafka
// 4.4) produces and consumes over an SSL listener with a client
// certificate, keystore and trust store as PKCS12 files, and the broker's
// keystore a JKS file.
func TestJavaClientMutualTLS(t *testing.T) {
	t.Parallel()
	ca := testcerts.NewCA(t, "samsa-test-ca")
	dir := t.TempDir()
	brokerLeaf := ca.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	n := testutil.StartBroker(t, map[string]string{
		"listeners":                                 "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"listener.security.protocol.map":            "PLAINTEXT:PLAINTEXT,SSL:SSL",
		"inter.broker.listener.name":                "PLAINTEXT",
		"auto.create.topics.enable":                 "true",
		"listener.name.ssl.ssl.keystore.location":   testcerts.WriteFile(t, dir, "broker.jks", brokerLeaf.JKS(t, "store-pw", "key-pw")),
		"listener.name.ssl.ssl.keystore.password":   "store-pw",
		"listener.name.ssl.ssl.key.password":        "key-pw",
		"listener.name.ssl.ssl.truststore.location": testcerts.WriteFile(t, dir, "trust.jks", ca.TrustJKS(t, "trust-pw")),
		"listener.name.ssl.ssl.truststore.password": "trust-pw",
		"listener.name.ssl.ssl.client.auth":         "required",
	})
	addr := n.Addrs()[1]
	client := ca.Issue(t, pkix.Name{CommonName: "java-client"}, nil)
	clientProps := fmt.Sprintf(`security.protocol=SSL
ssl.keystore.type=PKCS12
ssl.keystore.location=%s
ssl.keystore.password=client-pw
ssl.truststore.type=PKCS12
ssl.truststore.location=%s
ssl.truststore.password=trust-pw
`, testcerts.WriteFile(t, dir, "client.p12", client.PKCS12(t, "client-pw")), testcerts.WriteFile(t, dir, "trust.p12", ca.TrustPKCS12(t, "trust-pw")))
	propsFile := testcerts.WriteFile(t, dir, "client.properties", []byte(clientProps))

	runConsoleRoundTrip(t, addr, dir, propsFile, "java-tls")
}

// Three brokers whose inter-broker listener is SSL with client
// certificates required replicate: followers reach leaders through the
// SSL listener (the only one that takes them), so acks=all produces are
// acknowledged only once every follower fetched over TLS.
func TestClusterReplicatesOverTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "samsa-test-ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	c := testutil.StartCluster(t, 3, map[string]string{
		"listeners":                              "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
		"listener.security.protocol.map":         "PLAINTEXT:PLAINTEXT,INTERNAL:SSL",
		"inter.broker.listener.name":             "INTERNAL",
		"ssl.keystore.type":                      "PEM",
		"ssl.keystore.certificate.chain":         leaf.CertPEM(),
		"ssl.keystore.key":                       leaf.KeyPEM(t),
		"ssl.truststore.type":                    "PEM",
		"ssl.truststore.certificates":            ca.CertPEM(),
		"listener.name.internal.ssl.client.auth": "required",
	})
	replicateAcksAll(t, c, "tls-replicated")
}

// runConsoleRoundTrip produces three lines with Kafka 4.4's console
// producer and reads them back with its console consumer, both configured
// with the client properties file given.
func runConsoleRoundTrip(t *testing.T, addr, dir, propsFile, topic string) {
	t.Helper()
	tool := kafkaToolIn(t, testCtx(t, 3*time.Minute), addr, dir)
	if _, err := tool("one\ntwo\nthree\n", "org.apache.kafka.tools.ConsoleProducer", "--topic", topic, "--command-config", propsFile); err != nil {
		t.Fatal(err)
	}
	out, err := tool("", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--topic", topic, "--from-beginning",
		"--max-messages", "3", "--timeout-ms", "60000", "--command-config", propsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one", "two", "three"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("the console consumer printed %q, missing %q", out, want)
		}
	}
}

// replicateAcksAll creates a topic of three partitions with three
// replicas, produces to each with acks=all and checks the ISRs whole.
func replicateAcksAll(t *testing.T, c *testutil.Cluster, topic string) {
	t.Helper()
	createReplicatedTopic(t, c, topic, 3, 3, nil)
	cl := newClusterKgo(t, c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(fmt.Sprint(i))})
	}
	produceAll(t, cl, recs...)
	for p := range int32(3) {
		waitISR(t, c, topic, p, 3, 30*time.Second)
	}
}

// A TLS listener's certificate replaced through AlterConfigs (a dynamic
// per-broker listener.name.<l>.ssl.* config, as Kafka 4 reloads listener
// certificates): the next handshake serves the new certificate, which a
// client trusting only the new CA accepts and one trusting only the old
// one refuses. The key goes through etcd encrypted (see
// TestDynamicPasswordConfigsEncrypted).
func TestDynamicListenerCertificate(t *testing.T) {
	oldCA, newCA := testcerts.NewCA(t, "old-ca"), testcerts.NewCA(t, "new-ca")
	// The new private key is a password config: stored encrypted with
	// password.encoder.secret, decoded for the listener.
	n, addr := tlsBroker(t, oldCA, map[string]string{"password.encoder.secret": "listener-secret"})
	trusting := func(ca *testcerts.CA) *kgo.Client {
		return newKgo(t, addr, kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}))
	}
	if err := trusting(oldCA).Ping(testCtx(t, 10*time.Second)); err != nil {
		t.Fatalf("before: %v", err)
	}
	leaf := newCA.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	adm := newAdmin(t, n.Addr()) // the PLAINTEXT listener
	rs, err := adm.AlterBrokerConfigs(testCtx(t, 10*time.Second), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "listener.name.ssl.ssl.keystore.type", Value: strp("PEM")},
		{Op: kadm.SetConfig, Name: "listener.name.ssl.ssl.keystore.certificate.chain", Value: strp(leaf.CertPEM())},
		{Op: kadm.SetConfig, Name: "listener.name.ssl.ssl.keystore.key", Value: strp(leaf.KeyPEM(t))},
	}, n.NodeID())
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatalf("AlterBrokerConfigs: %v", err)
	}
	testutil.Eventually(t, 30*time.Second, func() error { return trusting(newCA).Ping(testCtx(t, 5*time.Second)) })
	if err := trusting(oldCA).Ping(testCtx(t, 5*time.Second)); err == nil {
		t.Error("a client trusting only the old CA still connects after the certificate was replaced")
	}
}

// ssl.keystore.type=JKS and ssl.truststore.type=JKS (the default) naming
// PKCS12 files that keytool wrote: Kafka 4.4 loads them (its JVM reads a
// PKCS12 file for a JKS store since Java 9) and serves TLS with client
// certificates; so must samsa, which stopped with "invalid magic". A kgo
// client with a certificate the trust store's CA issued creates a topic
// and produces to it on each.
func TestTLSKeystoreTypeJKSNamingPKCS12Files(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "client-ca")
	client := ca.Issue(t, pkix.Name{CommonName: "client"}, nil)
	ks, ts := filepath.Join(dir, "broker.p12"), filepath.Join(dir, "trust.p12")
	srvCert, caCert := filepath.Join(dir, "broker.crt"), testcerts.WriteFile(t, dir, "ca.crt", []byte(ca.CertPEM()))
	for _, args := range [][]string{
		{"-genkeypair", "-storetype", "PKCS12", "-keystore", ks, "-storepass", "ks-pass", "-alias", "broker",
			"-keyalg", "RSA", "-keysize", "2048", "-validity", "2", "-dname", "CN=broker", "-ext", "SAN=ip:127.0.0.1,dns:localhost"},
		{"-exportcert", "-rfc", "-keystore", ks, "-storepass", "ks-pass", "-alias", "broker", "-file", srvCert},
		{"-importcert", "-noprompt", "-storetype", "PKCS12", "-keystore", ts, "-storepass", "ts-pass", "-alias", "ca", "-file", caCert},
	} {
		if out, err := exec.Command("keytool", args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %s: %v: %s", args[0], err, out)
		}
	}
	pemBytes, err := os.ReadFile(srvCert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pemBytes) {
		t.Fatal("keytool's certificate does not parse")
	}
	ssl := map[string]string{
		"listener.name.ssl.ssl.keystore.type":       "JKS",
		"listener.name.ssl.ssl.keystore.location":   ks,
		"listener.name.ssl.ssl.keystore.password":   "ks-pass",
		"listener.name.ssl.ssl.key.password":        "ks-pass",
		"listener.name.ssl.ssl.truststore.type":     "JKS",
		"listener.name.ssl.ssl.truststore.location": ts,
		"listener.name.ssl.ssl.truststore.password": "ts-pass",
		"listener.name.ssl.ssl.client.auth":         "required",
	}
	produce := func(t *testing.T, addr string) {
		t.Helper()
		cl := newKgo(t, addr, kgo.DialTLSConfig(&tls.Config{RootCAs: roots, Certificates: []tls.Certificate{client.TLSCertificate()}}))
		createTopic(t, kadm.NewClient(cl), "jks-p12", 1, nil)
		if err := cl.ProduceSync(testCtx(t, 60*time.Second), &kgo.Record{Topic: "jks-p12", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce over TLS: %v", err)
		}
	}
	t.Run("samsa", func(t *testing.T) {
		props := map[string]string{
			"listeners":                      "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
			"inter.broker.listener.name":     "PLAINTEXT",
		}
		maps.Copy(props, ssl)
		n := testutil.StartBroker(t, props)
		produce(t, n.Addrs()[1])
	})
	t.Run("kafka", func(t *testing.T) {
		ctx := testCtx(t, 5*time.Minute)
		kb, err := kafkaref.Start(ctx, kafkaLibs(t, ctx), kafkaref.Options{Dir: t.TempDir(), HeapMB: 512, Props: ssl, Listeners: []string{"SSL"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kb.Stop(30 * time.Second) })
		produce(t, kb.Listeners["SSL"])
	})
}
