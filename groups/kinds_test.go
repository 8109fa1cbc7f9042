package groups

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// codeName is a Kafka error code by name, "-" for none.
func codeName(code int16) string {
	if code == 0 {
		return "-"
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprint(code)
}

// answer is a code by name with the message sent with it, if any.
func answer(code int16, msg *string) string {
	if msg == nil || *msg == "" {
		return codeName(code)
	}
	return codeName(code) + ": " + *msg
}

// The kinds of group a request can find, each made through the public
// API: none, an offsets-only classic group (a simple commit), a classic
// group with one stable member, a KIP-848 consumer group with a member, a
// consumer group its member left, a share group and a streams group, each
// with one member "m1" and once it left.
var kindSetups = []struct {
	kind  string
	setup func(t *testing.T, c *Coordinator, group string)
}{
	{"none", func(*testing.T, *Coordinator, string) {}},
	{"offsets", func(t *testing.T, c *Coordinator, group string) {
		if code := simpleCommit(c, group, "t1", 0, 1); code != 0 {
			t.Fatal(codeName(code))
		}
	}},
	{"classic", func(t *testing.T, c *Coordinator, group string) {
		j := classicJoinAs(context.Background(), c, group, "", "", 3, time.Minute)
		if j.ErrorCode != 0 {
			t.Fatal(codeName(j.ErrorCode))
		}
		if s := classicSync(c, group, j); s.ErrorCode != 0 {
			t.Fatal(codeName(s.ErrorCode))
		}
	}},
	{"consumer", func(t *testing.T, c *Coordinator, group string) {
		cgHeartbeat(t, c, "m1", 0, nil, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = group })
	}},
	{"consumer-empty", func(t *testing.T, c *Coordinator, group string) {
		cgHeartbeat(t, c, "m1", 0, nil, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = group })
		cgHeartbeat(t, c, "m1", -1, nil, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = group })
	}},
	{"share", func(t *testing.T, c *Coordinator, group string) {
		if r := shareHeartbeatIn(c, group, "m1", 0); r.ErrorCode != 0 {
			t.Fatal(answer(r.ErrorCode, r.ErrorMessage))
		}
	}},
	{"share-empty", func(t *testing.T, c *Coordinator, group string) {
		shareHeartbeatIn(c, group, "m1", 0)
		if r := shareHeartbeatIn(c, group, "m1", -1); r.ErrorCode != 0 {
			t.Fatal(answer(r.ErrorCode, r.ErrorMessage))
		}
	}},
	{"streams", func(t *testing.T, c *Coordinator, group string) {
		sgHeartbeat(t, c, "m1", 0, nil, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = group })
	}},
	{"streams-empty", func(t *testing.T, c *Coordinator, group string) {
		sgHeartbeat(t, c, "m1", 0, nil, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = group })
		sgHeartbeat(t, c, "m1", -1, nil, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = group })
	}},
}

// classicJoinAs sends a JoinGroup of version v for member (instance, if
// not "") of group and waits for its answer.
func classicJoinAs(ctx context.Context, c *Coordinator, group, member, instance string, v int16, session time.Duration) *kmsg.JoinGroupResponse {
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Version = v
	jr.Group, jr.MemberID, jr.ProtocolType = group, member, "consumer"
	if instance != "" {
		jr.InstanceID = kmsg.StringPtr(instance)
	}
	jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis = int32(session/time.Millisecond), 1000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{1}
	jr.Protocols = append(jr.Protocols, p)
	return c.JoinGroup(ctx, Client{ID: "c", Host: "/127.0.0.1"}, jr)
}

func shareHeartbeatIn(c *Coordinator, group, member string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{"t1"}
	}
	return c.ShareGroupHeartbeat(Client{ID: member, Host: "/127.0.0.1"}, req)
}

