package share

import (
	"reflect"
	"testing"
	"time"
)

// A snapshot survives its encoding; every truncation of it is an error,
// never a panic.
func TestSnapshotRecords(t *testing.T) {
	k := Key{Group: "g", TopicID: [16]byte{1, 2, 3}, Partition: 7}
	s := Snapshot{SnapshotEpoch: 1, StateEpoch: 2, LeaderEpoch: 3, Start: 40, DeliveryComplete: 5, Created: 6, Written: 7,
		Batches: []StateBatch{{40, 44, 0, 1}, {45, 49, 2, 3}, {50, 50, 4, 5}}}
	gk, ok, err := DecodeKey(EncodeKey(k))
	if err != nil || !ok || gk != k {
		t.Fatalf("key: %v %v %v", gk, ok, err)
	}
	v := EncodeSnapshot(s)
	got, err := DecodeSnapshot(v, false)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("snapshot: %+v %v, want %+v", got, err, s)
	}
	for i := range len(v) {
		if _, err := DecodeSnapshot(v[:i], false); err == nil {
			t.Errorf("snapshot cut at %d of %d bytes decoded", i, len(v))
		}
	}
	kb := EncodeKey(k)
	for i := range len(kb) {
		if _, _, err := DecodeKey(kb[:i]); err == nil {
			t.Errorf("key cut at %d decoded", i)
		}
	}
	// A huge batch count in a short value is refused before allocating.
	if _, err := DecodeSnapshot(append(v[:38:38], 0xff, 0xff, 0xff, 0xff, 0x0f), false); err == nil {
		t.Error("a batch count past the value's end decoded")
	}
}

// restore rebuilds what snapshotLocked wrote, archiving records at the
// delivery limit.
func TestSnapshotRestore(t *testing.T) {
	cfg := Config{DeliveryLimit: 3}
	cfg.defaults()
	p := newPartition(cfg, 0)
	t.Cleanup(p.close)
	now := time.Now()
	p.Acquire("a", []Batch{{Base: 0, Last: 9}}, 100, false, now)
	if err := p.Acknowledge("a", []AckBatch{{First: 0, Last: 1, Types: []int8{AckAccept}}, {First: 5, Last: 5, Types: []int8{AckReject}}}, false, now); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.recs[0].count = 3 // offset 2, acquired for the third time
	s := p.snapshotLocked()
	p.mu.Unlock()
	q := restore(cfg, s)
	if start, end := q.Offsets(); start != 3 || end != 10 {
		t.Fatalf("restored offsets %d-%d, want 3-10 (offset 2 archived at the limit)", start, end)
	}
	if acq, _ := q.InFlight(); acq != 0 {
		t.Fatalf("%d records acquired after a restore", acq)
	}
}
