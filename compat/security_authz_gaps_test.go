package compat

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

// DescribeTopicPartitions as Kafka's handler authorizes it, asked by
// franz-go as alice with Describe on t2 only: all topics leave t1 out; a
// topic named without Describe (t1, or one that does not exist) is
// TOPIC_AUTHORIZATION_FAILED without its id or partitions; t2's
// AuthorizedOperations are alice's.
func TestDescribeTopicPartitionsAuthorized(t *testing.T) {
	addr, admin := aclFixture(t)
	createTopic(t, admin, "t2", 2, nil)
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").AllowHosts().ResourcePatternType(kadm.ACLPatternLiteral).Topics("t2").Operations(kadm.OpDescribe))
	alice := newKgo(t, addr, asUser("alice"))
	ctx := testCtx(t, time.Minute)
	describe := func(topics ...string) *kmsg.DescribeTopicPartitionsResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.ResponsePartitionLimit = 100
		for _, name := range topics {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = name
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, alice)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	testutil.Eventually(t, 30*time.Second, func() error { // the ACL reaches the authorizer by a watch
		var names []string
		for _, rt := range describe().Topics {
			names = append(names, *rt.Topic)
		}
		if !slices.Equal(names, []string{"t2"}) {
			return fmt.Errorf("all topics: %v, want [t2]", names)
		}
		return nil
	})
	got := map[string]kmsg.DescribeTopicPartitionsResponseTopic{}
	for _, rt := range describe("t1", "t2", "no-such-topic").Topics {
		got[*rt.Topic] = rt
	}
	if rt := got["t2"]; rt.ErrorCode != 0 || len(rt.Partitions) != 2 || rt.AuthorizedOperations != 1<<kmsg.ACLOperationDescribe {
		t.Errorf("t2: code %d, %d partitions, authorized operations %b", rt.ErrorCode, len(rt.Partitions), rt.AuthorizedOperations)
	}
	for _, name := range []string{"t1", "no-such-topic"} {
		rt, ok := got[name]
		if !ok || rt.ErrorCode != kerr.TopicAuthorizationFailed.Code || rt.TopicID != [16]byte{} || len(rt.Partitions) != 0 {
			t.Errorf("%s: %v %+v, want TOPIC_AUTHORIZATION_FAILED and nothing else", name, ok, rt)
		}
	}
}

// OffsetFetch as KafkaApis authorizes it, alice having Describe on group
// g1 and topic t2 (not t1, not g2): all of g1's offsets leave t1 out,
// t1 named is TOPIC_AUTHORIZATION_FAILED per partition while t2 is
// answered, g2 in the same request is GROUP_AUTHORIZATION_FAILED while g1
// is answered; and Kafka 4.4's kafka-consumer-groups.sh --describe shows
// alice g1's offsets on t2 alone.
func TestOffsetFetchAuthorizedTopics(t *testing.T) {
	addr, admin := aclFixture(t)
	createTopic(t, admin, "t2", 1, nil)
	ctx := testCtx(t, 3*time.Minute)
	commit := func(group string, topic string, at int64) {
		off := kadm.Offsets{}
		off.AddOffset(topic, 0, at, -1)
		if resp, err := admin.CommitOffsets(ctx, group, off); err != nil || resp.Error() != nil {
			t.Fatalf("commit %s %s: %v %v", group, topic, err, resp.Error())
		}
	}
	commit("g1", "t1", 3)
	commit("g1", "t2", 5)
	commit("g2", "t2", 7)
	acls := func() *kadm.ACLBuilder {
		return kadm.NewACLs().Allow("User:alice").AllowHosts().ResourcePatternType(kadm.ACLPatternLiteral)
	}
	createACLs(t, admin, acls().Groups("g1").Operations(kadm.OpDescribe))
	createACLs(t, admin, acls().Topics("t2").Operations(kadm.OpDescribe))

	alice := kadm.NewClient(newKgo(t, addr, asUser("alice")))
	testutil.Eventually(t, 30*time.Second, func() error { // the ACLs reach the authorizer by a watch
		off, err := alice.FetchOffsets(ctx, "g1")
		if err == nil {
			err = off.Error()
		}
		if err != nil {
			return err
		}
		if _, ok := off["t1"]; ok {
			return fmt.Errorf("all of g1's offsets include t1: %v", off)
		}
		if o, ok := off.Lookup("t2", 0); !ok || o.At != 5 {
			return fmt.Errorf("t2: %+v %v", o, ok)
		}
		return nil
	})

	c := dialRaw(t, addr)
	if resp := saslLogin(t, c, "alice"); resp.ErrorCode != 0 {
		t.Fatalf("SaslAuthenticate: %+v", resp)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 9
	g1 := kmsg.NewOffsetFetchRequestGroup()
	g1.Group = "g1"
	for _, name := range []string{"t1", "t2"} {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = name, []int32{0}
		g1.Topics = append(g1.Topics, rt)
	}
	g2 := kmsg.NewOffsetFetchRequestGroup()
	g2.Group = "g2"
	req.Groups = append(req.Groups, g1, g2)
	resp := c.roundTrip(req).(*kmsg.OffsetFetchResponse)
	groups := map[string]kmsg.OffsetFetchResponseGroup{}
	for _, g := range resp.Groups {
		groups[g.Group] = g
	}
	if g := groups["g2"]; g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("g2: %+v, want GROUP_AUTHORIZATION_FAILED", g)
	}
	g := groups["g1"]
	if g.ErrorCode != 0 {
		t.Fatalf("g1: %+v", g)
	}
	parts := map[string]kmsg.OffsetFetchResponseGroupTopicPartition{}
	for _, rt := range g.Topics {
		for _, p := range rt.Partitions {
			parts[rt.Topic] = p
		}
	}
	if p := parts["t2"]; p.ErrorCode != 0 || p.Offset != 5 {
		t.Errorf("g1 t2: %+v, want offset 5", p)
	}
	if p, ok := parts["t1"]; !ok || p.ErrorCode != kerr.TopicAuthorizationFailed.Code || p.Offset != -1 {
		t.Errorf("g1 t1: %v %+v, want TOPIC_AUTHORIZATION_FAILED at -1", ok, p)
	}

	dir := t.TempDir()
	props := testcerts.WriteFile(t, dir, "alice.properties", []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"alice-secret\";\n"))
	out, err := kafkaToolIn(t, ctx, addr, dir)("", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--command-config", props, "--describe", "--group", "g1")
	if err != nil || !regexp.MustCompile(`(?m)^g1\s+t2\s+0\s+5\s`).MatchString(out) || regexp.MustCompile(`(?m)^g1\s+t1\s`).MatchString(out) {
		t.Errorf("kafka-consumer-groups.sh --describe --group g1 as alice: %v\n%s", err, lastLines(out, 10))
	}
}

