package compat

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testutil"
)

const tokenSecret = "the-cluster-token-secret"

// tokenBroker starts a broker serving delegation tokens: a PLAINTEXT
// listener (the test's admin, User:ANONYMOUS, a super user) and a
// SASL_PLAINTEXT one with SCRAM-SHA-256 and -512; expired tokens are
// swept every 200 ms; StandardAuthorizer, nothing allowed without an ACL.
// alice, bob and carol have SCRAM passwords <user>-secret; alice may use
// every topic and group and create tokens for bob. extra overrides the
// broker's properties.
func tokenBroker(t *testing.T, extra map[string]string) (*testutil.Node, *kadm.Client) {
	t.Helper()
	props := map[string]string{
		"listeners":                                 "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name":                "PLAINTEXT",
		"sasl.enabled.mechanisms":                   "SCRAM-SHA-256,SCRAM-SHA-512",
		"delegation.token.secret.key":               tokenSecret,
		"delegation.token.expiry.check.interval.ms": "200",
		"authorizer.class.name":                     "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found":            "false",
		"super.users":                               "User:ANONYMOUS",
		"auto.create.topics.enable":                 "true",
	}
	for k, v := range extra {
		props[k] = v
	}
	n := testutil.StartBroker(t, props)
	return n, tokenPrincipals(t, n.Addrs()[0])
}

// tokenPrincipals gives alice, bob and carol their SCRAM passwords and
// alice her ACLs, through the PLAINTEXT listener at plainAddr.
func tokenPrincipals(t *testing.T, plainAddr string) *kadm.Client {
	t.Helper()
	adm := newAdmin(t, plainAddr)
	ctx := testCtx(t, 30*time.Second)
	// One mechanism per request: Kafka refuses a user altered twice in one.
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		var scrams []kadm.UpsertSCRAM
		for _, u := range []string{"alice", "bob", "carol"} {
			scrams = append(scrams, kadm.UpsertSCRAM{User: u, Mechanism: m, Iterations: 4096, Password: u + "-secret"})
		}
		res, err := adm.AlterUserSCRAMs(ctx, nil, scrams)
		if err == nil {
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("*").Groups("*").Operations(kadm.OpAll))
	createUserACL(t, plainAddr, "User:alice", "User:bob", kmsg.ACLOperationCreateTokens)
	return adm
}

