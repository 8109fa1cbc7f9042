package compat

// Log durability through franz-go: restart, torn-tail and corrupt-tail
// recovery, retention by time and size, and segment roll by time.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

func TestFranzRestart(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	const topic, parts, per = "restart", 2, 500
	createTopic(t, adm, topic, parts, nil)
	id := topicID(t, adm, topic)
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	var want []*kgo.Record
	for i := 0; i < parts*per; i++ {
		want = append(want, genRecord(topic, i, parts, base))
	}
	prod := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	send := make([]*kgo.Record, len(want))
	for i, r := range want {
		cp := *r
		send[i] = &cp
	}
	produceAll(t, prod, send...)

	n.Restart()

	if got := topicID(t, adm, topic); got != id {
		t.Fatalf("topic id changed across restart: %x, was %x", got, id)
	}
	check := func(extra int) {
		t.Helper()
		got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0, 1: 0}, len(want)+extra*parts, 60*time.Second)
		next := make([]int64, parts)
		for _, r := range got {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			if r.Offset < per {
				if diff := sameRecord(r, want[int(r.Offset)*parts+int(r.Partition)]); diff != "" {
					t.Fatalf("%d/%d: %s", r.Partition, r.Offset, diff)
				}
			}
		}
	}
	check(0)

	// The time indexes answer as before.
	lookup := newKgo(t, n.Addr())
	for _, c := range []struct {
		p           int32
		ts, off, rt int64
	}{
		{0, base.UnixMilli() + 501, 251, base.UnixMilli() + 502},
		{1, base.UnixMilli() + 501, 250, base.UnixMilli() + 501},
		{0, -3, per - 1, base.UnixMilli() + 2*per - 2},
		{1, -3, per - 1, base.UnixMilli() + 2*per - 1},
	} {
		sp := listOffsetRaw(t, lookup, topic, c.p, c.ts)
		wantCode(t, "ListOffsets after restart", sp.ErrorCode, nil)
		if sp.Offset != c.off || sp.Timestamp != c.rt {
			t.Errorf("ListOffsets %d/ts %d after restart: offset %d timestamp %d, want %d %d", c.p, c.ts, sp.Offset, sp.Timestamp, c.off, c.rt)
		}
	}

	// The producer from before the restart continues, then a new one.
	for round, cl := range []*kgo.Client{prod, newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))} {
		for p := int32(0); p < parts; p++ {
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("after-%d-%d", round, p))}
			produceAll(t, cl, r)
			if r.Offset != int64(per+round) {
				t.Fatalf("round %d partition %d: produced at %d, want %d", round, p, r.Offset, per+round)
			}
		}
	}
	check(2)
}

// produceSingles produces n one-record uncompressed batches with values of
// different sizes and returns the values.
func produceSingles(t *testing.T, addr, topic string, count int) [][]byte {
	t.Helper()
	cl := newKgo(t, addr, kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer cl.Close()
	var vals [][]byte
	for i := 0; i < count; i++ {
		v := bytes.Repeat([]byte{byte('a' + i)}, 100+10*i)
		r := &kgo.Record{Topic: topic, Key: []byte("k" + strconv.Itoa(i)), Value: v}
		produceAll(t, cl, r)
		if r.Offset != int64(i) {
			t.Fatalf("single %d at offset %d", i, r.Offset)
		}
		vals = append(vals, v)
	}
	return vals
}

// readSegments returns the concatenated .log files of a partition.
func readSegments(t *testing.T, dir string) []byte {
	t.Helper()
	var all []byte
	for _, s := range segmentLogs(t, dir) {
		d, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, d...)
	}
	return all
}

