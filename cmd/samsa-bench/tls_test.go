package main

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

// samsa-bench produces and consumes over an SSL listener with -tls-ca (the
// tls section of make bench), and refuses a CA file without a certificate.
func TestProduceConsumeOverTLS(t *testing.T) {
	ca := testcerts.NewCA(t, "bench-test-ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "localhost"}, nil)
	n := testutil.StartBroker(t, map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"inter.broker.listener.name":     "PLAINTEXT",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.certificate.chain": leaf.CertPEM(),
		"ssl.keystore.key":               leaf.KeyPEM(t),
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addrs()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "tls"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caFile := testcerts.WriteFile(t, dir, "ca.pem", []byte(ca.CertPEM()))
	for _, op := range []string{"produce", "consume"} {
		var out, errb bytes.Buffer
		args := []string{op, "-brokers", n.Addrs()[1], "-topic", "tls", "-records", "200", "-size", "100", "-tls-ca", caFile, "-json", "-timeout", "60s"}
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("samsa-bench %s over TLS: exit %d: %s", op, code, errb.String())
		}
		var r Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Records != 200 {
			t.Errorf("samsa-bench %s over TLS: %s (%v), want 200 records", op, out.String(), err)
		}
	}
	bad := testcerts.WriteFile(t, dir, "bad.pem", []byte("not a certificate"))
	var out, errb bytes.Buffer
	if code := run([]string{"consume", "-brokers", n.Addrs()[1], "-topic", "tls", "-records", "1", "-tls-ca", bad}, &out, &errb); code != 2 {
		t.Errorf("a CA file without a certificate: exit %d, want 2 (%s)", code, errb.String())
	}
}