// createACLs creates the ACLs of b and fails the test on any error.
func createACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(testCtx(t, 20*time.Second), b)
	if err == nil {
		for _, r := range res {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// createUserACL allows principal op on the User resource user (kadm
// builds no User ACLs: a raw CreateAcls).
func createUserACL(t *testing.T, addr, principal, user string, op kmsg.ACLOperation) {
	t.Helper()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeUser, user, kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, kmsg.ACLPermissionTypeAllow
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = append(req.Creations, c)
	resp, err := req.RequestWith(testCtx(t, 20*time.Second), newKgo(t, addr))
	if err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateAcls %s %v on User %s: %v %+v", principal, op, user, err, resp)
	}
}

// scramUser is a SCRAM-SHA-256 client of user (password user-secret).
func scramUser(user string) kgo.Opt {
	return kgo.SASL(scram.Auth{User: user, Pass: user + "-secret"}.AsSha256Mechanism())
}

// tokenAuth authenticates with a delegation token, as Kafka's
// ScramLoginModule with tokenauth="true" does.
func tokenAuth(id string, mac []byte, sha512 bool) kgo.Opt {
	a := scram.Auth{User: id, Pass: base64.StdEncoding.EncodeToString(mac), IsToken: true}
	if sha512 {
		return kgo.SASL(a.AsSha512Mechanism())
	}
	return kgo.SASL(a.AsSha256Mechanism())
}

func wantTokenHMAC(id string) []byte {
	m := hmac.New(sha512.New, []byte(tokenSecret))
	m.Write([]byte(id))
	return m.Sum(nil)
}

// franz-go's kadm creates, describes, renews and expires delegation
// tokens as Kafka answers them, and a client authenticating with a token
// (SCRAM, tokenauth=true) is its owner: alice's token produces and
// consumes where alice may, bob's (created by alice for him, KIP-373) is
// refused there. Tokens are refused on PLAINTEXT and on a token's own
// connection, an owner other than oneself needs CreateTokens on it, only
// owners, renewers and those allowed see or renew a token, and an expired
// token authenticates no more: at once with an expiry of -1, after the
// sweep with a short one.
func TestFranzDelegationTokens(t *testing.T) {
	n, _ := tokenBroker(t, nil)
	franzDelegationTokens(t, n.Addrs()[0], n.Addrs()[1])
}

// The same against Apache Kafka 4.4 (SCRAM's JAAS configs are Kafka's
// only addition): the answers franz-go checks are Kafka's.
func TestFranzDelegationTokensKafkaReference(t *testing.T) {
	t.Parallel()
	props := map[string]string{
		"sasl.enabled.mechanisms":                                     "SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"delegation.token.secret.key":                                 tokenSecret,
		"delegation.token.expiry.check.interval.ms":                   "200",
		"authorizer.class.name":                                       "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found":                              "false",
		"super.users":                                                 "User:ANONYMOUS",
		"auto.create.topics.enable":                                   "true",
	}
	ctx := testCtx(t, 5*time.Minute)
	kb, err := kafkaref.Start(ctx, kafkaLibs(t, ctx), kafkaref.Options{Dir: t.TempDir(), HeapMB: 512, Props: props, Listeners: []string{"SASL_PLAINTEXT"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Stop(30 * time.Second) })
	tokenPrincipals(t, kb.Addr)
	franzDelegationTokens(t, kb.Addr, kb.Listeners["SASL_PLAINTEXT"])
}

// franzDelegationTokens is TestFranzDelegationTokens against the broker
// whose PLAINTEXT and SASL_PLAINTEXT listeners are given, set up as
// tokenPrincipals leaves it.
func franzDelegationTokens(t *testing.T, plainAddr, saslAddr string) {
	ctx := testCtx(t, 2*time.Minute)
	as := func(user string) *kadm.Client { return kadm.NewClient(newKgo(t, saslAddr, scramUser(user))) }
	alice, bob, carol := as("alice"), as("bob"), as("carol")
	// Kafka's brokers learn new SCRAM credentials a moment later.
	for _, u := range []string{"alice", "bob", "carol"} {
		testutil.Eventually(t, 30*time.Second, func() error {
			return newKgo(t, saslAddr, scramUser(u), kgo.RetryTimeout(time.Second)).Ping(ctx)
		})
	}

	if _, err := newAdmin(t, plainAddr).CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Errorf("create on PLAINTEXT: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}

	before := time.Now().Truncate(time.Millisecond)
	tok, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Renewers: []kadm.Principal{{Type: "User", Name: "carol"}}})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Owner != (kadm.Principal{Type: "User", Name: "alice"}) || tok.TokenRequesterPrincipal != tok.Owner {
		t.Errorf("owner %v, requester %v", tok.Owner, tok.TokenRequesterPrincipal)
	}
	if !hmac.Equal(tok.HMAC, wantTokenHMAC(tok.TokenID)) {
		t.Errorf("HMAC is not HMAC-SHA512(delegation.token.secret.key, token id)")
	}
	// Kafka's defaults: valid a day, renewable for a week.
	if d := tok.ExpiryTimestamp.Sub(tok.IssueTimestamp); d != 24*time.Hour {
		t.Errorf("expiry %v after issue, want 24h", d)
	}
	if d := tok.MaxTimestamp.Sub(tok.IssueTimestamp); d != 7*24*time.Hour {
		t.Errorf("max %v after issue, want 168h", d)
	}
	if tok.IssueTimestamp.Before(before) || tok.IssueTimestamp.After(time.Now()) {
		t.Errorf("issued %v, not during the request", tok.IssueTimestamp)
	}

	// The token's client is alice: it produces and consumes on her ACLs,
	// with either SCRAM mechanism.
	for i, sha := range []bool{false, true} {
		topic := fmt.Sprintf("token-%d", i)
		cl := newKgo(t, saslAddr, tokenAuth(tok.TokenID, tok.HMAC, sha), kgo.AllowAutoTopicCreation())
		testutil.Eventually(t, 30*time.Second, func() error { // the ACLs reach the authorizer through a watch
			return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("by token")}).FirstErr()
		})
		got := consumeExact(t, saslAddr, topic, map[int32]int64{0: 0}, 1, 30*time.Second, tokenAuth(tok.TokenID, tok.HMAC, sha))
		if string(got[0].Value) != "by token" {
			t.Errorf("consumed %q", got[0].Value)
		}
		// No token business on a token's connection.
		tcl := kadm.NewClient(cl)
		if _, err := tcl.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
			t.Errorf("create with a token: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
		}
		if _, err := tcl.DescribeDelegationTokens(ctx); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
			t.Errorf("describe with a token: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
		}
	}

	// KIP-373: alice may create tokens for bob; carol may not.
	bobs, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: &kadm.Principal{Type: "User", Name: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	if bobs.Owner.Name != "bob" || bobs.TokenRequesterPrincipal.Name != "alice" {
		t.Errorf("bob's token: owner %v, requester %v", bobs.Owner, bobs.TokenRequesterPrincipal)
	}
	if _, err := carol.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: &kadm.Principal{Type: "User", Name: "bob"}}); !errors.Is(err, kerr.DelegationTokenAuthorizationFailed) {
		t.Errorf("carol creating for bob: %v, want DELEGATION_TOKEN_AUTHORIZATION_FAILED", err)
	}
	if _, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Renewers: []kadm.Principal{{Type: "Group", Name: "g"}}}); !errors.Is(err, kerr.InvalidPrincipalType) {
		t.Errorf("a Group renewer: %v, want INVALID_PRINCIPAL_TYPE", err)
	}
	// bob's token authenticates as bob, who has no ACL on the topic.
	bobCl := newKgo(t, saslAddr, tokenAuth(bobs.TokenID, bobs.HMAC, true), kgo.RetryTimeout(2*time.Second), kgo.DisableIdempotentWrite())
	if err := bobCl.ProduceSync(ctx, &kgo.Record{Topic: "token-0", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob's token producing: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Describe: alice sees what she owns or requested (both tokens);
	// bob his own; carol the one she renews; an owner filter narrows;
	// an empty owner list describes none.
	ids := func(c *kadm.Client, owners ...kadm.Principal) []string {
		t.Helper()
		ts, err := c.DescribeDelegationTokens(ctx, owners...)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range ts {
			if !hmac.Equal(d.HMAC, wantTokenHMAC(d.TokenID)) {
				t.Errorf("described %s with a wrong HMAC", d.TokenID)
			}
			out = append(out, d.TokenID)
		}
		return out
	}
	same := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("%s: described %v, want %v", what, got, want)
		}
	}
	same("alice", ids(alice), tok.TokenID, bobs.TokenID)
	same("bob", ids(bob), bobs.TokenID)
	same("carol", ids(carol), tok.TokenID)
	same("alice, owner bob", ids(alice, kadm.Principal{Type: "User", Name: "bob"}), bobs.TokenID)
	empty := kmsg.NewPtrDescribeDelegationTokenRequest()
	empty.Owners = []kmsg.DescribeDelegationTokenRequestOwner{}
	if resp, err := empty.RequestWith(ctx, newKgo(t, saslAddr, scramUser("alice"))); err != nil || resp.ErrorCode != 0 || len(resp.TokenDetails) != 0 {
		t.Errorf("describe with an empty owner list: %v %+v", err, resp)
	}
	// DescribeTokens on alice lets bob see her tokens too.
	createUserACL(t, plainAddr, "User:bob", "User:alice", kmsg.ACLOperationDescribeTokens)
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := ids(bob); len(got) != 2 {
			return fmt.Errorf("bob describes %v", got)
		}
		return nil
	})

	// Renew: the owner and renewers, within the max lifetime.
	if _, err := bob.RenewDelegationToken(ctx, tok.HMAC, time.Hour); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Errorf("bob renewing alice's: %v, want DELEGATION_TOKEN_OWNER_MISMATCH", err)
	}
	renewedAt := time.Now()
	exp, err := carol.RenewDelegationToken(ctx, tok.HMAC, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if d := exp.Sub(renewedAt); d < 59*time.Minute || d > time.Hour+time.Minute {
		t.Errorf("renewed for an hour: expires %v from now", d)
	}
	if _, err := alice.RenewDelegationToken(ctx, []byte("no such hmac"), time.Hour); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Errorf("renewing an unknown HMAC: %v, want DELEGATION_TOKEN_NOT_FOUND", err)
	}

	// Expire: the owner and renewers only (alice requested bob's token,
	// which is not enough); -1 removes the token at once.
	if _, err := alice.ExpireDelegationToken(ctx, bobs.HMAC, -time.Millisecond); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Errorf("alice expiring bob's: %v, want DELEGATION_TOKEN_OWNER_MISMATCH", err)
	}
	if _, err := bob.ExpireDelegationToken(ctx, bobs.HMAC, -time.Millisecond); err != nil {
		t.Fatal(err)
	}
	refused := newKgo(t, saslAddr, tokenAuth(bobs.TokenID, bobs.HMAC, true), kgo.RetryTimeout(time.Second))
	if err := refused.Ping(testCtx(t, 10*time.Second)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("an expired token authenticating: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if _, err := alice.RenewDelegationToken(ctx, bobs.HMAC, time.Hour); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Errorf("renewing an expired token: %v, want DELEGATION_TOKEN_NOT_FOUND", err)
	}
	// A short expiry: the sweep removes the token, which then
	// authenticates no more.
	if _, err := alice.ExpireDelegationToken(ctx, tok.HMAC, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := ids(alice); len(got) != 0 {
			return fmt.Errorf("alice still describes %v", got)
		}
		return nil
	})
	refused = newKgo(t, saslAddr, tokenAuth(tok.TokenID, tok.HMAC, false), kgo.RetryTimeout(time.Second))
	if err := refused.Ping(testCtx(t, 10*time.Second)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a swept token authenticating: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// Without delegation.token.secret.key tokens are disabled, with Kafka's
// error, and a tokenauth exchange fails.
func TestDelegationTokensDisabled(t *testing.T) {
	n, _ := tokenBroker(t, map[string]string{"delegation.token.secret.key": ""})
	ctx := testCtx(t, time.Minute)
	alice := kadm.NewClient(newKgo(t, n.Addrs()[1], scramUser("alice")))
	if _, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Errorf("create: %v, want DELEGATION_TOKEN_AUTH_DISABLED", err)
	}
	if _, err := alice.DescribeDelegationTokens(ctx); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Errorf("describe: %v, want DELEGATION_TOKEN_AUTH_DISABLED", err)
	}
	cl := newKgo(t, n.Addrs()[1], tokenAuth("some-token", wantTokenHMAC("some-token"), true), kgo.RetryTimeout(time.Second))
	if err := cl.Ping(testCtx(t, 10*time.Second)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a tokenauth exchange: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// Kafka 4.4's kafka-delegation-tokens.sh creates, describes, renews and
// expires a token, and Kafka 4.4's Java clients (the console producer and
// consumer) authenticate with it: ScramLoginModule with tokenauth="true",
// the token id as user name and its HMAC as password.
func TestJavaDelegationTokens(t *testing.T) {
	t.Parallel()
	n, _ := tokenBroker(t, nil)
	saslAddr := n.Addrs()[1]
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	aliceProps := write("alice.properties", `security.protocol=SASL_PLAINTEXT
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";
`)
	tool := kafkaToolIn(t, testCtx(t, 4*time.Minute), saslAddr, dir)
	const cls = "org.apache.kafka.tools.DelegationTokenCommand"
	out, err := tool("", cls, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:carol", "--command-config", aliceProps)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^(\S+)\s+(\S+)\s+User:alice\s+User:alice\s+\[User:carol\]`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "Created delegation token with tokenId : "+m[1]) {
		t.Fatalf("--create printed:\n%s", out)
	}
	id, mac := m[1], m[2]
	if mac != base64.StdEncoding.EncodeToString(wantTokenHMAC(id)) {
		t.Errorf("HMAC %s is not the token's", mac)
	}
	out, err = tool("", cls, "--describe", "--owner-principal", "User:alice", "--command-config", aliceProps)
	if err != nil || !strings.Contains(out, "Total number of tokens : 1") || !strings.Contains(out, id) {
		t.Fatalf("--describe: %v\n%s", err, out)
	}
	out, err = tool("", cls, "--renew", "--hmac", mac, "--renew-time-period", "3600000", "--command-config", aliceProps)
	if err != nil || !strings.Contains(out, "Completed renew operation. New expiry date : ") {
		t.Fatalf("--renew: %v\n%s", err, out)
	}

	tokenProps := write("token.properties", fmt.Sprintf(`security.protocol=SASL_PLAINTEXT
sasl.mechanism=SCRAM-SHA-256
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s" tokenauth="true";
`, id, mac))
	runConsoleRoundTrip(t, saslAddr, dir, tokenProps, "java-token")

	// The token's own connection may not use the tool.
	if out, err := tool("", cls, "--describe", "--command-config", tokenProps); err == nil || !strings.Contains(out, "not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels") {
		t.Errorf("--describe over the token's connection: %v\n%s", err, out)
	}
	out, err = tool("", cls, "--expire", "--hmac", mac, "--expiry-time-period", "-1", "--command-config", aliceProps)
	if err != nil || !strings.Contains(out, "Completed expire operation.") {
		t.Fatalf("--expire: %v\n%s", err, out)
	}
	out, err = tool("", cls, "--describe", "--owner-principal", "User:alice", "--command-config", aliceProps)
	if err != nil || !strings.Contains(out, "Total number of tokens : 0") {
		t.Fatalf("--describe after --expire: %v\n%s", err, out)
	}
}

// Tokens live in etcd: one created through one broker authenticates on
// every broker of the cluster, and once expired on one, on none.
func TestDelegationTokenEveryBroker(t *testing.T) {
	c := testutil.StartCluster(t, 2, map[string]string{
		"listeners":                   "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name":  "PLAINTEXT",
		"sasl.enabled.mechanisms":     "SCRAM-SHA-512",
		"delegation.token.secret.key": tokenSecret,
	})
	ctx := testCtx(t, time.Minute)
	adm := kadm.NewClient(newClusterKgo(t, c))
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"}}); err != nil {
		t.Fatal(err)
	}
	sasl1, sasl2 := c.Node(1).Addrs()[1], c.Node(2).Addrs()[1]
	alice := kadm.NewClient(newKgo(t, sasl1, kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())))
	tok, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
	if err != nil {
		t.Fatal(err)
	}
	// A request to each broker, on its own SASL listener (the client's
	// only seed, which its first request goes to).
	each := func() map[string]error {
		out := map[string]error{}
		for _, addr := range []string{sasl1, sasl2} {
			cl := newKgo(t, addr, tokenAuth(tok.TokenID, tok.HMAC, true), kgo.RetryTimeout(time.Second))
			_, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest())
			out[addr] = err
		}
		return out
	}
	for addr, err := range each() {
		if err != nil {
			t.Errorf("the broker at %s with the token: %v", addr, err)
		}
	}
	if _, err := alice.ExpireDelegationToken(ctx, tok.HMAC, -time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for addr, err := range each() {
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("the broker at %s with the expired token: %v, want SASL_AUTHENTICATION_FAILED", addr, err)
		}
	}
}
