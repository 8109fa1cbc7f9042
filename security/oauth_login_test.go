package security

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const loginModule = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required `

func noProps(string) string { return "" }

// The unsecured login's token passes the unsecured validator configured
// as Kafka's brokers pair them (one JAAS config for both), with its
// claims, scope list and lifetime; a login without a principal, or with a
// malformed option, is refused at start.
func TestUnsecuredLogin(t *testing.T) {
	jaas := loginModule + `unsecuredLoginStringClaim_sub="broker" unsecuredLoginListClaim_scope="|kafka|other" unsecuredLoginNumberClaim_n="7" unsecuredLoginLifetimeSeconds="60" unsecuredLoginExtension_traceId="42" unsecuredValidatorRequiredScope="kafka";`
	l, err := NewOAuthLogin(OAuthLoginConfig{JAAS: jaas, Prop: noProps})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := l.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := ParseJAAS(jaas)
	v, err := newUnsecuredValidator(opts)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	got, err := v.validate(context.Background(), tok, now)
	if err != nil {
		t.Fatalf("the validator refused the login's token %s: %v", tok, err)
	}
	if got.principal != "broker" || got.expires.Sub(now) < 59*time.Second || got.expires.Sub(now) > 61*time.Second {
		t.Errorf("principal %s, expires in %v; want broker, 60s", got.principal, got.expires.Sub(now))
	}
	if e := l.Extensions(); e["traceId"] != "42" {
		t.Errorf("extensions %v", e)
	}
	for _, bad := range []string{
		loginModule + `unsecuredLoginStringClaim_name="x";`,
		loginModule + `unsecuredLoginStringClaim_sub="b" unsecuredLoginNumberClaim_n="seven";`,
		loginModule + `unsecuredLoginStringClaim_sub="b" unsecuredLoginStringClaim_exp="1";`,
		loginModule + `unsecuredLoginStringClaim_sub="b" unsecuredLoginLifetimeSeconds="0";`,
	} {
		if _, err := NewOAuthLogin(OAuthLoginConfig{JAAS: bad, Prop: noProps}); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// With OAuthBearerLoginCallbackHandler the token comes from
// sasl.oauthbearer.token.endpoint.url: a file read at every login, or a
// token endpoint asked with the client-credentials grant, whose token is
// kept for four fifths of its expires_in. A URL outside the allowed list
// is refused at start, as Kafka 4 refuses it.
func TestOIDCLogin(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token.jwt")
	if err := os.WriteFile(file, []byte("a.b.c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		id, secret, ok := r.BasicAuth()
		if err := r.ParseForm(); err != nil || !ok || id != "broker" || secret != "s3cret" ||
			r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("scope") != "kafka" {
			http.Error(w, "bad request", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":3600}`, asked.Load())
	}))
	defer srv.Close()
	props := func(url string) func(string) string {
		return func(key string) string {
			switch key {
			case "sasl.login.callback.handler.class":
				return loginHandlerClasses[0]
			case "sasl.oauthbearer.token.endpoint.url":
				return url
			}
			return ""
		}
	}
	allowed := []string{"file://" + file, srv.URL}
	l, err := NewOAuthLogin(OAuthLoginConfig{JAAS: loginModule + ";", Prop: props("file://" + file), AllowedURLs: allowed})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := l.Token(context.Background()); err != nil || tok != "a.b.c" {
		t.Errorf("token from the file: %q %v", tok, err)
	}
	jaas := loginModule + `clientId="broker" clientSecret="s3cret" scope="kafka";`
	l, err = NewOAuthLogin(OAuthLoginConfig{JAAS: jaas, Prop: props(srv.URL), AllowedURLs: allowed})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if tok, err := l.Token(context.Background()); err != nil || tok != "tok-1" {
			t.Errorf("token from the endpoint: %q %v", tok, err)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the endpoint was asked %d times for a token valid an hour, want once", n)
	}
	if _, err := NewOAuthLogin(OAuthLoginConfig{JAAS: jaas, Prop: props(srv.URL)}); err == nil || !strings.Contains(err.Error(), AllowedURLsProperty) {
		t.Errorf("a token endpoint not allowed: %v", err)
	}
	if _, err := NewOAuthLogin(OAuthLoginConfig{JAAS: loginModule + ";", Prop: props(srv.URL), AllowedURLs: allowed}); err == nil {
		t.Error("a token endpoint without clientId and clientSecret: accepted")
	}
}
