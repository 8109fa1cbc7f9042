package restproxy_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

// withUser adds HTTP Basic credentials to do's headers.
func withUser(user, pass string, headers ...string) []string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, pass)
	return append(headers, "Authorization", req.Header.Get("Authorization"))
}

// startSASLProxy starts a broker serving the proxy on a SASL PLAIN
// listener with ACLs (users admin, a super user, alice and bob, each's
// password NAME-secret), with overrides, and an admin client of it.
func startSASLProxy(t *testing.T, overrides map[string]string) (*testutil.Node, *kadm.Client) {
	t.Helper()
	props := map[string]string{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`,
		"sasl.mechanism.inter.broker.protocol":                "PLAIN",
		"authorizer.class.name":                               "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                         "User:admin",
		"samsa.http.proxy.listener":                           "127.0.0.1:0",
	}
	maps.Copy(props, overrides)
	n := testutil.StartBroker(t, props)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return n, kadm.NewClient(cl)
}

// TestProxyAuthenticatesAndAuthorizesAsTheUser: on a SASL listener the
// proxy needs HTTP Basic credentials of a SASL user, and the cluster's
// ACLs decide for that user over HTTP as on the Kafka port.
func TestProxyAuthenticatesAndAuthorizesAsTheUser(t *testing.T) {
	t.Parallel()
	n, adm := startSASLProxy(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range []string{"open", "secret"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	acl := kadm.NewACLs().Allow("User:alice").Topics("open").Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe).Groups("g-alice").ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || res[0].Err != nil {
		t.Fatalf("ACLs: %v %+v", err, res)
	}
	u := "http://" + n.ProxyAddr()
	alice := func(h ...string) []string { return withUser("alice", "alice-secret", h...) }

	got := do(t, "GET", u+"/topics", "")
	wantJSON(t, "no credentials", got, 401, `{"error_code":401,"message":"Unauthorized"}`)
	if got := do(t, "GET", u+"/topics", "", withUser("alice", "wrong")...); got.status != 401 || !jsonHasCode(got.body, 40101) {
		t.Fatalf("a wrong password: %d %s", got.status, got.body)
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		got := do(t, "GET", u+"/topics", "", alice()...)
		if got.status != 200 || got.body != `["open"]` {
			return fmt.Errorf("alice's topics: %d %s", got.status, got.body)
		}
		return nil
	})
	if got := do(t, "GET", u+"/topics/secret", "", alice()...); got.status != 403 || !jsonHasCode(got.body, 40301) {
		t.Fatalf("alice's GET of secret: %d %s", got.status, got.body)
	}
	wantJSON(t, "alice produces to open", do(t, "POST", u+"/topics/open", `{"records":[{"value":"hi"}]}`, alice("Content-Type", ctJSON)...), 200,
		`{"offsets":[{"partition":0,"offset":0,"error_code":null,"error":null}],"key_schema_id":null,"value_schema_id":null}`)
	got = do(t, "POST", u+"/topics/secret", `{"records":[{"value":"hi"}]}`, alice("Content-Type", ctJSON)...)
	if got.status != 403 || field(t, got.body, "offsets.0.error_code") != 40301.0 {
		t.Fatalf("alice produces to secret: %d %s", got.status, got.body)
	}
	if got := do(t, "POST", u+"/v3/clusters/"+clusterID(t, adm)+"/topics", `{"topic_name":"mine"}`, alice("Content-Type", "application/json")...); got.status != 403 || !jsonHasCode(got.body, 40301) {
		t.Fatalf("alice creates a topic: %d %s", got.status, got.body)
	}

	// alice reads in her group; bob, with no ACL, is refused.
	for _, c := range []struct {
		user, pass, group string
		status            int
	}{{"alice", "alice-secret", "g-alice", 200}, {"bob", "bob-secret", "g-bob", 403}} {
		h := func(hs ...string) []string { return withUser(c.user, c.pass, hs...) }
		inst := u + "/consumers/" + c.group + "/instances/i"
		if got := do(t, "POST", u+"/consumers/"+c.group, `{"name":"i","format":"json","auto.offset.reset":"earliest"}`, h("Content-Type", ctV2)...); got.status != 200 {
			t.Fatalf("%s creates an instance: %d %s", c.user, got.status, got.body)
		}
		if got := do(t, "POST", inst+"/subscription", `{"topics":["open"]}`, h("Content-Type", ctV2)...); got.status != 204 {
			t.Fatalf("%s subscribes: %d %s", c.user, got.status, got.body)
		}
		testutil.Eventually(t, 30*time.Second, func() error {
			got := do(t, "GET", inst+"/records?timeout=300", "", h("Accept", ctJSON)...)
			switch {
			case got.status != c.status:
				return fmt.Errorf("%s reads: %d %s", c.user, got.status, got.body)
			case c.status == 200 && got.body != `[{"topic":"open","key":null,"value":"hi","partition":0,"offset":0}]`:
				return fmt.Errorf("%s reads: %s", c.user, got.body)
			case c.status == 403 && !jsonHasCode(got.body, 40301):
				return fmt.Errorf("%s reads: %s", c.user, got.body)
			}
			return nil
		})
		// Another user is not told of the instance.
		if got := do(t, "GET", inst+"/subscription", "", withUser("admin", "admin-secret")...); got.status != 404 {
			t.Fatalf("admin reads %s's instance: %d %s", c.user, got.status, got.body)
		}
	}
}

func clusterID(t *testing.T, adm *kadm.Client) string {
	t.Helper()
	md, err := adm.BrokerMetadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return md.Cluster
}

// TestProxyHTTPS: an https:// listener serves TLS with the settings of
// listener.name.rest_proxy.ssl.*; base_uri says https.
func TestProxyHTTPS(t *testing.T) {
	t.Parallel()
	ca := testcerts.NewCA(t, "proxy-ca")
	leaf := ca.Issue(t, pkix.Name{CommonName: "proxy"}, nil)
	n := testutil.StartBroker(t, map[string]string{
		"samsa.http.proxy.listener":                               "https://127.0.0.1:0",
		"listener.name.rest_proxy.ssl.keystore.type":              "PEM",
		"listener.name.rest_proxy.ssl.keystore.certificate.chain": leaf.CertPEM(),
		"listener.name.rest_proxy.ssl.keystore.key":               leaf.KeyPEM(t),
	})
	cl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	u := "https://" + n.ProxyAddr()
	resp, err := cl.Post(u+"/consumers/g", ctV2, strings.NewReader(`{"name":"i"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || field(t, string(body), "base_uri") != u+"/consumers/g/instances/i" {
		t.Fatalf("create over HTTPS: %d %s", resp.StatusCode, body)
	}
	// Plain HTTP gets Go's TLS server's refusal, not the API.
	if resp, err := http.Get("http://" + n.ProxyAddr() + "/topics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP on an HTTPS listener: %s", resp.Status)
		}
	}
}
