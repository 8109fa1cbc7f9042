package compat

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestGroupKindsKafkaReference makes a group of every kind on Apache
// Kafka 4.4 and on samsa (none; classic, KIP-848 consumer, KIP-932 share
// and KIP-1071 streams, each empty and with a member) and sends each group
// API to each: the classic ones (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup), the offset ones (OffsetCommit as a member and as a simple
// committer, OffsetFetch, OffsetDelete, TxnOffsetCommit), the admin ones
// (DescribeGroups, ListGroups by type, DeleteGroups), the heartbeats and
// describes of the three newer protocols and the share group offset
// APIs; every error code, and the messages clients show, must be Kafka's.
// One request per fresh group, so that no answer depends on another.
func TestGroupKindsKafkaReference(t *testing.T) {
	t.Parallel()
	props := maps.Clone(streamsProps)
	props["offsets.topic.num.partitions"] = "1"
	props["transaction.state.log.num.partitions"] = "1"
	props["group.initial.rebalance.delay.ms"] = "0"
	// Kafka 4.4 computes a consumer or share group's target at most once
	// a second by default, so that a member joining within that second
	// of the last one gets the last target's epoch; samsa computes each
	// at once, as Kafka does with no interval.
	props["group.consumer.assignment.interval.ms"] = "0"
	props["group.share.assignment.interval.ms"] = "0"
	kb, _ := startKafkaRefWith(t, props)
	n := admBroker(t, props)
	kafka := groupKindsProbe(t, kb.Addr)
	samsa := groupKindsProbe(t, n.Addr())
	compareProbes(t, kafka, samsa)
	if t.Failed() {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(kafka)) {
			fmt.Fprintf(&b, "%s | %s\n", k, kafka[k])
		}
		t.Logf("Kafka's answers:\n%s", b.String())
	}
}

// Member ids are UUIDs in base64, as Kafka's clients make them.
var (
	gkMember = base64.RawURLEncoding.EncodeToString([]byte("member-one-00000"))
	gkNew    = base64.RawURLEncoding.EncodeToString([]byte("member-new-00000"))
)

// gkTopic is the topic the groups' members subscribe to; gkTopic2 one
// none does.
const gkTopic, gkTopic2 = "gk-t1", "gk-t2"

// gkProber sends one kind of request to the groups of one broker.
type gkProber struct {
	t     *testing.T
	c     *admConn
	epoch int32 // the epoch of member gkMember after the setup, 1 if none
}

// retry sends req until the coordinator is loaded (code reads its error).
func (p *gkProber) retry(req kmsg.Request, v int16, code func(kmsg.Response) int16) kmsg.Response {
	var resp kmsg.Response
	testutil.Eventually(p.t, time.Minute, func() error {
		resp = p.c.roundTrip(req, v)
		switch e := code(resp); e {
		case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.ConcurrentTransactions.Code:
			return kerr.ErrorForCode(e)
		}
		return nil
	})
	return resp
}

func (p *gkProber) join(group, member string) *kmsg.JoinGroupResponse {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 5000
	pr := kmsg.NewJoinGroupRequestProtocol()
	pr.Name, pr.Metadata = "range", (&kmsg.ConsumerMemberMetadata{Topics: []string{gkTopic}}).AppendTo(nil)
	req.Protocols = append(req.Protocols, pr)
	return p.retry(req, 5, func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }).(*kmsg.JoinGroupResponse)
}

func (p *gkProber) cgHeartbeat(group, member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames, req.Topics = []string{gkTopic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return p.retry(req, 1, func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode }).(*kmsg.ConsumerGroupHeartbeatResponse)
}

func (p *gkProber) shareHeartbeat(group, member string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{gkTopic}
	}
	return p.retry(req, 1, func(r kmsg.Response) int16 { return r.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode }).(*kmsg.ShareGroupHeartbeatResponse)
}

func (p *gkProber) streamsHeartbeat(group, member string, epoch int32) *kmsg.StreamsGroupHeartbeatResponse {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		sub.SubtopologyID, sub.SourceTopics = "0", []string{gkTopic}
		top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}
		req.Topology = &top
		req.ProcessID = kmsg.StringPtr("process-" + member)
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	return p.retry(req, 1, func(r kmsg.Response) int16 { return r.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode }).(*kmsg.StreamsGroupHeartbeatResponse)
}

