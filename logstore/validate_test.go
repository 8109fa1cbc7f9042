package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// validateLog opens a log with cfg (retention off) for the validation tests.
func validateLog(t *testing.T, cfg Config) *Log {
	t.Helper()
	cfg.RetentionMs, cfg.RetentionBytes = -1, -1
	return coreOpen(t, t.TempDir()+"/topic-3", cfg)
}

// wantRecordErrors returns err as a *RecordErrors wrapping want, with the
// indexes it names, failing the test otherwise.
func wantRecordErrors(t *testing.T, err, want error) (*RecordErrors, string) {
	t.Helper()
	var re *RecordErrors
	if !errors.As(err, &re) || !errors.Is(err, want) {
		t.Fatalf("err %v, want *RecordErrors wrapping %v", err, want)
	}
	var idx []int32
	for _, r := range re.Records {
		idx = append(idx, r.Index)
	}
	return re, fmt.Sprint(idx)
}

// TestAppendRecordErrors: records breaking the topic's rules are named,
// each with Kafka's message; the batch is refused whole.
func TestAppendRecordErrors(t *testing.T) {
	now := coreT0
	nowMs := now.UnixMilli()
	hundred := func(keyless func(i int) bool, ts func(i int) int64) []Record {
		recs := make([]Record, 100)
		for i := range recs {
			recs[i] = Record{Timestamp: nowMs, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte("v")}
			if keyless != nil && keyless(i) {
				recs[i].Key = nil
			}
			if ts != nil {
				recs[i].Timestamp = ts(i)
			}
		}
		return recs
	}
	every10th := func(i int) bool { return i%10 == 3 }
	wantEvery10th := []int32{3, 13, 23, 33, 43, 53, 63, 73, 83, 93}

	for _, c := range allCodecs {
		t.Run("keyless/"+c.String(), func(t *testing.T) {
			l := validateLog(t, Config{Compact: true})
			b, err := BuildBatch(0, c, hundred(every10th, nil), -1, -1, -1)
			if err != nil {
				t.Fatal(err)
			}
			_, err = l.Append(b, 0, now)
			re, got := wantRecordErrors(t, err, ErrInvalidRecord)
			if got != fmt.Sprint(wantEvery10th) {
				t.Fatalf("record errors at %v, want %v", got, wantEvery10th)
			}
			if m := re.Records[0].Message; m != "Compacted topic cannot accept message without key in topic partition topic-3" {
				t.Fatalf("message %q", m)
			}
			if l.EndOffset() != 0 || l.Size() != 0 {
				t.Fatalf("refused batch written: end %d", l.EndOffset())
			}
		})
	}

	t.Run("timestamps", func(t *testing.T) {
		l := validateLog(t, Config{TimestampBeforeMaxMs: 60_000, TimestampAfterMaxMs: 60_000})
		// Records 5 and 7 out of range, a day behind and ahead; the base
		// and max timestamps of the batch look fine.
		b, _ := BuildBatch(0, CodecNone, hundred(nil, func(i int) int64 {
			switch i {
			case 5:
				return nowMs - 86400_000
			case 7:
				return nowMs + 86400_000
			}
			return nowMs
		}), -1, -1, -1)
		_, err := l.Append(b, 0, now)
		re, got := wantRecordErrors(t, err, ErrInvalidTimestamp)
		if got != "[5 7]" {
			t.Fatalf("record errors at %v, want [5 7]", got)
		}
		want := fmt.Sprintf("Timestamp %d of message with offset 5 is out of range. The timestamp should be within [%d, %d]",
			nowMs-86400_000, nowMs-60_000, nowMs+60_000)
		if re.Records[0].Message != want {
			t.Fatalf("message %q, want %q", re.Records[0].Message, want)
		}
	})

	t.Run("key error first, a timestamp error wins the batch", func(t *testing.T) {
		l := validateLog(t, Config{Compact: true, TimestampAfterMaxMs: 60_000})
		b, _ := BuildBatch(0, CodecLZ4, hundred(func(i int) bool { return i == 1 || i == 2 }, func(i int) int64 {
			if i == 2 || i == 4 {
				return nowMs + 86400_000
			}
			return nowMs
		}), -1, -1, -1)
		_, err := l.Append(b, 0, now)
		// Record 2 has no key and a bad timestamp: only the key error.
		re, got := wantRecordErrors(t, err, ErrInvalidTimestamp)
		if got != "[1 2 4]" {
			t.Fatalf("record errors at %v, want [1 2 4]", got)
		}
		if !strings.HasPrefix(re.Records[1].Message, "Compacted topic") || !strings.HasPrefix(re.Records[2].Message, "Timestamp ") {
			t.Fatalf("messages %q", re.Records)
		}
	})

	t.Run("producer-set LogAppendTime", func(t *testing.T) {
		l := validateLog(t, Config{TimestampType: LogAppendTime})
		b, _ := BuildBatch(0, CodecNone, hundred(nil, nil)[:3], -1, -1, -1)
		SetLogAppendTime(b, nowMs)
		_, err := l.Append(b, 0, now)
		_, got := wantRecordErrors(t, err, ErrInvalidTimestamp)
		if got != "[0 1 2]" {
			t.Fatalf("record errors at %v, want [0 1 2]", got)
		}
	})

	t.Run("framing errors name no record", func(t *testing.T) {
		l := validateLog(t, Config{Compact: true})
		b, _ := BuildBatch(0, CodecNone, hundred(every10th, nil), -1, -1, -1)
		b[len(b)-1] = 0x7f // the last record's header count: a bad varint
		putCRC(b)
		_, err := l.Append(b, 0, now)
		var re *RecordErrors
		if errors.As(err, &re) || !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("malformed record: %v, want a plain ErrInvalidRecord", err)
		}
	})
}

