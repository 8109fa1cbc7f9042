package compat

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/samsa-io/samsa/broker"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

// OAUTHBEARER (KIP-255, KIP-768) as Kafka serves it, proven with
// franz-go's sasl/oauth, Kafka 4.4's Java client and librdkafka: Kafka's
// unsecured validator, and JWTs signed with RS256 and ES256 checked
// against a JWKS from a file:// URL and from an http:// one that rotates
// its keys.

const unsecuredOAuthJAAS = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="kafka";`

// jwtSigner signs test JWTs with one key and publishes it as a JWK.
type jwtSigner struct {
	alg, kid string
	key      crypto.Signer
}

func newRSASigner(t *testing.T, kid string) *jwtSigner {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &jwtSigner{alg: "RS256", kid: kid, key: k}
}

func newECSigner(t *testing.T, kid string) *jwtSigner {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &jwtSigner{alg: "ES256", kid: kid, key: k}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func jsonB64(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b64(b)
}

// sign returns the compact JWS of claims.
func (s *jwtSigner) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	in := jsonB64(t, map[string]string{"alg": s.alg, "kid": s.kid, "typ": "JWT"}) + "." + jsonB64(t, claims)
	d := sha256.Sum256([]byte(in))
	var sig []byte
	switch k := s.key.(type) {
	case *rsa.PrivateKey:
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, d[:]); err != nil {
			t.Fatal(err)
		}
	case *ecdsa.PrivateKey:
		r, ss, err := ecdsa.Sign(rand.Reader, k, d[:])
		if err != nil {
			t.Fatal(err)
		}
		sig = append(r.FillBytes(make([]byte, 32)), ss.FillBytes(make([]byte, 32))...)
	}
	return in + "." + b64(sig)
}

func (s *jwtSigner) jwk() map[string]string {
	switch k := s.key.Public().(type) {
	case *rsa.PublicKey:
		return map[string]string{"kty": "RSA", "kid": s.kid, "use": "sig", "alg": s.alg, "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
	case *ecdsa.PublicKey:
		raw, _ := k.Bytes()
		return map[string]string{"kty": "EC", "kid": s.kid, "use": "sig", "crv": "P-256", "x": b64(raw[1:33]), "y": b64(raw[33:])}
	}
	return nil
}

func jwksOf(t *testing.T, signers ...*jwtSigner) []byte {
	t.Helper()
	var keys []map[string]string
	for _, s := range signers {
		keys = append(keys, s.jwk())
	}
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// unsecuredJWT is a token as Kafka's unsecured login module makes one.
func unsecuredJWT(t *testing.T, claims map[string]any) string {
	t.Helper()
	return jsonB64(t, map[string]string{"alg": "none"}) + "." + jsonB64(t, claims) + "."
}

// claims are a token's claims for sub, valid for d from now.
func claims(sub string, d time.Duration, extra map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{"sub": sub, "iat": now.Unix() - 1, "exp": now.Add(d).Unix(), "iss": "https://issuer.test", "aud": []string{"samsa"}, "scope": "kafka"}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// rotatingJWKS serves a key set over HTTP, which the test replaces.
type rotatingJWKS struct {
	mu   sync.Mutex
	set  []byte
	gets int
	srv  *httptest.Server
}

func newRotatingJWKS(t *testing.T, set []byte) *rotatingJWKS {
	r := &rotatingJWKS{set: set}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.gets++
		w.Header().Set("Content-Type", "application/json")
		w.Write(r.set)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *rotatingJWKS) replace(set []byte) {
	r.mu.Lock()
	r.set = set
	r.mu.Unlock()
}

// oauthBroker starts a broker with a PLAINTEXT listener and three
// SASL_PLAINTEXT ones serving OAUTHBEARER: UNSECURED (Kafka's default
// validator, scope "kafka" required), SIGNED (a JWKS file, RS256) and
// ROTATING (an http:// JWKS, ES256).
func oauthBroker(t *testing.T, jwksFile, jwksURL string, extra map[string]string) *testutil.Node {
	t.Helper()
	const secured = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	jaas := `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`
	props := map[string]string{
		"listeners":                                                             "PLAINTEXT://127.0.0.1:0,UNSECURED://127.0.0.1:0,SIGNED://127.0.0.1:0,ROTATING://127.0.0.1:0",
		"listener.security.protocol.map":                                        "PLAINTEXT:PLAINTEXT,UNSECURED:SASL_PLAINTEXT,SIGNED:SASL_PLAINTEXT,ROTATING:SASL_PLAINTEXT",
		"inter.broker.listener.name":                                            "PLAINTEXT",
		"auto.create.topics.enable":                                             "true",
		"sasl.enabled.mechanisms":                                               "OAUTHBEARER",
		"listener.name.unsecured.oauthbearer.sasl.jaas.config":                  unsecuredOAuthJAAS,
		"listener.name.signed.oauthbearer.sasl.jaas.config":                     jaas,
		"listener.name.signed.oauthbearer.sasl.server.callback.handler.class":   secured,
		"listener.name.signed.oauthbearer.sasl.oauthbearer.jwks.endpoint.url":   "file://" + jwksFile,
		"listener.name.rotating.oauthbearer.sasl.jaas.config":                   jaas,
		"listener.name.rotating.oauthbearer.sasl.server.callback.handler.class": secured,
		"listener.name.rotating.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": jwksURL,
		"listener.name.rotating.oauthbearer.sasl.oauthbearer.sub.claim.name":    "client_id",
		"org.apache.kafka.sasl.oauthbearer.allowed.urls":                        "file://" + jwksFile + "," + jwksURL,
		"sasl.oauthbearer.expected.audience":                                    "other,samsa",
		"sasl.oauthbearer.expected.issuer":                                      "https://issuer.test",
		"sasl.oauthbearer.clock.skew.seconds":                                   "0",
		// The token's principal is the one authorized: alice may do
		// anything, bob nothing.
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:alice;User:ANONYMOUS",
	}
	for k, v := range extra {
		props[k] = v
	}
	return testutil.StartBroker(t, props)
}

// oauthFixture is a broker of oauthBroker with its signers.
type oauthFixture struct {
	n               *testutil.Node
	rsa, ec, ecNext *jwtSigner
	rotating        *rotatingJWKS
	unsec, sig, rot string // the listeners' addresses
}

func newOAuthFixture(t *testing.T) *oauthFixture {
	t.Helper()
	f := &oauthFixture{rsa: newRSASigner(t, "rsa-1"), ec: newECSigner(t, "ec-1"), ecNext: newECSigner(t, "ec-2")}
	file := testcerts.WriteFile(t, t.TempDir(), "jwks.json", jwksOf(t, f.rsa))
	f.rotating = newRotatingJWKS(t, jwksOf(t, f.ec))
	f.n = oauthBroker(t, file, f.rotating.srv.URL, nil)
	a := f.n.Addrs()
	f.unsec, f.sig, f.rot = a[1], a[2], a[3]
	return f
}

// oauthClient is a kgo client authenticating with the tokens tok makes.
func oauthClient(t *testing.T, addr string, tok func() string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newKgo(t, addr, append([]kgo.Opt{kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		return oauth.Auth{Token: tok()}, nil
	})), kgo.AllowAutoTopicCreation()}, opts...)...)
}

// TestFranzOAuthBearer: franz-go authenticates with good tokens on each
// validator and is refused, with Kafka's challenge and error, for an
// expired token, a wrong audience or issuer, a bad signature, a missing
// scope, an unknown key and an alg none token on a JWKS listener.
func TestFranzOAuthBearer(t *testing.T) {
	f := newOAuthFixture(t)
	good := []struct {
		name, addr, tok string
	}{
		{"unsecured", f.unsec, unsecuredJWT(t, claims("alice", time.Hour, nil))},
		{"RS256 from a JWKS file", f.sig, f.rsa.sign(t, claims("alice", time.Hour, nil))},
		{"ES256 from a JWKS URL, client_id as the principal", f.rot, f.ec.sign(t, claims("", time.Hour, map[string]any{"client_id": "alice", "sub": nil}))},
	}
	for i, c := range good {
		cl := oauthClient(t, c.addr, func() string { return c.tok })
		produceAll(t, cl, &kgo.Record{Topic: fmt.Sprintf("oauth-%d", i), Value: []byte(c.name)})
	}

	// bob authenticates, and is refused as bob.
	for _, c := range []struct{ addr, tok string }{
		{f.unsec, unsecuredJWT(t, claims("bob", time.Hour, nil))},
		{f.rot, f.ec.sign(t, claims("alice", time.Hour, map[string]any{"client_id": "bob"}))},
	} {
		cl := oauthClient(t, c.addr, func() string { return c.tok })
		err := cl.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Topic: "oauth-0", Value: []byte("bob")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("produce as bob: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
	}

	other := newRSASigner(t, "rsa-1") // the same kid, another key
	bad := []struct {
		name, addr, tok, status string
	}{
		{"unsecured expired", f.unsec, unsecuredJWT(t, claims("alice", -time.Minute, nil)), `{"status":"invalid_token"}`},
		{"unsecured without the required scope", f.unsec, unsecuredJWT(t, claims("alice", time.Hour, map[string]any{"scope": "other"})), `{"status":"insufficient_scope", "scope":"[kafka]"}`},
		{"unsecured without sub", f.unsec, unsecuredJWT(t, claims("", time.Hour, map[string]any{"sub": nil})), `{"status":"invalid_token"}`},
		{"signed expired", f.sig, f.rsa.sign(t, claims("alice", -time.Minute, nil)), `{"status":"invalid_token"}`},
		{"signed for another audience", f.sig, f.rsa.sign(t, claims("alice", time.Hour, map[string]any{"aud": "elsewhere"})), `{"status":"invalid_token"}`},
		{"signed by another issuer", f.sig, f.rsa.sign(t, claims("alice", time.Hour, map[string]any{"iss": "https://evil.test"})), `{"status":"invalid_token"}`},
		{"signed without iat", f.sig, f.rsa.sign(t, claims("alice", time.Hour, map[string]any{"iat": nil})), `{"status":"invalid_token"}`},
		{"bad signature", f.sig, other.sign(t, claims("alice", time.Hour, nil)), `{"status":"invalid_token"}`},
		{"unknown key", f.sig, newRSASigner(t, "rsa-9").sign(t, claims("alice", time.Hour, nil)), `{"status":"invalid_token"}`},
		{"alg none on a JWKS listener", f.sig, unsecuredJWT(t, claims("alice", time.Hour, nil)), `{"status":"invalid_token"}`},
	}
	for _, c := range bad {
		// kgo's own error for the refused exchange: Kafka's code and the
		// challenge as its message.
		cl := oauthClient(t, c.addr, func() string { return c.tok })
		err := cl.Ping(testCtx(t, 20*time.Second))
		if err == nil || !strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) || !strings.Contains(err.Error(), c.status) {
			t.Errorf("%s: Ping: %v, want SASL_AUTHENTICATION_FAILED with %s", c.name, err, c.status)
		}
		// On the wire: the challenge, then the failure after %x01.
		r := dialRaw(t, c.addr)
		if auth := oauthHandshake(t, r, c.tok); auth.ErrorCode != 0 || string(auth.SASLAuthBytes) != c.status {
			t.Errorf("%s: first SaslAuthenticate: %+v, want the challenge %s", c.name, auth, c.status)
		}
		last := kmsg.NewPtrSASLAuthenticateRequest()
		last.Version, last.SASLAuthBytes = 1, []byte{0x01}
		resp := r.roundTrip(last).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != c.status {
			t.Errorf("%s: %%x01: %+v, want SASL_AUTHENTICATION_FAILED %q", c.name, resp, c.status)
		}
		r.closed(c.name)
	}

	// Not an RFC 7628 message: Kafka's SaslException, whose reason the
	// client is not told.
	r := dialRaw(t, f.unsec)
	auth := oauthHandshake(t, r, "")
	if auth.ErrorCode != kerr.SaslAuthenticationFailed.Code || auth.ErrorMessage == nil ||
		*auth.ErrorMessage != "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER" {
		t.Errorf("a malformed first message: %+v", auth)
	}
	r.closed("malformed first message")
}

// oauthHandshake sends SaslHandshake OAUTHBEARER and the client's first
// message with tok ("" sends a malformed message).
func oauthHandshake(t *testing.T, r *rawConn, tok string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	msg := []byte("n,,\x01auth=Bearer " + tok + "\x01\x01")
	if tok == "" {
		msg = []byte("y,,\x01auth=Bearer x\x01\x01")
	}
	return saslFirst(t, r, "OAUTHBEARER", msg)
}

// The token's exp bounds the session (KIP-368), with no
// connections.max.reauth.ms: SaslAuthenticate tells the time left, a
// connection going on past it is closed, and franz-go, re-authenticating
// with a fresh token each time, produces through several lifetimes.
func TestOAuthBearerSessionLifetime(t *testing.T) {
	f := newOAuthFixture(t)
	const life = 2 * time.Second
	r := dialRaw(t, f.sig)
	auth := oauthHandshake(t, r, f.rsa.sign(t, claims("alice", life, nil)))
	if auth.ErrorCode != 0 || auth.SessionLifetimeMillis <= 0 || auth.SessionLifetimeMillis > life.Milliseconds() {
		t.Fatalf("SaslAuthenticate: %+v, want a session lifetime in (0, %d] ms", auth, life.Milliseconds())
	}
	testutil.Eventually(t, 15*time.Second, func() error {
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 4
		r.send(md)
		if _, err := r.frame(); err != nil {
			return nil // closed: the token expired
		}
		return fmt.Errorf("the connection still serves after its token expired")
	})

	var mu sync.Mutex
	tokens := 0
	cl := oauthClient(t, f.sig, func() string {
		mu.Lock()
		tokens++
		mu.Unlock()
		return f.rsa.sign(t, claims("alice", life, nil))
	})
	for start := time.Now(); time.Since(start) < 3*life; {
		produceAll(t, cl, &kgo.Record{Topic: "oauth-reauth", Value: []byte("x")})
	}
	mu.Lock()
	defer mu.Unlock()
	if tokens < 2 {
		t.Errorf("franz-go authenticated %d times over three token lifetimes", tokens)
	}
}

// A JWKS URL whose provider rotates its keys: a token signed by the new
// key (a kid the broker has not seen) makes the broker fetch the set at
// once, and the token is accepted; the old key, gone from the set, no
// longer verifies once the set is fetched again.
func TestOAuthBearerKeyRotation(t *testing.T) {
	f := newOAuthFixture(t)
	tok := func(s *jwtSigner) string {
		return s.sign(t, claims("", time.Hour, map[string]any{"client_id": "alice"}))
	}
	if err := oauthClient(t, f.rot, func() string { return tok(f.ec) }).Ping(testCtx(t, 20*time.Second)); err != nil {
		t.Fatalf("the first key: %v", err)
	}
	f.rotating.replace(jwksOf(t, f.ecNext))
	if err := oauthClient(t, f.rot, func() string { return tok(f.ecNext) }).Ping(testCtx(t, 20*time.Second)); err != nil {
		t.Fatalf("the rotated key: %v", err)
	}
	f.rotating.mu.Lock()
	gets := f.rotating.gets
	f.rotating.mu.Unlock()
	if gets < 2 {
		t.Errorf("the broker fetched the key set %d times, want one at start and one for the new kid", gets)
	}
	err := oauthClient(t, f.rot, func() string { return tok(f.ec) }).Ping(testCtx(t, 20*time.Second))
	if err == nil || !strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) {
		t.Fatalf("the retired key after the set was fetched again: %v", err)
	}
}

// A broker configured for JWKS validation without an expected audience
// or issuer does not start, as Kafka 4.4's BrokerJwtValidator refuses;
// nor with a JWKS URL that org.apache.kafka.sasl.oauthbearer.allowed.urls
// (Kafka 4's system property) does not list, with Kafka's message.
func TestOAuthBearerNeedsAudienceAndIssuer(t *testing.T) {
	file := testcerts.WriteFile(t, t.TempDir(), "jwks.json", jwksOf(t, newRSASigner(t, "k")))
	for _, unset := range []string{"sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer", "org.apache.kafka.sasl.oauthbearer.allowed.urls"} {
		props := map[string]string{
			"listeners":                                      "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
			"inter.broker.listener.name":                     "PLAINTEXT",
			"sasl.enabled.mechanisms":                        "OAUTHBEARER",
			"sasl.jaas.config":                               `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
			"sasl.server.callback.handler.class":             "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
			"sasl.oauthbearer.jwks.endpoint.url":             "file://" + file,
			"sasl.oauthbearer.expected.audience":             "samsa",
			"sasl.oauthbearer.expected.issuer":               "https://issuer.test",
			"org.apache.kafka.sasl.oauthbearer.allowed.urls": "file://" + file + ",https://idp.test/keys",
		}
		want := unset
		if unset == "org.apache.kafka.sasl.oauthbearer.allowed.urls" {
			props[unset] = "https://idp.test/keys" // only another URL
			want = fmt.Sprintf("file://%s is not allowed. Update system property '%s' to allow file://%s", file, unset, file)
		} else {
			delete(props, unset)
		}
		err := brokerStartErr(t, props)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without %s: %v, want an error saying %q", unset, err, want)
		}
	}
}

