package groups

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/poll"
)

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wantCode := int16(0)
	if want != nil {
		wantCode = want.Code
	}
	if got != wantCode {
		t.Errorf("%s: %s, want %s", what, codeName(got), codeName(wantCode))
	}
}

func classicSyncAs(c *Coordinator, group, member string, gen int32, f func(*kmsg.SyncGroupRequest)) *kmsg.SyncGroupResponse {
	sr := kmsg.NewPtrSyncGroupRequest()
	sr.Group, sr.MemberID, sr.Generation = group, member, gen
	if f != nil {
		f(sr)
	}
	return c.SyncGroup(context.Background(), sr)
}

func classicLeave(c *Coordinator, v int16, group string, members ...kmsg.LeaveGroupRequestMember) *kmsg.LeaveGroupResponse {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group, req.Members = v, group, members
	if v < 3 && len(members) == 1 {
		req.MemberID, req.Members = members[0].MemberID, nil
	}
	return c.LeaveGroup(req)
}

func newClassicCoordinator(t *testing.T) *Coordinator {
	t.Helper()
	return startCoordinator(t, testConfig(newMemLog()))
}

// startCoordinator is a coordinator of cfg owning every partition, closed
// when the test ends.
func startCoordinator(t *testing.T, cfg Config) *Coordinator {
	t.Helper()
	c := New(cfg)
	t.Cleanup(c.Close)
	ownAll(t, c)
	return c
}

// TestClassicMemberIDRequired is KIP-394 as Kafka's
// classicGroupJoinToClassicGroup does it: a JoinGroup v4+ without a member
// id is answered MEMBER_ID_REQUIRED with an id (client id, a UUID), and the
// member joins with that id; v3 joins at once. A rejoin of an unknown id
// is UNKNOWN_MEMBER_ID.
func TestClassicMemberIDRequired(t *testing.T) {
	c := newClassicCoordinator(t)
	ctx := context.Background()
	r := classicJoinAs(ctx, c, "g", "", "", 4, time.Minute)
	wantCode(t, "v4 join without a member id", r.ErrorCode, kerr.MemberIDRequired)
	if len(r.MemberID) <= len("c-") || r.MemberID[:2] != "c-" || r.Generation != -1 {
		t.Fatalf("MEMBER_ID_REQUIRED gave member id %q generation %d", r.MemberID, r.Generation)
	}
	if st := describeState(c, "g"); st != "Empty" {
		t.Errorf("group %s with only a pending member id, want Empty", st)
	}
	j := classicJoinAs(ctx, c, "g", r.MemberID, "", 4, time.Minute)
	if j.ErrorCode != 0 || j.MemberID != r.MemberID || j.Generation != 1 || j.LeaderID != j.MemberID || len(j.Members) != 1 {
		t.Fatalf("join with the given id: %s member %s generation %d leader %s", codeName(j.ErrorCode), j.MemberID, j.Generation, j.LeaderID)
	}
	if j.Protocol == nil || *j.Protocol != "range" {
		t.Errorf("protocol %v, want range", j.Protocol)
	}
	wantCode(t, "join with an unknown member id", classicJoinAs(ctx, c, "g", "c-nobody", "", 4, time.Minute).ErrorCode, kerr.UnknownMemberID)
	if v3 := classicJoinAs(ctx, c, "other", "", "", 3, time.Minute); v3.ErrorCode != 0 || v3.Generation != 1 {
		t.Errorf("v3 join: %s generation %d, want joined at generation 1", codeName(v3.ErrorCode), v3.Generation)
	}
}

