package logstore

import (
	"testing"
	"time"
)

// TestCompactTieredKeepsTombstones: the local cleaner of a tiered log
// drops expired tombstones only in segments that end at or below where
// tiered compaction cleaned the remote segments (TieredCleanedTo); above
// it a tombstone stays, since older records of its key may still be
// remote. The superseded records go everywhere.
func TestCompactTieredKeepsTombstones(t *testing.T) {
	l := coreOpen(t, t.TempDir(), compactConfig(4096))
	wrote := compactFill(t, l, 60, 8, 13, coreT0.UnixMilli())
	bases := coreSegmentBases(l)
	if len(bases) < 5 {
		t.Fatalf("test setup: %d segments", len(bases))
	}
	floor, active := bases[len(bases)/2], bases[len(bases)-1]
	opts := CompactOptions{UpTo: l.EndOffset(), Tiered: true, TieredCleanedTo: floor}
	if _, err := l.Compact(time.Now().Add(48*time.Hour), opts); err != nil {
		t.Fatal(err)
	}
	got, _ := compactRead(t, l)
	latest := map[string]int64{}
	for off, w := range wrote {
		if last, ok := latest[w.key]; off < active && (!ok || off > last) {
			latest[w.key] = off
		}
	}
	kept := 0
	for off, w := range wrote {
		if off >= active || latest[w.key] != off {
			continue
		}
		_, ok := got[off]
		if want := w.value != nil || off >= floor; ok != want {
			t.Errorf("offset %d (tombstone %v, floor %d): present %v, want %v", off, w.value == nil, floor, ok, want)
		}
		if ok && w.value == nil {
			kept++
		}
	}
	if kept == 0 {
		t.Errorf("no tombstone above the floor %d to keep", floor)
	}
	for off := range got {
		if w := wrote[off]; off < active && latest[w.key] != off {
			t.Errorf("superseded record at %d kept", off)
		}
	}
}