// Kafka 4.4's Java client (console producer and consumer): with the
// unsecured login module (unsecuredLoginStringClaim_sub), and with a
// signed JWT from a file through OAuthBearerLoginCallbackHandler.
func TestJavaClientOAuthBearer(t *testing.T) {
	f := newOAuthFixture(t)
	dir := t.TempDir()
	unsecured := `security.protocol=SASL_PLAINTEXT
sasl.mechanism=OAUTHBEARER
sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice" unsecuredLoginListClaim_scope=",kafka";
`
	runConsoleRoundTrip(t, f.unsec, dir, testcerts.WriteFile(t, dir, "unsecured.properties", []byte(unsecured)), "java-oauth-unsecured")

	tokFile := testcerts.WriteFile(t, dir, "token.jwt", []byte(f.rsa.sign(t, claims("alice", time.Hour, nil))))
	signed := fmt.Sprintf(`security.protocol=SASL_PLAINTEXT
sasl.mechanism=OAUTHBEARER
sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;
sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler
sasl.oauthbearer.token.endpoint.url=file://%s
`, tokFile)
	t.Setenv("JAVA_TOOL_OPTIONS", "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file://"+tokFile)
	runConsoleRoundTrip(t, f.sig, dir, testcerts.WriteFile(t, dir, "signed.properties", []byte(signed)), "java-oauth-signed")
}

