package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The reference encoder for these tests is franz-go: records encoded with
// kmsg.Record.AppendTo, compressed with kgo's own compressor (the code the
// franz-go producer runs), framed with kmsg.RecordBatch.AppendTo, and the
// CRC computed here with hash/crc32 independently of crc.go.

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

func kgoCodec(t testing.TB, c Codec) kgo.CompressionCodec {
	t.Helper()
	switch c {
	case CodecGzip:
		return kgo.GzipCompression()
	case CodecSnappy:
		return kgo.SnappyCompression()
	case CodecLZ4:
		return kgo.Lz4Compression()
	case CodecZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// kmsgRecord encodes one record the way franz-go does, with its Length set.
func kmsgRecord(tsDelta int64, offDelta int32, key, value []byte, hdrs []Header) []byte {
	r := kmsg.Record{TimestampDelta64: tsDelta, OffsetDelta: offDelta, Key: key, Value: value}
	for _, h := range hdrs {
		r.Headers = append(r.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
	}
	body := r.AppendTo(nil) // with Length 0: one byte of length, then the body
	r.Length = int32(len(body) - 1)
	return r.AppendTo(nil)
}

type refBatch struct {
	codec         Codec
	baseTimestamp int64
	maxTimestamp  int64
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	attrs         int16 // extra attribute bits
	records       []byte
	numRecords    int32
	lastDelta     int32
}

// kmsgBatch frames rb with kmsg and a CRC computed here.
func kmsgBatch(t testing.TB, rb refBatch) []byte {
	t.Helper()
	blob := rb.records
	if rb.codec != CodecNone {
		comp, err := kgo.DefaultCompressor(kgoCodec(t, rb.codec))
		if err != nil {
			t.Fatal(err)
		}
		out, used := comp.Compress(new(bytes.Buffer), rb.records)
		if int(used) != int(rb.codec) {
			t.Fatalf("kgo compressed with %d, want %d", used, rb.codec)
		}
		blob = append([]byte(nil), out...)
	}
	kb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(rb.codec) | rb.attrs,
		LastOffsetDelta:      rb.lastDelta,
		FirstTimestamp:       rb.baseTimestamp,
		MaxTimestamp:         rb.maxTimestamp,
		ProducerID:           rb.producerID,
		ProducerEpoch:        rb.producerEpoch,
		FirstSequence:        rb.baseSequence,
		NumRecords:           rb.numRecords,
		Records:              blob,
	}
	kb.Length = int32(BatchHeaderSize - 12 + len(blob))
	b := kb.AppendTo(nil)
	refixCRC(b)
	return b
}

// refixCRC recomputes the CRC with hash/crc32 directly.
func refixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
}

type testRec struct {
	ts         int64
	key, value []byte
	headers    []Header
}

func sampleRecords(n int) []testRec {
	recs := make([]testRec, n)
	for i := range recs {
		r := testRec{ts: 1_700_000_000_000 + int64((i+3)%7)*3 - 5, value: []byte(fmt.Sprintf("value-%d-%s", i, bytes.Repeat([]byte("x"), i%50)))}
		switch i % 4 {
		case 0:
			r.key = []byte(fmt.Sprintf("key-%d", i))
		case 1:
			r.key = []byte{} // empty, not null
		case 2:
			r.headers = []Header{{Key: "h1", Value: []byte("v1")}, {Key: "", Value: nil}, {Key: "h3", Value: []byte{}}}
		}
		if i%9 == 5 {
			r.value = nil
		}
		recs[i] = r
	}
	return recs
}

// refBatchOf encodes recs (offset deltas 0..n-1) with kmsg.
func refBatchOf(t testing.TB, c Codec, recs []testRec) (refBatch, []byte) {
	t.Helper()
	rb := refBatch{codec: c, producerID: -1, producerEpoch: -1, baseSequence: -1}
	rb.baseTimestamp = recs[0].ts
	rb.maxTimestamp = recs[0].ts
	for i, r := range recs {
		rb.maxTimestamp = max(rb.maxTimestamp, r.ts)
		rb.records = append(rb.records, kmsgRecord(r.ts-rb.baseTimestamp, int32(i), r.key, r.value, r.headers)...)
	}
	rb.numRecords = int32(len(recs))
	rb.lastDelta = int32(len(recs) - 1)
	return rb, kmsgBatch(t, rb)
}

func TestParseBatchHeader(t *testing.T) {
	if _, err := ParseBatchHeader(make([]byte, 60)); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("short header: err = %v, want ErrCorruptBatch", err)
	}
	rb := refBatch{codec: CodecLZ4, baseTimestamp: 10, maxTimestamp: 20, producerID: 77, producerEpoch: 3,
		baseSequence: 42, attrs: attrTransactional, records: kmsgRecord(0, 0, nil, []byte("v"), nil),
		numRecords: 1, lastDelta: 0}
	b := kmsgBatch(t, rb)
	SetBaseOffset(b, 1234)
	SetPartitionLeaderEpoch(b, 9)
	h, err := ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	want := BatchHeader{
		BaseOffset: 1234, Length: kb.Length, PartitionLeaderEpoch: 9, Magic: 2, CRC: uint32(kb.CRC),
		Attributes: int16(CodecLZ4) | attrTransactional, LastOffsetDelta: 0, BaseTimestamp: 10, MaxTimestamp: 20,
		ProducerID: 77, ProducerEpoch: 3, BaseSequence: 42, NumRecords: 1,
	}
	if h != want {
		t.Fatalf("header\n got %+v\nwant %+v", h, want)
	}
	if h.Size() != int64(len(b)) || h.LastOffset() != 1234 || h.Codec() != CodecLZ4 ||
		!h.IsTransactional() || h.IsControl() || h.LogAppendTime() || !h.IsIdempotent() {
		t.Fatalf("accessors wrong for %+v", h)
	}
}

