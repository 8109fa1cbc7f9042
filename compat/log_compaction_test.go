package compat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/groups"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestFranzCompaction: on a cleanup.policy=compact topic the cleaner keeps
// each key's latest record at the offset it was written at, drops a key
// whose latest record is a tombstone once delete.retention.ms has passed,
// and leaves what a consumer reads from the start ordered and byte-exact,
// in batches of every codec, across a restart.
func TestFranzCompaction(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{"log.cleaner.backoff.ms": "50"})
	adm := newAdmin(t, n.Addr())
	const topic = "compacted"
	createTopic(t, adm, topic, 1, map[string]*string{
		"cleanup.policy": strp("compact"), "internal.segment.bytes": strp("2048"),
		"min.cleanable.dirty.ratio": strp("0.01"), "delete.retention.ms": strp("0"),
	})

	type rec struct {
		key   string
		value []byte
	}
	wrote := map[int64]rec{}
	produce := func(cl *kgo.Client, key string, value []byte) {
		t.Helper()
		r := &kgo.Record{Topic: topic, Key: []byte(key), Value: value}
		produceAll(t, cl, r)
		wrote[r.Offset] = rec{key, value}
	}
	// Ten keys written ten times each, by clients of every codec, then a
	// tombstone for key-3; then 60 records of unique keys (about 7 KiB, so
	// the rest rolls into sealed segments the cleaner may take: the active
	// segment, never cleaned, holds only fillers).
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	var cls []*kgo.Client
	for _, c := range codecs {
		cls = append(cls, newKgo(t, n.Addr(), kgo.ProducerBatchCompression(c)))
	}
	for round := 0; round < 10; round++ {
		for k := 0; k < 10; k++ {
			produce(cls[(round+k)%len(cls)], "key-"+strconv.Itoa(k), bytes.Repeat([]byte(fmt.Sprintf("r%dk%d-", round, k)), 10))
		}
	}
	produce(cls[0], "key-3", nil)
	for i := 0; i < 60; i++ {
		produce(cls[i%len(cls)], "filler-"+strconv.Itoa(i), bytes.Repeat([]byte("f"), 40))
	}

	// What a reader of the whole log must find once the cleaner ran: every
	// key's last record, except key-3, and all the fillers.
	latest := map[string]int64{}
	for off, r := range wrote {
		if o, ok := latest[r.key]; !ok || off > o {
			latest[r.key] = off
		}
	}
	want := map[int64]rec{}
	for key, off := range latest {
		if key != "key-3" {
			want[off] = wrote[off]
		}
	}
	readAll := func() (map[int64]rec, error) {
		cl := newKgo(t, n.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		defer cl.Close()
		end := int64(len(wrote))
		got := map[int64]rec{}
		last := int64(-1)
		ctx := testCtx(t, 20*time.Second)
		for last < end-1 {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("read up to offset %d of %d: %w", last, end, err)
			}
			if err := fs.Err(); err != nil {
				return nil, err
			}
			for _, r := range fs.Records() {
				if r.Offset <= last {
					return nil, fmt.Errorf("offset %d after %d", r.Offset, last)
				}
				last = r.Offset
				got[r.Offset] = rec{string(r.Key), r.Value}
			}
		}
		return got, nil
	}
	check := func(got map[int64]rec) error {
		for off, r := range got {
			w, ok := wrote[off]
			if !ok || w.key != r.key || !bytes.Equal(w.value, r.value) || (w.value == nil) != (r.value == nil) {
				return fmt.Errorf("offset %d holds %q=%q, but %q=%q was written there", off, r.key, r.value, w.key, w.value)
			}
		}
		for off, w := range want {
			if _, ok := got[off]; !ok {
				return fmt.Errorf("the latest record of %s (offset %d) is missing", w.key, off)
			}
		}
		if len(got) != len(want) {
			return fmt.Errorf("read %d records, want %d (each key's latest, key-3 deleted)", len(got), len(want))
		}
		return nil
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		got, err := readAll()
		if err != nil {
			return err
		}
		return check(got)
	})

	n.Restart()
	got, err := readAll()
	if err != nil {
		t.Fatal(err)
	}
	if err := check(got); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
}

// TestGroupOffsetsCompacted: __consumer_offsets is compacted like any
// compact topic; a group's offsets, committed many times over, shrink to
// about one record per partition, and a broker restart (the coordinator
// replays the compacted log) still returns the last commit. Its segments
// are made small as Kafka's tests make them: internal.segment.bytes, set
// on the topic once the first commit has created it
// (offsets.topic.segment.bytes, like segment.bytes, is at least 1 MiB).
func TestGroupOffsetsCompacted(t *testing.T) {
	n := grpBroker(t, "log.cleaner.backoff.ms", "50", "offsets.topic.num.partitions", "4")
	adm, cl := admAdmin(t, n.Addr())
	const topic, group = "committed", "compacted-group"
	createTopic(t, adm, topic, 2, nil)
	var last kadm.Offsets
	for i := 0; i < 300; i++ {
		if i == 1 {
			alterConfig(t, cl, kmsg.ConfigResourceTypeTopic, "__consumer_offsets", "internal.segment.bytes", "4096")
		}
		last = kadm.Offsets{}
		last.Add(kadm.Offset{Topic: topic, Partition: 0, At: int64(i), LeaderEpoch: -1, Metadata: "m" + strconv.Itoa(i)})
		last.Add(kadm.Offset{Topic: topic, Partition: 1, At: int64(2 * i), LeaderEpoch: -1})
		resps, err := adm.CommitOffsets(testCtx(t, 20*time.Second), group, last)
		if err != nil || resps.Error() != nil {
			t.Fatalf("commit %d: %v %v", i, err, resps.Error())
		}
	}
	dir := n.PartitionDir("__consumer_offsets", int(groups.PartitionFor(group, 4)))
	size := func() (total int64, segs int) {
		for _, s := range segmentLogs(t, dir) {
			if fi, err := os.Stat(s); err == nil {
				total += fi.Size()
				segs++
			}
		}
		return total, segs
	}
	written, segs := size()
	if segs < 4 {
		t.Fatalf("test setup: %d segments of __consumer_offsets", segs)
	}
	// 300 commits of two partitions take some 60 KiB; compacted, every
	// sealed segment keeps a record or two.
	testutil.Eventually(t, 30*time.Second, func() error {
		if now, segs := size(); now > int64(segs)*400+4096 {
			return fmt.Errorf("__consumer_offsets partition holds %d bytes in %d segments (%d written)", now, segs, written)
		}
		return nil
	})

	n.Restart()
	adm = newAdmin(t, n.Addr())
	testutil.Eventually(t, 30*time.Second, func() error {
		fetched, err := adm.FetchOffsets(testCtx(t, 10*time.Second), group)
		if err != nil {
			return err
		}
		if err := fetched.Error(); err != nil {
			return err
		}
		for p, want := range map[int32]kadm.Offset{0: last[topic][0], 1: last[topic][1]} {
			got, ok := fetched.Lookup(topic, p)
			if !ok || got.At != want.At || got.Metadata != want.Metadata {
				return fmt.Errorf("partition %d: committed %+v, want offset %d metadata %q", p, got.Offset, want.At, want.Metadata)
			}
		}
		return nil
	})
}