// kindRequests are the requests of every kind of group, each answering
// as a short string: its error by name and message, and what of its
// answer says which kind of group it found.
var kindRequests = []struct {
	name string
	ask  func(c *Coordinator, group string) string
}{
	{"JoinGroup", func(c *Coordinator, group string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return codeName(classicJoinAs(ctx, c, group, "", "", 4, time.Minute).ErrorCode)
	}},
	{"JoinGroup member", func(c *Coordinator, group string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// A consumer's join, which a KIP-848 member may send too.
		jr := kmsg.NewPtrJoinGroupRequest()
		jr.Version, jr.Group, jr.MemberID, jr.ProtocolType = 5, group, "m1", "consumer"
		jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis = 60000, 1000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", (&kmsg.ConsumerMemberMetadata{Topics: []string{"t1"}}).AppendTo(nil)
		jr.Protocols = append(jr.Protocols, p)
		return codeName(c.JoinGroup(ctx, Client{ID: "c", Host: "/127.0.0.1"}, jr).ErrorCode)
	}},
	{"Heartbeat", func(c *Coordinator, group string) string {
		return codeName(classicHeartbeat(c, group, "m1", 1))
	}},
	{"SyncGroup", func(c *Coordinator, group string) string {
		sr := kmsg.NewPtrSyncGroupRequest()
		sr.Group, sr.MemberID, sr.Generation = group, "m1", 1
		return codeName(c.SyncGroup(context.Background(), sr).ErrorCode)
	}},
	{"LeaveGroup", func(c *Coordinator, group string) string {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group = 3, group
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m1"}}
		r := c.LeaveGroup(req)
		if len(r.Members) != 1 {
			return codeName(r.ErrorCode)
		}
		return codeName(r.ErrorCode) + "/" + codeName(r.Members[0].ErrorCode)
	}},
	{"ConsumerGroupHeartbeat join", func(c *Coordinator, group string) string {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, "new", 30000
		req.SubscribedTopicNames, req.Topics = []string{"t1"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		r := c.ConsumerGroupHeartbeat(Client{ID: "new"}, req)
		return answer(r.ErrorCode, r.ErrorMessage)
	}},
	{"ConsumerGroupHeartbeat", func(c *Coordinator, group string) string {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = group, "m1", 2 // its first epoch
		r := c.ConsumerGroupHeartbeat(Client{ID: "m1"}, req)
		return answer(r.ErrorCode, r.ErrorMessage)
	}},
	{"ShareGroupHeartbeat join", func(c *Coordinator, group string) string {
		r := shareHeartbeatIn(c, group, "new", 0)
		return answer(r.ErrorCode, r.ErrorMessage)
	}},
	{"StreamsGroupHeartbeat join", func(c *Coordinator, group string) string {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, "new", 30000
		req.ProcessID, req.Topology = kmsg.StringPtr("p"), wordCountTopology()
		r := c.StreamsGroupHeartbeat(Client{ID: "new"}, req).Response
		return answer(r.ErrorCode, r.ErrorMessage)
	}},
	{"DescribeGroups", func(c *Coordinator, group string) string {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version, req.Groups = 6, []string{group}
		d := c.DescribeGroups(req).Groups[0]
		return d.State + " " + answer(d.ErrorCode, d.ErrorMessage)
	}},
	{"ConsumerGroupDescribe", func(c *Coordinator, group string) string {
		d := c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{group}}).Groups[0]
		return d.State + " " + answer(d.ErrorCode, d.ErrorMessage)
	}},
	{"ShareGroupDescribe", func(c *Coordinator, group string) string {
		d := c.ShareGroupDescribe(&kmsg.ShareGroupDescribeRequest{GroupIDs: []string{group}}).Groups[0]
		return d.GroupState + " " + answer(d.ErrorCode, d.ErrorMessage)
	}},
	{"StreamsGroupDescribe", func(c *Coordinator, group string) string {
		d := c.StreamsGroupDescribe(&kmsg.StreamsGroupDescribeRequest{Groups: []string{group}}).Groups[0]
		return d.State + " " + answer(d.ErrorCode, d.ErrorMessage)
	}},
	{"ListGroups", func(c *Coordinator, group string) string {
		r := c.ListGroups(kmsg.NewPtrListGroupsRequest())
		for _, g := range r.Groups {
			if g.Group == group {
				return g.GroupType + "/" + g.ProtocolType + "/" + g.GroupState
			}
		}
		return "absent"
	}},
	{"OffsetCommit simple", func(c *Coordinator, group string) string {
		return codeName(simpleCommit(c, group, "t1", 1, 5))
	}},
	{"OffsetCommit member", func(c *Coordinator, group string) string {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 8
		req.Group, req.Generation, req.MemberID = group, 1, "m1"
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t1"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 7, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return codeName(c.OffsetCommit(context.Background(), req).Topics[0].Partitions[0].ErrorCode)
	}},
	{"OffsetFetch", func(c *Coordinator, group string) string {
		off, code := fetchOffset(c, group, "t1", 0)
		return fmt.Sprintf("%d %s", off, codeName(code))
	}},
	{"OffsetFetch member", func(c *Coordinator, group string) string {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = group, kmsg.StringPtr("m1"), 1
		req.Groups = append(req.Groups, rg)
		return codeName(c.OffsetFetch(req).Groups[0].ErrorCode)
	}},
	{"OffsetDelete", func(c *Coordinator, group string) string {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = "t1"
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
		r := c.OffsetDelete(context.Background(), req)
		if r.ErrorCode != 0 || len(r.Topics) == 0 {
			return codeName(r.ErrorCode)
		}
		return "-/" + codeName(r.Topics[0].Partitions[0].ErrorCode)
	}},
	{"ShareGroupInfo", func(c *Coordinator, group string) string {
		info, err := c.ShareGroupInfo(group)
		if err != nil {
			return codeName(errorCode(err)) + ": " + err.Error()
		}
		return fmt.Sprintf("%d members", info.Members)
	}},
	{"CreateShareGroup", func(c *Coordinator, group string) string {
		if err := c.CreateShareGroup(group); err != nil {
			return codeName(errorCode(err)) + ": " + err.Error()
		}
		return "-"
	}},
	{"DeleteGroups", func(c *Coordinator, group string) string {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{group}
		return codeName(c.DeleteGroups(context.Background(), req).Groups[0].ErrorCode)
	}},
}