func TestLastSequence(t *testing.T) {
	tests := []struct {
		base, delta, want int32
	}{
		{-1, 3, -1},
		{0, 0, 0},
		{5, 4, 9},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 3, 1},
	}
	for _, tt := range tests {
		h := BatchHeader{BaseSequence: tt.base, LastOffsetDelta: tt.delta}
		if got := h.LastSequence(); got != tt.want {
			t.Errorf("LastSequence(base %d, delta %d) = %d, want %d", tt.base, tt.delta, got, tt.want)
		}
	}
}

func TestSplitBatches(t *testing.T) {
	_, b1 := refBatchOf(t, CodecNone, sampleRecords(3))
	_, b2 := refBatchOf(t, CodecZstd, sampleRecords(10))
	two := append(append([]byte(nil), b1...), b2...)

	got, err := SplitBatches(two)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !bytes.Equal(got[0], b1) || !bytes.Equal(got[1], b2) {
		t.Fatalf("split into %d batches, want the two originals", len(got))
	}
	if &got[0][0] != &two[0] || &got[1][0] != &two[len(b1)] {
		t.Fatal("SplitBatches copied instead of sub-slicing")
	}
	if got, err := SplitBatches(nil); err != nil || len(got) != 0 {
		t.Fatalf("empty blob: %v, %v", got, err)
	}

	badMagic := append([]byte(nil), b1...)
	badMagic[16] = 1
	short := append([]byte(nil), b1...)
	binary.BigEndian.PutUint32(short[8:], 48)
	long := append([]byte(nil), b1...)
	binary.BigEndian.PutUint32(long[8:], uint32(len(b1)-12+1))
	negative := append([]byte(nil), b1...)
	binary.BigEndian.PutUint32(negative[8:], 0xFFFFFFFF)
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"truncated header", b1[:60], ErrInvalidRecord},
		{"truncated second header", two[:len(b1)+30], ErrInvalidRecord},
		{"truncated body", b1[:len(b1)-1], ErrInvalidRecord},
		// Kafka's log input stream: a size below the overhead is corrupt.
		{"length below 49", short, ErrCorruptMessage},
		{"length past end", long, ErrInvalidRecord},
		{"negative length", negative, ErrCorruptMessage},
		{"magic 1", badMagic, ErrInvalidRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := SplitBatches(tt.b); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := SplitBatches(badMagic); !errors.Is(err, ErrUnsupportedMagic) {
		t.Fatalf("magic 1: err = %v, want ErrUnsupportedMagic", err)
	}
}

