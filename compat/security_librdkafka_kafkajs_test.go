package compat

import (
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testcerts"
)

// librdkafka (confluent-kafka) and kafkajs produce and consume over
// SASL_SSL with SCRAM-SHA-512, SASL_PLAINTEXT with PLAIN, and SSL with
// client certificates (mTLS), configured as for a secured Apache Kafka.
func TestLibrdkafkaAndKafkajsSecurity(t *testing.T) {
	t.Parallel()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	py := venvPython(t, root)
	if _, err := os.Stat(filepath.Join(root, "compat", "node", "node_modules", "kafkajs")); err != nil {
		t.Fatalf("no kafkajs: run make node-deps (make test does): %v", err)
	}
	n, ca := saslBroker(t)
	if _, err := newAdmin(t, n.Addrs()[0]).AlterUserSCRAMs(testCtx(t, 30*time.Second), nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"},
	}); err != nil {
		t.Fatal(err)
	}
	mca := testcerts.NewCA(t, "mtls-ca")
	_, mtlsAddr := tlsBroker(t, mca, map[string]string{"listener.name.ssl.ssl.client.auth": "required"})
	client := mca.Issue(t, pkix.Name{CommonName: "client"}, nil)
	dir := t.TempDir()
	caFile := testcerts.WriteFile(t, dir, "ca.pem", []byte(ca.CertPEM()))
	mcaFile := testcerts.WriteFile(t, dir, "mca.pem", []byte(mca.CertPEM()))
	certFile := testcerts.WriteFile(t, dir, "client.pem", []byte(client.CertPEM()))
	keyFile := testcerts.WriteFile(t, dir, "client.key", []byte(client.KeyPEM(t)))

	cases := []struct {
		name    string
		addr    string
		rdkafka map[string]string
		kafkajs map[string]any
	}{
		{"SASL_SSL SCRAM-SHA-512", n.Addrs()[2],
			map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "carol", "sasl.password": "carol-secret", "ssl.ca.location": caFile},
			map[string]any{"ssl": map[string]any{"ca": []string{ca.CertPEM()}}, "sasl": map[string]string{"mechanism": "scram-sha-512", "username": "carol", "password": "carol-secret"}}},
		{"SASL_PLAINTEXT PLAIN", n.Addrs()[1],
			map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"},
			map[string]any{"sasl": map[string]string{"mechanism": "plain", "username": "alice", "password": "alice-secret"}}},
		{"SSL mTLS", mtlsAddr,
			map[string]string{"security.protocol": "SSL", "ssl.ca.location": mcaFile, "ssl.certificate.location": certFile, "ssl.key.location": keyFile},
			map[string]any{"ssl": map[string]any{"ca": []string{mca.CertPEM()}, "cert": client.CertPEM(), "key": client.KeyPEM(t)}}},
	}
	for i, c := range cases {
		for _, prog := range []struct {
			client string
			cmd    func(conf []byte, topic string) *exec.Cmd
			conf   any
		}{
			{"librdkafka", func(conf []byte, topic string) *exec.Cmd {
				return exec.Command(py, filepath.Join(root, "compat", "python", "secure.py"), c.addr, topic, string(conf))
			}, c.rdkafka},
			{"kafkajs", func(conf []byte, topic string) *exec.Cmd {
				cmd := exec.Command("node", "secure.js", c.addr, topic, string(conf))
				cmd.Dir = filepath.Join(root, "compat", "node")
				return cmd
			}, c.kafkajs},
		} {
			conf, _ := json.Marshal(prog.conf)
			cmd := prog.cmd(conf, fmt.Sprintf("secure-%s-%d", prog.client, i))
			out, err := cmd.Output()
			var res struct {
				OK    bool   `json:"ok"`
				Error string `json:"error"`
			}
			if err != nil || json.Unmarshal(out, &res) != nil || !res.OK {
				t.Errorf("%s over %s: %v %s %s", prog.client, c.name, err, out, res.Error)
			}
		}
	}
}
