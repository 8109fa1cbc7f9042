package groups

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/poll"
)

// assignedShare is the partitions a share heartbeat's answer assigns.
func assignedShare(r *kmsg.ShareGroupHeartbeatResponse) []int32 {
	var out []int32
	if r.Assignment != nil {
		for _, tp := range r.Assignment.TopicPartitions {
			out = append(out, tp.Partitions...)
		}
	}
	slices.Sort(out)
	return out
}

func describeShareIn(c *Coordinator, group string) kmsg.ShareGroupDescribeResponseGroup {
	return c.ShareGroupDescribe(&kmsg.ShareGroupDescribeRequest{GroupIDs: []string{group}}).Groups[0]
}

// TestShareGroupHeartbeat is Kafka 4.4's share group state machine as
// its shareGroupHeartbeat has it: a joining member gets the group epoch
// and its assignment (the simple assignor: members of a topic share it,
// every member gets partitions); a member that joins moves the group
// epoch, and the others take the new target on their next heartbeat; an
// epoch ahead of the member's is FENCED_MEMBER_EPOCH, an unknown member
// UNKNOWN_MEMBER_ID; leaving (epoch -1) answers -1 and moves the epoch,
// even for a member the group does not know; Kafka's request checks.
func TestShareGroupHeartbeat(t *testing.T) {
	c := New(cgTestConfig(newMemLog()))
	defer c.Close()
	ownAll(t, c)
	a := shareHeartbeatIn(c, "g", "a", 0)
	if a.ErrorCode != 0 || a.MemberEpoch <= 0 || len(assignedShare(a)) != 4 {
		t.Fatalf("a: %s epoch %d partitions %v", answer(a.ErrorCode, a.ErrorMessage), a.MemberEpoch, assignedShare(a))
	}
	aFirst := a.MemberEpoch
	b := shareHeartbeatIn(c, "g", "b", 0)
	if b.MemberEpoch <= a.MemberEpoch || len(assignedShare(b)) != 2 {
		t.Fatalf("b: epoch %d partitions %v, want an epoch after %d with two", b.MemberEpoch, assignedShare(b), a.MemberEpoch)
	}
	a = shareHeartbeatIn(c, "g", "a", a.MemberEpoch)
	if a.MemberEpoch != b.MemberEpoch || len(assignedShare(a)) != 2 || slices.ContainsFunc(assignedShare(a), func(p int32) bool { return slices.Contains(assignedShare(b), p) }) {
		t.Fatalf("a after b joined: epoch %d partitions %v (b has %v)", a.MemberEpoch, assignedShare(a), assignedShare(b))
	}
	epoch := a.MemberEpoch
	if r := shareHeartbeatIn(c, "g", "a", epoch); r.ErrorCode != 0 || r.Assignment != nil {
		t.Errorf("a again: %s, assignment %v; want no assignment when it did not change", codeName(r.ErrorCode), r.Assignment)
	}
	for _, tt := range []struct {
		member string
		epoch  int32
		want   string
	}{
		{"a", 90, fmt.Sprintf("FENCED_MEMBER_EPOCH: The share group member has a greater member epoch (90) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch)},
		{"a", 1, fmt.Sprintf("FENCED_MEMBER_EPOCH: The share group member has a smaller member epoch (1) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.", epoch, aFirst)},
		{"nobody", epoch, "UNKNOWN_MEMBER_ID: Member nobody is not a member of group g."},
		{"a", -2, "INVALID_REQUEST: MemberEpoch is invalid."},
		{"", 0, "INVALID_REQUEST: MemberId can't be empty."},
	} {
		r := shareHeartbeatIn(c, "g", tt.member, tt.epoch)
		if got := answer(r.ErrorCode, r.ErrorMessage); got != tt.want {
			t.Errorf("%s at epoch %d: %s, want %s", tt.member, tt.epoch, got, tt.want)
		}
	}
	if r := shareHeartbeatIn(c, "g", "nobody", -1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Errorf("unknown member leaving: %s epoch %d", codeName(r.ErrorCode), r.MemberEpoch)
	}
	if r := shareHeartbeatIn(c, "g", "b", -1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Errorf("b leaving: %s epoch %d", codeName(r.ErrorCode), r.MemberEpoch)
	}
	if d := describeShareIn(c, "g"); d.GroupEpoch != epoch+1 || len(d.Members) != 1 || d.GroupState != "Stable" {
		t.Errorf("after b left: %s epoch %d with %d members", d.GroupState, d.GroupEpoch, len(d.Members))
	}
	if a = shareHeartbeatIn(c, "g", "a", epoch); a.MemberEpoch != epoch+1 || len(assignedShare(a)) != 4 {
		t.Errorf("a alone again: epoch %d partitions %v", a.MemberEpoch, assignedShare(a))
	}
}

// TestShareGroupSessionTimeout: a share member that stops heartbeating
// for group.share.session.timeout.ms is removed, the group epoch moves,
// and the partition leaders are told to release what it holds
// (ShareMemberLeft); a member that leaves itself is not reported.
func TestShareGroupSessionTimeout(t *testing.T) {
	var mu sync.Mutex
	var left []string
	cfg := cgTestConfig(newMemLog())
	cfg.ShareSessionTimeout = 50 * time.Millisecond
	cfg.ShareMemberLeft = func(group, member string) {
		mu.Lock()
		defer mu.Unlock()
		left = append(left, group+"/"+member)
	}
	c := New(cfg)
	defer c.Close()
	ownAll(t, c)
	shareHeartbeatIn(c, "g", "x", 0)
	shareHeartbeatIn(c, "g", "x", -1)
	a := shareHeartbeatIn(c, "g", "a", 0)
	poll.Eventually(t, 10*time.Second, func() error {
		if d := describeShareIn(c, "g"); d.GroupState != "Empty" || d.GroupEpoch != a.MemberEpoch+1 {
			return fmt.Errorf("group %s at epoch %d, want Empty at %d", d.GroupState, d.GroupEpoch, a.MemberEpoch+1)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(left, []string{"g/a"}) {
		t.Errorf("members released: %v, want g/a", left)
	}
}

// TestShareGroupOutlivesOffsetsRetention: the offsets retention check
// leaves share groups alone (they commit no offsets here; their state is
// the share-partitions'): a share group with a member is neither dropped
// nor emptied by it, and its member goes on heartbeating.
func TestShareGroupOutlivesOffsetsRetention(t *testing.T) {
	cfg := cgTestConfig(newMemLog())
	cfg.OffsetsRetention = time.Millisecond
	cfg.RetentionCheckInterval = 5 * time.Millisecond
	c := New(cfg)
	defer c.Close()
	ownAll(t, c)
	a := shareHeartbeatIn(c, "g", "a", 0)
	// Wait for two retention checks to have run since the join.
	for range 2 {
		before := simpleCommit(c, "tick", "t1", 0, 1)
		if before != 0 {
			t.Fatal(codeName(before))
		}
		poll.Eventually(t, 10*time.Second, func() error {
			if off, _ := fetchOffset(c, "tick", "t1", 0); off != -1 {
				return fmt.Errorf("offset of group tick not expired yet")
			}
			return nil
		})
	}
	if r := shareHeartbeatIn(c, "g", "a", a.MemberEpoch); r.ErrorCode != 0 || r.MemberEpoch != a.MemberEpoch {
		t.Errorf("member after the retention check: %s epoch %d, want epoch %d", answer(r.ErrorCode, r.ErrorMessage), r.MemberEpoch, a.MemberEpoch)
	}
}