// TestValidateBatchReference checks batches encoded by franz-go with every
// codec: ValidateBatch accepts them and ForEachRecord returns exactly what
// was encoded.
func TestValidateBatchReference(t *testing.T) {
	for _, c := range allCodecs {
		for _, n := range []int{1, 7, 500} {
			t.Run(fmt.Sprintf("%s/%d", c, n), func(t *testing.T) {
				recs := sampleRecords(n)
				rb, b := refBatchOf(t, c, recs)
				info, err := ValidateBatchInfo(b, 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				h := info.Header
				if h.NumRecords != int32(n) || h.Codec() != c || h.BaseTimestamp != rb.baseTimestamp ||
					h.MaxTimestamp != rb.maxTimestamp || h.Size() != int64(len(b)) {
					t.Fatalf("header %+v does not match the encoded batch", h)
				}
				if info.MaxRecordTimestamp != rb.maxTimestamp {
					t.Fatalf("MaxRecordTimestamp = %d, want %d", info.MaxRecordTimestamp, rb.maxTimestamp)
				}
				minTs := recs[0].ts
				for _, r := range recs {
					minTs = min(minTs, r.ts)
				}
				if info.MinRecordTimestamp != minTs || (n >= 5 && minTs >= rb.baseTimestamp) {
					t.Fatalf("MinRecordTimestamp = %d, want %d (below base %d)", info.MinRecordTimestamp, minTs, rb.baseTimestamp)
				}
				if got := recs[info.MaxTimestampDelta].ts; got != rb.maxTimestamp {
					t.Fatalf("MaxTimestampDelta %d points at ts %d", info.MaxTimestampDelta, got)
				}
				SetBaseOffset(b, 1000)
				expectRecords(t, b, 1000, recs)
			})
		}
	}
}

// expectRecords asserts ForEachRecord yields recs at offsets base.. in order.
func expectRecords(t *testing.T, b []byte, base int64, recs []testRec) {
	t.Helper()
	i := 0
	err := ForEachRecord(b, func(r Record) bool {
		if i >= len(recs) {
			t.Fatalf("more records than the %d encoded", len(recs))
		}
		w := recs[i]
		if r.Offset != base+int64(i) || r.Timestamp != w.ts {
			t.Fatalf("record %d: offset %d ts %d, want %d %d", i, r.Offset, r.Timestamp, base+int64(i), w.ts)
		}
		if !nullableEqual(r.Key, w.key) || !nullableEqual(r.Value, w.value) {
			t.Fatalf("record %d: key %q value %q, want %q %q", i, r.Key, r.Value, w.key, w.value)
		}
		if len(r.Headers) != len(w.headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(r.Headers), len(w.headers))
		}
		for j, h := range r.Headers {
			if h.Key != w.headers[j].Key || !nullableEqual(h.Value, w.headers[j].Value) {
				t.Fatalf("record %d header %d: %q=%q, want %q=%q", i, j, h.Key, h.Value, w.headers[j].Key, w.headers[j].Value)
			}
		}
		i++
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != len(recs) {
		t.Fatalf("decoded %d records, want %d", i, len(recs))
	}
}

// nullableEqual distinguishes nil from empty.
func nullableEqual(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func TestValidateBatchErrors(t *testing.T) {
	good := func() []byte {
		_, b := refBatchOf(t, CodecNone, sampleRecords(3))
		return b
	}
	withRecords := func(c Codec, n, lastDelta int32, recs ...[]byte) []byte {
		rb := refBatch{codec: c, producerID: -1, producerEpoch: -1, baseSequence: -1, numRecords: n, lastDelta: lastDelta}
		for _, r := range recs {
			rb.records = append(rb.records, r...)
		}
		return kmsgBatch(t, rb)
	}
	rec := func(off int32) []byte { return kmsgRecord(0, off, []byte("k"), []byte("v"), nil) }
	// rawRec builds a record body by hand for malformed encodings.
	rawRec := func(body ...[]byte) []byte {
		var b []byte
		for _, p := range body {
			b = append(b, p...)
		}
		return append(binary.AppendVarint(nil, int64(len(b))), b...)
	}
	vi := func(v int64) []byte { return binary.AppendVarint(nil, v) }
	mutate := func(f func(b []byte) []byte) []byte { return f(good()) }

	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrInvalidRecord},
		{"short", good()[:40], ErrInvalidRecord},
		{"crc", mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrCorruptMessage},
		{"crc field", mutate(func(b []byte) []byte { b[18] ^= 0x40; return b }), ErrCorruptMessage},
		{"magic 1", mutate(func(b []byte) []byte { b[16] = 1; return b }), ErrUnsupportedMagic},
		{"magic 3", mutate(func(b []byte) []byte { b[16] = 3; return b }), ErrInvalidRecord},
		{"length too long", mutate(func(b []byte) []byte { return append(b, 0) }), ErrInvalidRecord},
		{"length too short", mutate(func(b []byte) []byte { return b[:len(b)-1] }), ErrInvalidRecord},
		{"length below header", mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[8:], 10); return b }), ErrInvalidRecord},
		{"base offset not 0", mutate(func(b []byte) []byte { SetBaseOffset(b, 7); return b }), ErrInvalidRecord},
		{"count mismatch", mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 2); refixCRC(b); return b }), ErrInvalidRecord},
		{"zero count", withRecords(CodecNone, 0, -1), ErrInvalidRecord},
		{"negative delta", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], 0xFFFFFFFF)
			binary.BigEndian.PutUint32(b[57:], 0)
			refixCRC(b)
			return b
		}), ErrInvalidRecord},
		{"huge count", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], math.MaxInt32-1)
			binary.BigEndian.PutUint32(b[57:], math.MaxInt32)
			refixCRC(b)
			return b
		}), ErrInvalidRecord},
		{"control batch", mutate(func(b []byte) []byte { b[22] |= attrControl; refixCRC(b); return b }), ErrInvalidRecord},
		{"producer without sequence", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[43:], 5)
			refixCRC(b)
			return b
		}), ErrInvalidRecord},
		{"codec 5", mutate(func(b []byte) []byte { b[22] |= 5; refixCRC(b); return b }), ErrUnsupportedCompression},
		{"codec 6", mutate(func(b []byte) []byte { b[22] |= 6; refixCRC(b); return b }), ErrUnsupportedCompression},
		{"codec 7", mutate(func(b []byte) []byte { b[22] |= 7; refixCRC(b); return b }), ErrUnsupportedCompression},
		{"fewer records than count", withRecords(CodecNone, 3, 2, rec(0), rec(1)), ErrInvalidRecord},
		{"more records than count", withRecords(CodecNone, 2, 1, rec(0), rec(1), rec(2)), ErrInvalidRecord},
		{"trailing garbage", withRecords(CodecNone, 1, 0, rec(0), []byte{0}), ErrInvalidRecord},
		{"offset delta not index", withRecords(CodecNone, 2, 1, rec(0), rec(2)), ErrInvalidRecord},
		{"compressed offset delta not index", withRecords(CodecZstd, 2, 1, rec(1), rec(0)), ErrInvalidRecord},
		{"record length past end", withRecords(CodecNone, 1, 0, append(vi(100), 0, 0, 0)), ErrInvalidRecord},
		{"record length negative", withRecords(CodecNone, 1, 0, vi(-5)), ErrInvalidRecord},
		{"record length leaves bytes", withRecords(CodecNone, 1, 0, rawRec([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(0), []byte{9})), ErrInvalidRecord},
		{"record length cuts fields", withRecords(CodecNone, 1, 0, rawRec([]byte{0}, vi(0), vi(0), vi(-1))), ErrInvalidRecord},
		{"key length < -1", withRecords(CodecNone, 1, 0, rawRec([]byte{0}, vi(0), vi(0), vi(-2), vi(-1), vi(0))), ErrInvalidRecord},
		{"key past record", withRecords(CodecNone, 1, 0, rawRec([]byte{0}, vi(0), vi(0), vi(50), vi(-1), vi(0))), ErrInvalidRecord},
		{"value past record", withRecords(CodecNone, 1, 0, rawRec([]byte{0}, vi(0), vi(0), vi(-1), vi(3), []byte("ab"))), ErrInvalidRecord},
		{"negative header count", withRecords(CodecNone, 1, 0, rawRec([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(-1))), ErrInvalidRecord},
		{"header count past record", withRecords(CodecNone, 1, 0, rawRec([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1000000))), ErrInvalidRecord},
		{"null header key", withRecords(CodecNone, 1, 0, rawRec([]byte{0}, vi(0), vi(0), vi(-1), vi(-1), vi(1), vi(-1), vi(-1))), ErrInvalidRecord},
		{"varint too long", withRecords(CodecNone, 1, 0, rawRec([]byte{0}, vi(0), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, vi(-1), vi(-1), vi(0))), ErrInvalidRecord},
		{"varlong too long", withRecords(CodecNone, 1, 0, rawRec([]byte{0}, bytes.Repeat([]byte{0xff}, 11), vi(0), vi(-1), vi(-1), vi(0))), ErrInvalidRecord},
		{"corrupt compressed data", mutate(func(b []byte) []byte {
			_, z := refBatchOf(t, CodecGzip, sampleRecords(20))
			z[len(z)-12] ^= 0xff // inside the deflate stream / trailer
			refixCRC(z)
			return z
		}), ErrInvalidRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValidateBatch(tt.b, 1<<20)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestValidateBatchDecompressLimit(t *testing.T) {
	recs := []testRec{{ts: 1, value: make([]byte, 200<<10)}}
	for _, c := range allCodecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			_, b := refBatchOf(t, c, recs)
			if _, err := ValidateBatch(b, 100<<10); !errors.Is(err, ErrDecompressedTooLarge) || !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("err = %v, want ErrDecompressedTooLarge wrapping ErrInvalidRecord", err)
			}
			if _, err := ValidateBatch(b, 300<<10); err != nil {
				t.Fatalf("within the limit: %v", err)
			}
			if _, err := ValidateBatch(b, 0); err != nil {
				t.Fatalf("default limit: %v", err)
			}
		})
	}
}

