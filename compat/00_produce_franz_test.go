package compat

// Produce semantics through franz-go: max.message.bytes, the idempotent
// producer (InitProducerId, sequence checks, the five-batch duplicate
// window, producer state across a restart), acks 0/1/all and the topic
// compression.type.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

func TestFranzMaxMessageBytes(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{"message.max.bytes": "3000"})
	adm := newAdmin(t, n.Addr())
	raw := newKgo(t, n.Addr())
	createTopic(t, adm, "capped", 1, map[string]*string{"max.message.bytes": strp("2000")})
	createTopic(t, adm, "brokerdefault", 1, nil)

	// valueFor is the value size that makes a one-record uncompressed
	// batch (no key, no headers) exactly size bytes.
	valueFor := func(size int) int {
		for v := 0; v < size; v++ {
			if len(rawBatch(0, 0, 0, 0, make([]byte, v))) == size {
				return v
			}
		}
		t.Fatalf("no value size gives a %d-byte batch", size)
		return 0
	}
	for _, c := range []struct {
		topic string
		limit int
	}{{"capped", 2000}, {"brokerdefault", 3000}} {
		id := topicID(t, adm, c.topic)
		v := valueFor(c.limit)
		ts := time.Now().UnixMilli()

		// Raw batches: exactly at the limit is accepted, one byte over is not.
		over := produceRaw(t, raw, c.topic, id, 0, rawBatch(-1, -1, -1, ts, bytes.Repeat([]byte{'o'}, v+1)))
		wantCode(t, c.topic+": batch of limit+1 bytes", over.ErrorCode, kerr.MessageTooLarge)
		at := produceRaw(t, raw, c.topic, id, 0, rawBatch(-1, -1, -1, ts, bytes.Repeat([]byte{'a'}, v)))
		wantCode(t, c.topic+": batch of limit bytes", at.ErrorCode, nil)
		if at.BaseOffset != 0 {
			t.Fatalf("%s: batch at the limit stored at %d, want 0", c.topic, at.BaseOffset)
		}

		// Through kgo (one record per batch, no compression).
		prod := newKgo(t, n.Addr(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DisableIdempotentWrite())
		big := &kgo.Record{Topic: c.topic, Value: bytes.Repeat([]byte{'b'}, v+1)}
		err := prod.ProduceSync(testCtx(t, 20*time.Second), big).FirstErr()
		if !errors.Is(err, kerr.MessageTooLarge) {
			t.Fatalf("%s: kgo record over the limit: %v, want MESSAGE_TOO_LARGE", c.topic, err)
		}
		ok := &kgo.Record{Topic: c.topic, Value: bytes.Repeat([]byte{'k'}, v)}
		produceAll(t, prod, ok)
		if ok.Offset != 1 {
			t.Fatalf("%s: kgo record at the limit stored at %d, want 1", c.topic, ok.Offset)
		}
		data, err := os.ReadFile(segmentLogs(t, n.PartitionDir(c.topic, 0))[0])
		if err != nil {
			t.Fatal(err)
		}
		bs := scanBatches(data)
		if len(bs) != 2 || bs[0].size != c.limit || bs[1].size != c.limit {
			t.Fatalf("%s: stored batches %+v, want two of %d bytes", c.topic, bs, c.limit)
		}
		got := consumeExact(t, n.Addr(), c.topic, map[int32]int64{0: 0}, 2, 20*time.Second)
		if !bytes.Equal(got[0].Value, bytes.Repeat([]byte{'a'}, v)) || !bytes.Equal(got[1].Value, ok.Value) {
			t.Fatalf("%s: read back different values", c.topic)
		}
	}
}

