package chaos

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/testutil"
)

// ACL hosts that are CIDR ranges (KIP-1276) decide for clients in network
// namespaces of the suite's bridge, whose addresses are real peers' and not
// the loopback: a broker on the bridge's root address, client namespace
// c1 at .21 and c2 at .40. alice may write from the whole /24 but not from
// .32/27 (a DENY), bob only from .16/28 (an ALLOW): each writes from c1
// and is refused from c2.
func TestACLHostRangesInNamespaces(t *testing.T) {
	requireRoot(t)
	claimRun(t)
	c1, c2 := prefix+"c1", prefix+"c2"
	setupNetwork(t, []string{c1, c2}, []string{subnet + ".21", subnet + ".40"})
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`
	addr := testutil.StartBroker(t, map[string]string{
		"listeners":                                           "SASL_PLAINTEXT://" + clientIP + ":0",
		"inter.broker.listener.name":                          "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                             "PLAIN",
		"sasl.mechanism.inter.broker.protocol":                "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
		"authorizer.class.name":                               "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                         "User:admin",
	}).Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := func(user, ns string) *kgo.Client {
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()),
			kgo.RetryTimeout(2 * time.Second), kgo.DisableIdempotentWrite()}
		if ns != "" {
			opts = append(opts, kgo.Dialer(func(ctx context.Context, network, host string) (conn net.Conn, err error) {
				err = inNamespaceErr(ns, func() (err error) {
					conn, err = (&net.Dialer{}).DialContext(ctx, network, host)
					return err
				})
				return conn, err
			}))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	admin := kadm.NewClient(client("admin", ""))
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "ranged"); err != nil {
		t.Fatal(err)
	}
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").AllowHosts(subnet + ".0/24").Topics("ranged").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Deny("User:alice").DenyHosts(subnet + ".32/27").Topics("ranged").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:bob").AllowHosts(subnet + ".16/28").Topics("ranged").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
	}
	for _, b := range acls {
		if res, err := admin.CreateACLs(ctx, b); err != nil || res[0].Err != nil {
			t.Fatalf("CreateACLs: %v %+v", err, res)
		}
	}
	for _, user := range []string{"alice", "bob"} {
		in, out := client(user, c1), client(user, c2)
		testutil.Eventually(t, 30*time.Second, func() error {
			return in.ProduceSync(ctx, &kgo.Record{Topic: "ranged", Value: []byte(user)}).FirstErr()
		})
		err := out.ProduceSync(ctx, &kgo.Record{Topic: "ranged", Value: []byte(user)}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("%s from %s: %v, want TOPIC_AUTHORIZATION_FAILED", user, c2, err)
		}
	}
}
