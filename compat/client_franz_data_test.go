package compat

// Data-path compatibility through franz-go (kgo, kadm): produce and
// consume with every codec, ListOffsets, DeleteRecords,
// fetch limits, the fetch long poll and the zero-copy fetch path. Produce
// semantics are in 00_produce_franz_test.go, durability in
// log_restart_and_retention_test.go.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// codecRecords is how many records TestFranzCodecRoundTrip produces per codec.
const codecRecords = 100_000

// genRecord is record i of a deterministic data set spread round-robin
// over parts partitions: distinct keys (every 10th nil, every 10th+5
// empty), 100-byte binary values (every 20th+3 null, every 20th+13 empty),
// two headers and a timestamp.
func genRecord(topic string, i, parts int, baseTs time.Time) *kgo.Record {
	var key []byte
	switch i % 10 {
	case 0:
		key = nil
	case 5:
		key = []byte{}
	default:
		key = []byte("key-" + strconv.Itoa(i))
	}
	val := make([]byte, 100)
	copy(val, "v"+strconv.Itoa(i)+"|")
	for j := 12; j < len(val); j++ {
		val[j] = byte(i*31 + j*7)
	}
	switch i % 20 {
	case 3:
		val = nil // a tombstone: null, not empty
	case 13:
		val = []byte{}
	}
	return &kgo.Record{
		Topic:     topic,
		Partition: int32(i % parts),
		Key:       key,
		Value:     val,
		Timestamp: baseTs.Add(time.Duration(i) * time.Millisecond),
		Headers: []kgo.RecordHeader{
			{Key: "idx", Value: []byte(strconv.Itoa(i))},
			{Key: "bin", Value: []byte{0, byte(i), 0xff, byte(i >> 8)}},
		},
	}
}

// sameRecord reports how got differs from want (key, value, headers,
// timestamp), or "" if it does not.
func sameRecord(got, want *kgo.Record) string {
	switch {
	case (want.Key == nil) != (got.Key == nil):
		return fmt.Sprintf("key nil-ness: got %q (nil %v), want %q (nil %v)", got.Key, got.Key == nil, want.Key, want.Key == nil)
	case !bytes.Equal(got.Key, want.Key):
		return fmt.Sprintf("key %q, want %q", got.Key, want.Key)
	case (want.Value == nil) != (got.Value == nil):
		return fmt.Sprintf("value nil-ness: got nil %v, want nil %v", got.Value == nil, want.Value == nil)
	case !bytes.Equal(got.Value, want.Value):
		return fmt.Sprintf("value %x, want %x", got.Value, want.Value)
	case !want.Timestamp.IsZero() && got.Timestamp.UnixMilli() != want.Timestamp.UnixMilli():
		return fmt.Sprintf("timestamp %d, want %d", got.Timestamp.UnixMilli(), want.Timestamp.UnixMilli())
	case len(got.Headers) != len(want.Headers):
		return fmt.Sprintf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i := range want.Headers {
		g, w := got.Headers[i], want.Headers[i]
		if g.Key != w.Key || !bytes.Equal(g.Value, w.Value) {
			return fmt.Sprintf("header %d = %q:%x, want %q:%x", i, g.Key, g.Value, w.Key, w.Value)
		}
	}
	return ""
}

func TestFranzCodecRoundTrip(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	const parts = 4
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		attr  int16 // compression bits of the stored batches
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			createTopic(t, adm, topic, parts, nil)
			base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			want := make([]*kgo.Record, codecRecords)
			for i := range want {
				want[i] = genRecord(topic, i, parts, base)
			}
			// Copies go to the producer: kgo writes into the records it sends.
			send := make([]*kgo.Record, codecRecords)
			for i, r := range want {
				cp := *r
				send[i] = &cp
			}
			prod := newKgo(t, n.Addr(),
				kgo.ProducerBatchCompression(c.codec),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerLinger(5*time.Millisecond))
			start := time.Now()
			produceAll(t, prod, send...)
			produced := time.Since(start)
			for i, r := range send {
				if r.Offset != int64(i/parts) {
					t.Fatalf("record %d produced at %d/%d, want offset %d", i, r.Partition, r.Offset, i/parts)
				}
			}
			prod.Close()

			// The batches are stored as the producer compressed them.
			segs := segmentLogs(t, n.PartitionDir(topic, 0))
			if len(segs) == 0 {
				t.Fatalf("no segment in %s", n.PartitionDir(topic, 0))
			}
			data, err := os.ReadFile(segs[0])
			if err != nil {
				t.Fatal(err)
			}
			bs := scanBatches(data)
			if len(bs) == 0 {
				t.Fatalf("no batch in %s", segs[0])
			}
			// kgo sends a batch uncompressed when compressing does not
			// shrink it; the big batches all shrink.
			var inCodec, total int64
			for _, b := range bs {
				if a := b.attrs & 7; a != c.attr && a != 0 {
					t.Fatalf("stored batch at offset %d has compression %d, want %d", b.baseOffset, a, c.attr)
				}
				if b.attrs&7 == c.attr {
					inCodec += int64(b.count)
				}
				total += int64(b.count)
			}
			if inCodec*10 < total*9 {
				t.Fatalf("only %d of %d records of the first segment are stored with compression %d", inCodec, total, c.attr)
			}

			ends, err := adm.ListEndOffsets(testCtx(t, 10*time.Second), topic)
			if err != nil {
				t.Fatal(err)
			}
			for p := int32(0); p < parts; p++ {
				lo, ok := ends.Lookup(topic, p)
				if !ok || lo.Err != nil || lo.Offset != codecRecords/parts {
					t.Fatalf("end offset of %s/%d = %+v, want %d", topic, p, lo, codecRecords/parts)
				}
			}

			start = time.Now()
			from := map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0}
			got := consumeExact(t, n.Addr(), topic, from, codecRecords, 90*time.Second)
			consumed := time.Since(start)
			next := make([]int64, parts)
			for _, r := range got {
				if r.Partition < 0 || r.Partition >= parts {
					t.Fatalf("record from partition %d", r.Partition)
				}
				if r.Offset != next[r.Partition] {
					t.Fatalf("partition %d: offset %d after %d (gap, repeat or reorder)", r.Partition, r.Offset, next[r.Partition]-1)
				}
				next[r.Partition]++
				i := int(r.Offset)*parts + int(r.Partition)
				if diff := sameRecord(r, want[i]); diff != "" {
					t.Fatalf("record %d (%d/%d): %s", i, r.Partition, r.Offset, diff)
				}
			}
			for p, o := range next {
				if o != codecRecords/parts {
					t.Fatalf("partition %d: read up to %d, want %d", p, o, codecRecords/parts)
				}
			}
			t.Logf("%s: produced %d records in %v, consumed in %v, %d batches in the first segment of partition 0",
				c.name, codecRecords, produced, consumed, len(bs))
		})
	}
}

