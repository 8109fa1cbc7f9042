package groups

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/poll"
)

// classicJoin sends a JoinGroup v3 (no MEMBER_ID_REQUIRED round trip, as
// kafka-go's v1/v2) and waits for its answer.
func classicJoin(ctx context.Context, c *Coordinator, group, memberID string, session, rebalance time.Duration) *kmsg.JoinGroupResponse {
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Version = 3
	jr.Group, jr.MemberID, jr.ProtocolType = group, memberID, "consumer"
	jr.SessionTimeoutMillis = int32(session / time.Millisecond)
	jr.RebalanceTimeoutMillis = int32(rebalance / time.Millisecond)
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{1}
	jr.Protocols = append(jr.Protocols, p)
	return c.JoinGroup(ctx, Client{ID: "c", Host: "/127.0.0.1"}, jr)
}

func classicSync(c *Coordinator, group string, j *kmsg.JoinGroupResponse) *kmsg.SyncGroupResponse {
	sr := kmsg.NewPtrSyncGroupRequest()
	sr.Group, sr.MemberID, sr.Generation = group, j.MemberID, j.Generation
	for _, m := range j.Members {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = m.MemberID, []byte(m.MemberID)
		sr.GroupAssignment = append(sr.GroupAssignment, a)
	}
	return c.SyncGroup(context.Background(), sr)
}

func classicHeartbeat(c *Coordinator, group, memberID string, gen int32) int16 {
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = group, memberID, gen
	return c.Heartbeat(hb).ErrorCode
}

// TestJoinPhaseEndsAtRebalanceTimeout is Kafka's completeClassicGroupJoin:
// when the rebalance timeout of a rebalance passes, the dynamic members
// that have not rejoined are removed and the join phase completes with
// those that have. The member that missed it is not waited for until its
// session times out; it learns it was removed (UNKNOWN_MEMBER_ID), joins
// again as a new member, and a second rebalance takes both.
func TestJoinPhaseEndsAtRebalanceTimeout(t *testing.T) {
	c := New(testConfig(newMemLog()))
	defer c.Close()
	ownAll(t, c)
	const (
		group     = "rt"
		session   = 20 * time.Second
		rebalance = 500 * time.Millisecond
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	a := classicJoin(ctx, c, group, "", session, rebalance)
	if a.ErrorCode != 0 || a.Generation != 1 {
		t.Fatalf("first member's join: %v, generation %d", kerr.ErrorForCode(a.ErrorCode), a.Generation)
	}
	if s := classicSync(c, group, a); s.ErrorCode != 0 {
		t.Fatalf("first member's sync: %v", kerr.ErrorForCode(s.ErrorCode))
	}

	// A second member joins; the first neither rejoins nor heartbeats.
	start := time.Now()
	b := classicJoin(ctx, c, group, "", session, rebalance)
	took := time.Since(start)
	if b.ErrorCode != 0 {
		t.Fatalf("second member's join: %v", kerr.ErrorForCode(b.ErrorCode))
	}
	if took < rebalance {
		t.Errorf("the join phase ended after %v, before the rebalance timeout %v", took, rebalance)
	}
	if took >= session/2 {
		t.Errorf("the join phase ended after %v: the member that did not rejoin was waited for (session timeout %v)", took, session)
	}
	if b.Generation != 2 || b.LeaderID != b.MemberID || len(b.Members) != 1 || b.Members[0].MemberID != b.MemberID {
		t.Fatalf("second member's join: generation %d, leader %s, %d members; want generation 2 led by %s alone", b.Generation, b.LeaderID, len(b.Members), b.MemberID)
	}
	if s := classicSync(c, group, b); s.ErrorCode != 0 || string(s.MemberAssignment) != b.MemberID {
		t.Fatalf("second member's sync: %v %q", kerr.ErrorForCode(s.ErrorCode), s.MemberAssignment)
	}
	if st := describeState(c, group); st != "Stable" {
		t.Fatalf("group %s after the sync, want Stable", st)
	}

	// The first member was removed.
	if code := classicHeartbeat(c, group, a.MemberID, a.Generation); code != kerr.UnknownMemberID.Code {
		t.Errorf("removed member's heartbeat: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(code))
	}
	if r := classicJoin(ctx, c, group, a.MemberID, session, rebalance); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("removed member's rejoin with its old id: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(r.ErrorCode))
	}

	// It joins again as a new member: a second, short rebalance, which
	// the second member joins on its next heartbeat.
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { joined <- classicJoin(ctx, c, group, "", session, rebalance) }()
	poll.Eventually(t, 10*time.Second, func() error {
		switch code := classicHeartbeat(c, group, b.MemberID, b.Generation); code {
		case kerr.RebalanceInProgress.Code:
			return nil
		case 0:
			return errors.New("no rebalance after the first member joined again")
		default:
			t.Fatalf("second member's heartbeat: %v", kerr.ErrorForCode(code))
			return nil
		}
	})
	b2 := classicJoin(ctx, c, group, b.MemberID, session, rebalance)
	a2 := <-joined
	if a2.ErrorCode != 0 || b2.ErrorCode != 0 || a2.Generation != 3 || b2.Generation != 3 {
		t.Fatalf("rejoins: %v generation %d, %v generation %d; want generation 3 for both",
			kerr.ErrorForCode(a2.ErrorCode), a2.Generation, kerr.ErrorForCode(b2.ErrorCode), b2.Generation)
	}
	leader := a2
	if b2.LeaderID == b2.MemberID {
		leader = b2
	}
	if len(leader.Members) != 2 {
		t.Fatalf("generation 3 has %d members, want 2", len(leader.Members))
	}
}
