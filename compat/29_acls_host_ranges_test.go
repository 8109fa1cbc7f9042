package compat

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

// aclRangeHosts are ACL hosts CreateAcls is asked to take: CIDR ranges
// (KIP-1276), valid and not, beside plain hosts.
var aclRangeHosts = []string{
	"*", "10.1.2.3", "not-an-address", "",
	"10.0.0.0/8", "10.1.2.3/8", "010.0.0.0/8", "0.0.0.0/0", "127.0.0.1/32",
	"10.0.0.0/33", "10.0.0.256/8", "10.0.0/8", "10.0.0.0/", "10.0.0.0/100", "10.0.0.0/8/8", "host/8",
	"2001:db8::/32", "::1/128", "::/0", "[2001:db8::]/32", "::1.2.3.4/128", "fe80::1%2/64", "2001:db8::/+32",
	"2001:db8::/129", "2001:db8::/-1", "2001:db8::/x", "2001:db8::/", "2001:db8:::/32",
	"::ffff:10.0.0.0/104", "fe80::1%nosuchif0/64",
}

// CreateAcls of every host in aclRangeHosts answers as Kafka 4.4's: the
// same error code and message for each; DescribeAcls and DeleteAcls
// filters match a range's text, not the addresses in it.
func TestCreateAclsHostsAsKafka(t *testing.T) {
	t.Parallel()
	type answers struct {
		Created         map[string]string // host: code and message
		Described       map[string]int    // filter host: bindings
		DeletedByInside int               // a filter naming an address in a range
	}
	ask := func(addr string) answers {
		ctx := testCtx(t, 2*time.Minute)
		admin := newKgo(t, addr, asUser("admin"))
		req := kmsg.NewPtrCreateACLsRequest()
		for _, h := range aclRangeHosts {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "ranges", kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", h, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
		}
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		a := answers{Created: map[string]string{}, Described: map[string]int{}}
		for i, r := range resp.Results {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			a.Created[aclRangeHosts[i]] = fmt.Sprintf("%d %s", r.ErrorCode, msg)
		}
		describe := func(host string) (int, error) {
			d := kmsg.NewPtrDescribeACLsRequest()
			d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
			d.Host, d.Operation, d.PermissionType = kmsg.StringPtr(host), kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			resp, err := d.RequestWith(ctx, admin)
			if err != nil || resp.ErrorCode != 0 {
				return 0, fmt.Errorf("DescribeAcls: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
			}
			n := 0
			for _, r := range resp.Resources {
				n += len(r.ACLs)
			}
			return n, nil
		}
		// Kafka's authorizer sees new ACLs once its metadata log has them.
		testutil.Eventually(t, 30*time.Second, func() error {
			if n, err := describe("2001:db8::/32"); err != nil || n != 1 {
				return fmt.Errorf("2001:db8::/32 not described yet: %d %v", n, err)
			}
			return nil
		})
		for _, h := range []string{"10.0.0.0/8", "10.1.2.3", "10.9.9.9", "::1/128", "::1"} {
			n, err := describe(h)
			if err != nil {
				t.Fatal(err)
			}
			a.Described[h] = n
		}
		del := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
		f.Host, f.Operation, f.PermissionType = kmsg.StringPtr("10.9.9.9"), kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		del.Filters = append(del.Filters, f)
		dresp, err := del.RequestWith(ctx, admin)
		if err != nil || len(dresp.Results) != 1 || dresp.Results[0].ErrorCode != 0 {
			t.Fatalf("DeleteAcls: %v %+v", err, dresp)
		}
		a.DeletedByInside = len(dresp.Results[0].MatchingACLs)
		return a
	}
	kafka := ask(aclKafka(t))
	samsa := ask(aclBroker(t, nil))
	for _, h := range aclRangeHosts {
		if samsa.Created[h] != kafka.Created[h] {
			t.Errorf("CreateAcls with host %q: samsa %q, Kafka 4.4 %q", h, samsa.Created[h], kafka.Created[h])
		}
	}
	if !reflect.DeepEqual(samsa.Described, kafka.Described) || samsa.DeletedByInside != kafka.DeletedByInside {
		t.Errorf("filters by host: samsa %v deleted %d, Kafka 4.4 %v deleted %d", samsa.Described, samsa.DeletedByInside, kafka.Described, kafka.DeletedByInside)
	}
	t.Logf("Kafka 4.4's answers: %v", kafka.Created)
}

// ACLs whose host is a range, made by Kafka 4.4's kafka-acls.sh
// (--allow-host 10.0.0.0/8, --deny-host ...), decide for clients on the
// IPv4 and the IPv6 loopback: an ALLOW whose range leaves the client out
// (another network, or the other address family) lets nothing through,
// one whose range holds it does, and a DENY of a range holding it beats
// that ALLOW.
func TestACLHostRangesLoopback(t *testing.T) {
	cases := []struct {
		name, listener     string
		outside            []string // ranges without the client's address
		inside, denyInside string
	}{
		{"ipv4", "SASL_PLAINTEXT://127.0.0.1:0", []string{"10.0.0.0/8", "::/0"}, "127.0.0.0/8", "127.0.0.1/32"},
		{"ipv6", "SASL_PLAINTEXT://[::1]:0", []string{"127.0.0.0/8", "2001:db8::/32"}, "::1/128", "0:0:0:0:0:0:0:0/0"},
	}
	dir := t.TempDir()
	adminProps := testcerts.WriteFile(t, dir, "admin.properties", []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"admin-secret\";\n"))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := aclBroker(t, map[string]string{"listeners": tc.listener})
			ctx := testCtx(t, 3*time.Minute)
			createTopic(t, kadm.NewClient(newKgo(t, addr, asUser("admin"))), "ranged", 1, nil)
			tool := kafkaToolIn(t, ctx, addr, dir)
			acl := func(args ...string) string {
				t.Helper()
				out, err := tool("", "org.apache.kafka.tools.AclCommand", append([]string{"--command-config", adminProps, "--topic", "ranged"}, args...)...)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			alice := newKgo(t, addr, asUser("alice"), kgo.RetryTimeout(2*time.Second), kgo.DisableIdempotentWrite())
			produced := func(ctx context.Context) error {
				return alice.ProduceSync(ctx, &kgo.Record{Topic: "ranged", Value: []byte("x")}).FirstErr()
			}
			addArgs := []string{"--add", "--allow-principal", "User:alice", "--operation", "Write"}
			for _, r := range tc.outside {
				addArgs = append(addArgs, "--allow-host", r)
			}
			acl(addArgs...)
			out := acl("--list")
			for _, r := range tc.outside {
				if !strings.Contains(out, "host="+r+",") {
					t.Fatalf("kafka-acls --list does not show host %s:\n%s", r, out)
				}
			}
			if err := produced(ctx); !errors.Is(err, kerr.TopicAuthorizationFailed) {
				t.Fatalf("produce with ALLOWs for %v only: %v, want TOPIC_AUTHORIZATION_FAILED", tc.outside, err)
			}
			acl("--add", "--allow-principal", "User:alice", "--allow-host", tc.inside, "--operation", "Write")
			testutil.Eventually(t, 30*time.Second, func() error { return produced(ctx) })
			acl("--add", "--deny-principal", "User:alice", "--deny-host", tc.denyInside, "--operation", "Write")
			testutil.Eventually(t, 30*time.Second, func() error {
				if err := produced(ctx); !errors.Is(err, kerr.TopicAuthorizationFailed) {
					return fmt.Errorf("produce with a DENY for %s: %v, want TOPIC_AUTHORIZATION_FAILED", tc.denyInside, err)
				}
				return nil
			})
		})
	}
}