func TestFranzIdempotentProducer(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	const topic = "idempotent"
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)

	// Two default (idempotent) kgo producers get different producer ids.
	for i := 0; i < 2; i++ {
		produceAll(t, newKgo(t, n.Addr()), &kgo.Record{Topic: topic, Value: []byte("p" + strconv.Itoa(i))})
	}
	got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, 2, 20*time.Second)
	for _, r := range got {
		if r.ProducerID < 0 || r.ProducerEpoch < 0 {
			t.Fatalf("record %d: producer id %d epoch %d, want an idempotent producer", r.Offset, r.ProducerID, r.ProducerEpoch)
		}
	}
	if got[0].ProducerID == got[1].ProducerID {
		t.Fatalf("two producers share producer id %d", got[0].ProducerID)
	}

	// Raw InitProducerId.
	cl := newKgo(t, n.Addr())
	pid, epoch := initProducerID(t, cl)
	pid2, _ := initProducerID(t, cl)
	if pid < 0 || epoch != 0 || pid2 < 0 || pid2 == pid || pid2 == got[0].ProducerID || pid2 == got[1].ProducerID || pid == got[0].ProducerID || pid == got[1].ProducerID {
		t.Fatalf("InitProducerId: ids %d (epoch %d) and %d, kgo producers %d and %d; want distinct ids, epoch 0",
			pid, epoch, pid2, got[0].ProducerID, got[1].ProducerID)
	}

	// Sequences: duplicates get the original offset, gaps are refused.
	ts := time.Now().UnixMilli()
	batch := func(seq int32, vals ...string) []byte {
		var bs [][]byte
		for _, v := range vals {
			bs = append(bs, []byte(v))
		}
		return rawBatch(pid, epoch, seq, ts, bs...)
	}
	produce := func(what string, records []byte, wantErr *kerr.Error, wantOff int64) {
		t.Helper()
		sp := produceRaw(t, cl, topic, id, 0, records)
		wantCode(t, what, sp.ErrorCode, wantErr)
		if wantErr == nil && sp.BaseOffset != wantOff {
			t.Fatalf("%s: base offset %d, want %d", what, sp.BaseOffset, wantOff)
		}
	}
	endOffset := func() int64 {
		t.Helper()
		lo, err := adm.ListEndOffsets(testCtx(t, 10*time.Second), topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := lo.Lookup(topic, 0)
		return o.Offset
	}
	produce("seq 0", batch(0, "a", "b", "c"), nil, 2)
	produce("seq 3", batch(3, "d", "e"), nil, 5)
	produce("seq 3 again", batch(3, "d", "e"), nil, 5)
	produce("seq 0 again", batch(0, "a", "b", "c"), nil, 2)
	produce("seq 10 (gap)", batch(10, "x"), kerr.OutOfOrderSequenceNumber, 0)
	if e := endOffset(); e != 7 {
		t.Fatalf("end offset %d after duplicates and a gap, want 7", e)
	}

	// Producer state is rebuilt on restart.
	n.Restart()
	waitLed(t, n.Addr(), topic, 0)
	cl = newKgo(t, n.Addr())
	produce("seq 3 after restart", batch(3, "d", "e"), nil, 5)
	produce("seq 10 after restart", batch(10, "x"), kerr.OutOfOrderSequenceNumber, 0)
	produce("seq 5 after restart", batch(5, "f"), nil, 7)

	// Kafka keeps the last five batches per producer: after seq 6..10,
	// seq 6 is still a duplicate, seq 5 is not.
	for s := int32(6); s <= 10; s++ {
		produce(fmt.Sprintf("seq %d", s), batch(s, "s"+strconv.Itoa(int(s))), nil, int64(s+2))
	}
	produce("seq 6 again (in the window)", batch(6, "s6"), nil, 8)
	produce("seq 5 again (out of the window)", batch(5, "f"), kerr.OutOfOrderSequenceNumber, 0)
	if e := endOffset(); e != 13 {
		t.Fatalf("end offset %d, want 13", e)
	}
	recs := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 2}, 11, 20*time.Second)
	want := []string{"a", "b", "c", "d", "e", "f", "s6", "s7", "s8", "s9", "s10"}
	for i, r := range recs {
		if r.Offset != int64(i+2) || string(r.Value) != want[i] || r.ProducerID != pid {
			t.Fatalf("record %d: offset %d value %q producer %d; want %d %q %d", i, r.Offset, r.Value, r.ProducerID, i+2, want[i], pid)
		}
	}
}