// librdkafka (confluent-kafka): its built-in unsecured JWT
// (enable.sasl.oauthbearer.unsecure.jwt) and a signed token from an
// oauth_cb.
func TestLibrdkafkaOAuthBearer(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t)
	runSecurePy(t, f.unsec, "rdkafka-oauth-unsecured", map[string]string{
		"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
		"enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": "principal=alice scope=kafka",
	})
	runSecurePy(t, f.sig, "rdkafka-oauth-signed", map[string]string{
		"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
		"samsa.oauth.token": f.rsa.sign(t, claims("alice", time.Hour, nil)), "samsa.oauth.principal": "alice",
	})
}

// runSecurePy runs compat/python/secure.py against addr with conf.
func runSecurePy(t *testing.T, addr, topic string, conf map[string]string) {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(conf)
	out, err := exec.CommandContext(testCtx(t, 3*time.Minute), venvPython(t, root), filepath.Join(root, "compat", "python", "secure.py"), addr, topic, string(b)).Output()
	var res struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err != nil || json.Unmarshal(out, &res) != nil || !res.OK {
		t.Errorf("librdkafka %s: %v %s %s", topic, err, out, res.Error)
	}
}

// brokerStartErr starts a broker with props (and a log dir of its own)
// and returns Start's error, closing a broker that started.
func brokerStartErr(t *testing.T, props map[string]string) error {
	t.Helper()
	props["node.id"], props["log.dirs"] = "1", t.TempDir()
	p, err := config.New(props)
	if err != nil {
		return err
	}
	b, err := broker.New(broker.Config{Props: p, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		return err
	}
	b.Close()
	return nil
}
