package logstore

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOffsetIndexLookup(t *testing.T) {
	ix := &offsetIndex{base: 100}
	for i := int64(1); i <= 5; i++ {
		ix.add(100+i*10, i*1000)
	}
	for _, c := range []struct{ off, wantOff, wantPos int64 }{
		{0, 100, 0}, {105, 100, 0}, {110, 110, 1000}, {139, 130, 3000}, {150, 150, 5000}, {1e9, 150, 5000},
	} {
		if o, p := ix.lookup(c.off); o != c.wantOff || p != c.wantPos {
			t.Errorf("lookup(%d) = %d@%d, want %d@%d", c.off, o, p, c.wantOff, c.wantPos)
		}
	}
	for _, c := range []struct{ pos, wantOff, wantPos int64 }{
		{0, 100, 0}, {999, 100, 0}, {1000, 110, 1000}, {4999, 140, 4000}, {1e9, 150, 5000},
	} {
		if o, p := ix.lookupPos(c.pos); o != c.wantOff || p != c.wantPos {
			t.Errorf("lookupPos(%d) = %d@%d, want %d@%d", c.pos, o, p, c.wantOff, c.wantPos)
		}
	}
	if err := ix.check(5001); err != nil {
		t.Fatal(err)
	}
	if err := ix.check(5000); err == nil {
		t.Fatal("entry at the end of the log accepted")
	}
	path := filepath.Join(t.TempDir(), "x.index")
	if _, err := ix.writeTo(OS, path); err != nil {
		t.Fatal(err)
	}
	ix.add(160, 6000)
	if _, err := ix.writeTo(OS, path); err != nil { // appends the tail only
		t.Fatal(err)
	}
	got, err := loadOffsetIndex(OS, path, 100)
	if err != nil || got.count() != 6 {
		t.Fatalf("reload: %v %v", got, err)
	}
	if o, p := got.last(); o != 160 || p != 6000 {
		t.Fatalf("last %d@%d", o, p)
	}
	if err := os.WriteFile(path, []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	bad, _ := loadOffsetIndex(OS, path, 100)
	if bad.check(1<<20) == nil {
		t.Fatal("partial entry accepted")
	}
}

func TestTimeIndex(t *testing.T) {
	ti := &timeIndex{base: 10}
	ti.maybeAdd(100, 10)
	ti.maybeAdd(100, 12) // not larger: skipped
	ti.maybeAdd(150, 15)
	ti.maybeAdd(140, 18) // smaller: skipped
	ti.maybeAdd(200, 20)
	if ti.count() != 3 {
		t.Fatalf("%d entries", ti.count())
	}
	for _, c := range []struct {
		ts      int64
		wantOff int64
		ok      bool
	}{{50, -1, false}, {100, -1, false}, {101, 10, true}, {150, 10, true}, {151, 15, true}, {1000, 20, true}} {
		_, off, ok := ti.lookupBelow(c.ts)
		if ok != c.ok || (ok && off != c.wantOff) {
			t.Errorf("lookupBelow(%d) = %d %v, want %d %v", c.ts, off, ok, c.wantOff, c.ok)
		}
	}
	if ts, off, ok := ti.last(); !ok || ts != 200 || off != 20 {
		t.Fatal(ts, off, ok)
	}
	if err := ti.check(21); err != nil {
		t.Fatal(err)
	}
	if err := ti.check(20); err == nil {
		t.Fatal("entry at next offset accepted")
	}
}

func TestSegmentNames(t *testing.T) {
	if got := filepath.Base(segmentName("/x", 4711, logSuffix)); got != "00000000000000004711.log" {
		t.Fatal(got)
	}
	for name, want := range map[string]int64{"00000000000000004711.log": 4711, "4711.log": -1, "0000000000000000471x.log": -1, "00000000000000004711.index": -1} {
		b, ok := parseSegmentName(name, logSuffix)
		if (want < 0) == ok || (ok && b != want) {
			t.Errorf("%s: %d %v", name, b, ok)
		}
	}
}