func TestFranzTornTail(t *testing.T) {
	cases := []struct {
		name         string
		segmentBytes string // topic internal.segment.bytes; "" for segment.bytes's default
		// damage changes the active (last) segment, given its bytes and
		// batches, and returns its new content.
		damage  func(data []byte, bs []batchSpan) []byte
		wantEnd int64 // offsets before it survive
	}{
		{"cut in the middle of the last batch", "", func(d []byte, bs []batchSpan) []byte {
			l := bs[len(bs)-1]
			return d[:l.pos+l.size/2]
		}, 9},
		{"cut inside the last batch header", "", func(d []byte, bs []batchSpan) []byte {
			return d[:bs[len(bs)-1].pos+30]
		}, 9},
		{"bit flip in the last batch's records", "", func(d []byte, bs []batchSpan) []byte {
			l := bs[len(bs)-1]
			d[l.pos+l.size-5] ^= 0x10
			return d
		}, 9},
		{"bit flip in a middle batch drops it and everything after", "", func(d []byte, bs []batchSpan) []byte {
			b := bs[5]
			d[b.pos+b.size-3] ^= 0x01
			return d
		}, 5},
		{"zeroed tail after the last batch", "", func(d []byte, bs []batchSpan) []byte {
			return append(d, make([]byte, 4096)...)
		}, 10},
		{"no damage: recovery keeps everything", "", func(d []byte, bs []batchSpan) []byte {
			return d
		}, 10},
		{"cut in the last of several segments", "700", func(d []byte, bs []batchSpan) []byte {
			l := bs[len(bs)-1]
			return d[:l.pos+l.size-1]
		}, 9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n := testutil.StartBroker(t, nil)
			adm := newAdmin(t, n.Addr())
			const topic = "torn"
			var cfg map[string]*string
			if c.segmentBytes != "" {
				cfg = map[string]*string{"internal.segment.bytes": strp(c.segmentBytes)}
			}
			createTopic(t, adm, topic, 1, cfg)
			vals := produceSingles(t, n.Addr(), topic, 10)
			n.Stop()

			dir := n.PartitionDir(topic, 0)
			before := readSegments(t, dir)
			allBs := scanBatches(before)
			if len(allBs) != 10 {
				t.Fatalf("test setup: %d batches in %s, want 10", len(allBs), dir)
			}
			keep := allBs[c.wantEnd-1].pos + allBs[c.wantEnd-1].size // bytes that must survive
			segs := segmentLogs(t, dir)
			if c.segmentBytes != "" && len(segs) < 3 {
				t.Fatalf("test setup: %d segments, want several", len(segs))
			}
			active := segs[len(segs)-1]
			data, err := os.ReadFile(active)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(active, c.damage(data, scanBatches(data)), 0o644); err != nil {
				t.Fatal(err)
			}
			if removeCleanShutdownMarkers(t, n.Dir) == 0 {
				t.Logf("no .clean-shutdown marker found under %s", n.Dir)
			}
			n.Restart()
			waitLed(t, n.Addr(), topic, 0)

			ends, err := adm.ListEndOffsets(testCtx(t, 20*time.Second), topic)
			if err != nil {
				t.Fatal(err)
			}
			if o, _ := ends.Lookup(topic, 0); o.Err != nil || o.Offset != c.wantEnd {
				t.Fatalf("end offset after recovery: %+v, want %d", o, c.wantEnd)
			}
			got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, int(c.wantEnd), 20*time.Second)
			for i, r := range got {
				if r.Offset != int64(i) || !bytes.Equal(r.Value, vals[i]) || string(r.Key) != "k"+strconv.Itoa(i) {
					t.Fatalf("record %d after recovery: offset %d key %q value len %d", i, r.Offset, r.Key, len(r.Value))
				}
			}
			prod := newKgo(t, n.Addr(), kgo.ProducerBatchCompression(kgo.NoCompression()))
			r := &kgo.Record{Topic: topic, Value: []byte("after recovery")}
			produceAll(t, prod, r)
			if r.Offset != c.wantEnd {
				t.Fatalf("produce after recovery at offset %d, want %d", r.Offset, c.wantEnd)
			}
			got = consumeExact(t, n.Addr(), topic, map[int32]int64{0: c.wantEnd}, 1, 20*time.Second)
			if got[0].Offset != c.wantEnd || string(got[0].Value) != "after recovery" {
				t.Fatalf("read back %d %q", got[0].Offset, got[0].Value)
			}

			// On disk: the whole batches before the damage, then the new one.
			all := readSegments(t, dir)
			after := scanBatches(all)
			total := 0
			for _, b := range after {
				total += b.size
			}
			if len(after) != int(c.wantEnd)+1 || total != len(all) || len(all) < keep || !bytes.Equal(all[:keep], before[:keep]) {
				t.Fatalf("segments after recovery: %d batches, %d of %d bytes in batches; want %d batches, the first %d bytes kept, no stray bytes",
					len(after), total, len(all), c.wantEnd+1, keep)
			}
		})
	}
}

