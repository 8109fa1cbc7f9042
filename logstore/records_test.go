package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func toRecords(recs []testRec) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = Record{Timestamp: r.ts, Key: r.key, Value: r.value, Headers: r.headers}
	}
	return out
}

// TestBuildBatchReadByKmsg checks that what BuildBatch writes is what a
// client reads: kmsg parses the batch, the CRC is right, kgo's decompressor
// inflates the records and kmsg decodes each of them.
func TestBuildBatchReadByKmsg(t *testing.T) {
	recs := sampleRecords(300)
	dec := kgo.DefaultDecompressor()
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			b, err := BuildBatch(500, c, toRecords(recs), 9000, 4, 77)
			if err != nil {
				t.Fatal(err)
			}
			var kb kmsg.RecordBatch
			if err := kb.ReadFrom(b); err != nil {
				t.Fatal(err)
			}
			if want := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(kb.CRC) != want {
				t.Fatalf("CRC %x, want %x", uint32(kb.CRC), want)
			}
			if kb.FirstOffset != 500 || kb.Magic != 2 || int(kb.Length) != len(b)-12 || kb.PartitionLeaderEpoch != -1 ||
				kb.Attributes != int16(c) || kb.LastOffsetDelta != int32(len(recs)-1) || kb.NumRecords != int32(len(recs)) ||
				kb.ProducerID != 9000 || kb.ProducerEpoch != 4 || kb.FirstSequence != 77 || kb.FirstTimestamp != recs[0].ts {
				t.Fatalf("kmsg header %+v", kb)
			}
			maxTs := recs[0].ts
			for _, r := range recs {
				maxTs = max(maxTs, r.ts)
			}
			if kb.MaxTimestamp != maxTs {
				t.Fatalf("MaxTimestamp %d, want %d", kb.MaxTimestamp, maxTs)
			}
			raw, err := dec.Decompress(kb.Records, kgo.CompressionCodecType(c))
			if err != nil {
				t.Fatalf("kgo cannot decompress our %s: %v", c, err)
			}
			for i, w := range recs {
				var kr kmsg.Record
				if err := kr.ReadFrom(raw); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				n := int(kr.Length) + varintLen(kr.Length)
				raw = raw[n:]
				if kr.OffsetDelta != int32(i) || kr.TimestampDelta64 != w.ts-recs[0].ts ||
					!nullableEqual(kr.Key, w.key) || !nullableEqual(kr.Value, w.value) || len(kr.Headers) != len(w.headers) {
					t.Fatalf("record %d: %+v, want %+v", i, kr, w)
				}
				for j, h := range kr.Headers {
					if h.Key != w.headers[j].Key || !nullableEqual(h.Value, w.headers[j].Value) {
						t.Fatalf("record %d header %d: %+v", i, j, h)
					}
				}
			}
			if len(raw) != 0 {
				t.Fatalf("%d bytes after the records", len(raw))
			}
			// And our own reader agrees; a client batch must start at 0.
			if _, err := ValidateBatch(b, 0); !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("base offset 500 validated: %v", err)
			}
			SetBaseOffset(b, 0)
			if _, err := ValidateBatch(b, 0); err != nil {
				t.Fatal(err)
			}
			expectRecords(t, b, 0, recs)
		})
	}
}

func TestBuildBatchBytesMatchKmsg(t *testing.T) {
	// Uncompressed, the encoding is fully determined: our bytes must equal
	// franz-go's.
	recs := sampleRecords(50)
	_, ref := refBatchOf(t, CodecNone, recs)
	b, err := BuildBatch(0, CodecNone, toRecords(recs), -1, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, ref) {
		t.Fatalf("BuildBatch differs from the kmsg encoding\n got %x\nwant %x", b, ref)
	}
}

