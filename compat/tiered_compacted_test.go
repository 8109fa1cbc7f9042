package compat

// Compacted topics in tiered storage (issue 26), which Kafka 4.4 refuses:
// the leader compacts the remote segments too, so a reader from offset 0
// of a tiered compacted topic reads what it reads from the same records
// in a compacted topic that is not tiered.

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/s3test"
	"github.com/samsa-io/samsa/internal/testutil"
)

// compactedRecord is a record as a reader from offset 0 sees it: its
// offset, key and value ("NULL": a tombstone).
type compactedRecord struct {
	Offset int64
	Key    string
	Value  string
}

// compactedValue is the value of the i-th record of the test: key
// k<i%10>, 400 bytes naming i; those of k5 from 170 on are tombstones.
func compactedValue(i int) (string, []byte) {
	key := fmt.Sprintf("k%d", i%10)
	if i%10 == 5 && i >= 170 {
		return key, nil
	}
	return key, fmt.Appendf(nil, "%06d-%s", i, strings.Repeat("c", 393))
}

// consumeCompacted reads partition 0 of topic from offset 0 up to offset
// last with kgo, in small fetches.
func consumeCompacted(t *testing.T, c cluster, topic string, last int64) []compactedRecord {
	t.Helper()
	cl := newClusterKgo(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchMaxBytes(3000))
	ctx := testCtx(t, 60*time.Second)
	var out []compactedRecord
	for len(out) == 0 || out[len(out)-1].Offset < last {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("%s: poll after %d records: %v", topic, len(out), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if r.Value == nil {
				v = "NULL"
			}
			out = append(out, compactedRecord{r.Offset, string(r.Key), v})
		})
	}
	return out
}

// consumeCompactedLibrdkafka reads partition 0 of topic from offset 0 up
// to offset last with confluent-kafka (librdkafka).
func consumeCompactedLibrdkafka(t *testing.T, addr, topic string, last int64) []compactedRecord {
	t.Helper()
	const script = `
import json, sys
from confluent_kafka import Consumer, TopicPartition
addr, topic, last = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = Consumer({"bootstrap.servers": addr, "group.id": "tiered-compacted", "enable.auto.commit": False})
c.assign([TopicPartition(topic, 0, 0)])
out = []
while not out or out[-1][0] < last:
    m = c.poll(30)
    if m is None:
        sys.exit("no record after %d" % len(out))
    if m.error():
        sys.exit(str(m.error()))
    v = m.value()
    out.append([m.offset(), m.key().decode(), "NULL" if v is None else v.decode()])
c.close()
json.dump(out, sys.stdout)
`
	ctx := testCtx(t, 60*time.Second)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, venvPython(t, root), "-c", script, addr, topic, fmt.Sprint(last))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("confluent-kafka: %v: %s", err, stderr.String())
	}
	var rows [][3]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("confluent-kafka printed %.200q: %v", out, err)
	}
	recs := make([]compactedRecord, len(rows))
	for i, r := range rows {
		recs[i] = compactedRecord{int64(r[0].(float64)), r[1].(string), r[2].(string)}
	}
	return recs
}

// TestTieredCompactedTopic: a compacted tiered topic (local.retention.bytes
// 0: the broker keeps only what is not copied yet) and a compacted topic
// that is not tiered get the same records, ten keys updated 20 times
// each; once the cleaners ran, kgo and confluent-kafka read the same
// records from offset 0 of both, each the one produced at its offset,
// every key's latest among them, the remote log a fraction of what was
// copied; after the leader is killed, the new leader serves the same.
func TestTieredCompactedTopic(t *testing.T) {
	t.Parallel()
	st := s3test.Start(t, "tiered")
	props := tieredBrokerProps(st)
	props["log.cleaner.backoff.ms"] = "100"
	c := testutil.StartCluster(t, 3, props)
	const tieredTopic, plainTopic, total = "tiered-compacted", "plain-compacted", 200
	compacted := []string{"cleanup.policy", "compact", "min.cleanable.dirty.ratio", "0.01"}
	createReplicatedTopic(t, c, tieredTopic, 1, 3, tieredTopicConfigs(append(compacted, "local.retention.bytes", "0")...))
	plain := map[string]*string{"internal.segment.bytes": strp("4096")}
	for i := 0; i < len(compacted); i += 2 {
		plain[compacted[i]] = strp(compacted[i+1])
	}
	createReplicatedTopic(t, c, plainTopic, 1, 3, plain)

	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	ctx := testCtx(t, 60*time.Second)
	for i := range total {
		key, value := compactedValue(i)
		for _, topic := range []string{tieredTopic, plainTopic} {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: value}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}
	copiedBytes := int64(0)
	for _, m := range waitCopied(t, st, 150) {
		copiedBytes = max(copiedBytes, m.EndOffset*400) // at least 400 bytes a record
	}

	// Once both cleaners ran over every sealed segment, the two topics
	// read the same.
	var want []compactedRecord
	testutil.Eventually(t, 60*time.Second, func() error {
		want = consumeCompacted(t, c, plainTopic, total-1)
		got := consumeCompacted(t, c, tieredTopic, total-1)
		if !slices.Equal(got, want) {
			return fmt.Errorf("tiered topic: %d records, plain: %d", len(got), len(want))
		}
		if remote := bucketBytes(t, st, ".log"); remote*4 > copiedBytes {
			return fmt.Errorf("%d bytes of remote records for %d copied", remote, copiedBytes)
		}
		return nil
	})
	checkCompactedRead(t, want, total)
	if got := consumeCompactedLibrdkafka(t, c.Node(1).Addr(), tieredTopic, total-1); !slices.Equal(got, want) {
		t.Errorf("confluent-kafka read %d records:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
	}

	old := waitLeader(t, c, tieredTopic, 0, -1, 30*time.Second).Leader
	c.Node(old).Kill()
	waitLeader(t, c, tieredTopic, 0, old, 60*time.Second)
	if got := consumeCompacted(t, c, tieredTopic, total-1); !slices.Equal(got, want) {
		t.Errorf("after the leader change: %d records, want %d", len(got), len(want))
	}
}

// checkCompactedRead fails unless every record read is the one produced
// at its offset, every key's latest record is among them, and fewer than
// half of the records produced are.
func checkCompactedRead(t *testing.T, recs []compactedRecord, total int) {
	t.Helper()
	latest := map[string]int64{}
	for i := range total {
		key, _ := compactedValue(i)
		latest[key] = int64(i)
	}
	for _, r := range recs {
		key, value := compactedValue(int(r.Offset))
		if r.Key != key || value == nil && r.Value != "NULL" || value != nil && r.Value != string(value) {
			t.Fatalf("record at %d: key %s, value %.10q", r.Offset, r.Key, r.Value)
		}
	}
	for key, off := range latest {
		if !slices.ContainsFunc(recs, func(r compactedRecord) bool { return r.Offset == off }) {
			t.Errorf("the latest record of %s, at %d, is missing", key, off)
		}
	}
	if len(recs) >= total/2 {
		t.Errorf("%d of %d records read: nothing compacted", len(recs), total)
	}
}
