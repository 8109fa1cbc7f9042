package replication

import (
	"slices"
	"testing"
	"time"
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
	l.Fetched(2, 5, 15, 20, t0)
	l.Fetched(3, 5, 18, 20, t0)
	if hw, ok := l.HighWatermark([]int32{1, 2, 3}, 20); !ok || hw != 15 {
		t.Fatalf("hw %d %v, want 15", hw, ok)
	}
	if hw, _ := l.HighWatermark([]int32{1, 3}, 20); hw != 18 {
		t.Fatalf("hw without 2: %d, want 18", hw)
	}
	if l.Fetched(9, 5, 20, 20, t0) {
		t.Fatal("a broker that is no replica was tracked")
	}
}

func TestLeaderISRShrinksAfterLagAndExpandsOnCatchUp(t *testing.T) {
	t0 := time.Unix(1000, 0)
	lag := 10 * time.Second
	l := NewLeader(1, []int32{1, 2, 3}, 10, t0)
	// 2 keeps up; 3 fetches once, behind, and stops.
	l.Fetched(2, 5, 20, 20, t0.Add(time.Second))
	l.Fetched(3, 5, 12, 20, t0.Add(time.Second))
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
	l.Fetched(3, 6, 20, 20, t0.Add(20*time.Second))
	if _, changed := l.WantISR([]int32{1, 2}, 20, 20, t0.Add(20*time.Second), lag, func(id int32, e int64) bool { return e == 7 }); changed {
		t.Fatal("a follower of a stale broker epoch joined the ISR")
	}
	isr, changed = l.WantISR([]int32{1, 2}, 20, 20, t0.Add(20*time.Second), lag, func(id int32, e int64) bool { return e == 6 })
	if !changed || !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v changed=%v, want [1 2 3]", isr, changed)
	}
	// Not before it reaches the start of the leader's epoch.
	l2 := NewLeader(1, []int32{1, 2}, 50, t0)
	l2.Fetched(2, 1, 40, 60, t0)
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