func (p *gkProber) offsetCommit(group, member string, generation int32) *kmsg.OffsetCommitResponse {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, generation, member
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = gkTopic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return p.retry(req, 8, func(r kmsg.Response) int16 {
		return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}).(*kmsg.OffsetCommitResponse)
}

// gkAnswer is an error code by name and its message, if any.
func gkAnswer(code int16, msg *string) string {
	s := "-"
	if code != 0 {
		s = kerr.ErrorForCode(code).(*kerr.Error).Message
	}
	if msg != nil {
		s += fmt.Sprintf(" %q", *msg)
	}
	return s
}

// gkHeartbeat is a heartbeat's error and the member epoch it gives: a new
// member's first epoch is 2 in every kind of group of Kafka 4.4 (a new
// consumer or share group starts at epoch 1).
func gkHeartbeat(code int16, msg *string, epoch int32) string {
	return fmt.Sprintf("%s epoch %d", gkAnswer(code, msg), epoch)
}

// gkBeatFunc sends one kind of KIP-848-style heartbeat and answers as
// gkHeartbeat.
type gkBeatFunc func(p *gkProber, group, member string, epoch int32) string

var (
	gkConsumerBeat gkBeatFunc = func(p *gkProber, group, member string, epoch int32) string {
		r := p.cgHeartbeat(group, member, epoch)
		return gkHeartbeat(r.ErrorCode, r.ErrorMessage, r.MemberEpoch)
	}
	gkShareBeat gkBeatFunc = func(p *gkProber, group, member string, epoch int32) string {
		r := p.shareHeartbeat(group, member, epoch)
		return gkHeartbeat(r.ErrorCode, r.ErrorMessage, r.MemberEpoch)
	}
	gkStreamsBeat gkBeatFunc = func(p *gkProber, group, member string, epoch int32) string {
		r := p.streamsHeartbeat(group, member, epoch)
		return gkHeartbeat(r.ErrorCode, r.ErrorMessage, r.MemberEpoch)
	}
)

// gkBeat is a request of gkRequests: a heartbeat of member, joining
// (epoch 0) when it is gkNew, else at the group's member epoch plus
// ahead.
func gkBeat(beat gkBeatFunc, member string, ahead int32) func(p *gkProber, group string) string {
	return func(p *gkProber, group string) string {
		epoch := p.epoch + ahead
		if member == gkNew {
			epoch = 0
		}
		return beat(p, group, member, epoch)
	}
}

// gkEpochs are a describe's group and assignment epochs and its members'.
func gkEpochs(group, assignment int32, members ...int32) string {
	return fmt.Sprintf("epochs %d/%d %v", group, assignment, members)
}