func TestFranzListOffsets(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	cl := newKgo(t, n.Addr())
	const topic = "listoffsets"
	createTopic(t, adm, topic, 1, nil)

	// An empty partition.
	for _, c := range []struct {
		ts, off, rts int64
	}{{-2, 0, -1}, {-1, 0, -1}, {-3, -1, -1}, {0, -1, -1}} {
		sp := listOffsetRaw(t, cl, topic, 0, c.ts)
		wantCode(t, fmt.Sprintf("empty ListOffsets ts %d", c.ts), sp.ErrorCode, nil)
		if sp.Offset != c.off || sp.Timestamp != c.rts {
			t.Fatalf("empty ListOffsets ts %d: offset %d timestamp %d, want %d %d", c.ts, sp.Offset, sp.Timestamp, c.off, c.rts)
		}
	}

	// Ten records one second apart, except record 6, which carries the
	// largest timestamp. Records 0-4 go one per batch, 5-9 in one batch; every
	// batch is gzip. One client writes them all: its first record loads the
	// topic's metadata, so records 5-9 enter the partition's buffer as they
	// are produced and leave it in one batch at the flush. (Flushing while the
	// topic was still unknown sent whatever had reached the buffer: 4, then 1.)
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Millisecond).UnixMilli()
	ts := make([]int64, 10)
	for i := range ts {
		ts[i] = base + int64(i)*1000
	}
	ts[6] = base + 60_000
	rec := func(i int) *kgo.Record {
		// Repetitive values, so that gzip shrinks the batch and kgo keeps it.
		return &kgo.Record{Topic: topic, Value: bytes.Repeat([]byte("r"+strconv.Itoa(i)+"-"), 30), Timestamp: time.UnixMilli(ts[i])}
	}
	batched := newKgo(t, n.Addr(), kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.ProducerLinger(time.Minute))
	var wg sync.WaitGroup
	errs := make([]error, 10)
	offs := make([]int64, 10)
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			wg.Add(1)
			batched.Produce(testCtx(t, 20*time.Second), rec(i), func(r *kgo.Record, err error) {
				defer wg.Done()
				errs[i], offs[i] = err, r.Offset
			})
		}
		if err := batched.Flush(testCtx(t, 20*time.Second)); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
	for i := 0; i < 5; i++ {
		produce(i, i+1)
	}
	produce(5, 10)
	wg.Wait()
	for i := 0; i < 10; i++ {
		if errs[i] != nil || offs[i] != int64(i) {
			t.Fatalf("record %d: offset %d err %v, want offset %d", i, offs[i], errs[i], i)
		}
	}
	data, err := os.ReadFile(segmentLogs(t, n.PartitionDir(topic, 0))[0])
	if err != nil {
		t.Fatal(err)
	}
	if bs := scanBatches(data); len(bs) != 6 || bs[5].count != 5 || bs[5].attrs&7 != 1 {
		t.Fatalf("test setup: stored batches %+v, want 5 single-record batches and one gzip batch of 5", bs)
	}

	cases := []struct {
		name    string
		ts      int64
		off     int64
		wantTs  int64
		kadmOff int64 // what kadm's ListOffsetsAfterMilli reports
	}{
		{"before all", base - 5000, 0, ts[0], 0},
		{"exact first", base, 0, ts[0], 0},
		{"between batches", base + 2500, 3, ts[3], 3},
		{"exact", base + 3000, 3, ts[3], 3},
		{"first of compressed batch", base + 5000, 5, ts[5], 5},
		{"inside compressed batch, first record >= ts in offset order", base + 5500, 6, ts[6], 6},
		{"later records smaller than an earlier max", base + 7000, 6, ts[6], 6},
		{"exact max", base + 60_000, 6, ts[6], 6},
		{"past the end", base + 60_001, -1, -1, 10},
	}
	for _, c := range cases {
		sp := listOffsetRaw(t, cl, topic, 0, c.ts)
		wantCode(t, "ListOffsets "+c.name, sp.ErrorCode, nil)
		if sp.Offset != c.off || sp.Timestamp != c.wantTs {
			t.Errorf("ListOffsets %s (ts %d): offset %d timestamp %d, want offset %d timestamp %d",
				c.name, c.ts-base, sp.Offset, sp.Timestamp-base, c.off, c.wantTs-base)
		}
		lo, err := adm.ListOffsetsAfterMilli(testCtx(t, 10*time.Second), c.ts, topic)
		if err != nil {
			t.Fatalf("kadm ListOffsetsAfterMilli: %v", err)
		}
		if o, ok := lo.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != c.kadmOff {
			t.Errorf("kadm ListOffsetsAfterMilli %s: %+v, want offset %d", c.name, o, c.kadmOff)
		}
	}

	for _, c := range []struct {
		name        string
		ts, off, rt int64
	}{
		{"earliest", -2, 0, -1},
		{"latest", -1, 10, -1},
		{"max timestamp", -3, 6, ts[6]},
	} {
		sp := listOffsetRaw(t, cl, topic, 0, c.ts)
		wantCode(t, "ListOffsets "+c.name, sp.ErrorCode, nil)
		if sp.Offset != c.off || sp.Timestamp != c.rt {
			t.Errorf("ListOffsets %s: offset %d timestamp %d, want %d %d", c.name, sp.Offset, sp.Timestamp, c.off, c.rt)
		}
	}
	ctx := testCtx(t, 10*time.Second)
	for _, c := range []struct {
		name string
		list func() (kadm.ListedOffsets, error)
		off  int64
	}{
		{"start", func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, topic) }, 0},
		{"local start", func() (kadm.ListedOffsets, error) { return adm.ListLocalLogStartOffsets(ctx, topic) }, 0},
		{"end", func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, topic) }, 10},
		{"max timestamp", func() (kadm.ListedOffsets, error) { return adm.ListMaxTimestampOffsets(ctx, topic) }, 6},
	} {
		lo, err := c.list()
		if err != nil {
			t.Fatalf("kadm %s: %v", c.name, err)
		}
		if o, ok := lo.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != c.off {
			t.Errorf("kadm %s offsets: %+v, want offset %d", c.name, o, c.off)
		}
	}

	// LogAppendTime: lookups use the broker's append time, not the
	// producer's timestamps.
	const lat = "listoffsets-appendtime"
	createTopic(t, adm, lat, 1, map[string]*string{"message.timestamp.type": strp("LogAppendTime")})
	before := time.Now().UnixMilli()
	for i := 0; i < 3; i++ {
		produceAll(t, cl, &kgo.Record{Topic: lat, Value: []byte("x"), Timestamp: time.UnixMilli(base + int64(i))})
	}
	after := time.Now().UnixMilli()
	for _, c := range []struct {
		ts, off int64
	}{{base + 1, 0}, {before - 1, 0}, {after + 1000, -1}} {
		sp := listOffsetRaw(t, cl, lat, 0, c.ts)
		wantCode(t, "ListOffsets LogAppendTime", sp.ErrorCode, nil)
		if sp.Offset != c.off || (c.off >= 0 && (sp.Timestamp < before || sp.Timestamp > after)) {
			t.Errorf("LogAppendTime topic, ListOffsets ts %d: offset %d timestamp %d; want offset %d with an append time in [%d, %d]",
				c.ts, sp.Offset, sp.Timestamp, c.off, before, after)
		}
	}

	// An unknown partition, sent straight to the broker (kgo's sharding
	// would refuse it before sending).
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = 7, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kr, err := cl.Broker(1).Request(testCtx(t, 10*time.Second), req)
	if err != nil {
		t.Fatalf("ListOffsets unknown partition: %v", err)
	}
	resp := kr.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets unknown partition: malformed response %+v", resp)
	}
	wantCode(t, "ListOffsets unknown partition", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
}