// TestAppendCompression: compression.type re-compresses produced batches
// (records, producer fields and timestamps kept); producer keeps them as
// sent; a change applies from the next append.
func TestAppendCompression(t *testing.T) {
	now := coreT0
	recs := []Record{
		{Timestamp: now.UnixMilli() - 5, Key: []byte("a"), Value: bytes.Repeat([]byte("x"), 300), Headers: []Header{{Key: "h", Value: []byte("1")}}},
		{Timestamp: now.UnixMilli() - 9, Key: []byte("b"), Value: nil},
		{Timestamp: now.UnixMilli(), Key: []byte("c"), Value: []byte("z")},
	}
	for _, from := range allCodecs {
		for _, to := range []Compression{CompressionProducer, CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
			t.Run(from.String()+"-to-"+to.String(), func(t *testing.T) {
				l := validateLog(t, Config{Compression: to})
				b, err := BuildBatch(0, from, recs, 7, 2, 40)
				if err != nil {
					t.Fatal(err)
				}
				sent := bytes.Clone(b)
				if _, err := l.Append(b, 4, now); err != nil {
					t.Fatal(err)
				}
				stored, err := l.ReadBytes(0, 1<<20, -1)
				if err != nil {
					t.Fatal(err)
				}
				h := coreBatches(t, stored)[0]
				want := to.codec(from)
				if h.Codec() != want || h.ProducerID != 7 || h.ProducerEpoch != 2 || h.BaseSequence != 40 ||
					h.PartitionLeaderEpoch != 4 || h.MaxTimestamp != now.UnixMilli() || h.NumRecords != 3 {
					t.Fatalf("stored header %+v, want codec %v", h, want)
				}
				if want == from && !bytes.Equal(stored[BatchHeaderSize:], sent[BatchHeaderSize:]) {
					t.Fatal("a batch kept as sent had its records rewritten")
				}
				got, err := DecodeRecords(stored)
				if err != nil || len(got) != 3 {
					t.Fatalf("stored records: %d, %v", len(got), err)
				}
				for i, r := range got {
					if r.Offset != int64(i) || r.Timestamp != recs[i].Timestamp || !bytes.Equal(r.Key, recs[i].Key) ||
						!bytes.Equal(r.Value, recs[i].Value) || (r.Value == nil) != (recs[i].Value == nil) || len(r.Headers) != len(recs[i].Headers) {
						t.Fatalf("record %d: %+v, want %+v", i, r, recs[i])
					}
				}
			})
		}
	}

	t.Run("set config", func(t *testing.T) {
		cfg := Config{RetentionMs: -1, RetentionBytes: -1}
		l := coreOpen(t, t.TempDir(), cfg)
		b, _ := BuildBatch(0, CodecLZ4, recs, -1, -1, -1)
		if _, err := l.Append(b, 0, now); err != nil {
			t.Fatal(err)
		}
		cfg.Compression = CompressionGzip
		l.SetConfig(cfg)
		b, _ = BuildBatch(0, CodecLZ4, recs, -1, -1, -1)
		if _, err := l.Append(b, 0, now); err != nil {
			t.Fatal(err)
		}
		stored, _ := l.ReadBytes(0, 1<<20, -1)
		hs := coreBatches(t, stored)
		if len(hs) != 2 || hs[0].Codec() != CodecLZ4 || hs[1].Codec() != CodecGzip {
			t.Fatalf("codecs %v", hs)
		}
	})

	t.Run("re-compressed past max.message.bytes", func(t *testing.T) {
		// 4000 equal bytes compress well: stored uncompressed, the batch grows.
		big := []Record{{Timestamp: now.UnixMilli(), Key: []byte("k"), Value: bytes.Repeat([]byte("y"), 4000)}}
		l := validateLog(t, Config{Compression: CompressionNone, MaxMessageBytes: 1000})
		b, _ := BuildBatch(0, CodecZstd, big, -1, -1, -1)
		if len(b) > 1000 {
			t.Fatalf("test batch of %d bytes", len(b))
		}
		if _, err := l.Append(b, 0, now); !errors.Is(err, ErrMessageTooLarge) {
			t.Fatalf("err %v, want ErrMessageTooLarge", err)
		}
	})

	t.Run("several batches", func(t *testing.T) {
		l := validateLog(t, Config{Compression: CompressionSnappy})
		b1, _ := BuildBatch(0, CodecNone, recs, -1, -1, -1)
		b2, _ := BuildBatch(0, CodecGzip, recs[:1], -1, -1, -1)
		res, err := l.Append(append(b1, b2...), 0, now)
		if err != nil || res.FirstOffset != 0 || res.LastOffset != 3 {
			t.Fatalf("append: %+v %v", res, err)
		}
		stored, _ := l.ReadBytes(0, 1<<20, -1)
		hs := coreBatches(t, stored)
		if len(hs) != 2 || hs[0].Codec() != CodecSnappy || hs[1].Codec() != CodecSnappy || hs[1].BaseOffset != 3 {
			t.Fatalf("stored %+v", hs)
		}
	})
}