// gkKinds make the groups the requests go to, each named group.
var gkKinds = []struct {
	kind  string
	setup func(p *gkProber, group string)
}{
	{"none", func(*gkProber, string) {}},
	{"classic-empty", func(p *gkProber, group string) {
		if r := p.offsetCommit(group, "", -1); r.Topics[0].Partitions[0].ErrorCode != 0 {
			p.t.Fatalf("%s: commit %d", group, r.Topics[0].Partitions[0].ErrorCode)
		}
	}},
	{"classic", func(p *gkProber, group string) {
		j := p.join(group, "")
		j = p.join(group, j.MemberID)
		if j.ErrorCode != 0 {
			p.t.Fatalf("%s: join %d", group, j.ErrorCode)
		}
		s := kmsg.NewPtrSyncGroupRequest()
		s.Group, s.MemberID, s.Generation = group, j.MemberID, j.Generation
		s.ProtocolType, s.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte{}}}
		if r := p.c.roundTrip(s, 5).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 {
			p.t.Fatalf("%s: sync %d", group, r.ErrorCode)
		}
	}},
	{"consumer", func(p *gkProber, group string) {
		r := p.cgHeartbeat(group, gkMember, 0)
		if r.ErrorCode != 0 {
			p.t.Fatalf("%s: %s", group, gkAnswer(r.ErrorCode, r.ErrorMessage))
		}
		p.epoch = r.MemberEpoch
	}},
	{"consumer-empty", func(p *gkProber, group string) {
		p.cgHeartbeat(group, gkMember, 0)
		if r := p.cgHeartbeat(group, gkMember, -1); r.ErrorCode != 0 {
			p.t.Fatalf("%s: %s", group, gkAnswer(r.ErrorCode, r.ErrorMessage))
		}
	}},
	{"share", func(p *gkProber, group string) {
		r := p.shareHeartbeat(group, gkMember, 0)
		if r.ErrorCode != 0 {
			p.t.Fatalf("%s: %s", group, gkAnswer(r.ErrorCode, r.ErrorMessage))
		}
		p.epoch = r.MemberEpoch
	}},
	{"share-empty", func(p *gkProber, group string) {
		p.shareHeartbeat(group, gkMember, 0)
		if r := p.shareHeartbeat(group, gkMember, -1); r.ErrorCode != 0 {
			p.t.Fatalf("%s: %s", group, gkAnswer(r.ErrorCode, r.ErrorMessage))
		}
	}},
	{"streams", func(p *gkProber, group string) {
		r := p.streamsHeartbeat(group, gkMember, 0)
		if r.ErrorCode != 0 {
			p.t.Fatalf("%s: %s", group, gkAnswer(r.ErrorCode, r.ErrorMessage))
		}
		p.epoch = r.MemberEpoch
	}},
	{"streams-empty", func(p *gkProber, group string) {
		p.streamsHeartbeat(group, gkMember, 0)
		if r := p.streamsHeartbeat(group, gkMember, -1); r.ErrorCode != 0 {
			p.t.Fatalf("%s: %s", group, gkAnswer(r.ErrorCode, r.ErrorMessage))
		}
	}},
}

