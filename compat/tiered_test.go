package compat

// Tiered storage (KIP-405, issue 26) end to end: brokers with
// remote.log.storage.system.enable, a real versitygw as the bucket
// (internal/s3test), real clients. The bucket's manifests are the
// completeness check of what the leaders copied.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/s3test"
	"github.com/samsa-io/samsa/internal/testutil"
)

// tieredRLM has the remote log manager of tiered brokers run every 100 ms,
// and their retention check (which may roll an active segment past local
// retention) too.
var tieredRLM = []string{"remote.log.manager.task.interval.ms", "100", "log.retention.check.interval.ms", "100"}

// tieredBrokerProps are server.properties of brokers tiering to st with
// Aiven's plugin's names, their remote log manager running every 100 ms.
func tieredBrokerProps(st *s3test.Store) map[string]string { return st.TieredProps(tieredRLM...) }

// tieredTopicConfigs: remote storage on, 4 KiB segments.
func tieredTopicConfigs(extra ...string) map[string]*string {
	c := map[string]*string{"remote.storage.enable": strp("true"), "internal.segment.bytes": strp("4096")}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i]] = strp(extra[i+1])
	}
	return c
}

// remoteManifest is what a segment's manifest object records.
type remoteManifest struct {
	ID          string `json:"id"`
	StartOffset int64  `json:"start_offset"`
	EndOffset   int64  `json:"end_offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
}

// bucketKeys lists the keys of the objects in st's bucket.
func bucketKeys(ctx context.Context, st *s3test.Store) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(st.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(st.Bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// bucketObject reads the object at key in st's bucket.
func bucketObject(ctx context.Context, st *s3test.Store, key string) ([]byte, error) {
	out, err := st.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// bucketObjects reads the objects in st's bucket whose keys end in
// suffix.
func bucketObjects(ctx context.Context, st *s3test.Store, suffix string) ([][]byte, error) {
	keys, err := bucketKeys(ctx, st)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, k := range keys {
		if !strings.HasSuffix(k, suffix) {
			continue
		}
		b, err := bucketObject(ctx, st, k)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// bucketManifests reads every manifest in the bucket and reports the
// objects no manifest names (a copy under way, or an orphan), in offset
// order.
func bucketManifests(ctx context.Context, st *s3test.Store) ([]remoteManifest, []string, error) {
	keys, err := bucketKeys(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	var ms []remoteManifest
	for _, k := range keys {
		if !strings.HasSuffix(k, ".manifest") {
			continue
		}
		b, err := bucketObject(ctx, st, k)
		if err != nil {
			return nil, nil, err
		}
		var m remoteManifest
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", k, err)
		}
		ms = append(ms, m)
	}
	var unnamed []string
	for _, k := range keys {
		if !slices.ContainsFunc(ms, func(m remoteManifest) bool { return strings.Contains(k, "-"+m.ID+".") }) {
			unnamed = append(unnamed, k)
		}
	}
	slices.SortFunc(ms, func(a, b remoteManifest) int { return int(a.StartOffset - b.StartOffset) })
	return ms, unnamed, nil
}

// waitCopied polls the bucket until its segments serve every offset from
// 0 to at least upTo exactly once, with no object outside a segment, and
// returns the manifests.
func waitCopied(t *testing.T, st *s3test.Store, upTo int64) []remoteManifest {
	t.Helper()
	var ms []remoteManifest
	testutil.Eventually(t, 60*time.Second, func() error {
		var unnamed []string
		var err error
		if ms, unnamed, err = bucketManifests(context.Background(), st); err != nil {
			return err
		}
		at := int64(0)
		for _, m := range ms {
			if m.StartOffset != at {
				return fmt.Errorf("segment %+v after offset %d: a gap or an overlap", m, at)
			}
			at = m.EndOffset
		}
		if at < upTo {
			return fmt.Errorf("copied up to %d, want %d", at, upTo)
		}
		if len(unnamed) > 0 {
			return fmt.Errorf("objects of no segment: %v", unnamed)
		}
		return nil
	})
	return ms
}

// produceValues produces n records of 400 bytes to partition 0 of topic,
// values numbered from first, acks=all, one batch each (compressed by
// kgo's default, 103 bytes: 4 KiB segments roll every 39 records).
func produceValues(t *testing.T, cl *kgo.Client, topic string, first, n int) {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	for i := range n {
		r := &kgo.Record{Topic: topic, Value: tieredValue(first + i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// tieredValue is the value of the i-th record produceValues writes.
func tieredValue(i int) []byte { return fmt.Appendf(nil, "%06d-%s", i, strings.Repeat("v", 393)) }

// TestTieredUploadLeaderChange: the leader of a tiered partition copies
// its rolled segments to the bucket; after it is killed, the new leader
// continues from the remote log metadata, and the bucket's segments serve
// every offset once, with no object left that no segment names.
func TestTieredUploadLeaderChange(t *testing.T) {
	t.Parallel()
	st := s3test.Start(t, "tiered")
	c := testutil.StartCluster(t, 3, tieredBrokerProps(st))
	topic := "tiered-leader-change"
	createReplicatedTopic(t, c, topic, 1, 3, tieredTopicConfigs())
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	produceValues(t, cl, topic, 0, 100)
	first := waitCopied(t, st, 60)
	for _, m := range first {
		if m.LeaderEpoch != 0 {
			t.Errorf("segment %+v copied in epoch %d before any leader change", m, m.LeaderEpoch)
		}
	}

	old := waitLeader(t, c, topic, 0, -1, 30*time.Second).Leader
	c.Node(old).Kill()
	waitLeader(t, c, topic, 0, old, 60*time.Second)
	produceValues(t, cl, topic, 100, 100)
	ms := waitCopied(t, st, 160)
	if len(ms) <= len(first) || ms[len(ms)-1].LeaderEpoch == 0 {
		t.Errorf("after the leader change: %+v", ms)
	}
}

// consumeTieredValues polls consumer, reading partition 0 from offset 0,
// until it has read the n records produceValues wrote, each at its offset.
func consumeTieredValues(t *testing.T, consumer *kgo.Client, n int) {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	for next := 0; next < n; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll at %d: %v", next, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(next) || !bytes.Equal(r.Value, tieredValue(next)) {
				t.Fatalf("record at %d: offset %d, value %.10q", next, r.Offset, r.Value)
			}
			next++
		})
	}
}

// tieredBrokerWith starts versitygw and a broker tiering to it, with
// topic (one partition, 4 KiB segments) keeping locally only what is not
// copied yet (local.retention.bytes=0), and /metrics served.
func tieredBrokerWith(t *testing.T, topic string) (*testutil.Node, *s3test.Store) {
	t.Helper()
	st := s3test.Start(t, "tiered")
	props := tieredBrokerProps(st)
	props["samsa.http.listener"] = "127.0.0.1:0"
	n := admBroker(t, props)
	createTopic(t, newAdmin(t, n.Addr()), topic, 1, tieredTopicConfigs("local.retention.bytes", "0"))
	return n, st
}

// waitLocalStart polls until the leader's local log of partition 0 of
// topic starts at or above offset (tiered storage deleted the rest).
func waitLocalStart(t *testing.T, cl *kgo.Client, topic string, offset int64) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() error {
		if local := listOffsetsAt(t, cl, topic, -4)[-4][0]; local < offset {
			return fmt.Errorf("the local log starts at %d", local)
		}
		return nil
	})
}

// listOffsetsAt asks for partition 0 of topic at each of the special
// timestamps, and returns the offset and leader epoch answered, by
// timestamp.
func listOffsetsAt(t *testing.T, cl *kgo.Client, topic string, timestamps ...int64) map[int64][2]int64 {
	t.Helper()
	out := map[int64][2]int64{}
	for _, ts := range timestamps {
		sp := listOffsetRaw(t, cl, topic, 0, ts)
		if sp.ErrorCode != 0 {
			t.Fatalf("ListOffsets %d: error %d", ts, sp.ErrorCode)
		}
		out[ts] = [2]int64{sp.Offset, int64(sp.LeaderEpoch)}
	}
	return out
}

// TestTieredConsumeFromRemote: with local.retention.bytes=0 the broker
// keeps only what is not copied yet; ListOffsets answers earliest,
// earliest-local, latest-tiered and earliest-pending-upload as Kafka
// 4.4's UnifiedLog does, and by timestamp from the remote log first; a kgo consumer and Kafka's console consumer
// read every record from offset 0, the old ones from the bucket.
func TestTieredConsumeFromRemote(t *testing.T) {
	t.Parallel()
	topic := "tiered-consume"
	n, _ := tieredBrokerWith(t, topic)
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	const total = 120
	produceValues(t, cl, topic, 0, total)
	// Everything goes remote, the active segment rolled once the others
	// are copied (Kafka 4.4's local retention does so).
	waitLocalStart(t, cl, topic, total)
	offs := listOffsetsAt(t, cl, topic, -2, -4, -5, -6, 0)
	if offs[-2] != [2]int64{0, 0} || offs[-4] != [2]int64{total, 0} || offs[-5] != [2]int64{total - 1, 0} || offs[-6] != [2]int64{-1, -1} {
		t.Errorf("ListOffsets earliest, earliest-local, latest-tiered, pending-upload: %v", offs)
	}
	// By timestamp: the first record, in the bucket.
	if offs[0] != [2]int64{0, 0} {
		t.Errorf("ListOffsets at timestamp 0: offset and epoch %v, want 0, 0", offs[0])
	}

	consumer := newKgo(t, n.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchMaxBytes(3000))
	consumeTieredValues(t, consumer, total)

	ctx := testCtx(t, 60*time.Second)
	out, err := kafkaToolIn(t, ctx, n.Addr(), t.TempDir())("", "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--topic", topic, "--from-beginning", "--max-messages", strconv.Itoa(total), "--timeout-ms", "60000")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 50, total - 1} {
		if !strings.Contains(out, string(tieredValue(i))+"\n") {
			t.Errorf("the console consumer did not print record %d", i)
		}
	}

	// /metrics: KIP-405's copy and fetch counters, the remote log's size.
	body := []byte(scrapeText(n.Broker.HTTPAddr()))
	for _, name := range []string{"remotecopybytes_total", "remotecopyrequests_total", "remotefetchbytes_total",
		"remotefetchrequests_total", "remotelogsizebytes", "remotelogmetadatacount"} {
		line := regexp.MustCompile(`(?m)^kafka_server_brokertopicmetrics_` + name + `\{topic="` + topic + `"\} ([0-9.e+]+)$`).FindSubmatch(body)
		if line == nil || string(line[1]) == "0" {
			t.Errorf("/metrics: %s of %s missing or 0 (%q)", name, topic, line)
		}
	}
}

// TestTieredFollowerRebuild: a follower that was down while the leader
// moved its old segments to the bucket gets OFFSET_MOVED_TO_TIERED_STORAGE
// when it comes back, restarts its log above the remote copy with the
// leader epochs and log start from it (as Kafka's followers with
// follower.fetch.last.tiered.offset.enable), rejoins the ISR, and, made
// leader, serves every record from offset 0. Its /metrics counts the
// rebuild as Kafka's BuildRemoteLogAuxStateRequestsPerSec.
func TestTieredFollowerRebuild(t *testing.T) {
	t.Parallel()
	st := s3test.Start(t, "tiered")
	props := tieredBrokerProps(st)
	props["samsa.http.listener"] = "127.0.0.1:0"
	c := testutil.StartCluster(t, 2, props)
	topic := "tiered-follower"
	createReplicatedTopic(t, c, topic, 1, 2, tieredTopicConfigs("local.retention.bytes", "0"))
	leader := waitLeader(t, c, topic, 0, -1, 30*time.Second).Leader
	follower := 3 - leader
	c.Node(follower).Kill()
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	const total = 100
	produceValues(t, cl, topic, 0, total)
	waitLocalStart(t, cl, topic, 50)

	c.Node(follower).Restart()
	waitISR(t, c, topic, 0, 2, 60*time.Second)
	// Kafka's BuildRemoteLogAuxStateRequestsPerSec, on the follower.
	body := scrapeText(c.Node(follower).Broker.HTTPAddr())
	if !regexp.MustCompile(`(?m)^kafka_server_brokertopicmetrics_buildremotelogauxstaterequests_total\{topic="`+topic+`"\} [1-9]`).MatchString(body) ||
		!strings.Contains(body, `kafka_server_brokertopicmetrics_buildremotelogauxstateerrors_total{topic="`+topic+`"} 0`+"\n") {
		t.Errorf("the rebuilt follower's /metrics count no rebuild, or a failed one")
	}
	c.Node(leader).Kill()
	waitLeader(t, c, topic, 0, leader, 60*time.Second)
	offs := listOffsetsAt(t, newKgo(t, c.Node(follower).Addr()), topic, -2, -4)
	if offs[-2] != [2]int64{0, 0} || offs[-4][0] < 50 {
		t.Errorf("the rebuilt follower, now leader: earliest %v, earliest local %v", offs[-2], offs[-4])
	}
	consumer := newClusterKgo(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	consumeTieredValues(t, consumer, total)
}

// TestTieredReadCommittedFromRemote: transactions committed and aborted
// in turn, copied to the bucket and deleted locally; a read_committed
// consumer from offset 0 reads every committed record and no aborted one
// (the aborted transactions come from the remote transaction indexes).
func TestTieredReadCommittedFromRemote(t *testing.T) {
	t.Parallel()
	topic := "tiered-read-committed"
	n, _ := tieredBrokerWith(t, topic)
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.TransactionalID("tiered-txn"), kgo.TransactionTimeout(60*time.Second))
	ctx := testCtx(t, 120*time.Second)
	var committed []int
	for txn := range 12 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		abort := txn%3 == 1
		for i := range 4 {
			v := txn*4 + i
			r := &kgo.Record{Topic: topic, Value: tieredValue(v)}
			if abort {
				r.Value = append([]byte("aborted-"), r.Value...)
			}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if !abort {
				committed = append(committed, v)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(!abort)); err != nil {
			t.Fatal(err)
		}
	}
	waitLocalStart(t, newKgo(t, n.Addr()), topic, 40)
	consumer := newKgo(t, n.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []int
	for len(got) < len(committed) {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll after %d records: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v, err := strconv.Atoi(string(r.Value[:6]))
			if err != nil || !bytes.Equal(r.Value, tieredValue(v)) {
				t.Fatalf("read %.20q at %d", r.Value, r.Offset)
			}
			got = append(got, v)
		})
	}
	if !slices.Equal(got, committed) {
		t.Fatalf("read committed %v, want %v", got, committed)
	}
}

// TestTieredStoreDown: the object store answers 503 SlowDown, then
// hangs, then heals. Meanwhile produce goes on, nothing copied is lost and
// nothing uncopied is deleted locally, a fetch of remote offsets answers
// within remote.fetch.max.wait.ms without wrong records; once healed the
// copy resumes where it stood, leaves no orphan object, and a consumer
// from offset 0 reads every record.
func TestTieredStoreDown(t *testing.T) {
	t.Parallel()
	st := s3test.Start(t, "tiered")
	fault := st.Faulty(t)
	n := admBroker(t, fault.TieredProps(tieredRLM...))
	topic := "tiered-store-down"
	createTopic(t, newAdmin(t, n.Addr()), topic, 1, tieredTopicConfigs("local.retention.bytes", "0"))
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	produceValues(t, cl, topic, 0, 50)
	waitLocalStart(t, cl, topic, 50) // all copied, no copy under way

	fault.Set(s3test.SlowDown)
	copied := listOffsetsAt(t, cl, topic, -5)[-5][0] + 1
	produceValues(t, cl, topic, 50, 50)
	testutil.Eventually(t, 60*time.Second, func() error {
		if r := fault.Refused(); r < 3 {
			return fmt.Errorf("%d requests refused", r)
		}
		return nil
	})
	// Nothing uncopied went: the records after the copy are all local.
	if local := listOffsetsAt(t, cl, topic, -4)[-4][0]; local > copied {
		t.Fatalf("local log starts at %d, above the copy's end %d, with the store down", local, copied)
	}
	id := topicID(t, newAdmin(t, n.Addr()), topic)
	for _, mode := range []s3test.FaultMode{s3test.SlowDown, s3test.Hang} {
		fault.Set(mode)
		start := time.Now()
		rp := fetchRawWait(t, cl, topic, id, 0, 0, 100, 1)
		if rp.ErrorCode != 0 && rp.ErrorCode != kerr.UnknownServerError.Code || rp.ErrorCode == 0 && len(rp.RecordBatches) > 0 && !bytes.Contains(rp.RecordBatches, tieredValue(0)) {
			t.Errorf("fetch of a remote offset with the store in mode %d: error %d, %d bytes", mode, rp.ErrorCode, len(rp.RecordBatches))
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("fetch of a remote offset with the store in mode %d took %v", mode, took)
		}
	}

	fault.Set(s3test.Pass)
	waitLocalStart(t, cl, topic, 70)
	ms := waitCopied(t, st, 70)
	if ms[0].StartOffset != 0 {
		t.Errorf("remote segments start at %d", ms[0].StartOffset)
	}
	consumer := newKgo(t, n.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	consumeTieredValues(t, consumer, 100)
}

// TestTieredDeleteTopic: deleting a tiered topic deletes its objects from
// the bucket.
func TestTieredDeleteTopic(t *testing.T) {
	t.Parallel()
	topic := "tiered-delete"
	n, st := tieredBrokerWith(t, topic)
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	produceValues(t, cl, topic, 0, 100)
	waitCopied(t, st, 30)
	if _, err := newAdmin(t, n.Addr()).DeleteTopics(testCtx(t, 30*time.Second), topic); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		ms, unnamed, err := bucketManifests(context.Background(), st)
		if err != nil {
			return err
		}
		if len(ms)+len(unnamed) > 0 {
			return fmt.Errorf("%d segments and %d other objects left", len(ms), len(unnamed))
		}
		return nil
	})
}