func TestParseCompression(t *testing.T) {
	for i, name := range []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"} {
		c, err := ParseCompression(name)
		if err != nil || c != Compression(i) || c.String() != name {
			t.Errorf("%s: %v %v", name, c, err)
		}
	}
	if _, err := ParseCompression("brotli"); !errors.Is(err, ErrUnsupportedCompression) {
		t.Errorf("brotli: %v", err)
	}
	// The zero value keeps the producer's codec.
	if (Config{}).Compression != CompressionProducer || CompressionProducer.codec(CodecLZ4) != CodecLZ4 {
		t.Error("zero Compression is not producer")
	}
}

// An uncompressed batch kept as sent is validated and appended without
// allocating.
func TestAppendAllocs(t *testing.T) {
	l := validateLog(t, DefaultConfig())
	batch := coreBatch(t, 16, coreT0.UnixMilli(), 100)
	buf := make([]byte, len(batch))
	if n := testing.AllocsPerRun(50, func() {
		copy(buf, batch)
		if _, err := l.Append(buf, 1, coreT0); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Append allocates %.1f times", n)
	}
}

// appendBenchBatch is a client batch of 16 records of 1 KiB (compressible
// payloads, keyed) compressed with c.
func appendBenchBatch(b *testing.B, c Codec) []byte {
	b.Helper()
	recs := make([]Record, 16)
	for i := range recs {
		recs[i] = Record{Timestamp: coreT0.UnixMilli() + int64(i), Key: []byte(fmt.Sprintf("key-%d", i)), Value: testPayload(1024, uint64(i))}
	}
	batch, err := BuildBatch(0, c, recs, -1, -1, -1)
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// BenchmarkAppendValidate is Append of one produced batch per call, by the
// batch's codec and the topic's settings (message.timestamp.after.max.ms
// at Kafka 4's default, so every record's timestamp is checked).
func BenchmarkAppendValidate(b *testing.B) {
	cases := []struct {
		name        string
		codec       Codec
		compact     bool
		compression Compression
	}{
		{"none", CodecNone, false, CompressionProducer},
		{"lz4", CodecLZ4, false, CompressionProducer},
		{"zstd", CodecZstd, false, CompressionProducer},
		{"none-compact", CodecNone, true, CompressionProducer},
		// compression.type=zstd receiving lz4: one decompression (the
		// validation walk's) and one compression; records not decoded.
		{"lz4-to-zstd", CodecLZ4, false, CompressionZstd},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.SegmentBytes = 64 << 20
			cfg.TimestampAfterMaxMs = 3600_000
			cfg.Compact = tc.compact
			cfg.Compression = tc.compression
			l := coreOpen(b, b.TempDir(), cfg)
			batch := appendBenchBatch(b, tc.codec)
			buf := make([]byte, len(batch))
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				copy(buf, batch)
				if _, err := l.Append(buf, 1, coreT0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