// TestRequestsOfEveryKindToEveryKind pins what each group request answers
// when it finds each kind of group (or none): the coordinator dispatches
// by kind, and a request to a group of another kind keeps its error
// (GROUP_ID_NOT_FOUND "Group g is not a <kind> group." for the KIP-848,
// 932 and 1071 APIs, INCONSISTENT_GROUP_PROTOCOL for a JoinGroup to a
// share or streams group with members, UNKNOWN_MEMBER_ID for the other
// classic APIs). The want table is Apache Kafka 4.4's answers, as
// compat's TestGroupKindsKafkaReference asks them of both; a change to a
// line is a change a client sees.
func TestRequestsOfEveryKindToEveryKind(t *testing.T) {
	var got strings.Builder
	for _, k := range kindSetups {
		for _, r := range kindRequests {
			c := New(cgTestConfig(newMemLog()))
			ownAll(t, c)
			const group = "g"
			k.setup(t, c, group)
			fmt.Fprintf(&got, "%s | %s | %s\n", k.kind, r.name, r.ask(c, group))
			c.Close()
		}
	}
	if got.String() != kindAnswers {
		t.Errorf("answers differ; got:\n%s", got.String())
	}
}

const kindAnswers = `none | JoinGroup | MEMBER_ID_REQUIRED
none | JoinGroup member | UNKNOWN_MEMBER_ID
none | Heartbeat | UNKNOWN_MEMBER_ID
none | SyncGroup | UNKNOWN_MEMBER_ID
none | LeaveGroup | -/UNKNOWN_MEMBER_ID
none | ConsumerGroupHeartbeat join | -
none | ConsumerGroupHeartbeat | GROUP_ID_NOT_FOUND: Consumer group g not found.
none | ShareGroupHeartbeat join | -
none | StreamsGroupHeartbeat join | -
none | DescribeGroups | Dead GROUP_ID_NOT_FOUND: Group g not found.
none | ConsumerGroupDescribe |  GROUP_ID_NOT_FOUND: Group g not found.
none | ShareGroupDescribe |  GROUP_ID_NOT_FOUND: Group g not found.
none | StreamsGroupDescribe |  GROUP_ID_NOT_FOUND: Group g not found.
none | ListGroups | absent
none | OffsetCommit simple | -
none | OffsetCommit member | ILLEGAL_GENERATION
none | OffsetFetch | -1 -
none | OffsetFetch member | -
none | OffsetDelete | GROUP_ID_NOT_FOUND
none | ShareGroupInfo | GROUP_ID_NOT_FOUND: Group g not found.
none | CreateShareGroup | -
none | DeleteGroups | GROUP_ID_NOT_FOUND
offsets | JoinGroup | MEMBER_ID_REQUIRED
offsets | JoinGroup member | UNKNOWN_MEMBER_ID
offsets | Heartbeat | UNKNOWN_MEMBER_ID
offsets | SyncGroup | UNKNOWN_MEMBER_ID
offsets | LeaveGroup | -/UNKNOWN_MEMBER_ID
offsets | ConsumerGroupHeartbeat join | -
offsets | ConsumerGroupHeartbeat | GROUP_ID_NOT_FOUND: Group g is not a consumer group.
offsets | ShareGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a share group.
offsets | StreamsGroupHeartbeat join | -
offsets | DescribeGroups | Empty -
offsets | ConsumerGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a consumer group.
offsets | ShareGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a share group.
offsets | StreamsGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a streams group.
offsets | ListGroups | classic//Empty
offsets | OffsetCommit simple | -
offsets | OffsetCommit member | UNKNOWN_MEMBER_ID
offsets | OffsetFetch | 1 -
offsets | OffsetFetch member | -
offsets | OffsetDelete | -/-
offsets | ShareGroupInfo | GROUP_ID_NOT_FOUND: Group g is not a share group.
offsets | CreateShareGroup | GROUP_ID_NOT_FOUND: Group g is not a share group.
offsets | DeleteGroups | -
classic | JoinGroup | MEMBER_ID_REQUIRED
classic | JoinGroup member | UNKNOWN_MEMBER_ID
classic | Heartbeat | UNKNOWN_MEMBER_ID
classic | SyncGroup | UNKNOWN_MEMBER_ID
classic | LeaveGroup | -/UNKNOWN_MEMBER_ID
classic | ConsumerGroupHeartbeat join | GROUP_ID_NOT_FOUND: GROUP_ID_NOT_FOUND: The group id does not exist.: cannot upgrade the classic group g to consumer group because the embedded consumer protocol is malformed
classic | ConsumerGroupHeartbeat | GROUP_ID_NOT_FOUND: Group g is not a consumer group.
classic | ShareGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a share group.
classic | StreamsGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a streams group.
classic | DescribeGroups | Stable -
classic | ConsumerGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a consumer group.
classic | ShareGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a share group.
classic | StreamsGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a streams group.
classic | ListGroups | classic/consumer/Stable
classic | OffsetCommit simple | UNKNOWN_MEMBER_ID
classic | OffsetCommit member | UNKNOWN_MEMBER_ID
classic | OffsetFetch | -1 -
classic | OffsetFetch member | -
classic | OffsetDelete | NON_EMPTY_GROUP
classic | ShareGroupInfo | GROUP_ID_NOT_FOUND: Group g is not a share group.
classic | CreateShareGroup | GROUP_ID_NOT_FOUND: Group g is not a share group.
classic | DeleteGroups | NON_EMPTY_GROUP
consumer | JoinGroup | INCONSISTENT_GROUP_PROTOCOL
consumer | JoinGroup member | -
consumer | Heartbeat | UNKNOWN_MEMBER_ID
consumer | SyncGroup | UNKNOWN_MEMBER_ID
consumer | LeaveGroup | -/-
consumer | ConsumerGroupHeartbeat join | -
consumer | ConsumerGroupHeartbeat | -
consumer | ShareGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a share group.
consumer | StreamsGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a streams group.
consumer | DescribeGroups | Dead GROUP_ID_NOT_FOUND: Group g is not a classic group.
consumer | ConsumerGroupDescribe | Stable -
consumer | ShareGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a share group.
consumer | StreamsGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a streams group.
consumer | ListGroups | consumer/consumer/Stable
consumer | OffsetCommit simple | UNKNOWN_MEMBER_ID
consumer | OffsetCommit member | UNSUPPORTED_VERSION
consumer | OffsetFetch | -1 -
consumer | OffsetFetch member | STALE_MEMBER_EPOCH
consumer | OffsetDelete | -/GROUP_SUBSCRIBED_TO_TOPIC
consumer | ShareGroupInfo | GROUP_ID_NOT_FOUND: Group g is not a share group.
consumer | CreateShareGroup | GROUP_ID_NOT_FOUND: Group g is not a share group.
consumer | DeleteGroups | NON_EMPTY_GROUP
consumer-empty | JoinGroup | MEMBER_ID_REQUIRED
consumer-empty | JoinGroup member | UNKNOWN_MEMBER_ID
consumer-empty | Heartbeat | UNKNOWN_MEMBER_ID
consumer-empty | SyncGroup | UNKNOWN_MEMBER_ID
consumer-empty | LeaveGroup | -/UNKNOWN_MEMBER_ID
consumer-empty | ConsumerGroupHeartbeat join | -
consumer-empty | ConsumerGroupHeartbeat | UNKNOWN_MEMBER_ID: Member m1 is not a member of group g.
consumer-empty | ShareGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a share group.
consumer-empty | StreamsGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a streams group.
consumer-empty | DescribeGroups | Dead GROUP_ID_NOT_FOUND: Group g is not a classic group.
consumer-empty | ConsumerGroupDescribe | Empty -
consumer-empty | ShareGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a share group.
consumer-empty | StreamsGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a streams group.
consumer-empty | ListGroups | consumer/consumer/Empty
consumer-empty | OffsetCommit simple | -
consumer-empty | OffsetCommit member | UNKNOWN_MEMBER_ID
consumer-empty | OffsetFetch | -1 -
consumer-empty | OffsetFetch member | UNKNOWN_MEMBER_ID
consumer-empty | OffsetDelete | -/-
consumer-empty | ShareGroupInfo | GROUP_ID_NOT_FOUND: Group g is not a share group.
consumer-empty | CreateShareGroup | GROUP_ID_NOT_FOUND: Group g is not a share group.
consumer-empty | DeleteGroups | -
share | JoinGroup | INCONSISTENT_GROUP_PROTOCOL
share | JoinGroup member | INCONSISTENT_GROUP_PROTOCOL
share | Heartbeat | UNKNOWN_MEMBER_ID
share | SyncGroup | UNKNOWN_MEMBER_ID
share | LeaveGroup | -/UNKNOWN_MEMBER_ID
share | ConsumerGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a consumer group.
share | ConsumerGroupHeartbeat | GROUP_ID_NOT_FOUND: Group g is not a consumer group.
share | ShareGroupHeartbeat join | -
share | StreamsGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a streams group.
share | DescribeGroups | Dead GROUP_ID_NOT_FOUND: Group g is not a classic group.
share | ConsumerGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a consumer group.
share | ShareGroupDescribe | Stable -
share | StreamsGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a streams group.
share | ListGroups | share/share/Stable
share | OffsetCommit simple | GROUP_ID_NOT_FOUND
share | OffsetCommit member | GROUP_ID_NOT_FOUND
share | OffsetFetch | -1 -
share | OffsetFetch member | -
share | OffsetDelete | GROUP_ID_NOT_FOUND
share | ShareGroupInfo | 1 members
share | CreateShareGroup | -
share | DeleteGroups | NON_EMPTY_GROUP
share-empty | JoinGroup | INCONSISTENT_GROUP_PROTOCOL
share-empty | JoinGroup member | INCONSISTENT_GROUP_PROTOCOL
share-empty | Heartbeat | UNKNOWN_MEMBER_ID
share-empty | SyncGroup | UNKNOWN_MEMBER_ID
share-empty | LeaveGroup | -/UNKNOWN_MEMBER_ID
share-empty | ConsumerGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a consumer group.
share-empty | ConsumerGroupHeartbeat | GROUP_ID_NOT_FOUND: Group g is not a consumer group.
share-empty | ShareGroupHeartbeat join | -
share-empty | StreamsGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a streams group.
share-empty | DescribeGroups | Dead GROUP_ID_NOT_FOUND: Group g is not a classic group.
share-empty | ConsumerGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a consumer group.
share-empty | ShareGroupDescribe | Empty -
share-empty | StreamsGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a streams group.
share-empty | ListGroups | share/share/Empty
share-empty | OffsetCommit simple | GROUP_ID_NOT_FOUND
share-empty | OffsetCommit member | GROUP_ID_NOT_FOUND
share-empty | OffsetFetch | -1 -
share-empty | OffsetFetch member | -
share-empty | OffsetDelete | GROUP_ID_NOT_FOUND
share-empty | ShareGroupInfo | 0 members
share-empty | CreateShareGroup | -
share-empty | DeleteGroups | -
streams | JoinGroup | INCONSISTENT_GROUP_PROTOCOL
streams | JoinGroup member | INCONSISTENT_GROUP_PROTOCOL
streams | Heartbeat | UNKNOWN_MEMBER_ID
streams | SyncGroup | UNKNOWN_MEMBER_ID
streams | LeaveGroup | -/UNKNOWN_MEMBER_ID
streams | ConsumerGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a consumer group.
streams | ConsumerGroupHeartbeat | GROUP_ID_NOT_FOUND: Group g is not a consumer group.
streams | ShareGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a share group.
streams | StreamsGroupHeartbeat join | INVALID_REQUEST: Topology updates are not supported yet.
streams | DescribeGroups | Dead GROUP_ID_NOT_FOUND: Group g is not a classic group.
streams | ConsumerGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a consumer group.
streams | ShareGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a share group.
streams | StreamsGroupDescribe | NotReady -
streams | ListGroups | streams/streams/NotReady
streams | OffsetCommit simple | UNKNOWN_MEMBER_ID
streams | OffsetCommit member | UNSUPPORTED_VERSION
streams | OffsetFetch | -1 -
streams | OffsetFetch member | STALE_MEMBER_EPOCH
streams | OffsetDelete | -/-
streams | ShareGroupInfo | GROUP_ID_NOT_FOUND: Group g is not a share group.
streams | CreateShareGroup | GROUP_ID_NOT_FOUND: Group g is not a share group.
streams | DeleteGroups | NON_EMPTY_GROUP
streams-empty | JoinGroup | MEMBER_ID_REQUIRED
streams-empty | JoinGroup member | UNKNOWN_MEMBER_ID
streams-empty | Heartbeat | UNKNOWN_MEMBER_ID
streams-empty | SyncGroup | UNKNOWN_MEMBER_ID
streams-empty | LeaveGroup | -/UNKNOWN_MEMBER_ID
streams-empty | ConsumerGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a consumer group.
streams-empty | ConsumerGroupHeartbeat | GROUP_ID_NOT_FOUND: Group g is not a consumer group.
streams-empty | ShareGroupHeartbeat join | GROUP_ID_NOT_FOUND: Group g is not a share group.
streams-empty | StreamsGroupHeartbeat join | INVALID_REQUEST: Topology updates are not supported yet.
streams-empty | DescribeGroups | Dead GROUP_ID_NOT_FOUND: Group g is not a classic group.
streams-empty | ConsumerGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a consumer group.
streams-empty | ShareGroupDescribe |  GROUP_ID_NOT_FOUND: Group g is not a share group.
streams-empty | StreamsGroupDescribe | Empty -
streams-empty | ListGroups | streams/streams/Empty
streams-empty | OffsetCommit simple | -
streams-empty | OffsetCommit member | UNKNOWN_MEMBER_ID
streams-empty | OffsetFetch | -1 -
streams-empty | OffsetFetch member | UNKNOWN_MEMBER_ID
streams-empty | OffsetDelete | -/-
streams-empty | ShareGroupInfo | GROUP_ID_NOT_FOUND: Group g is not a share group.
streams-empty | CreateShareGroup | GROUP_ID_NOT_FOUND: Group g is not a share group.
streams-empty | DeleteGroups | -
`