func TestFranzDeleteRecords(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	cl := newKgo(t, n.Addr())
	const topic = "deleterecords"
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)

	// Four batches of five records: offsets 0-4, 5-9, 10-14, 15-19.
	now := time.Now().UnixMilli()
	for b := 0; b < 4; b++ {
		var vals [][]byte
		for i := 0; i < 5; i++ {
			vals = append(vals, []byte("d"+strconv.Itoa(b*5+i)))
		}
		sp := produceRaw(t, cl, topic, id, 0, rawBatch(-1, -1, -1, now, vals...))
		wantCode(t, "produce", sp.ErrorCode, nil)
		if sp.BaseOffset != int64(b*5) {
			t.Fatalf("batch %d at offset %d, want %d", b, sp.BaseOffset, b*5)
		}
	}

	deleteTo := func(off int64) kadm.DeleteRecordsResponse {
		t.Helper()
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: off})
		resp, err := adm.DeleteRecords(testCtx(t, 10*time.Second), offs)
		if err != nil {
			t.Fatalf("DeleteRecords %d: %v", off, err)
		}
		r, err := resp.On(topic, 0, nil)
		if err != nil {
			t.Fatalf("DeleteRecords %d: no answer for the partition: %v", off, err)
		}
		return r
	}
	startOffset := func() int64 { return admStartOffset(t, adm, topic) }

	// Delete up to the middle of the third batch.
	if r := deleteTo(12); r.Err != nil || r.LowWatermark != 12 {
		t.Fatalf("DeleteRecords 12: low watermark %d err %v, want 12", r.LowWatermark, r.Err)
	}
	if s := startOffset(); s != 12 {
		t.Fatalf("start offset after DeleteRecords 12: %d", s)
	}
	for _, off := range []int64{0, 5, 11, 21} {
		sp := fetchRaw(t, cl, topic, id, 0, off)
		wantCode(t, fmt.Sprintf("fetch at %d", off), sp.ErrorCode, kerr.OffsetOutOfRange)
	}
	// A timestamp lookup skips the deleted records of the batch at 10.
	for _, ts := range []int64{0, now} {
		lo := listOffsetRaw(t, cl, topic, 0, ts)
		wantCode(t, "ListOffsets by time after DeleteRecords", lo.ErrorCode, nil)
		if lo.Offset != 12 || lo.Timestamp != now {
			t.Errorf("ListOffsets ts %d after DeleteRecords 12: offset %d timestamp %d, want 12 %d", ts, lo.Offset, lo.Timestamp, now)
		}
	}
	sp := fetchRaw(t, cl, topic, id, 0, 12)
	wantCode(t, "fetch at 12", sp.ErrorCode, nil)
	if sp.LogStartOffset != 12 || sp.HighWatermark != 20 {
		t.Fatalf("fetch at 12: log start %d high watermark %d, want 12 and 20", sp.LogStartOffset, sp.HighWatermark)
	}
	if bs := scanBatches(sp.RecordBatches); len(bs) == 0 || bs[0].baseOffset != 10 {
		t.Fatalf("fetch at 12: batches %+v, want the whole batch at 10 first", bs)
	}
	got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 12}, 8, 20*time.Second)
	for i, r := range got {
		if r.Offset != int64(12+i) || string(r.Value) != "d"+strconv.Itoa(12+i) {
			t.Fatalf("record %d: offset %d value %q, want %d %q", i, r.Offset, r.Value, 12+i, "d"+strconv.Itoa(12+i))
		}
	}

	// kgo without a reset policy surfaces the error.
	nr := newKgo(t, n.Addr(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(3)}}),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	ctx := testCtx(t, 20*time.Second)
	for {
		fs := nr.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("kgo with NoResetOffset at 3: no error before the deadline")
		}
		if errs := fs.Errors(); len(errs) > 0 {
			if !errors.Is(errs[0].Err, kerr.OffsetOutOfRange) {
				t.Fatalf("kgo with NoResetOffset at 3: %v, want OFFSET_OUT_OF_RANGE", errs[0].Err)
			}
			break
		}
		if recs := fs.Records(); len(recs) > 0 {
			t.Fatalf("kgo at deleted offset 3 got records from %d", recs[0].Offset)
		}
	}
	nr.Close()

	// Below the start: nothing changes; past the high watermark: error.
	if r := deleteTo(3); r.Err != nil || r.LowWatermark != 12 {
		t.Fatalf("DeleteRecords 3 (below start): low watermark %d err %v, want 12 and no error", r.LowWatermark, r.Err)
	}
	if r := deleteTo(25); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("DeleteRecords 25 (past the end): err %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}

	// The start offset survives a restart.
	n.Restart()
	cl = newKgo(t, n.Addr())
	if s := startOffset(); s != 12 {
		t.Fatalf("start offset after restart: %d, want 12", s)
	}
	wantCode(t, "fetch at 11 after restart", fetchRaw(t, cl, topic, id, 0, 11).ErrorCode, kerr.OffsetOutOfRange)

	// -1 means the high watermark.
	if r := deleteTo(-1); r.Err != nil || r.LowWatermark != 20 {
		t.Fatalf("DeleteRecords -1: low watermark %d err %v, want 20", r.LowWatermark, r.Err)
	}
	wantCode(t, "fetch at 19", fetchRaw(t, cl, topic, id, 0, 19).ErrorCode, kerr.OffsetOutOfRange)
	r := &kgo.Record{Topic: topic, Value: []byte("after")}
	produceAll(t, cl, r)
	if r.Offset != 20 {
		t.Fatalf("produce after DeleteRecords -1: offset %d, want 20", r.Offset)
	}
	if s := startOffset(); s != 20 {
		t.Fatalf("start offset: %d, want 20", s)
	}
}

