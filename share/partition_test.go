package share

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func testPartition(t *testing.T, cfg Config) *Partition {
	cfg.defaults()
	p := newPartition(cfg, 0)
	t.Cleanup(p.close)
	return p
}

// Two members take disjoint records; acknowledgements of records a member
// does not hold are INVALID_RECORD_STATE and change nothing; accepted and
// rejected records move the start offset.
func TestPartitionAcquireAcknowledge(t *testing.T) {
	p := testPartition(t, Config{})
	now := time.Now()
	batches := []Batch{{Base: 0, Last: 4}, {Base: 5, Last: 9}}
	got, used := p.Acquire("a", batches, 3, false, now)
	if len(got) != 1 || got[0] != (Acquired{0, 4, 1}) || !used[0] || used[1] {
		t.Fatalf("a acquired %v (batches %v), want 0-4 once: whole batches", got, used)
	}
	if off, ok := p.NextOffset(now); off != 5 || !ok {
		t.Fatalf("next offset %d %v, want 5", off, ok)
	}
	got, _ = p.Acquire("b", batches, 100, false, now)
	if len(got) != 1 || got[0] != (Acquired{5, 9, 1}) {
		t.Fatalf("b acquired %v, want 5-9", got)
	}
	err := p.Acknowledge("b", []AckBatch{{First: 4, Last: 5, Types: []int8{AckAccept}}}, false, now)
	if !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("b acknowledging a's offset 4: %v, want INVALID_RECORD_STATE", err)
	}
	for _, bad := range []AckBatch{{First: 3, Last: 2, Types: []int8{1}}, {First: 0, Last: 4, Types: []int8{1, 1}}, {First: 0, Last: 0, Types: []int8{9}}, {First: 0, Last: 0, Types: []int8{AckRenew}}} {
		if err := p.Acknowledge("a", []AckBatch{bad}, false, now); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("ack %+v: %v, want INVALID_REQUEST", bad, err)
		}
	}
	if err := p.Acknowledge("a", []AckBatch{{First: 0, Last: 4, Types: []int8{AckAccept, AckReject, AckAccept, AckRelease, AckAccept}}}, false, now); err != nil {
		t.Fatal(err)
	}
	if start, end := p.Offsets(); start != 3 || end != 10 {
		t.Fatalf("offsets %d-%d, want 3-10 (offset 3 released)", start, end)
	}
	got, _ = p.Acquire("b", []Batch{{Base: 0, Last: 4}}, 100, false, now)
	if len(got) != 1 || got[0] != (Acquired{3, 3, 2}) {
		t.Fatalf("b re-acquired %v, want offset 3, delivery 2", got)
	}
}

// A lock that expires makes its records available again, until the
// delivery limit archives them.
func TestPartitionLockExpiryAndDeliveryLimit(t *testing.T) {
	p := testPartition(t, Config{LockDuration: time.Second, DeliveryLimit: 2})
	now := time.Now()
	b := []Batch{{Base: 0, Last: 1}}
	if got, _ := p.Acquire("a", b, 10, false, now); len(got) != 1 || got[0].Count != 1 {
		t.Fatalf("acquired %v", got)
	}
	later := now.Add(2 * time.Second)
	got, _ := p.Acquire("b", b, 10, false, later)
	if len(got) != 1 || got[0] != (Acquired{0, 1, 2}) {
		t.Fatalf("after the lock: %v, want 0-1 with count 2", got)
	}
	if err := p.Acknowledge("a", []AckBatch{{First: 0, Last: 0, Types: []int8{AckAccept}}}, false, later); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("a acknowledging after its lock expired: %v", err)
	}
	if off, _ := p.NextOffset(later.Add(2 * time.Second)); off != 2 {
		t.Fatalf("next offset %d after the second lock expired, want 2: archived at the limit", off)
	}
	if start, _ := p.Offsets(); start != 2 {
		t.Fatalf("start %d, want 2", start)
	}
}

// record_limit mode stops inside a batch; the window stops at MaxLocks.
func TestPartitionLimits(t *testing.T) {
	p := testPartition(t, Config{MaxLocks: 100})
	now := time.Now()
	got, _ := p.Acquire("a", []Batch{{Base: 0, Last: 9}}, 4, true, now)
	if len(got) != 1 || got[0] != (Acquired{0, 3, 1}) {
		t.Fatalf("exact acquire: %v, want 0-3", got)
	}
	got, _ = p.Acquire("a", []Batch{{Base: 0, Last: 9}, {Base: 10, Last: 149}, {Base: 150, Last: 160}}, 1000, false, now)
	if len(got) != 1 || got[0] != (Acquired{4, 149, 1}) {
		t.Fatalf("acquire up to the lock limit: %v, want 4-149 (whole batches)", got)
	}
	if _, ok := p.NextOffset(now); ok {
		t.Fatal("a full window offers an offset")
	}
	p.ReleaseMember("a")
	if off, ok := p.NextOffset(now); off != 0 || !ok {
		t.Fatalf("after release: %d %v", off, ok)
	}
}

// Control batches and, for a read_committed group, the batches of aborted
// transactions are archived, never acquired; the start moves past them.
func TestPartitionSkipsControlAndAborted(t *testing.T) {
	p := testPartition(t, Config{})
	now := time.Now()
	batches := []Batch{{Base: 0, Last: 4, Aborted: true}, {Base: 5, Last: 5, Control: true}, {Base: 6, Last: 7}, {Base: 8, Last: 8, Control: true}}
	got, used := p.Acquire("a", batches, 100, false, now)
	if len(got) != 1 || got[0] != (Acquired{6, 7, 1}) || used[0] || used[1] || !used[2] || used[3] {
		t.Fatalf("acquired %v (batches %v), want 6-7 only", got, used)
	}
	if err := p.Acknowledge("a", []AckBatch{{First: 6, Last: 7, Types: []int8{AckAccept}}}, false, now); err != nil {
		t.Fatal(err)
	}
	if start, end := p.Offsets(); start != 9 || end != 9 {
		t.Fatalf("offsets %d-%d, want 9-9: every offset done", start, end)
	}
}
