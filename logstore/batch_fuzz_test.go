package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// Fuzz limits: decompression is bounded small so that the fuzzer's bombs
// cost little.
const fuzzLimit = 1 << 20

// fuzzSeeds returns valid batches of every codec plus a few broken ones.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, c := range allCodecs {
		_, b := refBatchOf(t, c, sampleRecords(5))
		seeds = append(seeds, b)
		b2, err := BuildBatch(0, c, toRecords(sampleRecords(2)), 3, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b2)
	}
	seeds = append(seeds, nil, make([]byte, BatchHeaderSize), bytes.Repeat([]byte{0xff}, 80))
	return seeds
}

// fixFraming makes b look like a whole batch (batchLength, magic, CRC) so
// that the fuzzer reaches the record and codec decoders instead of dying
// at the CRC.
func fixFraming(b []byte) []byte {
	if len(b) < BatchHeaderSize {
		return nil
	}
	b = bytes.Clone(b)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	b[16] = 2
	putCRC(b)
	return b
}

func FuzzSplitBatches(f *testing.F) {
	seeds := fuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add(append(bytes.Clone(seeds[0]), seeds[1]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		batches, err := SplitBatches(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrCorruptMessage) {
				t.Fatalf("error %v wraps neither ErrInvalidRecord nor ErrCorruptMessage", err)
			}
			return
		}
		total := 0
		for _, bb := range batches {
			h, err := ParseBatchHeader(bb)
			if err != nil || h.Size() != int64(len(bb)) || h.Magic != 2 {
				t.Fatalf("split returned a bad batch: %+v %v", h, err)
			}
			total += len(bb)
		}
		if total != len(b) {
			t.Fatalf("batches cover %d of %d bytes", total, len(b))
		}
	})
}

func FuzzValidateBatch(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, in := range [][]byte{b, fixFraming(b)} {
			orig := bytes.Clone(in)
			info, err := ValidateBatchInfo(in, fuzzLimit)
			if !bytes.Equal(in, orig) {
				t.Fatal("ValidateBatch modified its input")
			}
			if err != nil {
				if !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrCorruptMessage) && !errors.Is(err, ErrUnsupportedCompression) {
					t.Fatalf("unexpected error class: %v", err)
				}
				continue
			}
			// A valid batch decodes to exactly NumRecords records at
			// offsets 0..n-1 and re-encodes to a batch that validates.
			h := info.Header
			var recs []Record
			err = ForEachRecordLimit(in, fuzzLimit, func(r Record) bool {
				if r.Offset != int64(len(recs)) {
					t.Fatalf("record %d has offset %d", len(recs), r.Offset)
				}
				r.Key, r.Value = cloneNullable(r.Key), cloneNullable(r.Value)
				for i := range r.Headers {
					r.Headers[i].Value = cloneNullable(r.Headers[i].Value)
				}
				recs = append(recs, r)
				return true
			})
			if err != nil || len(recs) != int(h.NumRecords) {
				t.Fatalf("valid batch: %d records, %v", len(recs), err)
			}
			if h.LogAppendTime() {
				continue // record timestamps were replaced by MaxTimestamp
			}
			again, err := BuildBatch(0, h.Codec(), recs, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ValidateBatch(again, 0); err != nil {
				t.Fatalf("re-encoded batch invalid: %v", err)
			}
		}
	})
}

func FuzzForEachRecord(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, in := range [][]byte{b, fixFraming(b)} {
			n := 0
			err := ForEachRecordLimit(in, fuzzLimit, func(r Record) bool {
				n++
				return true
			})
			if err != nil {
				if !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrCorruptBatch) && !errors.Is(err, ErrUnsupportedCompression) {
					t.Fatalf("unexpected error class: %v", err)
				}
				continue
			}
			if h, _ := ParseBatchHeader(in); int32(n) != h.NumRecords {
				t.Fatalf("%d records, header says %d", n, h.NumRecords)
			}
		}
	})
}

func FuzzReadSnapshot(f *testing.F) {
	m := newProducerStateManager()
	m.update(pbatch(1, 0, 0, 3), 0, -1)
	m.update(pbatch(2, 5, 100, 1), 3, -1)
	txn := pbatch(3, 1, 0, 1)
	txn.Attributes = attrTransactional
	m.update(txn, 4, -1)
	var buf bytes.Buffer
	if err := m.writeSnapshot(&buf, 5); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := newProducerStateManager()
		if _, err := m.readSnapshot(bytes.NewReader(b)); err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) || m.numProducers() != 0 {
				t.Fatalf("err %v with %d producers left", err, m.numProducers())
			}
			return
		}
		if binary.BigEndian.Uint16(b[4:]) != snapshotVersion {
			return // an older version is written back as the current one
		}
		var out bytes.Buffer
		if err := m.writeSnapshot(&out, int64(binary.BigEndian.Uint64(b[10:]))); err != nil || !bytes.Equal(out.Bytes(), b) {
			t.Fatalf("accepted snapshot does not round-trip: %v", err)
		}
	})
}
