package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestConsumerGroupHeartbeatKafkaReference puts the same
// ConsumerGroupHeartbeat, OffsetCommit and ConsumerGroupDescribe requests
// (bad input and the member-epoch rules among them) to Apache Kafka 4.4
// and to samsa, and compares their error codes.
func TestConsumerGroupHeartbeatKafkaReference(t *testing.T) {
	t.Parallel()
	probeKafkaAndSamsa(t, nil, heartbeatProbe)
}

func heartbeatProbe(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	adm, _ := admAdmin(t, addr)
	topic := admTopic("cgref")
	admCreate(t, adm, topic, 2, 1, nil)
	c := admDial(t, addr)
	group := admTopic("cgref-group")
	hb := func(member string, epoch int32, f func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicNames = []string{topic}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		if f != nil {
			f(req)
		}
		return c.roundTrip(req, 1).(*kmsg.ConsumerGroupHeartbeatResponse)
	}
	// FindCoordinator creates __consumer_offsets; wait until the first
	// member is in.
	var first *kmsg.ConsumerGroupHeartbeatResponse
	testutil.Eventually(t, 30*time.Second, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKeys = []string{group}
		c.roundTrip(fc, 4)
		first = hb("member-a-0000000000000", 0, nil)
		if first.ErrorCode != 0 {
			return fmt.Errorf("first heartbeat: %v %v", kerr.ErrorForCode(first.ErrorCode), derefStr(first.ErrorMessage))
		}
		return nil
	})
	out["join"] = fmt.Sprintf("error %d epoch set %v", first.ErrorCode, first.MemberEpoch > 0)
	a, aEpoch := "member-a-0000000000000", first.MemberEpoch
	code := func(what string, r *kmsg.ConsumerGroupHeartbeatResponse) {
		out[what] = fmt.Sprintf("error %d", r.ErrorCode)
	}
	code("fenced epoch", hb(a, aEpoch+5, nil))
	code("unknown member", hb("nobody-00000000000000", 1, nil))
	code("empty member id", hb("", 0, nil))
	code("empty group", hb("member-x-0000000000000", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }))
	code("no subscription on join", hb("member-x-0000000000000", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }))
	code("no rebalance timeout on join", hb("member-x-0000000000000", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }))
	code("null owned partitions on join", hb("member-x-0000000000000", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }))
	code("owned partitions on join", hb("member-x-0000000000000", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0}}}
	}))
	code("epoch -3", hb("member-x-0000000000000", -3, nil))
	code("static leave without instance", hb(a, -2, nil))
	code("invalid regex", hb("member-x-0000000000000", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, kmsg.StringPtr("[")
	}))
	code("unknown assignor", hb("member-x-0000000000000", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("nope") }))
	code("empty instance id", hb("member-x-0000000000000", 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("") }))

	static := func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("instance-1") }
	code("static join", hb("member-s1-000000000000", 0, static))
	code("second static member, same instance", hb("member-s2-000000000000", 0, static))
	code("static leave", hb("member-s1-000000000000", -2, static))
	code("static rejoin under a new member id", hb("member-s2-000000000000", 0, static))

	// Offset commits under member epochs (OffsetCommit v9).
	commit := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.roundTrip(req, 9).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	out["commit from an epoch ahead"] = fmt.Sprintf("error %d", commit(a, aEpoch+1))
	out["commit from an unknown member"] = fmt.Sprintf("error %d", commit("nobody-00000000000000", aEpoch))
	out["admin commit to a group with members"] = fmt.Sprintf("error %d", commit("", -1))

	describe := func(g string) string {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{g}
		r := c.roundTrip(req, 1).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
		return fmt.Sprintf("error %d state %q members %d", r.ErrorCode, r.State, len(r.Members))
	}
	out["describe an unknown group"] = describe("no-such-group")

	code("leave", hb(a, -1, nil))
	code("leave again", hb(a, -1, nil))
	return out
}

func derefStr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
