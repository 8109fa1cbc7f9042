package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// A mirror keeps the source's batches at their offsets, gaps included,
// with this cluster's leader epoch and everything else byte for byte.
func TestAppendMirrored(t *testing.T) {
	cfg := coreConfig()
	source := coreOpen(t, t.TempDir(), cfg)
	mirror := coreOpen(t, t.TempDir(), cfg)
	b1 := coreLeaderBatches(t, source, 3, 7)
	// A gap, as compaction leaves: the next batches start at 10.
	if err := source.TruncateFullyAndStartAt(10); err != nil {
		t.Fatal(err)
	}
	b2 := coreLeaderBatches(t, source, 2, 8)
	for _, b := range [][]byte{bytes.Clone(b1), bytes.Clone(b2)} {
		if _, err := mirror.AppendMirrored(b, 3, coreT0); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := mirror.EndOffset(), source.EndOffset(); got != want {
		t.Fatalf("mirror end %d, source %d", got, want)
	}
	if e, o := mirror.EndOffsetForEpoch(3); e != 3 || o != mirror.EndOffset() {
		t.Fatalf("EndOffsetForEpoch(3) = %d %d: the mirror's epochs are its own", e, o)
	}
	got, err := mirror.ReadBytes(0, 1<<30, -1)
	if err != nil {
		t.Fatal(err)
	}
	want := append(bytes.Clone(b1), b2...)
	bs, _ := SplitBatches(want)
	for _, b := range bs {
		binary.BigEndian.PutUint32(b[12:], 3)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the mirror's batches differ from the source's but for the leader epoch")
	}
	if _, err := mirror.AppendMirrored(bytes.Clone(b2), 3, coreT0); !errors.Is(err, ErrUnexpectedOffset) {
		t.Fatalf("batches below the end again: %v", err)
	}
}
