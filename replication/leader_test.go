package replication

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/samsa-io/samsa/logstore"
)

func TestLeaderHighWatermarkIsTheISRMinimum(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := NewLeader(1, []int32{1, 2, 3}, 10, t0)
	if _, ok := l.HighWatermark([]int32{1, 2, 3}, 20); ok {
		t.Fatal("high watermark known before the followers fetched")
	}
	if hw, ok := l.HighWatermark([]int32{1}, 20); !ok || hw != 20 {
		t.Fatalf("leader alone: %d %v, want its log end 20", hw, ok)
	}
	log := &fakeLog{end: 20}
	l.Fetched(2, 5, 15, -1, log, t0)
	l.Fetched(3, 5, 18, -1, log, t0)
	if hw, ok := l.HighWatermark([]int32{1, 2, 3}, 20); !ok || hw != 15 {
		t.Fatalf("hw %d %v, want 15", hw, ok)
	}
	if hw, _ := l.HighWatermark([]int32{1, 3}, 20); hw != 18 {
		t.Fatalf("hw without 2: %d, want 18", hw)
	}
	if c := l.Fetched(9, 5, 20, -1, log, t0); c.Replica || c.Counted() {
		t.Fatal("a broker that is no replica was tracked")
	}
}

func TestLeaderISRShrinksAfterLagAndExpandsOnCatchUp(t *testing.T) {
	t0 := time.Unix(1000, 0)
	lag := 10 * time.Second
	l := NewLeader(1, []int32{1, 2, 3}, 10, t0)
	log := &fakeLog{end: 20}
	// 2 keeps up; 3 fetches once, behind, and stops.
	l.Fetched(2, 5, 20, -1, log, t0.Add(time.Second))
	l.Fetched(3, 5, 12, -1, log, t0.Add(time.Second))
	if isr, changed := l.WantISR([]int32{1, 2, 3}, 20, 12, t0.Add(5*time.Second), lag, nil); changed {
		t.Fatalf("ISR changed to %v within the lag time", isr)
	}
	isr, changed := l.WantISR([]int32{1, 2, 3}, 20, 12, t0.Add(12*time.Second), lag, nil)
	if !changed || !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR %v changed=%v after the lag time, want [1 2]", isr, changed)
	}
	// A follower whose log end equals the leader's stays, however long it
	// was quiet (nothing to fetch).
	if _, changed := l.WantISR([]int32{1, 2}, 20, 20, t0.Add(time.Hour), lag, nil); changed {
		t.Fatal("an idle caught-up follower left the ISR")
	}
	// 3 catches up to the high watermark: it may join, if its broker epoch
	// is the live one.
	l.Fetched(3, 6, 20, -1, log, t0.Add(20*time.Second))
	if _, changed := l.WantISR([]int32{1, 2}, 20, 20, t0.Add(20*time.Second), lag, func(id int32, e int64) bool { return e == 7 }); changed {
		t.Fatal("a follower of a stale broker epoch joined the ISR")
	}
	isr, changed = l.WantISR([]int32{1, 2}, 20, 20, t0.Add(20*time.Second), lag, func(id int32, e int64) bool { return e == 6 })
	if !changed || !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v changed=%v, want [1 2 3]", isr, changed)
	}
	// Not before it reaches the start of the leader's epoch.
	l2 := NewLeader(1, []int32{1, 2}, 50, t0)
	l2.Fetched(2, 1, 40, -1, &fakeLog{end: 60}, t0)
	if _, changed := l2.WantISR([]int32{1}, 60, 40, t0, lag, nil); changed {
		t.Fatal("a follower below the epoch start joined the ISR")
	}
}

func TestWholeBatchesDropsATrailingPart(t *testing.T) {
	batch := func(n int) []byte {
		b := make([]byte, 12+n)
		b[8], b[9], b[10], b[11] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		return b
	}
	two := append(batch(61), batch(70)...)
	if got := wholeBatches(two); len(got) != len(two) {
		t.Fatalf("%d bytes kept of %d", len(got), len(two))
	}
	if got := wholeBatches(two[:len(two)-5]); len(got) != 12+61 {
		t.Fatalf("%d bytes kept, want the first batch (73)", len(got))
	}
	if got := wholeBatches(two[:7]); len(got) != 0 {
		t.Fatalf("%d bytes kept of a partial header", len(got))
	}
}

// fakeLog is a leader's log: its epochs (epoch, start offset), ascending,
// and its start and end offsets.
type fakeLog struct {
	start, end int64
	epochs     [][2]int64
}

func (f *fakeLog) StartOffset() int64 { return f.start }
func (f *fakeLog) EndOffset() int64   { return f.end }

// EndOffsetForEpoch as logstore answers it: the largest epoch <= epoch
// and the next epoch's start, or the log end for the newest.
func (f *fakeLog) EndOffsetForEpoch(epoch int32) (int32, int64) {
	e, end := int32(-1), int64(-1)
	for i, ep := range f.epochs {
		if int32(ep[0]) > epoch {
			if i == 0 {
				return epoch, ep[1]
			}
			return e, ep[1]
		}
		e, end = int32(ep[0]), f.end
	}
	if e != epoch {
		return -1, -1 // newer than any known
	}
	return e, end
}