func TestFranzAcks(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	const topic = "acks"
	createTopic(t, adm, topic, 1, nil)
	end := func() int64 {
		lo, err := adm.ListEndOffsets(testCtx(t, 10*time.Second), topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := lo.Lookup(topic, 0)
		return o.Offset
	}
	var want []string
	for _, c := range []struct {
		name string
		acks kgo.Acks
	}{{"acks=0", kgo.NoAck()}, {"acks=1", kgo.LeaderAck()}, {"acks=all", kgo.AllISRAcks()}} {
		cl := newKgo(t, n.Addr(), kgo.RequiredAcks(c.acks), kgo.DisableIdempotentWrite())
		before := int64(len(want))
		var recs []*kgo.Record
		for i := 0; i < 10; i++ {
			v := c.name + "-" + strconv.Itoa(i)
			want = append(want, v)
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
		}
		produceAll(t, cl, recs...)
		testutil.Eventually(t, 10*time.Second, func() error {
			if e := end(); e != int64(len(want)) {
				return fmt.Errorf("%s: end offset %d, want %d", c.name, e, len(want))
			}
			return nil
		})
		if c.name != "acks=0" && recs[0].Offset != before {
			t.Fatalf("%s: first record at %d, want %d", c.name, recs[0].Offset, before)
		}
		cl.Close()
	}
	got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, len(want), 20*time.Second)
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != want[i] {
			t.Fatalf("record %d: offset %d value %q, want %q", i, r.Offset, r.Value, want[i])
		}
	}
}

func TestFranzTopicCompressionType(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	cl := newKgo(t, n.Addr())
	for _, c := range []struct {
		ctype string
		attr  int16
		send  kgo.CompressionCodec
	}{{"zstd", 4, kgo.SnappyCompression()}, {"uncompressed", 0, kgo.GzipCompression()}, {"lz4", 3, kgo.NoCompression()}} {
		topic := "ctype-" + c.ctype
		createTopic(t, adm, topic, 1, map[string]*string{"compression.type": strp(c.ctype)})
		id := topicID(t, adm, topic)
		prod := newKgo(t, n.Addr(), kgo.ProducerBatchCompression(c.send), kgo.ProducerLinger(time.Minute))
		var recs []*kgo.Record
		for i := 0; i < 20; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("k"), Value: bytes.Repeat([]byte("v"+strconv.Itoa(i)), 40)})
		}
		for _, r := range recs {
			prod.Produce(testCtx(t, 20*time.Second), r, nil)
		}
		if err := prod.Flush(testCtx(t, 20*time.Second)); err != nil {
			t.Fatal(err)
		}
		sp := fetchRaw(t, cl, topic, id, 0, 0)
		wantCode(t, topic+" fetch", sp.ErrorCode, nil)
		bs := scanBatches(sp.RecordBatches)
		if len(bs) == 0 {
			t.Fatalf("%s: no batches", topic)
		}
		for _, b := range bs {
			if b.attrs&7 != c.attr {
				t.Errorf("topic compression.type=%s: batch %d served with codec %d, want %d (Kafka recompresses)", c.ctype, b.baseOffset, b.attrs&7, c.attr)
			}
		}
		got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, len(recs), 20*time.Second)
		for i, r := range got {
			if r.Offset != int64(i) || !bytes.Equal(r.Value, recs[i].Value) {
				t.Fatalf("%s: record %d differs", topic, i)
			}
		}
	}
}

func TestFranzTimestampBounds(t *testing.T) {
	n := testutil.StartBroker(t, nil) // log.message.timestamp.after.max.ms: 1 hour
	adm := newAdmin(t, n.Addr())
	createTopic(t, adm, "ts-default", 1, nil)
	createTopic(t, adm, "ts-before", 1, map[string]*string{"message.timestamp.before.max.ms": strp("60000")})
	cl := newKgo(t, n.Addr())
	now := time.Now()
	for _, c := range []struct {
		topic string
		ts    time.Time
		want  *kerr.Error
	}{
		{"ts-default", now.Add(2 * time.Hour), kerr.InvalidTimestamp},
		{"ts-default", now.Add(30 * time.Minute), nil},
		{"ts-default", now.Add(-30 * 24 * time.Hour), nil},
		{"ts-before", now.Add(-2 * time.Minute), kerr.InvalidTimestamp},
		{"ts-before", now.Add(-10 * time.Second), nil},
	} {
		id := topicID(t, adm, c.topic)
		sp := produceRaw(t, cl, c.topic, id, 0, rawBatch(-1, -1, -1, c.ts.UnixMilli(), []byte("x")))
		msg := ""
		if sp.ErrorMessage != nil {
			msg = *sp.ErrorMessage
		}
		wantCode(t, fmt.Sprintf("%s: timestamp %v from now (broker message %q)", c.topic, c.ts.Sub(now).Round(time.Second), msg), sp.ErrorCode, c.want)
	}
}