// gkRequests are the requests each kind of group is sent, each answering
// as a short string.
var gkRequests = []struct {
	name string
	ask  func(p *gkProber, group string) string
}{
	{"JoinGroup", func(p *gkProber, group string) string {
		return gkAnswer(p.join(group, "").ErrorCode, nil)
	}},
	{"JoinGroup member", func(p *gkProber, group string) string {
		return gkAnswer(p.join(group, gkMember).ErrorCode, nil)
	}},
	{"Heartbeat", func(p *gkProber, group string) string {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = group, gkMember, 1
		return gkAnswer(p.c.roundTrip(req, 4).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	}},
	{"SyncGroup", func(p *gkProber, group string) string {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = group, gkMember, 1
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		return gkAnswer(p.c.roundTrip(req, 5).(*kmsg.SyncGroupResponse).ErrorCode, nil)
	}},
	{"LeaveGroup", func(p *gkProber, group string) string {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group = group
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: gkMember}}
		r := p.c.roundTrip(req, 5).(*kmsg.LeaveGroupResponse)
		if len(r.Members) != 1 {
			return gkAnswer(r.ErrorCode, nil)
		}
		return gkAnswer(r.ErrorCode, nil) + "/" + gkAnswer(r.Members[0].ErrorCode, nil)
	}},
	{"ConsumerGroupHeartbeat join", gkBeat(gkConsumerBeat, gkNew, 0)},
	{"ConsumerGroupHeartbeat", gkBeat(gkConsumerBeat, gkMember, 0)},
	{"ConsumerGroupHeartbeat epoch ahead", gkBeat(gkConsumerBeat, gkMember, 5)},
	{"ShareGroupHeartbeat join", gkBeat(gkShareBeat, gkNew, 0)},
	{"ShareGroupHeartbeat", gkBeat(gkShareBeat, gkMember, 0)},
	{"ShareGroupHeartbeat epoch ahead", gkBeat(gkShareBeat, gkMember, 5)},
	{"StreamsGroupHeartbeat join", gkBeat(gkStreamsBeat, gkNew, 0)},
	{"StreamsGroupHeartbeat", gkBeat(gkStreamsBeat, gkMember, 0)},
	{"StreamsGroupHeartbeat epoch ahead", gkBeat(gkStreamsBeat, gkMember, 5)},
	{"DescribeGroups", func(p *gkProber, group string) string {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		d := p.c.roundTrip(req, 6).(*kmsg.DescribeGroupsResponse).Groups[0]
		return fmt.Sprintf("%s %q %s", d.State, d.ProtocolType, gkAnswer(d.ErrorCode, d.ErrorMessage))
	}},
	{"ConsumerGroupDescribe", func(p *gkProber, group string) string {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		d := p.c.roundTrip(req, 1).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
		var ms []int32
		for _, m := range d.Members {
			ms = append(ms, m.MemberEpoch)
		}
		return fmt.Sprintf("%q %s %s", d.State, gkEpochs(d.Epoch, d.AssignmentEpoch, ms...), gkAnswer(d.ErrorCode, d.ErrorMessage))
	}},
	{"ShareGroupDescribe", func(p *gkProber, group string) string {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		d := p.c.roundTrip(req, 1).(*kmsg.ShareGroupDescribeResponse).Groups[0]
		var ms []int32
		for _, m := range d.Members {
			ms = append(ms, m.MemberEpoch)
		}
		return fmt.Sprintf("%q %s %s", d.GroupState, gkEpochs(d.GroupEpoch, d.AssignmentEpoch, ms...), gkAnswer(d.ErrorCode, d.ErrorMessage))
	}},
	{"StreamsGroupDescribe", func(p *gkProber, group string) string {
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = []string{group}
		d := p.c.roundTrip(req, 0).(*kmsg.StreamsGroupDescribeResponse).Groups[0]
		var ms []int32
		for _, m := range d.Members {
			ms = append(ms, m.MemberEpoch)
		}
		return fmt.Sprintf("%q %s %s", d.State, gkEpochs(d.Epoch, d.AssignmentEpoch, ms...), gkAnswer(d.ErrorCode, d.ErrorMessage))
	}},
	{"ListGroups", func(p *gkProber, group string) string {
		var found []string
		for _, types := range [][]string{nil, {"classic"}, {"consumer"}, {"share"}, {"streams"}} {
			req := kmsg.NewPtrListGroupsRequest()
			req.TypesFilter = types
			r := p.c.roundTrip(req, 5).(*kmsg.ListGroupsResponse)
			for _, g := range r.Groups {
				if g.Group == group {
					found = append(found, fmt.Sprintf("%v:%s/%s/%s", types, g.GroupType, g.ProtocolType, g.GroupState))
				}
			}
		}
		return fmt.Sprint(found)
	}},
	{"OffsetCommit simple", func(p *gkProber, group string) string {
		return gkAnswer(p.offsetCommit(group, "", -1).Topics[0].Partitions[0].ErrorCode, nil)
	}},
	{"OffsetCommit member", func(p *gkProber, group string) string {
		return gkAnswer(p.offsetCommit(group, gkMember, p.epoch).Topics[0].Partitions[0].ErrorCode, nil)
	}},
	{"OffsetFetch", func(p *gkProber, group string) string {
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = group
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: gkTopic, Partitions: []int32{0}}}
		req.Groups = append(req.Groups, rg)
		g := p.c.roundTrip(req, 9).(*kmsg.OffsetFetchResponse).Groups[0]
		if g.ErrorCode != 0 || len(g.Topics) == 0 {
			return gkAnswer(g.ErrorCode, nil)
		}
		pp := g.Topics[0].Partitions[0]
		return fmt.Sprintf("%d %s", pp.Offset, gkAnswer(pp.ErrorCode, nil))
	}},
	{"OffsetFetch member", func(p *gkProber, group string) string {
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = group, kmsg.StringPtr(gkMember), p.epoch
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: gkTopic, Partitions: []int32{0}}}
		req.Groups = append(req.Groups, rg)
		return gkAnswer(p.c.roundTrip(req, 9).(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode, nil)
	}},
	{"OffsetDelete", func(p *gkProber, group string) string {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = gkTopic
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
		r := p.c.roundTrip(req, 0).(*kmsg.OffsetDeleteResponse)
		if r.ErrorCode != 0 || len(r.Topics) == 0 {
			return gkAnswer(r.ErrorCode, nil)
		}
		return "-/" + gkAnswer(r.Topics[0].Partitions[0].ErrorCode, nil)
	}},
	{"DeleteGroups", func(p *gkProber, group string) string {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{group}
		return gkAnswer(p.c.roundTrip(req, 2).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil)
	}},
	{"DescribeShareGroupOffsets", func(p *gkProber, group string) string {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group,
			Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: gkTopic, Partitions: []int32{0}}}}}
		g := p.c.roundTrip(req, 0).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0]
		s := gkAnswer(g.ErrorCode, g.ErrorMessage)
		for _, t := range g.Topics {
			for _, pp := range t.Partitions {
				s += fmt.Sprintf(" / %d %s", pp.StartOffset, gkAnswer(pp.ErrorCode, pp.ErrorMessage))
			}
		}
		return s
	}},
	{"AlterShareGroupOffsets", func(p *gkProber, group string) string {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: gkTopic,
			Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}}}
		r := p.c.roundTrip(req, 0).(*kmsg.AlterShareGroupOffsetsResponse)
		s := gkAnswer(r.ErrorCode, r.ErrorMessage)
		for _, t := range r.Topics {
			for _, pp := range t.Partitions {
				s += " / " + gkAnswer(pp.ErrorCode, pp.ErrorMessage)
			}
		}
		return s
	}},
	{"DeleteShareGroupOffsets", func(p *gkProber, group string) string {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = group
		req.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: gkTopic2}}
		r := p.c.roundTrip(req, 0).(*kmsg.DeleteShareGroupOffsetsResponse)
		s := gkAnswer(r.ErrorCode, r.ErrorMessage)
		for _, t := range r.Topics {
			s += " / " + gkAnswer(t.ErrorCode, t.ErrorMessage)
		}
		return s
	}},
	{"TxnOffsetCommit simple", func(p *gkProber, group string) string {
		return p.txnOffsetCommit(group, "", -1)
	}},
	{"TxnOffsetCommit member", func(p *gkProber, group string) string {
		return p.txnOffsetCommit(group, gkMember, p.epoch)
	}},
}