func TestFranzZeroCopy(t *testing.T) {
	for _, sendfile := range []bool{true, false} {
		t.Run("sendfile="+strconv.FormatBool(sendfile), func(t *testing.T) {
			n := testutil.StartBroker(t, map[string]string{"samsa.fetch.sendfile": strconv.FormatBool(sendfile)})
			adm := newAdmin(t, n.Addr())
			const topic, count, size = "zerocopy", 2000, 500
			createTopic(t, adm, topic, 1, nil)
			prod := newKgo(t, n.Addr(), kgo.ProducerBatchCompression(kgo.NoCompression()))
			var recs []*kgo.Record
			for i := 0; i < count; i++ {
				recs = append(recs, &kgo.Record{Topic: topic, Value: bytes.Repeat([]byte{byte(i)}, size)})
			}
			produceAll(t, prod, recs...)
			var logBytes int64
			for _, s := range segmentLogs(t, n.PartitionDir(topic, 0)) {
				fi, err := os.Stat(s)
				if err != nil {
					t.Fatal(err)
				}
				logBytes += fi.Size()
			}
			if logBytes < count*size {
				t.Fatalf("test setup: %d bytes of log for %d value bytes", logBytes, count*size)
			}

			sf0, cp0 := n.SendfileBytes(), n.CopiedFileBytes()
			got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, count, 30*time.Second)
			for i, r := range got {
				if r.Offset != int64(i) || !bytes.Equal(r.Value, recs[i].Value) {
					t.Fatalf("record %d: offset %d, value differs", i, r.Offset)
				}
			}
			sf, cp := n.SendfileBytes()-sf0, n.CopiedFileBytes()-cp0
			t.Logf("log %d bytes; consumer read: sendfile %d bytes, copied %d bytes", logBytes, sf, cp)
			// Every batch reached the consumer at least once.
			if sendfile && (sf < logBytes || cp != 0) {
				t.Fatalf("sendfile on: %d bytes sent with sendfile, %d copied; want >= %d and 0", sf, cp, logBytes)
			}
			if !sendfile && (cp < logBytes || sf != 0) {
				t.Fatalf("sendfile off: %d bytes copied, %d with sendfile; want >= %d and 0", cp, sf, logBytes)
			}
		})
	}
}