// TestClassicRebalanceAndErrors drives a classic group through a second
// member's join: Kafka's errors for a wrong generation, an unknown member
// and an inconsistent protocol; REBALANCE_IN_PROGRESS to heartbeats and
// syncs while the group prepares the rebalance; the leader kept; the
// generation bumped; the leader's assignment handed to each member.
func TestClassicRebalanceAndErrors(t *testing.T) {
	c := newClassicCoordinator(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := classicJoin(ctx, c, "g", "", time.Minute, 10*time.Second)
	if s := classicSync(c, "g", a); s.ErrorCode != 0 || string(s.MemberAssignment) != a.MemberID {
		t.Fatalf("a's sync: %s %q", codeName(s.ErrorCode), s.MemberAssignment)
	}
	wantCode(t, "heartbeat of the next generation", classicHeartbeat(c, "g", a.MemberID, 2), kerr.IllegalGeneration)
	wantCode(t, "heartbeat of an unknown member", classicHeartbeat(c, "g", "nobody", 1), kerr.UnknownMemberID)
	wantCode(t, "heartbeat", classicHeartbeat(c, "g", a.MemberID, 1), nil)
	wrongType := classicSyncAs(c, "g", a.MemberID, 1, func(r *kmsg.SyncGroupRequest) { r.ProtocolType = kmsg.StringPtr("connect") })
	wantCode(t, "sync with another protocol type", wrongType.ErrorCode, kerr.InconsistentGroupProtocol)
	wrongName := classicSyncAs(c, "g", a.MemberID, 1, func(r *kmsg.SyncGroupRequest) { r.Protocol = kmsg.StringPtr("roundrobin") })
	wantCode(t, "sync with another protocol", wrongName.ErrorCode, kerr.InconsistentGroupProtocol)
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Version, jr.Group, jr.ProtocolType, jr.SessionTimeoutMillis = 3, "g", "connect", 60000
	jr.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	wantCode(t, "join with another protocol type", c.JoinGroup(ctx, Client{ID: "c"}, jr).ErrorCode, kerr.InconsistentGroupProtocol)
	jr.SessionTimeoutMillis = 1
	wantCode(t, "join with a session timeout below the minimum", c.JoinGroup(ctx, Client{ID: "c"}, jr).ErrorCode, kerr.InvalidSessionTimeout)

	// b joins: the group prepares a rebalance and waits for a.
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { joined <- classicJoin(ctx, c, "g", "", time.Minute, 10*time.Second) }()
	poll.Eventually(t, 10*time.Second, func() error {
		if code := classicHeartbeat(c, "g", a.MemberID, 1); code != kerr.RebalanceInProgress.Code {
			return fmt.Errorf("a's heartbeat: %s, want REBALANCE_IN_PROGRESS", codeName(code))
		}
		return nil
	})
	if st := describeState(c, "g"); st != "PreparingRebalance" {
		t.Errorf("group %s while b waits, want PreparingRebalance", st)
	}
	wantCode(t, "sync while preparing the rebalance", classicSyncAs(c, "g", a.MemberID, 1, nil).ErrorCode, kerr.RebalanceInProgress)
	a2 := classicJoin(ctx, c, "g", a.MemberID, time.Minute, 10*time.Second)
	b := <-joined
	if a2.ErrorCode != 0 || b.ErrorCode != 0 || a2.Generation != 2 || b.Generation != 2 {
		t.Fatalf("rejoin: a %s generation %d, b %s generation %d; want both at 2", codeName(a2.ErrorCode), a2.Generation, codeName(b.ErrorCode), b.Generation)
	}
	if a2.LeaderID != a.MemberID || len(a2.Members) != 2 || len(b.Members) != 0 {
		t.Fatalf("leader %s (a is %s), a has %d members, b %d; want a to lead with both", a2.LeaderID, a.MemberID, len(a2.Members), len(b.Members))
	}
	if st := describeState(c, "g"); st != "CompletingRebalance" {
		t.Errorf("group %s before the leader's sync, want CompletingRebalance", st)
	}
	wantCode(t, "heartbeat while completing the rebalance", classicHeartbeat(c, "g", b.MemberID, 2), nil)
	bSync := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { bSync <- classicSyncAs(c, "g", b.MemberID, 2, nil) }()
	if s := classicSync(c, "g", a2); s.ErrorCode != 0 || string(s.MemberAssignment) != a.MemberID {
		t.Fatalf("leader's sync: %s %q", codeName(s.ErrorCode), s.MemberAssignment)
	}
	if s := <-bSync; s.ErrorCode != 0 || string(s.MemberAssignment) != b.MemberID || s.Protocol == nil || *s.Protocol != "range" {
		t.Fatalf("b's sync: %s %q %v", codeName(s.ErrorCode), s.MemberAssignment, s.Protocol)
	}
	if st := describeState(c, "g"); st != "Stable" {
		t.Errorf("group %s after the sync, want Stable", st)
	}
	wantCode(t, "a's heartbeat of the old generation", classicHeartbeat(c, "g", a.MemberID, 1), kerr.IllegalGeneration)
}

// TestClassicStaticMember is KIP-345 as Kafka's updateStaticMemberThenRebalance
// and validateMember have it: a static member that restarts (joins with its
// instance id and no member id) takes its old place under a new member id
// without a rebalance, the old member id is fenced (FENCED_INSTANCE_ID), a
// pre-KIP-814 client is told the old leader id, and the member leaves by
// its instance id alone.
func TestClassicStaticMember(t *testing.T) {
	c := newClassicCoordinator(t)
	ctx := context.Background()
	a := classicJoinAs(ctx, c, "g", "", "i1", 5, time.Minute)
	if a.ErrorCode != 0 || a.Generation != 1 || a.LeaderID != a.MemberID || a.MemberID[:3] != "i1-" {
		t.Fatalf("static join: %s member %s generation %d leader %s", codeName(a.ErrorCode), a.MemberID, a.Generation, a.LeaderID)
	}
	if s := classicSyncAs(c, "g", a.MemberID, 1, func(r *kmsg.SyncGroupRequest) {
		r.InstanceID = kmsg.StringPtr("i1")
		r.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: a.MemberID, MemberAssignment: []byte("x")}}
	}); s.ErrorCode != 0 {
		t.Fatalf("sync: %s", codeName(s.ErrorCode))
	}

	r := classicJoinAs(ctx, c, "g", "", "i1", 5, time.Minute)
	if r.ErrorCode != 0 || r.MemberID == a.MemberID || r.Generation != 1 || r.LeaderID != a.MemberID || len(r.Members) != 0 {
		t.Fatalf("restart: %s member %s generation %d leader %s; want a new member id at generation 1, told the old leader %s",
			codeName(r.ErrorCode), r.MemberID, r.Generation, r.LeaderID, a.MemberID)
	}
	if st := describeState(c, "g"); st != "Stable" {
		t.Errorf("group %s after the restart, want Stable (no rebalance)", st)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", a.MemberID, 1, kmsg.StringPtr("i1")
	wantCode(t, "old member id's heartbeat", c.Heartbeat(hb).ErrorCode, kerr.FencedInstanceID)
	hb.MemberID = r.MemberID
	wantCode(t, "new member id's heartbeat", c.Heartbeat(hb).ErrorCode, nil)
	if s := classicSyncAs(c, "g", r.MemberID, 1, nil); s.ErrorCode != 0 || string(s.MemberAssignment) != "x" {
		t.Errorf("restarted member's sync: %s %q, want its assignment x", codeName(s.ErrorCode), s.MemberAssignment)
	}

	// v9 (KIP-814): a restarted leader learns it leads and need not assign.
	r9 := classicJoinAs(ctx, c, "g", "", "i1", 9, time.Minute)
	if r9.ErrorCode != 0 || r9.LeaderID != r9.MemberID || !r9.SkipAssignment || r9.Generation != 1 {
		t.Errorf("v9 restart: %s leader %s member %s skip %v generation %d", codeName(r9.ErrorCode), r9.LeaderID, r9.MemberID, r9.SkipAssignment, r9.Generation)
	}

	lr := classicLeave(c, 3, "g", kmsg.LeaveGroupRequestMember{InstanceID: kmsg.StringPtr("nobody")}, kmsg.LeaveGroupRequestMember{InstanceID: kmsg.StringPtr("i1")})
	if lr.ErrorCode != 0 || len(lr.Members) != 2 || lr.Members[0].ErrorCode != kerr.UnknownMemberID.Code || lr.Members[1].ErrorCode != 0 {
		t.Fatalf("leave by instance id: %+v", lr)
	}
	if st := describeState(c, "g"); st != "Empty" {
		t.Errorf("group %s after its member left, want Empty", st)
	}
	// The generation moved to 2 when the group emptied: a new member
	// starts generation 3.
	if j := classicJoinAs(ctx, c, "g", "", "", 3, time.Minute); j.Generation != 3 {
		t.Errorf("next join: generation %d, want 3", j.Generation)
	}
}