// request_percentage counts a consumer Fetch and JoinGroup and SyncGroup
// as KafkaApis counts them: over the quota, a Fetch is answered empty
// with its throttle_time_ms (not only muted), and the group requests
// carry theirs, their rebalance waits left out of the handler's work.
func TestRequestPercentageFetchAndGroups(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0", "quota.window.num": "2"})
	addr := n.Addr()
	adm := newAdmin(t, addr)
	ctx := testCtx(t, 2*time.Minute)
	createTopic(t, adm, "rp", 1, nil)
	produceAll(t, newKgo(t, addr), &kgo.Record{Topic: "rp", Value: []byte("x")})
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: kmsgStr("raw")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 0.01}},
	}}); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, addr) // client id "raw"
	throttled := func(what string, send func() (int32, error)) {
		t.Helper()
		testutil.Eventually(t, 40*time.Second, func() error {
			c.c.SetDeadline(time.Now().Add(20 * time.Second)) // a throttled answer mutes the connection
			ms, err := send()
			if err != nil {
				return err
			}
			if ms == 0 {
				return fmt.Errorf("%s: no throttle_time_ms yet", what)
			}
			return nil
		})
	}

	throttled("Fetch", func() (int32, error) {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 11, -1, 0, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "rp"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req).(*kmsg.FetchResponse)
		if resp.ThrottleMillis == 0 {
			return 0, nil
		}
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				if len(p.RecordBatches) > 0 {
					return 0, errors.New("a throttled Fetch carries records")
				}
			}
		}
		return resp.ThrottleMillis, nil
	})

	join := func(member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.MemberID, req.ProtocolType = 5, "rp-g", member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, p)
		return c.roundTrip(req).(*kmsg.JoinGroupResponse)
	}
	// The group's coordinator: __consumer_offsets is made on the first ask.
	testutil.Eventually(t, 40*time.Second, func() error {
		c.c.SetDeadline(time.Now().Add(20 * time.Second))
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey = 3, "rp-g"
		return kerr.ErrorForCode(c.roundTrip(req).(*kmsg.FindCoordinatorResponse).ErrorCode)
	})
	var member string
	throttled("JoinGroup", func() (int32, error) {
		resp := join("")
		if resp.ErrorCode != kerr.MemberIDRequired.Code {
			return 0, fmt.Errorf("JoinGroup: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		member = resp.MemberID
		return resp.ThrottleMillis, nil
	})
	c.c.SetDeadline(time.Now().Add(30 * time.Second))
	joined := join(member)
	if joined.ErrorCode != 0 || joined.LeaderID != member {
		t.Fatalf("JoinGroup: %+v", joined)
	}
	throttled("SyncGroup", func() (int32, error) {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version, req.Group, req.Generation, req.MemberID = 3, "rp-g", joined.Generation, member
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = member, []byte("a")
		req.GroupAssignment = append(req.GroupAssignment, a)
		resp := c.roundTrip(req).(*kmsg.SyncGroupResponse)
		if resp.ErrorCode != 0 || string(resp.MemberAssignment) != "a" {
			return 0, fmt.Errorf("SyncGroup: %+v", resp)
		}
		return resp.ThrottleMillis, nil
	})
}
