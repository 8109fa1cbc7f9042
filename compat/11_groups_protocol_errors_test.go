package compat

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/testutil"
)

var errFencedInstanceID = kerr.FencedInstanceID

func kmsgHeartbeat(group, member, instance string, gen int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = group, member, gen
	if instance != "" {
		req.InstanceID = kmsg.StringPtr(instance)
	}
	return req
}

func joinReq(version int16, group, member, protocolType string, protocols ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = version
	req.Group, req.MemberID, req.ProtocolType = group, member, protocolType
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 3000
	for _, p := range protocols {
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name, jp.Metadata = p, []byte("meta-"+p)
		req.Protocols = append(req.Protocols, jp)
	}
	return req
}

// pinned is a client that sends key at most at version v (kgo otherwise
// picks the newest version both sides speak).
func pinned(t *testing.T, addr string, key kmsg.Key, v int16) *kgo.Client {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(key), v)
	return newKgo(t, addr, kgo.MaxVersions(vs))
}

// TestGroupProtocolErrors drives the classic protocol by hand and checks
// the errors Kafka answers at each step.
func TestGroupProtocolErrors(t *testing.T) {
	n := grpBroker(t)
	cl := newKgo(t, n.Addr())
	ctx := testCtx(t, 60*time.Second)
	group := "raw-group"

	// An out-of-range session timeout.
	bad := joinReq(5, group, "", "consumer", "range")
	bad.SessionTimeoutMillis = 100
	jr, err := bad.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "JoinGroup with a 100 ms session", jr.ErrorCode, kerr.InvalidSessionTimeout)

	// v4+: the first join hands out a member id (KIP-394).
	jr, err = joinReq(5, group, "", "consumer", "range", "roundrobin").RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "first JoinGroup v5", jr.ErrorCode, kerr.MemberIDRequired)
	if jr.MemberID == "" {
		t.Fatal("MEMBER_ID_REQUIRED without a member id")
	}
	m1 := jr.MemberID
	jr, err = joinReq(5, group, m1, "consumer", "range", "roundrobin").RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "JoinGroup with the given id", jr.ErrorCode, nil)
	if jr.Generation != 1 || jr.LeaderID != m1 || jr.MemberID != m1 || jr.Protocol == nil || *jr.Protocol != "range" || len(jr.Members) != 1 {
		t.Fatalf("join: generation %d leader %q member %q protocol %v members %d; want 1, %q, %q, range, 1",
			jr.Generation, jr.LeaderID, jr.MemberID, jr.Protocol, len(jr.Members), m1, m1)
	}
	if string(jr.Members[0].ProtocolMetadata) != "meta-range" {
		t.Errorf("leader got metadata %q, want that of the chosen protocol", jr.Members[0].ProtocolMetadata)
	}

	// A member of another protocol type, or with no protocol in common.
	jr, err = joinReq(5, group, "", "connect", "range").RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "JoinGroup with another protocol type", jr.ErrorCode, kerr.InconsistentGroupProtocol)
	jr, err = joinReq(5, group, "", "consumer", "sticky").RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "JoinGroup with no common protocol", jr.ErrorCode, kerr.InconsistentGroupProtocol)

	sync := func(member string, gen int32, assign bool) *kmsg.SyncGroupResponse {
		t.Helper()
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version = 5
		req.Group, req.MemberID, req.Generation = group, member, gen
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		if assign {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = member, []byte("assignment-1")
			req.GroupAssignment = append(req.GroupAssignment, a)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	wantCode(t, "SyncGroup of a wrong generation", sync(m1, 7, true).ErrorCode, kerr.IllegalGeneration)
	wantCode(t, "SyncGroup of an unknown member", sync("nobody", 1, true).ErrorCode, kerr.UnknownMemberID)
	sr := sync(m1, 1, true)
	wantCode(t, "leader's SyncGroup", sr.ErrorCode, nil)
	if string(sr.MemberAssignment) != "assignment-1" || sr.Protocol == nil || *sr.Protocol != "range" {
		t.Errorf("SyncGroup gave assignment %q protocol %v", sr.MemberAssignment, sr.Protocol)
	}

	hb := func(member string, gen int32) int16 {
		t.Helper()
		resp, err := kmsgHeartbeat(group, member, "", gen).RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	wantCode(t, "heartbeat", hb(m1, 1), nil)
	wantCode(t, "heartbeat of an old generation", hb(m1, 0), kerr.IllegalGeneration)
	wantCode(t, "heartbeat of an unknown member", hb("nobody", 1), kerr.UnknownMemberID)

	// A second member starts a rebalance: the first learns of it from its
	// heartbeat, and its JoinGroup completes the join phase.
	cl2 := newKgo(t, n.Addr())
	jr, err = joinReq(5, group, "", "consumer", "roundrobin", "range").RequestWith(ctx, cl2)
	if err != nil {
		t.Fatal(err)
	}
	m2 := jr.MemberID
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		r, err := joinReq(5, group, m2, "consumer", "roundrobin", "range").RequestWith(ctx, cl2)
		if err != nil {
			r = nil
		}
		joined <- r
	}()
	waitCode := func(what string, f func() int16, want *kerr.Error) {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, func() error {
			if code := f(); code != want.Code {
				return fmt.Errorf("%s: error %v (code %d), want %v", what, kerr.ErrorForCode(code), code, want)
			}
			return nil
		})
	}
	waitCode("heartbeat during the rebalance", func() int16 { return hb(m1, 1) }, kerr.RebalanceInProgress)
	commit := func(member string, gen int32, version int16, topic string) int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = version
		req.Group, req.MemberID, req.Generation = group, member, gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset, rp.LeaderEpoch = 1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, pinned(t, n.Addr(), kmsg.OffsetCommit, version))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	createTopic(t, newAdmin(t, n.Addr()), "raw-topic", 1, nil)
	// Commits from the current generation are still taken while the group
	// prepares the rebalance (consumers commit as they give partitions up).
	wantCode(t, "commit during PreparingRebalance", commit(m1, 1, 8, "raw-topic"), nil)

	jr1, err := joinReq(5, group, m1, "consumer", "range", "roundrobin").RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	jr2 := <-joined
	if jr2 == nil {
		t.Fatal("second member's JoinGroup failed")
	}
	wantCode(t, "rejoin", jr1.ErrorCode, nil)
	wantCode(t, "second member's join", jr2.ErrorCode, nil)
	if jr1.Generation != 2 || jr2.Generation != 2 || jr1.LeaderID != m1 || jr2.LeaderID != m1 || len(jr1.Members) != 2 || len(jr2.Members) != 0 {
		t.Fatalf("generation %d/%d leader %q/%q members %d/%d; want 2, leader %q with both members", jr1.Generation, jr2.Generation, jr1.LeaderID, jr2.LeaderID, len(jr1.Members), len(jr2.Members), m1)
	}
	// The leader prefers range, the new member roundrobin: one vote each,
	// both protocols common to both; either is Kafka's answer.
	if p := *jr1.Protocol; p != "range" && p != "roundrobin" {
		t.Errorf("protocol %q", p)
	}

	wantCode(t, "commit while CompletingRebalance", commit(m1, 2, 8, "raw-topic"), kerr.RebalanceInProgress)
	wantCode(t, "commit from an old generation", commit(m1, 1, 8, "raw-topic"), kerr.IllegalGeneration)
	wantCode(t, "commit by a non-member", commit("nobody", 2, 8, "raw-topic"), kerr.UnknownMemberID)
	wantCode(t, "simple commit to an active group", commit("", -1, 8, "raw-topic"), kerr.UnknownMemberID)
	wantCode(t, "commit to an unknown topic", commit(m1, 2, 8, "no-such-topic"), kerr.UnknownTopicOrPartition)

	// Groups that do not exist: generation-aware commits are refused
	// (ILLEGAL_GENERATION before v9, GROUP_ID_NOT_FOUND from v9), simple
	// ones create an offsets-only group.
	group = "raw-nobody"
	wantCode(t, "commit v8 to a missing group", commit("m", 3, 8, "raw-topic"), kerr.IllegalGeneration)
	wantCode(t, "commit v9 to a missing group", commit("m", 3, 9, "raw-topic"), kerr.GroupIDNotFound)
	wantCode(t, "simple commit", commit("", -1, 9, "raw-topic"), nil)
	wantCode(t, "heartbeat to an offsets-only group", hb("m", 0), kerr.UnknownMemberID)

	// Leaving: v3+ names members; an unknown one gets its own error.
	group = "raw-group"
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = group
	for _, id := range []string{m2, "nobody"} {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = id
		lr.Members = append(lr.Members, lm)
	}
	lresp, err := lr.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "LeaveGroup", lresp.ErrorCode, nil)
	if len(lresp.Members) != 2 || lresp.Members[0].ErrorCode != 0 || lresp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("LeaveGroup members %+v: want m2 ok, nobody UNKNOWN_MEMBER_ID", lresp.Members)
	}
	// The remaining member learns of the rebalance from its next heartbeat.
	waitCode("heartbeat after a member left", func() int16 { return hb(m1, 2) }, kerr.RebalanceInProgress)
}

