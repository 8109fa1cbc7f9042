package link

import (
	"encoding/binary"
	"testing"
)

// epochBatch is batch (spec_test.go) of n records with partition
// leader epoch epoch.
func epochBatch(base int64, n, epoch int32) []byte {
	b := batch(base, n)
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	return b
}

func TestBatchEpochs(t *testing.T) {
	var b []byte
	b = append(b, epochBatch(0, 5, 3)...)
	b = append(b, epochBatch(5, 1, 4)...)
	b = append(b, epochBatch(6, 10, 7)...)
	torn := append(b, epochBatch(16, 1, 9)[:30]...)
	for _, tt := range []struct {
		offset int64
		epoch  int32
	}{{0, 3}, {4, 3}, {5, 4}, {6, 7}, {15, 7}, {16, -1}, {-1, -1}} {
		got := int32(-1)
		if bt := batchAt(torn, tt.offset); bt != nil {
			got = int32(binary.BigEndian.Uint32(bt[12:]))
		}
		if got != tt.epoch {
			t.Errorf("batch at %d: epoch %d, want %d", tt.offset, got, tt.epoch)
		}
	}
	if e := lastBatchEpoch(torn); e != 7 {
		t.Errorf("last whole batch's epoch %d, want 7", e)
	}
	if e := lastBatchEpoch(nil); e != -1 {
		t.Errorf("no batch: %d", e)
	}
}