// TestClassicLeave: LeaveGroup before v3 answers the one member's error at
// the top level, v3+ per member; a leaving member empties the group and
// the generation moves on (Kafka's removeMemberAndUpdateClassicGroup).
func TestClassicLeave(t *testing.T) {
	c := newClassicCoordinator(t)
	ctx := context.Background()
	a := classicJoin(ctx, c, "g", "", time.Minute, time.Second)
	classicSync(c, "g", a)
	wantCode(t, "v1 leave of an unknown member", classicLeave(c, 1, "g", kmsg.LeaveGroupRequestMember{MemberID: "nobody"}).ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "v1 leave of an unknown group", classicLeave(c, 1, "none", kmsg.LeaveGroupRequestMember{MemberID: "nobody"}).ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "v1 leave", classicLeave(c, 1, "g", kmsg.LeaveGroupRequestMember{MemberID: a.MemberID}).ErrorCode, nil)
	if st := describeState(c, "g"); st != "Empty" {
		t.Errorf("group %s after its member left, want Empty", st)
	}
	wantCode(t, "heartbeat after leaving", classicHeartbeat(c, "g", a.MemberID, 1), kerr.UnknownMemberID)
	if j := classicJoin(ctx, c, "g", "", time.Minute, time.Second); j.Generation != 3 {
		t.Errorf("next join: generation %d, want 3", j.Generation)
	}
}