// TestGroupKeepsItsOwnCopies: the metadata of a JoinGroup and the
// assignment of a SyncGroup outlive their requests; later requests on the
// same connection (which reuse its read buffer) must not change what
// DescribeGroups and later joins return.
func TestGroupKeepsItsOwnCopies(t *testing.T) {
	n := grpBroker(t)
	c := admDial(t, n.Addr())
	// A large first request grows the connection's buffer, so that every
	// later request of this test is read into the same memory.
	metadata := func(fill byte, size int) {
		md := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(strings.Repeat(string(rune(fill)), size))
		md.Topics = append(md.Topics, rt)
		c.roundTrip(md, 4)
	}
	metadata('x', 2000)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "copies"
	// COORDINATOR_NOT_AVAILABLE while __consumer_offsets is created.
	testutil.Eventually(t, 30*time.Second, func() error {
		return kerr.ErrorForCode(c.roundTrip(fc, 3).(*kmsg.FindCoordinatorResponse).ErrorCode)
	})
	var jr *kmsg.JoinGroupResponse
	testutil.Eventually(t, 20*time.Second, func() error {
		jr = c.roundTrip(joinReq(3, "copies", "", "consumer", "range"), 3).(*kmsg.JoinGroupResponse)
		return kerr.ErrorForCode(jr.ErrorCode)
	})
	sr := kmsg.NewPtrSyncGroupRequest()
	sr.Group, sr.MemberID, sr.Generation = "copies", jr.MemberID, jr.Generation
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = jr.MemberID, []byte("assignment-1")
	sr.GroupAssignment = append(sr.GroupAssignment, a)
	if r := c.roundTrip(sr, 3).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "assignment-1" {
		t.Fatalf("SyncGroup: %v %q", kerr.ErrorForCode(r.ErrorCode), r.MemberAssignment)
	}
	// Requests that fill the connection's buffer with other bytes.
	metadata('y', 240)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"copies"}
	r := c.roundTrip(dg, 5).(*kmsg.DescribeGroupsResponse)
	if len(r.Groups) != 1 || len(r.Groups[0].Members) != 1 {
		t.Fatalf("DescribeGroups: %+v", r.Groups)
	}
	m := r.Groups[0].Members[0]
	if string(m.ProtocolMetadata) != "meta-range" || string(m.MemberAssignment) != "assignment-1" {
		t.Errorf("described metadata %q assignment %q, want %q and %q", m.ProtocolMetadata, m.MemberAssignment, "meta-range", "assignment-1")
	}
}
