package compat

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

// securedRegistryProps are a broker's with a SASL_PLAINTEXT listener
// (PLAIN users admin, a super user, and alice; SCRAM-SHA-512),
// StandardAuthorizer, and the registry on HTTPS (a key issued by ca, and
// trust in ca for the writes forwarded to another broker's) with basic
// authentication.
func securedRegistryProps(t *testing.T, ca *testcerts.CA) map[string]string {
	leaf := ca.Issue(t, pkix.Name{CommonName: "registry"}, nil)
	return map[string]string{
		"listeners":                                                    "SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name":                                   "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                                      "PLAIN,SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol":                         "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":          `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config":  "org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"authorizer.class.name":                                        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                                  "User:admin",
		"samsa.schema.registry.listener":                               "https://127.0.0.1:0",
		"authentication.method":                                        "BASIC",
		"listener.name.schema_registry.ssl.keystore.type":              "PEM",
		"listener.name.schema_registry.ssl.keystore.certificate.chain": leaf.CertPEM(),
		"listener.name.schema_registry.ssl.keystore.key":               leaf.KeyPEM(t),
		"listener.name.schema_registry.ssl.truststore.type":            "PEM",
		"listener.name.schema_registry.ssl.truststore.certificates":    ca.CertPEM(),
	}
}

// securedRegistryClient is a franz-go registry client of b's HTTPS
// registry, trusting ca.
func securedRegistryClient(t *testing.T, ca *testcerts.CA, b *testutil.Node, opts ...sr.ClientOpt) *sr.Client {
	t.Helper()
	httpcl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	cl, err := sr.NewClient(append([]sr.ClientOpt{sr.URLs("https://" + b.RegistryAddr()), sr.HTTPClient(httpcl)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// registryErrorCode is the error code of the registry's answer err.
func registryErrorCode(t *testing.T, err error) int {
	t.Helper()
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	t.Fatalf("not the registry's answer: %v", err)
	return 0
}

// TestSchemaRegistrySecured: the registry on HTTPS, with HTTP basic
// authentication against the cluster's SASL users (PLAIN from the
// listener's JAAS config, SCRAM from AlterUserScramCredentials) and the
// cluster's ACLs, a subject checked as its topic: 401 without valid
// credentials, 403 40301 without the ACL, lists cut to what the
// principal may read.
func TestSchemaRegistrySecured(t *testing.T) {
	ca := testcerts.NewCA(t, "registry-ca")
	b := testutil.StartBroker(t, securedRegistryProps(t, ca))
	ctx := testCtx(t, 2*time.Minute)
	client := func(opts ...sr.ClientOpt) *sr.Client { return securedRegistryClient(t, ca, b, opts...) }
	code := func(err error) int { return registryErrorCode(t, err) }
	admin := client(sr.BasicAuth("admin", "admin-secret"))
	testutil.Eventually(t, 30*time.Second, func() error {
		_, err := admin.CreateSchema(ctx, "orders-value", sr.Schema{Schema: `"string"`})
		return err
	})
	if _, err := admin.CreateSchema(ctx, "secret-value", sr.Schema{Schema: `"long"`}); err != nil {
		t.Fatal(err)
	}

	if _, err := client().Subjects(ctx); code(err) != 401 {
		t.Fatalf("no credentials: %v, want 401", err)
	}
	if _, err := client(sr.BasicAuth("alice", "wrong")).Subjects(ctx); code(err) != 401 {
		t.Fatalf("a wrong password: %v, want 401", err)
	}
	alice := client(sr.BasicAuth("alice", "alice-secret"))
	if _, err := alice.CreateSchema(ctx, "orders-value", sr.Schema{Schema: `"string"`}); code(err) != 40301 {
		t.Fatalf("alice without an ACL: %v, want 40301", err)
	}

	adm := kadm.NewClient(newKgo(t, b.Addr(), asUser("admin")))
	acl := kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("orders").Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	carol := kadm.NewACLs().Allow("User:carol").AllowHosts().Topics("ord").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed)
	for _, a := range []*kadm.ACLBuilder{acl, carol} {
		if res, err := adm.CreateACLs(ctx, a); err != nil || res[0].Err != nil {
			t.Fatalf("CreateACLs: %v %+v", err, res)
		}
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-secret"}}); err != nil {
		t.Fatal(err)
	}
	// The ACLs reach the authorizer through a watch.
	testutil.Eventually(t, 30*time.Second, func() error {
		_, err := alice.CreateSchema(ctx, "orders-value", sr.Schema{Schema: `"string"`})
		return err
	})
	subjects, err := alice.Subjects(ctx)
	if err != nil || !slices.Equal(subjects, []string{"orders-value"}) {
		t.Fatalf("alice lists %v, %v; want [orders-value]", subjects, err)
	}
	if _, err := alice.SchemaByVersion(ctx, "secret-value", -1); code(err) != 40301 {
		t.Fatalf("alice reading secret-value: %v, want 40301", err)
	}

	scram := client(sr.BasicAuth("carol", "carol-secret"))
	testutil.Eventually(t, 30*time.Second, func() error {
		_, err := scram.SchemaByVersion(ctx, "orders-value", -1)
		return err
	})
	if _, err := scram.CreateSchema(ctx, "orders-value", sr.Schema{Schema: `"bytes"`}); code(err) != 40301 {
		t.Fatalf("carol registering: %v, want 40301", err)
	}
	if _, err := client(sr.BasicAuth("carol", "not-carols")).Subjects(ctx); code(err) != 401 {
		t.Fatalf("carol's wrong password: %v, want 401", err)
	}
}

// TestSchemaRegistrySecuredForwarding: on two brokers with the secured
// registry, a write sent to the broker that does not write is checked
// there (40301) and forwarded over HTTPS, with the client's credentials,
// to the one that does.
func TestSchemaRegistrySecuredForwarding(t *testing.T) {
	ca := testcerts.NewCA(t, "registry-ca")
	c := testutil.StartCluster(t, 2, securedRegistryProps(t, ca))
	ctx := testCtx(t, 2*time.Minute)
	admin1 := securedRegistryClient(t, ca, c.Node(1), sr.BasicAuth("admin", "admin-secret"))
	testutil.Eventually(t, 30*time.Second, func() error {
		_, err := admin1.CreateSchema(ctx, "ready-value", sr.Schema{Schema: `"string"`})
		return err
	})
	adm := kadm.NewClient(newKgo(t, c.Node(1).Addr(), asUser("admin")))
	td, err := adm.ListTopics(ctx, "_schemas")
	if err != nil {
		t.Fatal(err)
	}
	other := c.Node(3 - td["_schemas"].Partitions[0].Leader)
	if _, err := securedRegistryClient(t, ca, other, sr.BasicAuth("alice", "alice-secret")).CreateSchema(ctx, "orders-value", sr.Schema{Schema: `"long"`}); registryErrorCode(t, err) != 40301 {
		t.Fatalf("alice through %s: %v, want 40301", other, err)
	}
	s, err := securedRegistryClient(t, ca, other, sr.BasicAuth("admin", "admin-secret")).CreateSchema(ctx, "orders-value", sr.Schema{Schema: `"long"`})
	if err != nil || s.ID != 2 {
		t.Fatalf("admin through %s: %+v, %v", other, s, err)
	}
}