func TestFranzFetchLongPoll(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	const topic = "longpoll"
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)
	prod := newKgo(t, n.Addr())

	t.Run("kgo consumer wakes on append", func(t *testing.T) {
		parked := parkedFetches()
		fetchSent := make(chan struct{})
		var once sync.Once
		hook := fetchWriteHook(func() { once.Do(func() { close(fetchSent) }) })
		cons := newKgo(t, n.Addr(), kgo.WithHooks(hook), kgo.FetchMaxWait(5*time.Second),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
		type result struct {
			recs []*kgo.Record
			at   time.Time
			err  error
		}
		done := make(chan result, 1)
		ctx := testCtx(t, 20*time.Second)
		go func() {
			for {
				fs := cons.PollFetches(ctx)
				if ctx.Err() != nil || len(fs.Errors()) > 0 || len(fs.Records()) > 0 {
					res := result{recs: fs.Records(), at: time.Now(), err: ctx.Err()}
					if errs := fs.Errors(); len(errs) > 0 && res.err == nil {
						res.err = errs[0].Err
					}
					done <- res
					return
				}
			}
		}()
		select {
		case <-fetchSent:
		case <-time.After(20 * time.Second):
			t.Fatal("the consumer sent no Fetch")
		}
		// Append once the consumer's fetch is parked on the empty
		// partition.
		waitFetchParked(t, parked)
		r := &kgo.Record{Topic: topic, Value: []byte("wake up")}
		produceAll(t, prod, r)
		acked := time.Now()
		res := <-done
		if res.err != nil || len(res.recs) != 1 || string(res.recs[0].Value) != "wake up" {
			t.Fatalf("consumer: %d records, err %v", len(res.recs), res.err)
		}
		if lat := res.at.Sub(acked); lat > 3*time.Second {
			t.Fatalf("consumer got the record %v after the produce was acknowledged: the fetch did not wake on the append", lat)
		} else {
			t.Logf("consumer got the record %v after the ack", lat)
		}
	})

	t.Run("raw fetch waits MaxWait then answers empty", func(t *testing.T) {
		cl := newKgo(t, n.Addr())
		start := time.Now()
		sp := fetchRawWait(t, cl, topic, id, 0, 1, 700, 1)
		took := time.Since(start)
		wantCode(t, "fetch at the end", sp.ErrorCode, nil)
		if len(sp.RecordBatches) != 0 || took < 600*time.Millisecond || took > 5*time.Second {
			t.Fatalf("fetch at the end with MaxWait 700ms: %d record bytes after %v; want none after about 700ms", len(sp.RecordBatches), took)
		}
	})

	t.Run("raw fetch wakes on append", func(t *testing.T) {
		cl := newKgo(t, n.Addr())
		type result struct {
			sp  kmsg.FetchResponseTopicPartition
			at  time.Time
			err error
		}
		done := make(chan result, 1)
		ctx := testCtx(t, 20*time.Second)
		parked := parkedFetches()
		go func() {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 5000, 1, 1<<20
			req.SessionEpoch = -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = topic, id
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.CurrentLeaderEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = 1, -1, -1, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			res := result{at: time.Now(), err: err}
			if err == nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
				res.sp = resp.Topics[0].Partitions[0]
			}
			done <- res
		}()
		waitFetchParked(t, parked)
		r := &kgo.Record{Topic: topic, Value: []byte("second")}
		produceAll(t, prod, r)
		acked := time.Now()
		res := <-done
		if res.err != nil {
			t.Fatal(res.err)
		}
		wantCode(t, "long-poll fetch", res.sp.ErrorCode, nil)
		bs := scanBatches(res.sp.RecordBatches)
		if len(bs) != 1 || bs[0].baseOffset != 1 {
			t.Fatalf("long-poll fetch returned batches %+v, want the one at offset 1", bs)
		}
		if lat := res.at.Sub(acked); lat > 3*time.Second {
			t.Fatalf("long-poll fetch answered %v after the ack", lat)
		}
	})
}

