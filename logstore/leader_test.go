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