func TestValidateBatchIdempotent(t *testing.T) {
	rb, _ := refBatchOf(t, CodecNone, sampleRecords(4))
	rb.producerID, rb.producerEpoch, rb.baseSequence = 1000, 2, math.MaxInt32-1
	b := kmsgBatch(t, rb)
	h, err := ValidateBatch(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !h.IsIdempotent() || h.ProducerID != 1000 || h.ProducerEpoch != 2 || h.LastSequence() != 1 {
		t.Fatalf("header %+v, last sequence %d", h, h.LastSequence())
	}
}

func TestSetters(t *testing.T) {
	recs := sampleRecords(5)
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			_, b := refBatchOf(t, c, recs)
			orig := append([]byte(nil), b...)
			SetBaseOffset(b, 1<<40)
			SetPartitionLeaderEpoch(b, 17)
			if err := CheckBatchCRC(b); err != nil {
				t.Fatalf("base offset / epoch broke the CRC: %v", err)
			}
			if !bytes.Equal(b[16:], orig[16:]) {
				t.Fatal("offset/epoch setters touched bytes past the epoch")
			}
			h, _ := ParseBatchHeader(b)
			if h.BaseOffset != 1<<40 || h.PartitionLeaderEpoch != 17 {
				t.Fatalf("header after setters: %+v", h)
			}

			const appendTime = 1_800_000_000_000
			SetLogAppendTime(b, appendTime)
			h, _ = ParseBatchHeader(b)
			if err := CheckBatchCRC(b); err != nil {
				t.Fatalf("SetLogAppendTime left a bad CRC: %v", err)
			}
			if !h.LogAppendTime() || h.MaxTimestamp != appendTime || h.Codec() != c {
				t.Fatalf("after SetLogAppendTime: %+v", h)
			}
			var kb kmsg.RecordBatch
			if err := kb.ReadFrom(b); err != nil || kb.Attributes&0x08 == 0 || kb.MaxTimestamp != appendTime {
				t.Fatalf("kmsg reads %+v, %v", kb, err)
			}
			n := 0
			if err := ForEachRecord(b, func(r Record) bool {
				if r.Timestamp != appendTime || r.Offset != 1<<40+int64(n) {
					t.Fatalf("record %d: ts %d offset %d", n, r.Timestamp, r.Offset)
				}
				n++
				return true
			}); err != nil || n != len(recs) {
				t.Fatalf("ForEachRecord: %d records, %v", n, err)
			}

			SetMaxTimestamp(b, 42)
			h, _ = ParseBatchHeader(b)
			if err := CheckBatchCRC(b); err != nil || h.LogAppendTime() || h.MaxTimestamp != 42 {
				t.Fatalf("after SetMaxTimestamp: %+v, %v", h, err)
			}
			expectRecords(t, b, 1<<40, recs)

			// Short input is ignored, never a panic.
			for _, f := range []func([]byte){
				func(b []byte) { SetBaseOffset(b, 1) }, func(b []byte) { SetPartitionLeaderEpoch(b, 1) },
				func(b []byte) { SetLogAppendTime(b, 1) }, func(b []byte) { SetMaxTimestamp(b, 1) },
			} {
				f(make([]byte, 10))
			}
		})
	}
}

