package logstore

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestEpochCacheEndOffsetFor(t *testing.T) {
	c := &epochCache{path: filepath.Join(t.TempDir(), epochCheckpointName)}
	if e, o := c.endOffsetFor(0, 100); e != -1 || o != -1 {
		t.Fatalf("empty: %d %d", e, o)
	}
	c.assign(2, 10)
	c.assign(2, 15) // same epoch: no change
	c.assign(4, 30)
	c.assign(7, 50)
	const leo = 80
	for _, tc := range []struct {
		epoch     int32
		wantEpoch int32
		wantOff   int64
	}{
		{-1, -1, -1},
		{0, 0, 10}, // older than the oldest: its own epoch, first start
		{2, 2, 30},
		{3, 2, 30},
		{4, 4, 50},
		{6, 4, 50},
		{7, 7, leo},
		{8, -1, -1},
	} {
		if e, o := c.endOffsetFor(tc.epoch, leo); e != tc.wantEpoch || o != tc.wantOff {
			t.Errorf("endOffsetFor(%d) = %d %d, want %d %d", tc.epoch, e, o, tc.wantEpoch, tc.wantOff)
		}
	}
	if c.latest() != 7 {
		t.Fatal(c.latest())
	}
}

func TestEpochCacheAssignAndTruncate(t *testing.T) {
	dir := t.TempDir()
	c, err := loadEpochCache(OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	c.assign(1, 0)
	c.assign(3, 10)
	c.assign(5, 20)
	// a new epoch below a known start replaces the conflicting entries (Kafka)
	c.assign(6, 15)
	want := []epochEntry{{1, 0}, {3, 10}, {6, 15}}
	if got := c.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	c.assign(8, 40)
	if !c.truncateFromEnd(40) || !slices.Equal(c.snapshot(), want) {
		t.Fatalf("truncateFromEnd: %v", c.snapshot())
	}
	if !c.truncateFromStart(12) {
		t.Fatal("truncateFromStart changed nothing")
	}
	want = []epochEntry{{3, 12}, {6, 15}}
	if got := c.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("truncateFromStart: %v", got)
	}
	if err := c.persist(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, epochCheckpointName))
	if string(b) != "0\n2\n3 12\n6 15\n" {
		t.Fatalf("checkpoint %q", b)
	}
	c2, err := loadEpochCache(OS, dir)
	if err != nil || !slices.Equal(c2.snapshot(), want) {
		t.Fatalf("reload: %v %v", c2.snapshot(), err)
	}
}

func TestEpochCheckpointMalformed(t *testing.T) {
	for _, s := range []string{"", "1\n0\n", "0\nx\n", "0\n2\n1 5\n", "0\n2\n3 5\n2 9\n", "0\n1\n-1 4\n", "0\n99999999\n"} {
		if _, err := parseEpochCheckpoint([]byte(s)); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	if e, err := parseEpochCheckpoint([]byte("0\n0\n")); err != nil || len(e) != 0 {
		t.Fatal(e, err)
	}
}

func TestLogEpochsPersist(t *testing.T) {
	dir := t.TempDir()
	l := coreOpen(t, dir, coreConfig())
	for _, ep := range []int32{0, 0, 2, 2, 5} {
		if _, err := l.Append(coreBatch(t, 2, 1, 1), ep, coreT0); err != nil {
			t.Fatal(err)
		}
	}
	coreCrash(t, l) // the checkpoint is written when an epoch starts
	l = coreOpen(t, dir, coreConfig())
	if e, o := l.EndOffsetForEpoch(0); e != 0 || o != 4 {
		t.Fatalf("epoch 0: %d %d", e, o)
	}
	if e, o := l.EndOffsetForEpoch(4); e != 2 || o != 8 {
		t.Fatalf("epoch 4: %d %d", e, o)
	}
	if e, o := l.EndOffsetForEpoch(5); e != 5 || o != 10 {
		t.Fatalf("epoch 5: %d %d", e, o)
	}
}
