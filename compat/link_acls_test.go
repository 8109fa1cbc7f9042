package compat

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/poll"
)

// linkACLs are every ACL of the cluster cl talks to, one line each,
// sorted.
func linkACLs(t *testing.T, cl *kgo.Client) ([]string, error) {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(testCtx(t, 20*time.Second), cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	var out []string
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			out = append(out, fmt.Sprintf("%s %s %s:%s(%s) from %s", a.Principal, a.PermissionType, a.Operation, r.ResourceName, r.ResourcePatternType, a.Host))
		}
	}
	slices.Sort(out)
	return out, nil
}

// A link with sync.acls keeps samsa's ACLs that its acl.filters select
// the same as Apache Kafka 4.4's (with StandardAuthorizer): it copies
// those the filters select there (literal, prefixed and DENY ones, on
// topics and groups), leaves ACLs the filters do not select alone on
// both sides, deletes the ones made on samsa inside the filters, and
// follows ACLs created and deleted on the source afterwards.
func TestLinkSyncACLsFromKafkaReference(t *testing.T) {
	t.Parallel()
	src := aclKafka(t)
	dst := aclBroker(t, nil)
	ctx := testCtx(t, 3*time.Minute)
	sadm := kadm.NewClient(newKgo(t, src, asUser("admin")))
	dcl := newKgo(t, dst, asUser("admin"))
	dadm := kadm.NewClient(dcl)
	createTopic(t, sadm, "orders", 1, nil)
	acl := func(allow bool, user string, pattern kadm.ACLPattern) *kadm.ACLBuilder {
		b := kadm.NewACLs().ResourcePatternType(pattern)
		if allow {
			return b.Allow("User:" + user).AllowHosts()
		}
		return b.Deny("User:" + user).DenyHosts("10.0.0.1")
	}
	create := func(adm *kadm.Client, bs ...*kadm.ACLBuilder) {
		t.Helper()
		for _, b := range bs {
			if res, err := adm.CreateACLs(ctx, b); err != nil || res[0].Err != nil {
				t.Fatalf("CreateACLs: %v %+v", err, res)
			}
		}
	}
	create(sadm,
		acl(true, "alice", kadm.ACLPatternLiteral).Topics("orders").Operations(kadm.OpRead),
		acl(true, "alice", kadm.ACLPatternPrefixed).Topics("ord").Operations(kadm.OpWrite),
		acl(false, "bob", kadm.ACLPatternLiteral).Topics("orders").Operations(kadm.OpRead),
		acl(true, "carol", kadm.ACLPatternLiteral).Topics("other").Operations(kadm.OpRead),
		acl(true, "bob", kadm.ACLPatternLiteral).Groups("g1").Operations(kadm.OpRead),
		acl(true, "carol", kadm.ACLPatternLiteral).Groups("g1").Operations(kadm.OpRead))
	create(dadm,
		acl(true, "dave", kadm.ACLPatternLiteral).Topics("orders").Operations(kadm.OpRead),
		acl(true, "dave", kadm.ACLPatternLiteral).Topics("local").Operations(kadm.OpRead))

	// The ACLs that apply to topic orders, and bob's on groups.
	filters := `{"aclFilters":[
		{"resourceFilter":{"resourceType":"topic","name":"orders","patternType":"match"},"accessFilter":{"operation":"any","permissionType":"any"}},
		{"resourceFilter":{"resourceType":"group"},"accessFilter":{"principal":"User:bob"}}]}`
	login := []string{"--sasl-mechanism", "PLAIN", "--sasl-username", "admin", "--sasl-password", "admin-secret"}
	linkCLI(t, dst, false, append([]string{"create", "acls", "--source-bootstrap-servers", src, "--topics", "orders",
		"--source-config", "security.protocol=SASL_PLAINTEXT", "--source-config", "sasl.mechanism=PLAIN",
		"--source-config", `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";`,
		"--sync-acls", "--acl-filters", filters, "--config", "metadata.refresh.interval.ms=100"}, login...)...)
	await := func(want ...string) {
		t.Helper()
		slices.Sort(want)
		poll.Eventually(t, 60*time.Second, func() error {
			got, err := linkACLs(t, dcl)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("samsa's ACLs:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			return nil
		})
	}
	await(
		"User:alice ALLOW READ:orders(LITERAL) from *",
		"User:alice ALLOW WRITE:ord(PREFIXED) from *",
		"User:bob DENY READ:orders(LITERAL) from 10.0.0.1",
		"User:bob ALLOW READ:g1(LITERAL) from *",
		"User:dave ALLOW READ:local(LITERAL) from *")

	// Changes on the source follow.
	if res, err := sadm.DeleteACLs(ctx, acl(true, "alice", kadm.ACLPatternLiteral).Topics("orders").Operations(kadm.OpRead)); err != nil || len(res) != 1 || len(res[0].Deleted) != 1 {
		t.Fatalf("DeleteACLs on the source: %v %+v", err, res)
	}
	create(sadm, acl(true, "eve", kadm.ACLPatternLiteral).Topics("orders").Operations(kadm.OpDescribe))
	await(
		"User:eve ALLOW DESCRIBE:orders(LITERAL) from *",
		"User:alice ALLOW WRITE:ord(PREFIXED) from *",
		"User:bob DENY READ:orders(LITERAL) from 10.0.0.1",
		"User:bob ALLOW READ:g1(LITERAL) from *",
		"User:dave ALLOW READ:local(LITERAL) from *")
	if out := linkCLI(t, dst, false, append([]string{"describe", "acls"}, login...)...); strings.Contains(out, "\nERROR ") {
		t.Errorf("the link reports an error:\n%s", out)
	}
}
