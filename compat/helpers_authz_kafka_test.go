package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testutil"
)

// azEnv is a broker with an authorizer on (allow.everyone.if.no.acl.found
// false), as azSetup leaves it: admin (a super user) has made topics t1
// and t2 and committed offset 0 of both in group g1; alice has no ACL; bob
// has Read on topic t1 and on group g1, nothing else.
type azEnv struct {
	addr  string // the SASL_PLAINTEXT listener
	admin *kadm.Client
	ids   map[string][16]byte // topic ids by name
}

// azSamsa is samsa as azSetup leaves it.
func azSamsa(t *testing.T) *azEnv {
	t.Helper()
	return azSetup(t, aclBroker(t, nil))
}

// azKafka is Apache Kafka 4.4 (internal/kafkaref) with the same listener,
// users and authorizer as aclBroker, as azSetup leaves it.
func azKafka(t *testing.T) *azEnv {
	t.Helper()
	return azSetup(t, aclKafka(t))
}

// aclKafka starts Apache Kafka 4.4 (internal/kafkaref) with aclBroker's
// listener, users and authorizer and returns its SASL_PLAINTEXT address.
func aclKafka(t *testing.T) string {
	t.Helper()
	ctx := testCtx(t, 5*time.Minute)
	props := map[string]string{
		"sasl.enabled.mechanisms":                             "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`,
		"authorizer.class.name":                               "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found":                      "false",
		// ANONYMOUS: the node's own PLAINTEXT and CONTROLLER listeners.
		"super.users":               "User:admin;User:ANONYMOUS",
		"auto.create.topics.enable": "true",
	}
	kb, err := kafkaref.Start(ctx, kafkaLibs(t, ctx), kafkaref.Options{Dir: t.TempDir(), HeapMB: 512, Props: props, Listeners: []string{"SASL_PLAINTEXT"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Stop(30 * time.Second) })
	return kb.Listeners["SASL_PLAINTEXT"]
}

// azSetup makes addr's topics, offsets and ACLs as azEnv describes, and
// waits until the ACLs apply.
func azSetup(t *testing.T, addr string) *azEnv {
	t.Helper()
	ctx := testCtx(t, 2*time.Minute)
	e := &azEnv{addr: addr, admin: kadm.NewClient(newKgo(t, addr, asUser("admin"))), ids: map[string][16]byte{}}
	off := kadm.Offsets{}
	for _, name := range []string{"t1", "t2"} {
		createTopic(t, e.admin, name, 1, nil)
		e.ids[name] = topicID(t, e.admin, name)
		off.AddOffset(name, 0, 0, -1)
	}
	// The offsets topic may still be loading right after it is made.
	testutil.Eventually(t, 60*time.Second, func() error {
		resp, err := e.admin.CommitOffsets(ctx, "g1", off)
		if err == nil {
			err = resp.Error()
		}
		return err
	})
	bob := kadm.NewACLs().Allow("User:bob").AllowHosts().ResourcePatternType(kadm.ACLPatternLiteral)
	for _, b := range []*kadm.ACLBuilder{
		bob.Topics("t1").Operations(kadm.OpRead),
		kadm.NewACLs().Allow("User:bob").AllowHosts().ResourcePatternType(kadm.ACLPatternLiteral).Groups("g1").Operations(kadm.OpRead),
	} {
		if res, err := e.admin.CreateACLs(ctx, b); err != nil || res[0].Err != nil {
			t.Fatalf("CreateACLs: %v %+v", err, res)
		}
	}
	// The ACLs reach the broker a moment later (samsa: its etcd watch;
	// Kafka: its metadata log): wait until bob may see g1's offset of t1.
	testutil.Eventually(t, 30*time.Second, func() error {
		c := e.dial(t, "bob")
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = 7, "g1"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t1", Partitions: []int32{0}}}
		resp := c.roundTrip(req).(*kmsg.OffsetFetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			return fmt.Errorf("bob's OffsetFetch of g1: %+v", resp)
		}
		return nil
	})
	return e
}

// dial is a connection to e authenticated as user.
func (e *azEnv) dial(t *testing.T, user string) *rawConn {
	t.Helper()
	c := dialRaw(t, e.addr)
	if resp := saslLogin(t, c, user); resp.ErrorCode != 0 {
		t.Fatalf("login as %s: %+v", user, resp)
	}
	c.c.SetDeadline(time.Now().Add(time.Minute))
	return c
}

// offsetCommitV10 commits offset 5 of partition 0 of t1, t2 and an unknown
// topic id in g1 as user, by topic id (OffsetCommit v10), and returns each
// topic's error by name ("unknown" for the unknown id).
func (e *azEnv) offsetCommitV10(t *testing.T, user string) map[string]int16 {
	t.Helper()
	unknown := [16]byte{1, 2, 3}
	name := map[[16]byte]string{e.ids["t1"]: "t1", e.ids["t2"]: "t2", unknown: "unknown"}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 10, "g1", -1
	for _, id := range [][16]byte{e.ids["t1"], e.ids["t2"], unknown} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 5
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := e.dial(t, user).roundTrip(req).(*kmsg.OffsetCommitResponse)
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out[name[rt.TopicID]] = p.ErrorCode
		}
	}
	return out
}