func TestFranzRetention(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{"log.retention.check.interval.ms": "100"})
	adm := newAdmin(t, n.Addr())
	cl := newKgo(t, n.Addr())

	startOf := func(topic string) int64 { return admStartOffset(t, adm, topic) }
	segSizes := func(topic string) (bases, sizes []int64) {
		for _, s := range segmentLogs(t, n.PartitionDir(topic, 0)) {
			fi, err := os.Stat(s)
			if err != nil {
				continue // deleted meanwhile
			}
			bases = append(bases, segmentBase(t, s))
			sizes = append(sizes, fi.Size())
		}
		return bases, sizes
	}

	t.Run("time", func(t *testing.T) {
		const topic = "retention-ms"
		createTopic(t, adm, topic, 1, map[string]*string{
			"retention.ms": strp("3000"), "internal.segment.bytes": strp("1024"), "file.delete.delay.ms": strp("0"),
		})
		id := topicID(t, adm, topic)
		vals := produceSingles(t, n.Addr(), topic, 20)
		if bases, _ := segSizes(topic); len(bases) < 3 {
			t.Fatalf("test setup: %d segments, want several", len(bases))
		}
		// Every segment expires, the active one included (Kafka rolls it):
		// the start offset reaches the end and only the new empty segment stays.
		testutil.Eventually(t, 30*time.Second, func() error {
			s := startOf(topic)
			bases, _ := segSizes(topic)
			if s != int64(len(vals)) || len(bases) != 1 || bases[0] != s {
				return fmt.Errorf("start offset %d, segments %v; want start %d and one segment at it", s, bases, len(vals))
			}
			return nil
		})
		for _, off := range []int64{0, 10, 19} {
			wantCode(t, fmt.Sprintf("fetch at %d", off), fetchRaw(t, cl, topic, id, 0, off).ErrorCode, kerr.OffsetOutOfRange)
		}
		sp := fetchRaw(t, cl, topic, id, 0, 20)
		wantCode(t, "fetch at the start", sp.ErrorCode, nil)
		if sp.LogStartOffset != 20 || len(sp.RecordBatches) != 0 {
			t.Fatalf("fetch at 20: log start %d, %d record bytes; want 20 and none", sp.LogStartOffset, len(sp.RecordBatches))
		}
		r := &kgo.Record{Topic: topic, Value: []byte("x")}
		produceAll(t, cl, r)
		if r.Offset != 20 {
			t.Fatalf("produce after retention at %d, want 20", r.Offset)
		}
	})

	// retention.ms and retention.bytes apply only under cleanup.policy
	// delete: a compact-only topic loses no segment to them (Kafka's
	// __consumer_offsets keeps a group's commits however old). A delete
	// topic with the same settings shows that retention passes ran.
	t.Run("compact only", func(t *testing.T) {
		const topic, ref = "retention-compact", "retention-compact-ref"
		for _, c := range []struct{ name, policy string }{{topic, "compact"}, {ref, "delete"}} {
			createTopic(t, adm, c.name, 1, map[string]*string{
				"cleanup.policy": strp(c.policy), "retention.ms": strp("500"), "retention.bytes": strp("100"),
				"internal.segment.bytes": strp("1024"), "file.delete.delay.ms": strp("0"),
			})
		}
		vals := produceSingles(t, n.Addr(), topic, 20)
		produceSingles(t, n.Addr(), ref, 20)
		testutil.Eventually(t, 30*time.Second, func() error {
			if s := startOf(ref); s != 20 {
				return fmt.Errorf("delete topic's start offset %d, want 20", s)
			}
			return nil
		})
		if s := startOf(topic); s != 0 {
			t.Fatalf("compact topic's start offset %d after retention passes, want 0", s)
		}
		got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, len(vals), 20*time.Second)
		for i, r := range got {
			if r.Offset != int64(i) || !bytes.Equal(r.Value, vals[i]) {
				t.Fatalf("record %d: offset %d, %d bytes; want offset %d and what was produced", i, r.Offset, len(r.Value), i)
			}
		}
	})

	t.Run("bytes", func(t *testing.T) {
		const topic, limit = "retention-bytes", 1500
		createTopic(t, adm, topic, 1, map[string]*string{
			"retention.bytes": strp(strconv.Itoa(limit)), "retention.ms": strp("-1"),
			"internal.segment.bytes": strp("1024"), "file.delete.delay.ms": strp("0"),
		})
		id := topicID(t, adm, topic)
		produceSingles(t, n.Addr(), topic, 30)
		// Kafka deletes the oldest segments while what remains is still at
		// least retention.bytes: afterwards the log holds >= limit bytes
		// and dropping its oldest segment would go below the limit.
		var start int64
		testutil.Eventually(t, 30*time.Second, func() error {
			start = startOf(topic)
			bases, sizes := segSizes(topic)
			var total int64
			for _, s := range sizes {
				total += s
			}
			switch {
			case start == 0 || len(bases) == 0:
				return fmt.Errorf("start offset %d, segments %v", start, bases)
			case bases[0] != start:
				return fmt.Errorf("start offset %d but oldest segment %d (segments %v)", start, bases[0], bases)
			case total-sizes[0] >= limit:
				return fmt.Errorf("%d bytes in segments %v %v: the oldest could go", total, bases, sizes)
			case total < limit:
				return fmt.Errorf("only %d bytes left in segments %v %v, below retention.bytes %d", total, bases, sizes, limit)
			}
			return nil
		})
		wantCode(t, "fetch at 0", fetchRaw(t, cl, topic, id, 0, 0).ErrorCode, kerr.OffsetOutOfRange)
		wantCode(t, "fetch below start", fetchRaw(t, cl, topic, id, 0, start-1).ErrorCode, kerr.OffsetOutOfRange)
		got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: start}, int(30-start), 20*time.Second)
		if got[0].Offset != start || got[len(got)-1].Offset != 29 {
			t.Fatalf("read %d..%d, want %d..29", got[0].Offset, got[len(got)-1].Offset, start)
		}
	})
}

