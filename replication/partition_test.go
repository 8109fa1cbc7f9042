package replication

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/samsa-io/samsa/logstore"
)

func TestCheckLeaderEpoch(t *testing.T) {
	for _, tt := range []struct {
		current, ours int32
		want          error
	}{
		{-1, 5, nil}, {5, 5, nil}, {4, 5, ErrFencedLeaderEpoch}, {6, 5, ErrUnknownLeaderEpoch},
	} {
		if got := CheckLeaderEpoch(tt.current, tt.ours); got != tt.want {
			t.Errorf("CheckLeaderEpoch(%d, %d) = %v, want %v", tt.current, tt.ours, got, tt.want)
		}
	}
}

// fakeStore records ISR writes; fail makes them fail.
type fakeStore struct {
	mu     sync.Mutex
	writes []State
	fail   error
	epochs map[int32]int64
}

func (s *fakeStore) WriteState(_ context.Context, _ string, _ int32, st State) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return 0, s.fail
	}
	s.writes = append(s.writes, st)
	return st.Version + 1, nil
}

func (s *fakeStore) WriteStates(ctx context.Context, ws []StateWrite) (int64, error) {
	var rev int64
	for _, w := range ws {
		r, err := s.WriteState(ctx, w.Topic, w.Partition, w.State)
		if err != nil {
			return 0, err
		}
		rev = max(rev, r)
	}
	return rev, nil
}

func (s *fakeStore) BrokerEpochs(context.Context) (map[int32]int64, error) { return s.epochs, nil }

// ledPartition is a partition of replicas 1, 2, 3 led by broker 1 at
// epoch 4, its log holding n records, with the given ISR.
func ledPartition(t *testing.T, m *ReplicaManager, n int, isr []int32) *Partition {
	t.Helper()
	p := NewPartition("t", [16]byte{1}, 0, followerLog(t, [2]int{3, n}))
	p.SetState(State{Leader: 1, LeaderEpoch: 4, ISR: isr, Version: 10}, []int32{1, 2, 3})
	p.InitHighWatermark()
	m.ApplyRole(p)
	return p
}

// The leader's high watermark is the ISR's smallest log end offset, from
// the followers' valid fetches only; an acks=all wait ends there.
func TestReplicaManagerHighWatermark(t *testing.T) {
	m := NewReplicaManager(ReplicaManagerConfig{NodeID: 1, Store: &fakeStore{}})
	p := ledPartition(t, m, 10, []int32{1, 2, 3})
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("hw %d before any follower fetched, want 0", hw)
	}
	if e := p.Log.LatestEpoch(); e != 4 {
		t.Fatalf("the new leader's epoch is not recorded in its log: latest %d", e)
	}
	done := make(chan error, 1)
	go func() { done <- m.AwaitHW(context.Background(), p, 10) }()
	for _, f := range []struct {
		id     int32
		offset int64
	}{{2, 10}, {3, 7}} {
		if c, err := m.FollowerFetched(p, f.id, 1, f.offset, 3); err != nil || !c.Counted() {
			t.Fatalf("fetch by %d at %d: %+v, %v", f.id, f.offset, c, err)
		}
	}
	if hw := p.HighWatermark(); hw != 7 {
		t.Fatalf("hw %d, want 7 (follower 3's log end)", hw)
	}
	// A fetch from past the leader's end counts for nothing.
	if c, _ := m.FollowerFetched(p, 3, 1, 12, 3); c.Counted() {
		t.Fatalf("a fetch past the log end counted: %+v", c)
	}
	select {
	case err := <-done:
		t.Fatalf("acks=all wait ended at hw %d: %v", p.HighWatermark(), err)
	default:
	}
	m.FollowerFetched(p, 3, 1, 10, 3)
	if err := <-done; err != nil {
		t.Fatalf("acks=all wait: %v", err)
	}
	// Losing the leadership ends a wait with ErrNotLeader.
	go func() { done <- m.AwaitHW(context.Background(), p, 11) }()
	p.SetState(State{Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3}, Version: 11}, []int32{1, 2, 3})
	if err := <-done; !errors.Is(err, ErrNotLeader) {
		t.Fatalf("wait after the leadership moved: %v, want ErrNotLeader", err)
	}
	if _, err := m.FollowerFetched(p, 3, 1, 10, 4); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a follower fetch once led elsewhere: %v, want ErrNotLeader", err)
	}
}

// An ISR change is written to the store first, conditioned on the state's
// version, and applied here only once written.
func TestReplicaManagerISRChangeIsWrittenFirst(t *testing.T) {
	store := &fakeStore{fail: errors.New("etcd unreachable"), epochs: map[int32]int64{1: 1, 2: 1, 3: 1}}
	m := NewReplicaManager(ReplicaManagerConfig{NodeID: 1, Store: store, LagTime: time.Second})
	clock := time.Unix(1000, 0)
	m.now = func() time.Time { return clock }
	p := ledPartition(t, m, 10, []int32{1, 2, 3})
	m.FollowerFetched(p, 2, 1, 10, 3)
	m.FollowerFetched(p, 3, 1, 4, 3) // behind
	clock = clock.Add(2 * time.Second)
	m.FollowerFetched(p, 2, 1, 10, 3) // 2 keeps up; 3 lags past LagTime
	m.maybeChangeISR(context.Background(), p)
	if _, _, _, isr := p.State(); !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v applied although the write failed", isr)
	}
	store.mu.Lock()
	store.fail = nil
	store.mu.Unlock()
	m.maybeChangeISR(context.Background(), p)
	if _, _, _, isr := p.State(); !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR %v after a written shrink, want [1 2]", isr)
	}
	if len(store.writes) != 1 || store.writes[0].Version != 10 || !slices.Equal(store.writes[0].ISR, []int32{1, 2}) {
		t.Fatalf("writes %+v, want one of ISR [1 2] conditioned on version 10", store.writes)
	}
	// The high watermark follows the smaller ISR.
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("hw %d after 3 left the ISR, want 10", hw)
	}
}

// A new leader's coordinator waits until what earlier leaders acknowledged
// is committed in its epoch; losing the leadership ends the wait.
func TestAwaitEpochCommitted(t *testing.T) {
	m := NewReplicaManager(ReplicaManagerConfig{NodeID: 1, Store: &fakeStore{}})
	p := NewPartition("t", [16]byte{1}, 0, followerLog(t, [2]int{0, 10}))
	p.SetState(State{Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, Version: 1}, []int32{1, 2})
	p.hw.Store(5)
	m.ApplyRole(p) // the epoch starts at 10
	done := make(chan error, 1)
	go func() { done <- m.AwaitEpochCommitted(context.Background(), p) }()
	select {
	case err := <-done:
		t.Fatalf("returned %v below the epoch start", err)
	case <-time.After(50 * time.Millisecond):
	}
	m.FollowerFetched(p, 2, 1, 10, 1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p.SetState(State{Leader: 2, LeaderEpoch: 2, ISR: []int32{2}, Version: 2}, []int32{1, 2})
	p.hw.Store(5)
	go func() { done <- m.AwaitEpochCommitted(context.Background(), p) }()
	m.ApplyRole(p)
	if err := <-done; !errors.Is(err, ErrNotLeader) {
		t.Fatalf("after losing the leadership: %v", err)
	}
}

var _ EpochLog = (*logstore.Log)(nil)
