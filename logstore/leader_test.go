package logstore

import "testing"

func TestAssignEpoch(t *testing.T) {
	l, err := Open(t.TempDir(), Config{RetentionMs: -1, RetentionBytes: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if e, off := l.EndOffsetForEpoch(0); e != -1 || off != -1 {
		t.Fatalf("empty cache: (%d, %d)", e, off)
	}
	if err := l.AssignEpoch(0); err != nil {
		t.Fatal(err)
	}
	if e, off := l.EndOffsetForEpoch(0); e != 0 || off != 0 {
		t.Fatalf("after assign: (%d, %d), want (0, 0)", e, off)
	}
	if err := l.AssignEpoch(0); err != nil { // idempotent
		t.Fatal(err)
	}
	if got := l.LatestEpoch(); got != 0 {
		t.Fatalf("latest = %d", got)
	}
}

func TestEpochForOffset(t *testing.T) {
	c := &epochCache{entries: []epochEntry{{epoch: 0, start: 0}, {epoch: 3, start: 10}, {epoch: 5, start: 25}}}
	for _, tt := range []struct {
		offset int64
		want   int32
	}{{0, 0}, {9, 0}, {10, 3}, {24, 3}, {25, 5}, {1000, 5}, {-1, -1}} {
		if got := c.epochFor(tt.offset); got != tt.want {
			t.Errorf("epochFor(%d) = %d, want %d", tt.offset, got, tt.want)
		}
	}
	if got := (&epochCache{}).epochFor(3); got != -1 {
		t.Errorf("empty cache: %d", got)
	}
}