// txnOffsetCommit begins a transaction of its own (transactional id
// "txn-"+group), adds group's offsets to it and commits an offset.
func (p *gkProber) txnOffsetCommit(group, member string, generation int32) string {
	txnID := "txn-" + group
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr(txnID), 60000
	pid := p.retry(ip, 4, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }).(*kmsg.InitProducerIDResponse)
	if pid.ErrorCode != 0 {
		return "InitProducerID " + gkAnswer(pid.ErrorCode, nil)
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = txnID, pid.ProducerID, pid.ProducerEpoch, group
	if r := p.retry(ao, 3, func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }).(*kmsg.AddOffsetsToTxnResponse); r.ErrorCode != 0 {
		return "AddOffsetsToTxn " + gkAnswer(r.ErrorCode, nil)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txnID, group, pid.ProducerID, pid.ProducerEpoch
	req.Generation, req.MemberID = generation, member
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = gkTopic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Offset = 3
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r := p.retry(req, 3, func(r kmsg.Response) int16 {
		return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	})
	return gkAnswer(r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
}

// groupKindsProbe asks the broker at addr every request of gkRequests
// about a fresh group of every kind of gkKinds.
func groupKindsProbe(t *testing.T, addr string) map[string]string {
	t.Helper()
	adm, _ := admAdmin(t, addr)
	admCreate(t, adm, gkTopic, 1, 1, nil)
	admCreate(t, adm, gkTopic2, 1, 1, nil)
	p := &gkProber{t: t, c: admDial(t, addr)}
	// FindCoordinator makes __consumer_offsets and __transaction_state.
	for _, typ := range []int8{0, 1} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = typ, []string{"gk"}
		p.retry(req, 4, func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode })
	}
	out := map[string]string{}
	for ki, k := range gkKinds {
		for ri, r := range gkRequests {
			group := fmt.Sprintf("gk-%d-%d", ki, ri)
			p.epoch = 1
			k.setup(p, group)
			out[fmt.Sprintf("%-14s | %s", k.kind, r.name)] = r.ask(p, group)
		}
	}
	return out
}