func TestCheckBatchCRC(t *testing.T) {
	_, b := refBatchOf(t, CodecSnappy, sampleRecords(10))
	if err := CheckBatchCRC(b); err != nil {
		t.Fatal(err)
	}
	if got, want := BatchCRC(b), binary.BigEndian.Uint32(b[17:]); got != want {
		t.Fatalf("BatchCRC = %x, want %x", got, want)
	}
	for i := crcStart; i < len(b); i++ {
		c := append([]byte(nil), b...)
		c[i] ^= 0x10
		if err := CheckBatchCRC(c); !errors.Is(err, ErrCorruptMessage) {
			t.Fatalf("flip at %d: err = %v", i, err)
		}
	}
	if err := CheckBatchCRC(b[:len(b)-1]); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("torn batch: err = %v", err)
	}
	if err := CheckBatchCRC(b[:30]); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("torn header: err = %v", err)
	}
}

func benchBatch(b *testing.B, c Codec) []byte {
	recs := make([]Record, 64)
	for i := range recs {
		recs[i] = Record{Timestamp: int64(i), Key: []byte(fmt.Sprintf("key-%d", i)), Value: testPayload(1024, uint64(i))}
	}
	batch, err := BuildBatch(0, c, recs, 1, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

func BenchmarkValidateBatch(b *testing.B) {
	for _, c := range allCodecs {
		b.Run(c.String(), func(b *testing.B) {
			batch := benchBatch(b, c)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ValidateBatch(batch, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestValidateBatchUncompressedAllocs(t *testing.T) {
	batch := benchBatch(&testing.B{}, CodecNone)
	if n := testing.AllocsPerRun(50, func() {
		if _, err := ValidateBatch(batch, 0); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("ValidateBatch of an uncompressed batch allocates %.1f times", n)
	}
}