func TestEncodeBatchSpec(t *testing.T) {
	recs := toRecords(sampleRecords(4))
	for i := range recs {
		recs[i].Offset = 100 + int64(i)*3 // gaps, as compaction leaves them
	}
	b, err := EncodeBatch(BatchSpec{BaseOffset: 100, PartitionLeaderEpoch: 6, Codec: CodecLZ4, ProducerID: 5,
		ProducerEpoch: 1, BaseSequence: 0, Transactional: true, LogAppendTime: true, AppendTime: 999, KeepOffsets: true}, recs)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := ParseBatchHeader(b)
	if err := CheckBatchCRC(b); err != nil {
		t.Fatal(err)
	}
	if h.LastOffsetDelta != 9 || h.NumRecords != 4 || h.PartitionLeaderEpoch != 6 || !h.IsTransactional() ||
		!h.LogAppendTime() || h.MaxTimestamp != 999 || h.Codec() != CodecLZ4 {
		t.Fatalf("header %+v", h)
	}
	var got []int64
	if err := ForEachRecord(b, func(r Record) bool {
		got = append(got, r.Offset)
		if r.Timestamp != 999 {
			t.Fatalf("LogAppendTime record timestamp %d", r.Timestamp)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if want := []int64{100, 103, 106, 109}; !equalInts(got, want) {
		t.Fatalf("offsets %v, want %v", got, want)
	}

	recs[2].Offset = 100
	if _, err := EncodeBatch(BatchSpec{BaseOffset: 100, KeepOffsets: true}, recs); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("decreasing offsets: %v", err)
	}
	if _, err := BuildBatch(0, CodecNone, nil, -1, -1, -1); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("empty batch: %v", err)
	}
	if _, err := BuildBatch(0, Codec(6), recs, -1, -1, -1); !errors.Is(err, ErrUnsupportedCompression) {
		t.Fatalf("codec 6: %v", err)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestForEachRecordStopsEarly(t *testing.T) {
	b, err := BuildBatch(0, CodecZstd, toRecords(sampleRecords(20)), -1, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := ForEachRecord(b, func(Record) bool { n++; return n < 3 }); err != nil || n != 3 {
		t.Fatalf("stopped after %d, err %v", n, err)
	}
}

func TestForEachRecordErrors(t *testing.T) {
	b, err := BuildBatch(0, CodecNone, toRecords(sampleRecords(3)), -1, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", b[:20], ErrCorruptBatch},
		{"torn", b[:len(b)-1], ErrCorruptBatch},
		{"magic", func() []byte { c := bytes.Clone(b); c[16] = 0; return c }(), ErrInvalidRecord},
		{"codec 7", func() []byte { c := bytes.Clone(b); c[22] |= 7; return c }(), ErrUnsupportedCompression},
		{"count past records", func() []byte { c := bytes.Clone(b); binary.BigEndian.PutUint32(c[57:], 4); return c }(), ErrInvalidRecord},
		{"negative count", func() []byte { c := bytes.Clone(b); binary.BigEndian.PutUint32(c[57:], 0x80000000); return c }(), ErrInvalidRecord},
		{"count below records", func() []byte { c := bytes.Clone(b); binary.BigEndian.PutUint32(c[57:], 2); return c }(), ErrInvalidRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ForEachRecord(tt.b, func(Record) bool { return true }); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	// Extra bytes after a whole batch (a read that ran into the next one)
	// are not part of it.
	if err := ForEachRecord(append(bytes.Clone(b), 1, 2, 3), func(Record) bool { return true }); err != nil {
		t.Fatalf("trailing bytes after the batch: %v", err)
	}
}

func TestDecodeRecordsCopies(t *testing.T) {
	recs := sampleRecords(10)
	b, err := BuildBatch(0, CodecNone, toRecords(recs), -1, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	clear(b) // the copies must not alias the batch
	for i, r := range got {
		if !nullableEqual(r.Key, recs[i].key) || !nullableEqual(r.Value, recs[i].value) || len(r.Headers) != len(recs[i].headers) {
			t.Fatalf("record %d: %+v", i, r)
		}
		for j, h := range r.Headers {
			if !nullableEqual(h.Value, recs[i].headers[j].Value) {
				t.Fatalf("record %d header %d: %+v", i, j, h)
			}
		}
	}
}

// TestVarints checks the decoder against encoding/binary's zigzag varints,
// which are Kafka's.
func TestVarints(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, 300, -300, math.MaxInt32, math.MinInt32, 1 << 40, math.MaxInt64, math.MinInt64} {
		enc := binary.AppendVarint(nil, v)
		got, n, err := varint64(enc)
		if err != nil || got != v || n != len(enc) {
			t.Errorf("varint64(%d) = %d, %d, %v", v, got, n, err)
		}
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			got32, n, err := varint32(enc)
			if err != nil || int64(got32) != v || n != len(enc) {
				t.Errorf("varint32(%d) = %d, %d, %v", v, got32, n, err)
			}
			if l := varintLen(int32(v)); l != len(enc) {
				t.Errorf("varintLen(%d) = %d, want %d", v, l, len(enc))
			}
		}
		if l := varlongLen(v); l != len(enc) {
			t.Errorf("varlongLen(%d) = %d, want %d", v, l, len(enc))
		}
		if _, _, err := varint64(enc[:len(enc)-1]); err == nil && len(enc) > 1 {
			t.Errorf("truncated varint of %d accepted", v)
		}
	}
	if _, _, err := varint32([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0}); err == nil {
		t.Error("6-byte varint accepted")
	}
	if _, _, err := varint64(bytes.Repeat([]byte{0x80}, 11)); err == nil {
		t.Error("11-byte varlong accepted")
	}
	if _, _, err := varint32(nil); err == nil {
		t.Error("empty varint accepted")
	}
}