func TestValidateFetch(t *testing.T) {
	// The leader wrote epoch 1 from 100, epoch 2 from 1446, and ends at 1448.
	log := &fakeLog{start: 100, end: 1448, epochs: [][2]int64{{1, 100}, {2, 1446}}}
	tests := []struct {
		name      string
		offset    int64
		lastEpoch int32
		div       *Divergence
		err       error
	}{
		{"no epoch (old peer), within the log", 1440, -1, nil, nil},
		{"no epoch, at the log end", 1448, -1, nil, nil},
		{"no epoch, past the log end", 1449, -1, nil, logstore.ErrOffsetOutOfRange},
		{"no epoch, below the log start", 99, -1, nil, logstore.ErrOffsetOutOfRange},
		{"current epoch, caught up", 1448, 2, nil, nil},
		{"current epoch, past the log end", 1450, 2, &Divergence{Epoch: 2, EndOffset: 1448}, nil},
		{"old epoch, before it ended", 1440, 1, nil, nil},
		{"old epoch, at its end", 1446, 1, nil, nil},
		// The fault seen: a follower that led epoch 1 further than this
		// leader ever had it.
		{"old epoch, past its end here", 1449, 1, &Divergence{Epoch: 1, EndOffset: 1446}, nil},
		{"old epoch, below the leader's end but past the epoch's", 1447, 1, &Divergence{Epoch: 1, EndOffset: 1446}, nil},
		{"an epoch newer than the leader's", 1448, 3, nil, logstore.ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		div, err := ValidateFetch(log, tt.offset, tt.lastEpoch)
		if (div == nil) != (tt.div == nil) || div != nil && *div != *tt.div || !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
			t.Errorf("%s: ValidateFetch(%d, epoch %d) = %v, %v; want %v, %v", tt.name, tt.offset, tt.lastEpoch, div, err, tt.div, tt.err)
		}
	}
	// An epoch this leader never led: the largest before it, to its end.
	gap := &fakeLog{end: 300, epochs: [][2]int64{{0, 0}, {3, 200}}}
	if div, err := ValidateFetch(gap, 250, 2); err != nil || div == nil || *div != (Divergence{Epoch: 0, EndOffset: 200}) {
		t.Errorf("epoch 2 unknown to the leader: %v, %v; want diverging at epoch 0, offset 200", div, err)
	}
}

// A follower with a divergent tail is answered, and counts for nothing:
// not its log end offset, not the high watermark, not the ISR (the
// acknowledged writes lost in the fault of RELIABILITY.md §2, item 20).
func TestLeaderIgnoresDivergentFollowerFetches(t *testing.T) {
	t0 := time.Unix(1000, 0)
	lag := 5 * time.Second
	// Broker 1 leads epoch 2 from 1446, with 2 in the ISR; it acknowledged
	// 1446 and 1447. Broker 3 led epoch 1 up to 1449, which 1 never had.
	log := &fakeLog{end: 1448, epochs: [][2]int64{{1, 0}, {2, 1446}}}
	l := NewLeader(1, []int32{1, 2, 3}, 1446, t0)
	if c := l.Fetched(2, 7, 1448, 2, log, t0); !c.Counted() {
		t.Fatalf("an in-sync follower's fetch: %+v", c)
	}
	for _, offset := range []int64{1449, 1447, 1448} {
		c := l.Fetched(3, 7, offset, 1, log, t0.Add(time.Second))
		if c.Counted() || c.Diverging == nil || *c.Diverging != (Divergence{Epoch: 1, EndOffset: 1446}) {
			t.Fatalf("divergent fetch at %d: %+v, want diverging at epoch 1, offset 1446, not counted", offset, c)
		}
	}
	if leo := l.FollowerLEO(3); leo != -1 {
		t.Fatalf("a divergent follower's log end offset recorded: %d", leo)
	}
	// A fetch past the leader's log end with no epoch (an old peer) is out
	// of range, and no more counted.
	if c := l.Fetched(3, 7, 1449, -1, log, t0.Add(time.Second)); c.Counted() || !errors.Is(c.Err, logstore.ErrOffsetOutOfRange) {
		t.Fatalf("fetch past the log end: %+v", c)
	}
	if hw, ok := l.HighWatermark([]int32{1, 2}, 1448); !ok || hw != 1448 {
		t.Fatalf("hw %d %v, want 1448", hw, ok)
	}
	if isr, changed := l.WantISR([]int32{1, 2}, 1448, 1448, t0.Add(2*time.Second), lag, nil); changed {
		t.Fatalf("a divergent follower joined the ISR: %v", isr)
	}
	// Once it truncated to 1446 and fetched on, it catches up and joins.
	if c := l.Fetched(3, 7, 1446, 1, log, t0.Add(3*time.Second)); !c.Counted() {
		t.Fatalf("fetch after truncation: %+v", c)
	}
	if _, changed := l.WantISR([]int32{1, 2}, 1448, 1448, t0.Add(3*time.Second), lag, nil); changed {
		t.Fatal("a follower behind the high watermark joined the ISR")
	}
	l.Fetched(3, 7, 1448, 2, log, t0.Add(4*time.Second))
	if isr, changed := l.WantISR([]int32{1, 2}, 1448, 1448, t0.Add(4*time.Second), lag, nil); !changed || !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v changed=%v, want [1 2 3]", isr, changed)
	}
}
