package share

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memStateLog is a StateLog in memory: appends in another leader epoch
// than the partition's are refused FENCED_LEADER_EPOCH, as the broker's.
type memStateLog struct {
	mu      sync.Mutex
	epoch   map[int32]int32
	records map[int32][][2][]byte
}

func newMemStateLog() *memStateLog {
	return &memStateLog{epoch: map[int32]int32{}, records: map[int32][][2][]byte{}}
}

func (l *memStateLog) Append(_ context.Context, partition, epoch int32, key, value []byte) error {
	runtime.Gosched() // let a concurrent writer pass, as a replicated append would
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.epoch[partition] != epoch {
		return kerr.FencedLeaderEpoch
	}
	l.records[partition] = append(l.records[partition], [2][]byte{key, value})
	return nil
}

func (l *memStateLog) Replay(_ context.Context, partition int32, fn func(int64, []byte, []byte)) error {
	l.mu.Lock()
	recs := append([][2][]byte(nil), l.records[partition]...)
	l.mu.Unlock()
	for i, r := range recs {
		fn(int64(i), r[0], r[1])
	}
	return nil
}

// own makes the coordinator own every partition at epoch (the log's too)
// and waits for the loads.
func own(t *testing.T, c *StateCoordinator, log *memStateLog, epoch int32) {
	t.Helper()
	owned := map[int32]int32{}
	log.mu.Lock()
	for p := range c.rt.Partitions() {
		owned[p], log.epoch[p] = epoch, epoch
	}
	log.mu.Unlock()
	c.SetOwned(owned)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, loading := c.rt.Active(); !loading {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("state partitions still loading")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStateCoordinatorFencesAndReloads(t *testing.T) {
	log := newMemStateLog()
	c := NewStateCoordinator(StateConfig{Log: log, Partitions: 3})
	defer c.Close()
	k := Key{Group: "g", TopicID: [16]byte{1}, Partition: 0}
	if _, _, err := c.Read(k); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("read before owning: %v, want NOT_COORDINATOR", err)
	}
	own(t, c, log, 1)
	if _, ok, err := c.Read(k); err != nil || ok {
		t.Fatalf("read of no state: ok %v, %v", ok, err)
	}
	write := func(stateEpoch, leaderEpoch int32, start int64) error {
		return c.Write(k, Snapshot{StateEpoch: stateEpoch, LeaderEpoch: leaderEpoch, Start: start, DeliveryComplete: -1})
	}
	if err := write(1, 5, 10); err != nil {
		t.Fatal(err)
	}
	if err := write(1, 4, 11); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("older leader epoch: %v, want FENCED_LEADER_EPOCH", err)
	}
	if err := write(0, 9, 12); !errors.Is(err, kerr.FencedStateEpoch) {
		t.Fatalf("older state epoch: %v, want FENCED_STATE_EPOCH", err)
	}
	if err := write(2, 1, 13); err != nil {
		t.Fatalf("newer state epoch, any leader epoch: %v", err)
	}

	// The state partition moves on to epoch 2 in the log before this
	// coordinator hears of it: its append is refused, as NOT_COORDINATOR.
	part := c.PartitionFor(k)
	log.mu.Lock()
	log.epoch[part] = 2
	log.mu.Unlock()
	if err := write(2, 1, 14); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("append of a stale shard: %v, want NOT_COORDINATOR", err)
	}
	// Regained at epoch 2: loaded from the log, which holds 13, not 14.
	own(t, c, log, 2)
	snap, ok, err := c.Read(k)
	if err != nil || !ok || snap.Start != 13 || snap.StateEpoch != 2 {
		t.Fatalf("after the reload: %+v ok %v, %v; want the write at 13", snap, ok, err)
	}
	c.SetOwned(nil)
	if _, _, err := c.Read(k); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("read after losing the partition: %v, want NOT_COORDINATOR", err)
	}
}

// TestStateWritesKeepTheNewest: two writers of one share-partition at
// once, one at a newer leader epoch: the older is fenced or lands first,
// never last.
func TestStateWritesKeepTheNewest(t *testing.T) {
	log := newMemStateLog()
	c := NewStateCoordinator(StateConfig{Log: log, Partitions: 1})
	defer c.Close()
	own(t, c, log, 1)
	k := Key{Group: "g", TopicID: [16]byte{2}, Partition: 0}
	for i := range 300 {
		newer, older := int32(2*i+3), int32(2*i+2)
		var wg sync.WaitGroup
		wg.Go(func() { _ = c.Write(k, Snapshot{StateEpoch: 1, LeaderEpoch: newer, Start: int64(2 * i)}) })
		wg.Go(func() { _ = c.Write(k, Snapshot{StateEpoch: 1, LeaderEpoch: older, Start: int64(2*i + 1)}) })
		wg.Wait()
		snap, _, err := c.Read(k)
		if err != nil || snap.Start != int64(2*i) {
			t.Fatalf("round %d: start %d (%v), want %d: the older write landed last", i, snap.Start, err, 2*i)
		}
	}
	// And the log agrees: a reload has the newest.
	c.SetOwned(nil)
	own(t, c, log, 1)
	if snap, _, _ := c.Read(k); snap.Start != 2*299 {
		t.Fatalf("reloaded start %d, want %d", snap.Start, 2*299)
	}
}
