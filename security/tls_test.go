package security

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
	"github.com/samsa-io/samsa/internal/testcerts"
)

// handshake runs a TLS handshake between srv and a client with cc over
// loopback TCP (buffered, unlike net.Pipe: an alert written while the
// other side writes does not block) and returns the server's view of it.
func handshake(t *testing.T, srv *tls.Config, cc *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := tls.Dial("tcp", ln.Addr().String(), cc)
		if err == nil {
			// TLS 1.3: the server's verdict on a client certificate
			// arrives after the client's handshake; read for it.
			c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			_, rerr := c.Read(make([]byte, 1))
			if ne, ok := rerr.(net.Error); !ok || !ne.Timeout() {
				err = rerr
			}
			c.Close()
		}
		errc <- err
	}()
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s := tls.Server(a, srv)
	a.SetDeadline(time.Now().Add(10 * time.Second))
	err = s.Handshake()
	if err != nil {
		a.Close()
	}
	if cerr := <-errc; err == nil && cerr != nil {
		err = cerr
	}
	return s.ConnectionState(), err
}

func TestKeystoreFormats(t *testing.T) {
	ca := testcerts.NewCA(t, "test-ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	dir := t.TempDir()
	cases := []struct {
		name string
		cfg  TLSConfig
	}{
		{"PEM inline", TLSConfig{KeystoreType: "PEM", KeystoreCertChain: leaf.CertPEM(), KeystoreKey: leaf.KeyPEM(t),
			TruststoreType: "PEM", TruststoreCerts: ca.CertPEM()}},
		{"PEM files", TLSConfig{KeystoreType: "PEM", KeystoreLocation: testcerts.WriteFile(t, dir, "ks.pem", []byte(leaf.KeyPEM(t)+leaf.CertPEM())),
			TruststoreType: "PEM", TruststoreLocation: testcerts.WriteFile(t, dir, "ts.pem", []byte(ca.CertPEM()))}},
		{"PKCS12", TLSConfig{KeystoreType: "PKCS12", KeystoreLocation: testcerts.WriteFile(t, dir, "ks.p12", leaf.PKCS12(t, "ks-pass")), KeystorePassword: "ks-pass",
			TruststoreType: "PKCS12", TruststoreLocation: testcerts.WriteFile(t, dir, "ts.p12", ca.TrustPKCS12(t, "ts-pass")), TruststorePassword: "ts-pass"}},
		{"JKS", TLSConfig{KeystoreType: "JKS", KeystoreLocation: testcerts.WriteFile(t, dir, "ks.jks", leaf.JKS(t, "ks-pass", "key-pass")), KeystorePassword: "ks-pass", KeyPassword: "key-pass",
			TruststoreType: "JKS", TruststoreLocation: testcerts.WriteFile(t, dir, "ts.jks", ca.TrustJKS(t, "ts-pass")), TruststorePassword: "ts-pass"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.ClientAuth = "required"
			s, err := NewTLS(tc.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			client := ca.Issue(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}}, nil)
			st, err := handshake(t, s.ServerConfig(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{client.TLSCertificate()}})
			if err != nil {
				t.Fatal(err)
			}
			if p, err := s.Principal(st); err != nil || p != "User:CN=alice,OU=eng" {
				t.Errorf("principal %q, %v", p, err)
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		cfg := cases[2].cfg
		cfg.KeystorePassword = "nope"
		if _, err := NewTLS(cfg, nil); err == nil {
			t.Error("PKCS12 keystore opened with the wrong password")
		}
		cfg = cases[3].cfg
		cfg.KeyPassword = "nope"
		if _, err := NewTLS(cfg, nil); err == nil {
			t.Error("JKS key opened with the wrong password")
		}
	})
}

// A store is read in the format its bytes are, whichever of JKS and
// PKCS12 ssl.keystore.type and ssl.truststore.type name, as Kafka's JVM
// reads it (keystore.type.compat, Java 9 on): tools write PKCS12 files
// for a configuration left at the default type, JKS. A PKCS12 keystore
// and trust store written by keytool, and testcerts' stores, each under
// the other type; samsa stopped with "invalid magic" on the first.
func TestKeystoreTypeReadsEitherFormat(t *testing.T) {
	ca := testcerts.NewCA(t, "test-ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	dir := t.TempDir()
	ksP12, tsP12, ktCert := keytoolPKCS12(t, dir)
	ktPEM, err := os.ReadFile(ktCert)
	if err != nil {
		t.Fatal(err)
	}
	ktRoots := x509.NewCertPool()
	if !ktRoots.AppendCertsFromPEM(ktPEM) {
		t.Fatalf("keytool's certificate %s does not parse", ktCert)
	}
	cases := []struct {
		name string
		cfg  TLSConfig
		ca   *x509.CertPool
	}{
		{"keytool PKCS12 as JKS", TLSConfig{KeystoreType: "JKS", KeystoreLocation: ksP12, KeystorePassword: "ks-pass",
			TruststoreType: "JKS", TruststoreLocation: tsP12, TruststorePassword: "ts-pass"}, ktRoots},
		{"keytool PKCS12 as the default type", TLSConfig{KeystoreLocation: ksP12, KeystorePassword: "ks-pass",
			TruststoreLocation: tsP12, TruststorePassword: "ts-pass"}, ktRoots},
		{"PKCS12 as JKS", TLSConfig{KeystoreType: "JKS", KeystoreLocation: testcerts.WriteFile(t, dir, "ks.p12", leaf.PKCS12(t, "ks-pass")), KeystorePassword: "ks-pass",
			TruststoreType: "JKS", TruststoreLocation: testcerts.WriteFile(t, dir, "ts.p12", ca.TrustPKCS12(t, "ts-pass")), TruststorePassword: "ts-pass"}, ca.Pool()},
		{"JKS as PKCS12", TLSConfig{KeystoreType: "PKCS12", KeystoreLocation: testcerts.WriteFile(t, dir, "ks.jks", leaf.JKS(t, "ks-pass", "key-pass")), KeystorePassword: "ks-pass", KeyPassword: "key-pass",
			TruststoreType: "PKCS12", TruststoreLocation: testcerts.WriteFile(t, dir, "ts.jks", ca.TrustJKS(t, "ts-pass")), TruststorePassword: "ts-pass"}, ca.Pool()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewTLS(tc.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := handshake(t, s.ServerConfig(), &tls.Config{RootCAs: tc.ca, ServerName: "localhost"}); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		cfg := cases[0].cfg
		cfg.KeystorePassword = "nope"
		if _, err := NewTLS(cfg, nil); err == nil {
			t.Error("PKCS12 keystore typed JKS opened with the wrong password")
		}
	})
}

// keytoolPKCS12 writes with Java's keytool a PKCS12 keystore (a
// self-signed key pair for localhost, password ks-pass) and a PKCS12
// trust store holding its certificate (password ts-pass), and returns
// their paths and that of the certificate (PEM).
func keytoolPKCS12(t *testing.T, dir string) (keystore, truststore, cert string) {
	t.Helper()
	keystore, truststore = filepath.Join(dir, "keytool-ks.p12"), filepath.Join(dir, "keytool-ts.p12")
	cert = filepath.Join(dir, "keytool.crt")
	for _, args := range [][]string{
		{"-genkeypair", "-storetype", "PKCS12", "-keystore", keystore, "-storepass", "ks-pass", "-alias", "broker",
			"-keyalg", "RSA", "-keysize", "2048", "-validity", "2", "-dname", "CN=localhost", "-ext", "SAN=dns:localhost"},
		{"-exportcert", "-rfc", "-keystore", keystore, "-storepass", "ks-pass", "-alias", "broker", "-file", cert},
		{"-importcert", "-noprompt", "-storetype", "PKCS12", "-keystore", truststore, "-storepass", "ts-pass", "-alias", "ca", "-file", cert},
	} {
		if out, err := exec.Command("keytool", args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %s: %v: %s", args[0], err, out)
		}
	}
	return keystore, truststore, cert
}

// An encrypted PEM key, as openssl writes it (PBES2, PBKDF2, AES-256-CBC),
// opens with ssl.key.password.
func TestEncryptedPEMKey(t *testing.T) {
	ca := testcerts.NewCA(t, "test-ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	dir := t.TempDir()
	plain := testcerts.WriteFile(t, dir, "key.pem", []byte(leaf.KeyPEM(t)))
	enc := filepath.Join(dir, "enc.pem")
	out, err := exec.Command("openssl", "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA256",
		"-in", plain, "-out", enc, "-passout", "pass:key-secret").CombinedOutput()
	if err != nil {
		t.Fatalf("openssl: %v: %s", err, out)
	}
	key, err := os.ReadFile(enc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := TLSConfig{KeystoreType: "PEM", KeystoreCertChain: leaf.CertPEM(), KeystoreKey: string(key), KeyPassword: "key-secret"}
	s, err := NewTLS(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, s.ServerConfig(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}); err != nil {
		t.Fatal(err)
	}
	cfg.KeyPassword = "wrong"
	if _, err := NewTLS(cfg, nil); err == nil {
		t.Error("encrypted key opened with the wrong password")
	}
}

func TestPrincipalMappingRules(t *testing.T) {
	dn := "CN=alice,OU=eng,O=acme,C=US"
	tests := []struct {
		rules, want string
		err         bool
	}{
		{"", dn, false},
		{"DEFAULT", dn, false},
		{`RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$2/L,DEFAULT`, "alice@eng", false},
		{`RULE:^CN=(.*?),OU=(.*?).*$/$1/U`, "ALICE", false},
		{"RULE:^CN=bob,.*$/bob/,DEFAULT", dn, false},
		{"RULE:^CN=bob,.*$/bob/", "", true},
		{`RULE:^CN=([a-z]+),.*$/user\/$1/`, "user/alice", false},
	}
	for _, tt := range tests {
		rules, err := parsePrincipalRules(tt.rules)
		if err != nil {
			t.Fatalf("%q: %v", tt.rules, err)
		}
		got, err := mapPrincipal(rules, dn)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%q: got %q, %v; want %q (error %v)", tt.rules, got, err, tt.want, tt.err)
		}
	}
	if _, err := parsePrincipalRules("RULE:broken"); err == nil {
		t.Error("a malformed rule parsed")
	}
}

func TestTLSSettings(t *testing.T) {
	ca := testcerts.NewCA(t, "test-ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	base := TLSConfig{KeystoreType: "PEM", KeystoreCertChain: leaf.CertPEM(), KeystoreKey: leaf.KeyPEM(t)}
	cfg := base
	cfg.EnabledProtocols = []string{"TLSv1.3"}
	s, err := NewTLS(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, s.ServerConfig(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MaxVersion: tls.VersionTLS12}); err == nil {
		t.Error("TLS 1.2 client accepted with ssl.enabled.protocols=TLSv1.3")
	}
	cfg = base
	cfg.EnabledProtocols = []string{"TLSv1.2"}
	cfg.CipherSuites = []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}
	s, err = NewTLS(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := handshake(t, s.ServerConfig(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
	if err != nil || st.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 || st.Version != tls.VersionTLS12 {
		t.Errorf("handshake: %v, suite %x version %x", err, st.CipherSuite, st.Version)
	}
	for _, bad := range []TLSConfig{
		{EnabledProtocols: []string{"SSLv3"}},
		{CipherSuites: []string{"TLS_NO_SUCH_SUITE"}},
		{ClientAuth: "maybe"},
		{PrincipalRules: "RULE:x"},
	} {
		cfg := base
		cfg.EnabledProtocols, cfg.CipherSuites, cfg.ClientAuth, cfg.PrincipalRules = bad.EnabledProtocols, bad.CipherSuites, bad.ClientAuth, bad.PrincipalRules
		if _, err := NewTLS(cfg, nil); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	// ssl.client.auth=required refuses a client without a certificate;
	// requested serves it as ANONYMOUS.
	cfg = base
	cfg.TruststoreType, cfg.TruststoreCerts, cfg.ClientAuth = "PEM", ca.CertPEM(), "required"
	s, _ = NewTLS(cfg, nil)
	if _, err := handshake(t, s.ServerConfig(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}); err == nil {
		t.Error("required client auth: a client without a certificate was accepted")
	}
	cfg.ClientAuth = "requested"
	s, _ = NewTLS(cfg, nil)
	st, err = handshake(t, s.ServerConfig(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
	if p, _ := s.Principal(st); err != nil || p != Anonymous {
		t.Errorf("requested client auth without a certificate: %v, principal %q", err, p)
	}
	// A certificate from another CA, or an expired one, is refused (sent
	// anyway: Go's client leaves out a certificate the server's CA list
	// does not name).
	other := testcerts.NewCA(t, "other").Issue(t, pkix.Name{CommonName: "mallory"}, nil)
	expired := ca.Issue(t, pkix.Name{CommonName: "old"}, func(c *x509.Certificate) { c.NotAfter = time.Now().Add(-time.Minute) })
	for _, l := range []*testcerts.Leaf{other, expired} {
		cert := l.TLSCertificate()
		send := func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		if _, err := handshake(t, s.ServerConfig(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", GetClientCertificate: send}); err == nil {
			t.Errorf("client certificate %s accepted", l.Cert.Subject)
		}
	}
}

// A keystore file replaced on disk is served from the next handshake
// after the change is seen.
func TestCertificateReload(t *testing.T) {
	ca := testcerts.NewCA(t, "test-ca")
	dir := t.TempDir()
	write := func(cn string) {
		l := ca.Issue(t, pkix.Name{CommonName: cn}, nil)
		tmp := testcerts.WriteFile(t, dir, "ks.tmp", []byte(l.KeyPEM(t)+l.CertPEM()))
		if err := os.Rename(tmp, filepath.Join(dir, "ks.pem")); err != nil {
			t.Fatal(err)
		}
	}
	write("first")
	s, err := NewTLS(TLSConfig{KeystoreType: "PEM", KeystoreLocation: filepath.Join(dir, "ks.pem")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		var cn string
		cc := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", VerifyConnection: func(st tls.ConnectionState) error {
			cn = st.PeerCertificates[0].Subject.CommonName
			return nil
		}}
		if _, err := handshake(t, s.ServerConfig(), cc); err != nil {
			t.Fatal(err)
		}
		return cn
	}
	if cn := served(); cn != "first" {
		t.Fatalf("served %q", cn)
	}
	write("second")
	poll.Eventually(t, 10*time.Second, func() error {
		if cn := served(); cn != "second" {
			return fmt.Errorf("served %q", cn)
		}
		return nil
	})
}

func TestParseJAAS(t *testing.T) {
	got, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="a \"quoted\" secret" user_alice=alice-secret;`)
	if err != nil {
		t.Fatal(err)
	}
	if got["username"] != "admin" || got["password"] != `a "quoted" secret` || got["user_alice"] != "alice-secret" {
		t.Errorf("ParseJAAS = %v", got)
	}
	for _, bad := range []string{"", "Module required a=b", "Module maybe a=b;", `Module required a="b;`} {
		if _, err := ParseJAAS(bad); err == nil {
			t.Errorf("ParseJAAS(%q) accepted", bad)
		}
	}
}