func TestFranzSegmentRollByTime(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	const topic = "rollms"
	createTopic(t, adm, topic, 1, map[string]*string{"segment.ms": strp("300")})
	cl := newKgo(t, n.Addr())
	start := time.Now() // before the first record's timestamp
	first := &kgo.Record{Topic: topic, Value: []byte("first")}
	produceAll(t, cl, first)
	var last *kgo.Record
	// Appends keep coming; one after segment.ms lands in a new segment.
	testutil.Eventually(t, 15*time.Second, func() error {
		last = &kgo.Record{Topic: topic, Value: []byte("next")}
		produceAll(t, cl, last)
		if segs := segmentLogs(t, n.PartitionDir(topic, 0)); len(segs) < 2 {
			return fmt.Errorf("%d segments after %v", len(segs), time.Since(start))
		}
		return nil
	})
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("rolled after %v, before segment.ms 300", took)
	}
	segs := segmentLogs(t, n.PartitionDir(topic, 0))
	if b := segmentBase(t, segs[1]); b <= 0 || b > last.Offset {
		t.Fatalf("second segment base %d, want within (0, %d]", b, last.Offset)
	}
	got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, int(last.Offset+1), 20*time.Second)
	if string(got[0].Value) != "first" {
		t.Fatalf("first record %q", got[0].Value)
	}
}

func TestFranzTornTailProducerState(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	const topic = "torn-producer"
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)
	cl := newKgo(t, n.Addr())
	pid, epoch := initProducerID(t, cl)
	ts := time.Now().UnixMilli()
	batch := func(seq int32) []byte {
		return rawBatch(pid, epoch, seq, ts, bytes.Repeat([]byte{byte('a' + seq)}, 200))
	}
	for seq := int32(0); seq < 5; seq++ {
		sp := produceRaw(t, cl, topic, id, 0, batch(seq))
		wantCode(t, "produce", sp.ErrorCode, nil)
		if sp.BaseOffset != int64(seq) {
			t.Fatalf("seq %d at offset %d", seq, sp.BaseOffset)
		}
	}
	n.Stop()

	// Tear the last batch (seq 4): the producer's state must go back to
	// seq 3, although the clean shutdown wrote a snapshot at offset 5.
	segs := segmentLogs(t, n.PartitionDir(topic, 0))
	active := segs[len(segs)-1]
	data, err := os.ReadFile(active)
	if err != nil {
		t.Fatal(err)
	}
	bs := scanBatches(data)
	if len(bs) != 5 {
		t.Fatalf("test setup: %d batches", len(bs))
	}
	if err := os.Truncate(active, int64(bs[4].pos+bs[4].size/2)); err != nil {
		t.Fatal(err)
	}
	removeCleanShutdownMarkers(t, n.Dir)
	n.Restart()
	waitLed(t, n.Addr(), topic, 0)
	cl = newKgo(t, n.Addr())

	sp := produceRaw(t, cl, topic, id, 0, batch(5))
	wantCode(t, "seq 5 after losing seq 4", sp.ErrorCode, kerr.OutOfOrderSequenceNumber)
	sp = produceRaw(t, cl, topic, id, 0, batch(3))
	wantCode(t, "seq 3 again (duplicate)", sp.ErrorCode, nil)
	if sp.BaseOffset != 3 {
		t.Fatalf("duplicate seq 3 answered offset %d, want 3", sp.BaseOffset)
	}
	sp = produceRaw(t, cl, topic, id, 0, batch(4))
	wantCode(t, "seq 4 resent after the tear", sp.ErrorCode, nil)
	if sp.BaseOffset != 4 {
		t.Fatalf("resent seq 4 stored at %d, want 4 (a new append, not a duplicate)", sp.BaseOffset)
	}
	got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, 5, 20*time.Second)
	for i, r := range got {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, bytes.Repeat([]byte{byte('a' + i)}, 200)) || r.ProducerID != pid {
			t.Fatalf("record %d: offset %d producer %d", i, r.Offset, r.ProducerID)
		}
	}
}

