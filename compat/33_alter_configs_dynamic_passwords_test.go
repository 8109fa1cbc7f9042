package compat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/testutil"
	"github.com/samsa-io/samsa/security"
)

// storedBrokerConfig is the raw etcd value of broker id's dynamic configs.
func storedBrokerConfig(t *testing.T, endpoints []string, id string) string {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(testCtx(t, 10*time.Second), "\x00", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), "/config/brokers/"+id) {
			return string(kv.Value)
		}
	}
	t.Fatalf("no /config/brokers/%s in etcd", id)
	return ""
}

// Passwords set as dynamic broker configs through kadm are stored in etcd
// encrypted with password.encoder.secret (Kafka's form: AES, a PBKDF2 key),
// never in plain text; DescribeConfigs marks them sensitive with a null
// value; a restart decodes them; a restart with another secret leaves them
// out until password.encoder.old.secret names the one that encrypted
// them; a broker without a secret refuses to store one with INVALID_REQUEST
// (validate-only too) and still stores other configs.
func TestDynamicPasswordConfigsEncrypted(t *testing.T) {
	const secret, plain = "encoder-secret-1", "keystore-pw-5f1c"
	const name = "ssl.keystore.password"
	c := testutil.StartCluster(t, 1, map[string]string{"password.encoder.secret": secret})
	n := c.Node(1)
	adm := newAdmin(t, n.Addr())
	set := func(adm *kadm.Client, validateOnly bool, key, value string) error {
		t.Helper()
		ac := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: strp(value)}}
		var rs kadm.AlterConfigsResponses
		var err error
		if validateOnly {
			rs, err = adm.ValidateAlterBrokerConfigs(testCtx(t, 10*time.Second), ac, 1)
		} else {
			rs, err = adm.AlterBrokerConfigs(testCtx(t, 10*time.Second), ac, 1)
		}
		if err != nil {
			t.Fatalf("AlterBrokerConfigs: %v", err)
		}
		return rs[0].Err
	}
	if err := set(adm, false, name, plain); err != nil {
		t.Fatalf("setting %s: %v", name, err)
	}
	if err := set(adm, false, "log.cleaner.backoff.ms", "16000"); err != nil {
		t.Fatalf("setting a config beside it: %v", err)
	}

	stored := storedBrokerConfig(t, c.Etcd.Endpoints(), "1")
	if strings.Contains(stored, plain) {
		t.Fatalf("etcd holds the password in plain text: %s", stored)
	}
	if !strings.Contains(stored, "encryptedPassword:") || !strings.Contains(stored, "cipherAlgorithm:AES/CBC/PKCS5Padding") || !strings.Contains(stored, `"log.cleaner.backoff.ms":"16000"`) {
		t.Fatalf("stored configs %s, want the password in Kafka's encrypted form beside the other config", stored)
	}
	enc, err := security.NewPasswordEncoder(secret, "", "", "AES/CBC/PKCS5Padding", 128, 4096)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Config map[string]string }
	if err := json.Unmarshal([]byte(stored), &doc); err != nil {
		t.Fatal(err)
	}
	if got, err := enc.Decode(doc.Config[name]); err != nil || got != plain {
		t.Fatalf("the stored value decodes to %q, %v", got, err)
	}

	// described reports whether the password is in effect as this
	// broker's dynamic config; it is never described with its value.
	described := func(adm *kadm.Client) bool {
		t.Helper()
		cfg, ok := brokerConfig(t, adm, "1", name)
		if !ok || !cfg.Sensitive || cfg.Value != nil {
			t.Errorf("described %s: %v sensitive %v value %v, want sensitive and null", name, ok, cfg.Sensitive, cfg.Value)
		}
		return cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig
	}
	if !described(adm) {
		t.Fatalf("%s not described after it was set", name)
	}

	// A restart decodes it from etcd.
	n.Restart()
	adm = newAdmin(t, n.Addr())
	if !described(adm) {
		t.Errorf("%s not described after a restart", name)
	}
	// Another secret cannot decode it: it is left out (the config beside
	// it is in effect); the old secret named, it decodes again.
	n.Overrides["password.encoder.secret"] = "encoder-secret-2"
	n.Restart()
	adm = newAdmin(t, n.Addr())
	if described(adm) {
		t.Errorf("%s described under a secret that did not encrypt it", name)
	}
	if cfg, ok := brokerConfig(t, adm, "1", "log.cleaner.backoff.ms"); !ok || cfg.Value == nil || *cfg.Value != "16000" {
		t.Errorf("log.cleaner.backoff.ms %+v, want 16000 beside the undecodable password", cfg)
	}
	n.Overrides["password.encoder.old.secret"] = secret
	n.Restart()
	adm = newAdmin(t, n.Addr())
	if !described(adm) {
		t.Errorf("%s not described with password.encoder.old.secret set to the secret that encrypted it", name)
	}

	// Without a secret: INVALID_REQUEST, and nothing stored.
	plainBroker := testutil.StartBroker(t, nil)
	padm := newAdmin(t, plainBroker.Addr())
	for _, validateOnly := range []bool{true, false} {
		if err := set(padm, validateOnly, name, plain); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("validateOnly %v: storing a password without password.encoder.secret: %v, want INVALID_REQUEST", validateOnly, err)
		}
	}
	if cfg, _ := brokerConfig(t, padm, "1", name); cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("%s stored by a broker without a secret", name)
	}
	if err := set(padm, false, "log.cleaner.backoff.ms", "17000"); err != nil {
		t.Errorf("a broker without a secret refuses a config that is no password: %v", err)
	}
}

// The stored form of a password is Kafka's: what the JDK's PBKDF2 and AES
// encrypt as Kafka 3.x did (compat/testdata/PasswordEncoding.java) decodes
// here, and what samsa encodes decodes there, with CBC and GCM, for a
// password that is not ASCII (Java counts its length in UTF-16 units).
func TestPasswordEncodingMatchesJava(t *testing.T) {
	const secret, password = "the-encoder-secret", "pässwörd-🔑"
	algs := []string{"AES/CBC/PKCS5Padding", "AES/GCM/NoPadding"}
	var input strings.Builder
	encoders := map[string]*security.PasswordEncoder{}
	for _, alg := range algs {
		enc, err := security.NewPasswordEncoder(secret, "", "", alg, 256, 2048)
		if err != nil {
			t.Fatal(err)
		}
		encoders[alg] = enc
		mine, err := enc.Encode(password)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&input, "decode\t%s\t%s\nencode\t%s\t%s\t256\t2048\t%s\n", secret, mine, secret, alg, password)
	}
	cmd := exec.Command("java", "-Xmx128m", "-XX:TieredStopAtLevel=1", filepath.Join("testdata", "PasswordEncoding.java"))
	cmd.Stdin = strings.NewReader(input.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2*len(algs) {
		t.Fatalf("java answered %q", out)
	}
	for i, alg := range algs {
		if got := lines[2*i]; got != password {
			t.Errorf("%s: samsa's encoding decodes in Java to %q", alg, got)
		}
		if got, err := encoders[alg].Decode(lines[2*i+1]); err != nil || got != password {
			t.Errorf("%s: Java's %s decodes here to %q, %v", alg, lines[2*i+1], got, err)
		}
	}
}