// parkedFetches are the goroutines, by id, parked at the select of the
// broker's awaitFetch: Fetches waiting for data (the brokers run in this
// process).
func parkedFetches() map[string]bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	ids := map[string]bool{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		// "goroutine 42 [select, 1 minutes]:\n..."
		head, _, _ := strings.Cut(g, "\n")
		id, state, _ := strings.Cut(strings.TrimPrefix(head, "goroutine "), " ")
		if strings.HasPrefix(state, "[select") && strings.Contains(g, "/broker.(*Broker).awaitFetch(") {
			ids[id] = true
		}
	}
	return ids
}

// waitFetchParked waits until a Fetch is parked in a broker on a goroutine
// that was not among before (parkedFetches).
func waitFetchParked(t *testing.T, before map[string]bool) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, func() error {
		for id := range parkedFetches() {
			if !before[id] {
				return nil
			}
		}
		return errors.New("no new Fetch parked in the broker's awaitFetch")
	})
}

// fetchWriteHook calls f after each Fetch request is written to a broker.
type fetchWriteHook func()

func (h fetchWriteHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.Fetch) && err == nil {
		h()
	}
}

func TestFranzFetchLimits(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	cl := newKgo(t, n.Addr())
	const topic = "fetchlimits"
	createTopic(t, adm, topic, 2, nil)
	id := topicID(t, adm, topic)
	ts := time.Now().UnixMilli()
	var size int
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 5; i++ {
			b := rawBatch(-1, -1, -1, ts, bytes.Repeat([]byte{byte('0' + i)}, 1000))
			size = len(b)
			sp := produceRaw(t, cl, topic, id, p, b)
			wantCode(t, "produce", sp.ErrorCode, nil)
		}
	}
	fetch := func(maxBytes int32, parts map[int32][2]int64) map[int32]kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, maxBytes, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		for p := int32(0); p < 2; p++ {
			v, ok := parts[p]
			if !ok {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, v[0], int32(v[1])
			rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]kmsg.FetchResponseTopicPartition{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				wantCode(t, fmt.Sprintf("fetch partition %d", rp.Partition), rp.ErrorCode, nil)
				out[rp.Partition] = rp
			}
		}
		if len(out) != len(parts) {
			t.Fatalf("fetch of %d partitions answered %d", len(parts), len(out))
		}
		return out
	}

	// KIP-74: the first batch comes whole even past the partition limit.
	r := fetch(50<<20, map[int32][2]int64{0: {0, 1}})[0]
	if bs := scanBatches(r.RecordBatches); len(bs) != 1 || bs[0].baseOffset != 0 || len(r.RecordBatches) != size {
		t.Fatalf("partition max 1 byte: %d bytes, batches %+v; want exactly the first batch (%d bytes)", len(r.RecordBatches), bs, size)
	}
	// Otherwise the partition limit holds (Kafka may add a partial batch).
	r = fetch(50<<20, map[int32][2]int64{0: {0, int64(size * 5 / 2)}})[0]
	if bs := scanBatches(r.RecordBatches); len(bs) != 2 || len(r.RecordBatches) > size*5/2 {
		t.Fatalf("partition max %d bytes: %d bytes, %d whole batches; want 2 whole batches within the limit", size*5/2, len(r.RecordBatches), len(bs))
	}
	// A fetch offset inside the log starts at that offset's batch.
	r = fetch(50<<20, map[int32][2]int64{0: {3, 1 << 20}})[0]
	if bs := scanBatches(r.RecordBatches); len(bs) != 2 || bs[0].baseOffset != 3 || r.HighWatermark != 5 {
		t.Fatalf("fetch at 3: batches %+v hw %d; want batches 3 and 4, hw 5", bs, r.HighWatermark)
	}
	// The request limit: the first partition gets one whole batch, the
	// next nothing.
	rs := fetch(1, map[int32][2]int64{0: {0, 1 << 20}, 1: {0, 1 << 20}})
	if bs := scanBatches(rs[0].RecordBatches); len(bs) != 1 || len(rs[0].RecordBatches) != size {
		t.Fatalf("request max 1 byte: partition 0 got %d bytes (%d batches), want one batch of %d", len(rs[0].RecordBatches), len(bs), size)
	}
	if len(rs[1].RecordBatches) != 0 || rs[1].HighWatermark != 5 {
		t.Fatalf("request max 1 byte: partition 1 got %d bytes, hw %d; want none, hw 5", len(rs[1].RecordBatches), rs[1].HighWatermark)
	}
	// Request limit of three batches over two partitions.
	rs = fetch(int32(size*3), map[int32][2]int64{0: {0, 1 << 20}, 1: {0, 1 << 20}})
	got := len(rs[0].RecordBatches) + len(rs[1].RecordBatches)
	if got > size*3 || len(scanBatches(rs[0].RecordBatches)) != 3 {
		t.Fatalf("request max %d: partitions got %d and %d bytes; want 3 batches from partition 0 and no more than the limit",
			size*3, len(rs[0].RecordBatches), len(rs[1].RecordBatches))
	}
}

