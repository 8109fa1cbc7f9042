package logstore

import (
	"errors"
	"testing"
	"time"
)

// message.timestamp.before.max.ms applies to every record, not only to the
// batch's first and largest timestamps; and a CreateTime batch is stored
// with the true largest record timestamp whatever the producer wrote.
func TestAppendTimestampsPerRecord(t *testing.T) {
	cfg := Config{RetentionMs: -1, RetentionBytes: -1, TimestampBeforeMaxMs: 3600_000, TimestampAfterMaxMs: 3600_000}
	l, err := Open(t.TempDir(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	now := time.Now()
	nowMs := now.UnixMilli()

	// The first record is fine, the second two days old: its delta is
	// negative, so base and max timestamps alone look valid.
	old, err := BuildBatch(0, CodecNone, []Record{{Timestamp: nowMs, Value: []byte("a")}, {Timestamp: nowMs - 2*86400_000, Value: []byte("b")}}, -1, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(old, 0, now); !errors.Is(err, ErrInvalidTimestamp) {
		t.Fatalf("a two-day-old record: %v, want ErrInvalidTimestamp", err)
	}

	// A producer that understated the batch's max timestamp.
	b, err := BuildBatch(0, CodecGzip, []Record{{Timestamp: nowMs - 10, Value: []byte("a")}, {Timestamp: nowMs, Value: []byte("b")}}, -1, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	SetMaxTimestamp(b, nowMs-500)
	if _, err := l.Append(b, 0, now); err != nil {
		t.Fatal(err)
	}
	stored, err := l.ReadBytes(0, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseBatchHeader(stored)
	if err != nil {
		t.Fatal(err)
	}
	if h.MaxTimestamp != nowMs {
		t.Fatalf("stored max timestamp %d, want the largest record's %d", h.MaxTimestamp, nowMs)
	}
	if err := CheckBatchCRC(stored); err != nil {
		t.Fatalf("stored batch: %v", err)
	}
	if off, ts, err := l.MaxTimestamp(); err != nil || off != 1 || ts != nowMs {
		t.Fatalf("MaxTimestamp = %d, %d, %v; want 1, %d", off, ts, err, nowMs)
	}
}

// A compacted log refuses records without a key (an empty key is a key),
// and a LogAppendTime log refuses batches whose producer claimed
// LogAppendTime, as Kafka's LogValidator does.
func TestAppendValidatesAgainstTopicPolicy(t *testing.T) {
	now := time.Now()
	ts := now.UnixMilli()
	l, err := Open(t.TempDir(), Config{RetentionMs: -1, RetentionBytes: -1, Compact: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	keyless, _ := BuildBatch(0, CodecLZ4, []Record{{Timestamp: ts, Key: []byte("k"), Value: []byte("a")}, {Timestamp: ts, Value: []byte("b")}}, -1, -1, -1)
	if _, err := l.Append(keyless, 0, now); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("keyless record on a compacted log: %v, want ErrInvalidRecord", err)
	}
	emptyKey, _ := BuildBatch(0, CodecNone, []Record{{Timestamp: ts, Key: []byte{}, Value: []byte("a")}}, -1, -1, -1)
	if _, err := l.Append(emptyKey, 0, now); err != nil {
		t.Fatalf("empty key on a compacted log: %v", err)
	}

	la, err := Open(t.TempDir(), Config{RetentionMs: -1, RetentionBytes: -1, TimestampType: LogAppendTime}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	claimed, _ := BuildBatch(0, CodecNone, []Record{{Timestamp: ts, Value: []byte("a")}}, -1, -1, -1)
	SetLogAppendTime(claimed, ts)
	if _, err := la.Append(claimed, 0, now); !errors.Is(err, ErrInvalidTimestamp) {
		t.Fatalf("producer-set LogAppendTime: %v, want ErrInvalidTimestamp", err)
	}
}