func TestFranzCrashLikeRestart(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	adm := newAdmin(t, n.Addr())
	const topic = "crash"
	createTopic(t, adm, topic, 1, map[string]*string{"internal.segment.bytes": strp("700")})
	id := topicID(t, adm, topic)
	cl := newKgo(t, n.Addr())
	pid, epoch := initProducerID(t, cl)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UnixMilli()
	tsOf := func(i int32) int64 {
		if i == 7 {
			return base + 50_000
		}
		return base + int64(i)*1000
	}
	batch := func(seq int32) []byte {
		return rawBatch(pid, epoch, seq, tsOf(seq), bytes.Repeat([]byte{byte('a' + seq)}, 200))
	}
	for seq := int32(0); seq < 10; seq++ {
		sp := produceRaw(t, cl, topic, id, 0, batch(seq))
		wantCode(t, "produce", sp.ErrorCode, nil)
	}
	n.Stop()

	// Leave the directory as a crash would: no marker, no index files for
	// the active segment, no producer snapshots, no recovery point.
	dir := n.PartitionDir(topic, 0)
	segs := segmentLogs(t, dir)
	if len(segs) < 3 {
		t.Fatalf("test setup: %d segments, want several", len(segs))
	}
	removeCleanShutdownMarkers(t, n.Dir)
	active := strings.TrimSuffix(segs[len(segs)-1], ".log")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, ".snapshot") || name == "recovery-point" || p == active+".index" || p == active+".timeindex" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	n.Restart()
	waitLed(t, n.Addr(), topic, 0)
	cl = newKgo(t, n.Addr())

	for _, c := range []struct {
		ts, off, rts int64
	}{
		{-1, 10, -1},
		{-2, 0, -1},
		{-3, 7, base + 50_000},
		{base + 3500, 4, base + 4000},
		{base + 7500, 7, base + 50_000},
		{base + 8000, 7, base + 50_000},
		{base + 50_001, -1, -1},
	} {
		sp := listOffsetRaw(t, cl, topic, 0, c.ts)
		wantCode(t, "ListOffsets", sp.ErrorCode, nil)
		if sp.Offset != c.off || sp.Timestamp != c.rts {
			t.Errorf("ListOffsets ts %d after a crash-like restart: offset %d timestamp %d, want %d %d", c.ts, sp.Offset, sp.Timestamp, c.off, c.rts)
		}
	}
	sp := produceRaw(t, cl, topic, id, 0, batch(9))
	wantCode(t, "seq 9 again (duplicate)", sp.ErrorCode, nil)
	if sp.BaseOffset != 9 {
		t.Fatalf("duplicate seq 9 answered offset %d, want 9", sp.BaseOffset)
	}
	wantCode(t, "seq 12 (gap)", produceRaw(t, cl, topic, id, 0, batch(12)).ErrorCode, kerr.OutOfOrderSequenceNumber)
	sp = produceRaw(t, cl, topic, id, 0, batch(10))
	wantCode(t, "seq 10", sp.ErrorCode, nil)
	if sp.BaseOffset != 10 {
		t.Fatalf("seq 10 stored at %d, want 10", sp.BaseOffset)
	}
	got := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, 11, 20*time.Second)
	for i, r := range got {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, bytes.Repeat([]byte{byte('a' + i)}, 200)) || r.Timestamp.UnixMilli() != tsOf(int32(i)) {
			t.Fatalf("record %d: offset %d timestamp %d", i, r.Offset, r.Timestamp.UnixMilli())
		}
	}
}