func TestFranzConsumeWhileProducing(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	const topic, parts, producers, per = "concurrent", 2, 3, 4000
	createTopic(t, adm, topic, parts, map[string]*string{"internal.segment.bytes": strp("65536")})

	// A consumer follows the log from the start while three producers
	// append to both partitions (segments roll underneath it).
	type seen struct {
		recs []*kgo.Record
		err  error
	}
	done := make(chan seen, 1)
	ctx := testCtx(t, 120*time.Second)
	cons := newKgo(t, n.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0), 1: kgo.NewOffset().At(0)}}))
	go func() {
		var out seen
		for len(out.recs) < producers*per && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			if errs := fs.Errors(); len(errs) > 0 && ctx.Err() == nil {
				out.err = fmt.Errorf("partition %d: %w", errs[0].Partition, errs[0].Err)
				break
			}
			out.recs = append(out.recs, fs.Records()...)
		}
		if out.err == nil {
			out.err = ctx.Err()
		}
		done <- out
	}()

	var wg sync.WaitGroup
	perr := make([]error, producers)
	for w := 0; w < producers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.ProducerLinger(time.Millisecond),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
			if err != nil {
				perr[w] = err
				return
			}
			defer cl.Close()
			for i := 0; i < per; i += 100 {
				var recs []*kgo.Record
				for j := i; j < i+100; j++ {
					recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(j % parts),
						Key: []byte(strconv.Itoa(w)), Value: []byte(fmt.Sprintf("%d-%06d-%040d", w, j, j))})
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					perr[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for w, err := range perr {
		if err != nil {
			t.Fatalf("producer %d: %v", w, err)
		}
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("consumer: %v after %d records", res.err, len(res.recs))
	}
	if len(res.recs) != producers*per {
		t.Fatalf("consumer read %d records, want %d", len(res.recs), producers*per)
	}
	next := make([]int64, parts)
	last := map[[2]int]int{} // (producer, partition) -> last index seen
	for _, r := range res.recs {
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
		var w, j int
		if _, err := fmt.Sscanf(string(r.Value), "%d-%d", &w, &j); err != nil || string(r.Key) != strconv.Itoa(w) || j%parts != int(r.Partition) {
			t.Fatalf("record %d/%d: key %q value %q", r.Partition, r.Offset, r.Key, r.Value)
		}
		k := [2]int{w, int(r.Partition)}
		if prev, ok := last[k]; ok && j != prev+parts {
			t.Fatalf("producer %d partition %d: record %d after %d", w, r.Partition, j, prev)
		} else if !ok && j != int(r.Partition) {
			t.Fatalf("producer %d partition %d: first record %d", w, r.Partition, j)
		}
		last[k] = j
	}
	if segs := segmentLogs(t, n.PartitionDir(topic, 0)); len(segs) < 2 {
		t.Fatalf("test setup: %d segments, want the log to roll", len(segs))
	}
}

func TestFranzLargeRecords(t *testing.T) {
	n := testutil.StartBroker(t, nil) // message.max.bytes: Kafka's default 1048588
	adm := newAdmin(t, n.Addr())
	const topic, size = "large", 900_000 // kgo's own batch limit is 1000012
	createTopic(t, adm, topic, 1, nil)
	prod := newKgo(t, n.Addr(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var want [][]byte
	for i := 0; i < 3; i++ {
		v := bytes.Repeat([]byte{byte('A' + i)}, size)
		want = append(want, v)
		r := &kgo.Record{Topic: topic, Value: v}
		produceAll(t, prod, r)
		if r.Offset != int64(i) {
			t.Fatalf("large record %d at offset %d", i, r.Offset)
		}
	}
	// Fetch limits far below one record: each fetch still returns a whole
	// batch (KIP-74), so the consumer makes progress.
	got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, 3, 30*time.Second,
		kgo.FetchMaxBytes(100_000), kgo.FetchMaxPartitionBytes(50_000))
	for i, r := range got {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, want[i]) {
			t.Fatalf("large record %d: offset %d, %d bytes", i, r.Offset, len(r.Value))
		}
	}
}
