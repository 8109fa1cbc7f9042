package groups

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A classic member's metadata survives the member metadata record's tag 0
// in the bytes Kafka 4.4 writes (ConsumerGroupMemberMetadataValue with
// ClassicMemberMetadata{SessionTimeoutMs: 7, SupportedProtocols: [{r, [9]}]},
// serialized by Kafka's generated class).
func TestClassicMemberMetadataTag(t *testing.T) {
	kafka := []byte{0x01, 0x00, 0x0c, 0x01, 0x00, 0x00, 0x00, 0x07, 0x02, 0x02, 0x72, 0x02, 0x09, 0x00, 0x00}
	ci := &classicInfo{session: 7 * time.Millisecond, protocols: []protocol{{"r", []byte{9}}}}
	if got := appendClassicTag(nil, ci); !bytes.Equal(got, kafka) {
		t.Errorf("appendClassicTag = % x, want Kafka's % x", got, kafka)
	}
	r := kbin.Reader{Src: kafka}
	back := readClassicTag(&r)
	if back == nil || back.session != ci.session || len(back.protocols) != 1 || back.protocols[0].name != "r" || !bytes.Equal(back.protocols[0].metadata, []byte{9}) {
		t.Errorf("readClassicTag = %+v", back)
	}
	r = kbin.Reader{Src: appendClassicTag(nil, nil)}
	if readClassicTag(&r) != nil {
		t.Error("a consumer-protocol member read back as classic")
	}
}

// classicConsumerJoin is a JoinGroup v3 of member of the consumer embedded
// protocol ("range", subscribing to topics).
func classicConsumerJoin(ctx context.Context, c *Coordinator, member string, topics ...string) *kmsg.JoinGroupResponse {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = topics
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Version = 3
	jr.Group, jr.MemberID, jr.ProtocolType = "g", member, "consumer"
	jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis = 60000, 10000
	jr.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	return c.JoinGroup(ctx, Client{ID: "c", Host: "/127.0.0.1"}, jr)
}

func listedKind(c *Coordinator, group string) string {
	for _, g := range c.ListGroups(kmsg.NewPtrListGroupsRequest()).Groups {
		if g.Group == group {
			return g.GroupType + " " + g.GroupState
		}
	}
	return "absent"
}

// TestClassicGroupUpgradeAndDowngrade is KIP-848's online migration as
// Kafka's GroupMetadataManager does it: a ConsumerGroupHeartbeat joining a
// classic group of the consumer embedded protocol turns it into a
// consumer group (its classic member keeps its id, generation as epoch,
// and its assignment), the classic member goes on with JoinGroup and
// Heartbeat, and when the last member of the new protocol leaves the
// group is classic again and rebalances, its offsets kept throughout.
func TestClassicGroupUpgradeAndDowngrade(t *testing.T) {
	l := newMemLog()
	c := New(cgTestConfig(l))
	defer c.Close()
	ownAll(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := classicConsumerJoin(ctx, c, "", "t1")
	asg := kmsg.NewConsumerMemberAssignment()
	asg.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t1", Partitions: []int32{0, 1, 2, 3}}}
	sr := kmsg.NewPtrSyncGroupRequest()
	sr.Group, sr.MemberID, sr.Generation = "g", a.MemberID, a.Generation
	sr.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: a.MemberID, MemberAssignment: asg.AppendTo(nil)}}
	if s := c.SyncGroup(ctx, sr); s.ErrorCode != 0 {
		t.Fatalf("sync: %s", codeName(s.ErrorCode))
	}
	if code := simpleCommitAs(c, a.MemberID, a.Generation); code != 0 {
		t.Fatalf("a's commit: %s", codeName(code))
	}

	b := cgHeartbeat(t, c, "b", 0, nil, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = []string{"t1"} })
	if b.MemberEpoch != 2 || countParts(owns(b)) != 0 {
		t.Fatalf("b joining the upgraded group: epoch %d with %d partitions", b.MemberEpoch, countParts(owns(b)))
	}
	if k := listedKind(c, "g"); k != "consumer Reconciling" {
		t.Errorf("upgraded group listed as %s", k)
	}
	if d := describeConsumerGroup(c); len(d.Members) != 2 || d.Members[0].MemberEpoch+d.Members[1].MemberEpoch != 3 {
		t.Errorf("upgraded group: %+v", d.Members)
	}
	wantCode(t, "a's heartbeat while it must revoke", classicHeartbeat(c, "g", a.MemberID, 1), kerr.RebalanceInProgress)
	wantCode(t, "a's commit in the consumer group", simpleCommitAs(c, a.MemberID, a.Generation), nil)

	if r, got := cgTry(c, "b", -1, nil, nil); got != "-" || r.MemberEpoch != -1 {
		t.Fatalf("b leaving: %s", got)
	}
	if k := listedKind(c, "g"); k != "classic PreparingRebalance" {
		t.Errorf("downgraded group listed as %s", k)
	}
	a2 := classicConsumerJoin(ctx, c, a.MemberID, "t1")
	if a2.ErrorCode != 0 || a2.Generation != 4 || a2.LeaderID != a.MemberID {
		t.Errorf("a's rejoin of the downgraded group: %s generation %d leader %s", codeName(a2.ErrorCode), a2.Generation, a2.LeaderID)
	}
	if off, code := fetchOffset(c, "g", "t1", 0); off != 7 || code != 0 {
		t.Errorf("offset after the migrations: %d %s, want 7", off, codeName(code))
	}
	sr.Generation = a2.Generation
	if s := c.SyncGroup(ctx, sr); s.ErrorCode != 0 {
		t.Fatalf("sync after the downgrade: %s", codeName(s.ErrorCode))
	}

	// A coordinator that loads the log has the downgraded group as a
	// classic group with its member (the consumer group's tombstones come
	// before the classic group's record).
	c.Close()
	c2 := New(cgTestConfig(l))
	defer c2.Close()
	ownAll(t, c2)
	if k := listedKind(c2, "g"); k != "classic Stable" {
		t.Errorf("downgraded group reloaded as %s, want classic Stable", k)
	}
	wantCode(t, "a's heartbeat after the reload", classicHeartbeat(c2, "g", a.MemberID, a2.Generation), nil)
}

// simpleCommitAs commits offset 7 of t1-0 in group g as member at
// generation gen.
func simpleCommitAs(c *Coordinator, member string, gen int32) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.Generation, req.MemberID = "g", gen, member
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t1", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}}}
	return c.OffsetCommit(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}