// TestClassicPendingSyncTimeout is Kafka's pending-sync timeout: members
// that do not SyncGroup within the rebalance timeout after the join phase
// are removed and the group rebalances (here to Empty).
func TestClassicPendingSyncTimeout(t *testing.T) {
	c := newClassicCoordinator(t)
	a := classicJoin(context.Background(), c, "g", "", time.Minute, 100*time.Millisecond)
	if a.ErrorCode != 0 || a.Generation != 1 {
		t.Fatalf("join: %s generation %d", codeName(a.ErrorCode), a.Generation)
	}
	poll.Eventually(t, 10*time.Second, func() error {
		if st := describeState(c, "g"); st != "Empty" {
			return fmt.Errorf("group %s, want Empty once the member missed its sync", st)
		}
		return nil
	})
	wantCode(t, "sync after removal", classicSync(c, "g", a).ErrorCode, kerr.UnknownMemberID)
}

// TestClassicPendingMemberExpires: a member id handed out with
// MEMBER_ID_REQUIRED that never joins is forgotten after the session
// timeout (Kafka's pending member expiry); joining with it then is
// UNKNOWN_MEMBER_ID.
func TestClassicPendingMemberExpires(t *testing.T) {
	c := newClassicCoordinator(t)
	ctx := context.Background()
	r := classicJoinAs(ctx, c, "g", "", "", 4, 50*time.Millisecond)
	wantCode(t, "first join", r.ErrorCode, kerr.MemberIDRequired)
	poll.Eventually(t, 10*time.Second, func() error {
		s, _ := c.shardFor("g")
		s.mu.Lock()
		defer s.mu.Unlock()
		if g, ok := s.groups["g"].(*classicGroup); ok && len(g.pending) > 0 {
			return fmt.Errorf("%d member ids pending", len(g.pending))
		}
		return nil
	})
	wantCode(t, "join with the expired id", classicJoinAs(ctx, c, "g", r.MemberID, "", 4, time.Minute).ErrorCode, kerr.UnknownMemberID)
}
