package cli_test

import (
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestSecuredListeners: the CLI authenticates with SASL PLAIN over
// SASL_PLAINTEXT and over SASL_SSL (trusting the CA of --tls-ca), and a
// wrong password fails as Kafka answers it.
func TestSecuredListeners(t *testing.T) {
	ca := testcerts.NewCA(t, "samsa-cli-test-ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "broker"}, nil)
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_alice="alice-secret";`
	n := testutil.StartBroker(t, map[string]string{
		"listeners":                  "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"inter.broker.listener.name": "PLAINTEXT",
		"sasl.enabled.mechanisms":    "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
		"listener.name.sasl_ssl.plain.sasl.jaas.config":       jaas,
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.certificate.chain": leaf.CertPEM(),
		"ssl.keystore.key":               leaf.KeyPEM(t),
	})
	addrs := n.Addrs()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, []byte(ca.CertPEM()), 0o644); err != nil {
		t.Fatal(err)
	}
	alice := []string{"--sasl-mechanism", "PLAIN", "--sasl-username", "alice", "--sasl-password", "alice-secret"}

	out := ok(t, addrs[1], "", append([]string{"topic", "create", "secured"}, alice...)...)
	if !row(out, "secured", "OK") {
		t.Fatalf("topic create over SASL_PLAINTEXT:\n%s", out)
	}
	ok(t, addrs[1], "one\ntwo\n", append([]string{"produce", "secured"}, alice...)...)
	tlsArgs := append([]string{"consume", "secured", "-e", "--tls-ca", caFile, "--tls-server-name", "127.0.0.1"}, alice...)
	if out := ok(t, addrs[2], "", tlsArgs...); out != "one\ntwo\n" {
		t.Fatalf("consume over SASL_SSL: %q", out)
	}
	code, _, errOut := samsa(t, addrs[1], "", "cluster", "info", "--sasl-mechanism", "PLAIN", "--sasl-username", "alice", "--sasl-password", "wrong", "--timeout", "5s")
	if code != 1 || !strings.Contains(errOut, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("a wrong password: exit %d, %s", code, errOut)
	}
	if code, _, errOut := samsa(t, addrs[1], "", "cluster", "info", "--sasl-mechanism", "GSSAPI", "--sasl-username", "x"); code != 2 {
		t.Fatalf("an unknown mechanism: exit %d, %s", code, errOut)
	}
}
