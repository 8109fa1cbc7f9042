package compat

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

// aclBroker starts a broker with Kafka's StandardAuthorizer named, one
// SASL_PLAINTEXT listener with PLAIN users admin (a super user) and alice
// and bob (no ACL yet), and returns its address.
func aclBroker(t *testing.T, extra map[string]string) string {
	t.Helper()
	props := map[string]string{
		"listeners":                                           "SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name":                          "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                             "PLAIN",
		"sasl.mechanism.inter.broker.protocol":                "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`,
		"authorizer.class.name":                               "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                         "User:admin",
		"auto.create.topics.enable":                           "true",
	}
	for k, v := range extra {
		props[k] = v
	}
	return testutil.StartBroker(t, props).Addr()
}

func asUser(user string) kgo.Opt {
	return kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())
}

// ACLs as Kafka's StandardAuthorizer applies them, through franz-go and
// kadm: an operation without its ACL fails with the client's own
// authorization error, an ALLOW lets it through, a DENY (here by a
// PREFIXED pattern) beats the ALLOW, Metadata leaves out what the
// principal may not describe, and deleting the DENY lets it through again.
func TestFranzACLs(t *testing.T) {
	addr := aclBroker(t, nil)
	ctx := testCtx(t, 60*time.Second)
	admin := kadm.NewClient(newKgo(t, addr, asUser("admin")))
	createTopic(t, admin, "orders", 1, nil)
	createTopic(t, admin, "secret", 1, nil)

	alice := newKgo(t, addr, asUser("alice"), kgo.RetryTimeout(2*time.Second), kgo.DisableIdempotentWrite())
	res := alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("no acl")})
	if err := res.FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	acl := kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	if results, err := admin.CreateACLs(ctx, acl); err != nil || results[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, results)
	}
	produceAll(t, alice, &kgo.Record{Topic: "orders", Value: []byte("allowed")})

	// Write implies Describe: alice sees orders and not secret.
	md, err := kadm.NewClient(alice).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !md.Has("orders") || md.Has("secret") {
		t.Errorf("alice's Metadata lists %v, want orders and not secret", md.Names())
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	for _, topic := range []string{"orders", "secret"} {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		lo.Topics = append(lo.Topics, rt)
	}
	lo.Version = 5 // not flexible (v6+ is): rawConn reads v0 response headers
	raw := dialRaw(t, addr)
	if resp := saslLogin(t, raw, "alice"); resp.ErrorCode != 0 {
		t.Fatalf("login: %+v", resp)
	}
	loResp := raw.roundTrip(lo).(*kmsg.ListOffsetsResponse)
	if len(loResp.Topics) != 2 || loResp.Topics[0].Partitions[0].ErrorCode != 0 ||
		loResp.Topics[1].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("ListOffsets of orders and secret by alice: %+v", loResp)
	}
	described, err := admin.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) != 1 || len(described[0].Described) != 1 {
		t.Fatalf("DescribeACLs: %v %+v", err, described)
	}

	deny := kadm.NewACLs().Deny("User:alice").DenyHosts().Topics("ord").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed)
	if results, err := admin.CreateACLs(ctx, deny); err != nil || results[0].Err != nil {
		t.Fatalf("CreateACLs deny: %v %+v", err, results)
	}
	res = alice.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("denied")})
	if err := res.FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce with a prefixed DENY: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if results, err := admin.DeleteACLs(ctx, deny); err != nil || len(results) != 1 || len(results[0].Deleted) != 1 {
		t.Fatalf("DeleteACLs: %v %+v", err, results)
	}
	produceAll(t, alice, &kgo.Record{Topic: "orders", Value: []byte("allowed again")})

	// Consuming needs Read on the topic and on the group.
	consumer := newKgo(t, addr, asUser("alice"), kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("g-orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RetryTimeout(2*time.Second))
	fetches := consumer.PollFetches(testCtx(t, 20*time.Second))
	if err := fetches.Err0(); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("consume without group ACL: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}

	// An unprivileged user may not manage ACLs; without an authorizer a
	// broker refuses them as SECURITY_DISABLED.
	if results, err := kadm.NewClient(alice).CreateACLs(ctx, acl); err == nil && !errors.Is(results[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("CreateACLs by alice: %+v", results)
	}
	plainAdm := newAdmin(t, testutil.StartBroker(t, nil).Addr())
	if results, err := plainAdm.CreateACLs(ctx, acl); err != nil || !errors.Is(results[0].Err, kerr.SecurityDisabled) {
		t.Errorf("CreateACLs without an authorizer: %v %+v", err, results)
	}
}

// kafka-acls.sh (Kafka 4.4's AclCommand) adds, lists and removes ACLs,
// and Kafka's own console producer run as a user without the ACL fails
// with the Java client's TopicAuthorizationException.
func TestKafkaAclsCommand(t *testing.T) {
	t.Parallel()
	addr := aclBroker(t, nil)
	dir := t.TempDir()
	jaas := func(user string) string {
		return fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"%s\" password=\"%s-secret\";\n", user, user)
	}
	adminProps := testcerts.WriteFile(t, dir, "admin.properties", []byte(jaas("admin")))
	bobProps := testcerts.WriteFile(t, dir, "bob.properties", []byte(jaas("bob")))
	admin := kadm.NewClient(newKgo(t, addr, asUser("admin")))
	createTopic(t, admin, "payments", 1, nil)

	tool := kafkaToolIn(t, testCtx(t, 3*time.Minute), addr, dir)
	run := func(stdin string, wantOK bool, class string, args ...string) string {
		t.Helper()
		out, err := tool(stdin, class, args...)
		if err != nil && wantOK {
			t.Fatal(err)
		}
		return out
	}
	const aclCommand = "org.apache.kafka.tools.AclCommand"
	run("", true, aclCommand, "--command-config", adminProps, "--add", "--allow-principal", "User:bob",
		"--operation", "Read", "--operation", "Describe", "--topic", "payments")
	out := run("", true, aclCommand, "--command-config", adminProps, "--list", "--topic", "payments")
	if !strings.Contains(out, "User:bob") || !strings.Contains(out, "READ") {
		t.Errorf("kafka-acls --list: %s", out)
	}
	// bob may read payments, not write it.
	out = run("x\n", false, "org.apache.kafka.tools.ConsoleProducer", "--topic", "payments", "--command-config", bobProps,
		"--producer-property", "enable.idempotence=false", "--producer-property", "max.block.ms=10000")
	if !strings.Contains(out, "TopicAuthorizationException") {
		t.Errorf("the console producer without Write printed %s, want TopicAuthorizationException", lastLines(out, 10))
	}
	run("", true, aclCommand, "--command-config", adminProps, "--remove", "--force", "--allow-principal", "User:bob",
		"--operation", "Read", "--topic", "payments")
	out = run("", true, aclCommand, "--command-config", adminProps, "--list", "--topic", "payments")
	if strings.Contains(out, "READ") || !strings.Contains(out, "DESCRIBE") {
		t.Errorf("kafka-acls --list after --remove of Read: %s", out)
	}
}