// committed is g1's committed offset of partition 0 of topic, as admin
// reads it.
func (e *azEnv) committed(t *testing.T, topic string) int64 {
	t.Helper()
	offs, err := e.admin.FetchOffsets(testCtx(t, 30*time.Second), "g1")
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("g1's offset of %s: %+v", topic, o)
	}
	return o.At
}

// grant gives user ops on resources made by res (a kadm.ACLBuilder method
// such as Topics or Groups), then waits until ready passes: ACLs reach the
// broker a moment later.
func (e *azEnv) grant(t *testing.T, user string, res func(*kadm.ACLBuilder, ...string) *kadm.ACLBuilder, name string, ops []kadm.ACLOperation, ready func() error) {
	t.Helper()
	b := res(kadm.NewACLs().Allow("User:"+user).AllowHosts().ResourcePatternType(kadm.ACLPatternLiteral), name).Operations(ops...)
	if r, err := e.admin.CreateACLs(testCtx(t, 30*time.Second), b); err != nil || r[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, r)
	}
	testutil.Eventually(t, 30*time.Second, ready)
}

// shareGroup makes group an empty share group subscribed to t1: user
// joins it and leaves.
func (e *azEnv) shareGroup(t *testing.T, user, group string) {
	t.Helper()
	c := e.dial(t, user)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version, hb.GroupID, hb.MemberID, hb.MemberEpoch = 1, group, "m-"+group, 0
	hb.SubscribedTopicNames = []string{"t1"}
	testutil.Eventually(t, 30*time.Second, func() error {
		if resp := c.roundTrip(hb).(*kmsg.ShareGroupHeartbeatResponse); resp.ErrorCode != 0 {
			return fmt.Errorf("ShareGroupHeartbeat %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
		}
		return nil
	})
	hb.MemberEpoch, hb.SubscribedTopicNames = -1, nil
	if resp := c.roundTrip(hb).(*kmsg.ShareGroupHeartbeatResponse); resp.ErrorCode != 0 {
		t.Fatalf("ShareGroupHeartbeat leaving %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
	}
}

// consumerGroup makes group a KIP-848 consumer group with one member
// (user's) subscribed to t1.
func (e *azEnv) consumerGroup(t *testing.T, user, group string) {
	t.Helper()
	c := e.dial(t, user)
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = 1, group, "m-"+group, 0, 30000
	hb.SubscribedTopicNames, hb.Topics = []string{"t1"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	testutil.Eventually(t, 30*time.Second, func() error {
		if resp := c.roundTrip(hb).(*kmsg.ConsumerGroupHeartbeatResponse); resp.ErrorCode != 0 {
			return fmt.Errorf("ConsumerGroupHeartbeat %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
		}
		return nil
	})
}

// groupOps are the AuthorizedOperations DescribeGroups (g1),
// ConsumerGroupDescribe (cg) and ShareGroupDescribe (sg) answer user, by
// API name.
func (e *azEnv) groupOps(t *testing.T, user string) map[string]int32 {
	t.Helper()
	c := e.dial(t, user)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups, dg.IncludeAuthorizedOperations = 5, []string{"g1"}, true
	cg := kmsg.NewPtrConsumerGroupDescribeRequest()
	cg.Version, cg.Groups, cg.IncludeAuthorizedOperations = 1, []string{"cg"}, true
	sg := kmsg.NewPtrShareGroupDescribeRequest()
	sg.Version, sg.GroupIDs, sg.IncludeAuthorizedOperations = 1, []string{"sg"}, true
	out := map[string]int32{}
	if g := c.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; g.ErrorCode == 0 {
		out["DescribeGroups"] = g.AuthorizedOperations
	}
	if g := c.roundTrip(cg).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]; g.ErrorCode == 0 {
		out["ConsumerGroupDescribe"] = g.AuthorizedOperations
	}
	if g := c.roundTrip(sg).(*kmsg.ShareGroupDescribeResponse).Groups[0]; g.ErrorCode == 0 {
		out["ShareGroupDescribe"] = g.AuthorizedOperations
	}
	return out
}
