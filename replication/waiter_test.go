package replication

import (
	"errors"
	"testing"
	"time"

	"github.com/samsa-io/samsa/logstore"
)

func ready(w *FetchWaiter) bool {
	select {
	case <-w.Ready():
		return true
	default:
		return false
	}
}

// A parked follower fetch wakes once the bytes appended reach what it
// still wants; a consumer's when the high watermark moves; both at a change
// of leadership. Each learns which partitions moved, and only those.
func TestFetchWaiters(t *testing.T) {
	m := NewReplicaManager(ReplicaManagerConfig{NodeID: 1, Store: &fakeStore{}})
	p := ledPartition(t, m, 10, []int32{1, 2})
	q := ledPartition(t, m, 10, []int32{1, 2})
	m.FollowerFetched(p, 2, 1, 10, 3)
	m.FollowerFetched(q, 2, 1, 10, 3)

	follower, consumer := NewFetchWaiter(1000), NewFetchWaiter(1)
	for _, x := range []*Partition{p, q} {
		x.Watch(follower, true)
		x.Watch(consumer, false)
	}
	appendBytes := func(n int) {
		t.Helper()
		b, err := logstore.BuildBatch(0, logstore.CodecNone, []logstore.Record{{Timestamp: 1, Value: make([]byte, n)}}, -1, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.AppendAsLeader(p, b, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	appendBytes(540) // about 600 bytes of batch; the HW waits for follower 2
	if ready(follower) || ready(consumer) {
		t.Fatal("woken before enough bytes (follower) or a high watermark move (consumer)")
	}
	appendBytes(540)
	if !ready(follower) {
		t.Fatal("a follower fetch not woken with 1200 of its 1000 bytes appended")
	}
	if ready(consumer) {
		t.Fatal("a consumer fetch woken by bytes it cannot read yet")
	}
	if moved := follower.Take(); len(moved) != 1 || moved[0] != p {
		t.Fatalf("moved %v, want only p", moved)
	}
	// The follower's fetch of the new records moves the HW.
	m.FollowerFetched(p, 2, 1, p.Log.EndOffset(), 4)
	if !ready(consumer) {
		t.Fatal("a consumer fetch not woken by a high watermark move")
	}
	if moved := consumer.Take(); len(moved) != 1 || moved[0] != p {
		t.Fatalf("moved %v, want only p", moved)
	}
	follower.Take() // the HW move woke it too
	// A new leader elsewhere wakes its waiters at once.
	q.Unwatch(consumer)
	q.SetState(State{Leader: 2, LeaderEpoch: 5, ISR: []int32{2}, Version: 20}, []int32{1, 2})
	if !ready(follower) || ready(consumer) {
		t.Fatal("a change of leadership woke the wrong waiters")
	}
	if moved := follower.Take(); len(moved) != 1 || moved[0] != q {
		t.Fatalf("moved %v, want only q", moved)
	}
}

// An append in the leader epoch its writer took the partition on is
// refused once the partition has a newer one, even led here again.
func TestAppendInEpoch(t *testing.T) {
	m := NewReplicaManager(ReplicaManagerConfig{NodeID: 1, Store: &fakeStore{}})
	p := ledPartition(t, m, 10, []int32{1})
	batch := func() []byte {
		b, err := logstore.BuildBatch(0, logstore.CodecNone, []logstore.Record{{Timestamp: 1, Value: []byte("v")}}, -1, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := m.AppendInEpoch(p, batch(), time.Now(), 4); err != nil {
		t.Fatalf("append in the current epoch 4: %v", err)
	}
	p.SetState(State{Leader: 1, LeaderEpoch: 6, ISR: []int32{1}, Version: 30}, []int32{1, 2, 3})
	m.ApplyRole(p)
	end := p.Log.EndOffset()
	if _, err := m.AppendInEpoch(p, batch(), time.Now(), 4); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("append in epoch 4 when led in 6: %v, want ErrFencedLeaderEpoch", err)
	}
	if got := p.Log.EndOffset(); got != end {
		t.Fatalf("the refused append moved the log end from %d to %d", end, got)
	}
	if _, err := m.AppendInEpoch(p, batch(), time.Now(), 6); err != nil {
		t.Fatalf("append in the current epoch 6: %v", err)
	}
}
