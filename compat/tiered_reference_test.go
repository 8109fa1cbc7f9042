package compat

// Tiered storage (KIP-405, issue 26) against Apache Kafka 4.4 with tiered
// storage on: its own LocalTieredStorage as the RemoteStorageManager
// (kafka-storage's test jar, kafkaref.TieredLibs) and its default
// TopicBasedRemoteLogMetadataManager. Both brokers get the same topic
// configs, the same records and the same requests.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/s3test"
	"github.com/samsa-io/samsa/internal/testutil"
	"github.com/samsa-io/samsa/logstore"
)

// startTieredKafkaRef starts Apache Kafka with remote storage on, its
// remote log in a LocalTieredStorage under the directory it returns, and
// its log retention (which deletes what is copied) checked every 100 ms
// from the start.
func startTieredKafkaRef(t *testing.T) (*kafkaref.Broker, string) {
	t.Helper()
	dir := t.TempDir()
	props := kafkaref.TieredProps(dir)
	maps.Copy(props, map[string]string{"log.retention.check.interval.ms": "100", "log.initial.task.delay.ms": "0"})
	kb, _ := startKafkaRefWith(t, props, kafkaref.TieredLibs)
	return kb, dir
}

// heldRange is what one remote segment's records hold: the offsets from
// First to Last, in Batches batches.
type heldRange struct {
	First, Last int64
	Batches     int
}

// heldRanges reads the record batches of each remote segment's .log in
// logs, in offset order.
func heldRanges(logs [][]byte) ([]heldRange, error) {
	var out []heldRange
	for _, b := range logs {
		bs, err := logstore.SplitBatches(b)
		if err != nil || len(bs) == 0 {
			return nil, fmt.Errorf("a remote segment of %d bytes: %d batches, %v", len(b), len(bs), err)
		}
		first, err := logstore.ParseBatchHeader(bs[0])
		if err != nil {
			return nil, err
		}
		last, err := logstore.ParseBatchHeader(bs[len(bs)-1])
		if err != nil {
			return nil, err
		}
		out = append(out, heldRange{First: first.BaseOffset, Last: last.LastOffset(), Batches: len(bs)})
	}
	slices.SortFunc(out, func(a, b heldRange) int { return cmp.Compare(a.First, b.First) })
	return out, nil
}

// localTieredLogs reads the .log files of partition 0 of topic from
// LocalTieredStorage under dir (kafka-tiered-storage/<topic>-0-<id>/).
func localTieredLogs(dir, topic string) ([][]byte, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "kafka-tiered-storage", topic+"-0-*", "*.log"))
	if err != nil {
		return nil, err
	}
	var logs [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		logs = append(logs, b)
	}
	return logs, nil
}

// tieredRefRecords is how many records the reference scenario produces;
// record tieredRefMaxAt has the largest timestamp (in a remote segment),
// the others tieredRefStep ms apart from the base.
const (
	tieredRefRecords = 120
	tieredRefMaxAt   = 50
	tieredRefStep    = 10
)

// produceTimed produces tieredRefRecords records of tieredValue to
// partition 0 of topic, one batch each, with timestamps from base.
func produceTimed(t *testing.T, cl *kgo.Client, topic string, base int64) {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	for i := range tieredRefRecords {
		ts := base + int64(i)*tieredRefStep
		if i == tieredRefMaxAt {
			ts = base + time.Hour.Milliseconds()
		}
		r := &kgo.Record{Topic: topic, Value: tieredValue(i), Timestamp: time.UnixMilli(ts)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// listOffsetsAnswers asks partition 0 of topic at each timestamp and
// records each whole answer: error, offset, leader epoch, timestamp.
func listOffsetsAnswers(t *testing.T, cl *kgo.Client, topic string, timestamps map[string]int64) map[string]string {
	t.Helper()
	out := map[string]string{}
	for what, ts := range timestamps {
		sp := listOffsetRaw(t, cl, topic, 0, ts)
		out[what] = fmt.Sprintf("error %d offset %d epoch %d timestamp %d", sp.ErrorCode, sp.Offset, sp.LeaderEpoch, sp.Timestamp)
	}
	return out
}

// TestTieredKafkaReference: samsa (tiering to versitygw) and Apache Kafka
// 4.4 (tiering to LocalTieredStorage) answer tiered storage's topic
// configs alike but for compacted topics, which samsa tiers and Kafka
// refuses. The same records go to a tiered topic of 4 KiB segments, kept
// locally until local.retention.bytes is set to 0; then both copy and
// delete locally every segment, rolling the active one too, and their
// remote segments hold the same records; ListOffsets' answers for
// earliest, latest, max timestamp, earliest local, latest tiered,
// earliest pending upload and timestamps in the remote log match, and a
// consumer from offset 0 reads the same records from both.
func TestTieredKafkaReference(t *testing.T) {
	t.Parallel()
	kb, kafkaDir := startTieredKafkaRef(t)
	st := s3test.Start(t, "tiered")
	n := admBroker(t, tieredBrokerProps(st))
	addrs := map[string]string{"Kafka": kb.Addr, "samsa": n.Addr()}

	kafka, samsa := tieredConfigProbe(t, kb.Addr), tieredConfigProbe(t, n.Addr())
	// samsa compacts remote segments (tiered/compact.go): a compacted
	// topic may be tiered, where Kafka 4.4 refuses it.
	const compacted = "create: remote storage, compacted"
	if want := `error 40 "Remote log storage only supports topics with cleanup.policy=delete or cleanup.policy being an empty list."`; kafka[compacted] != want {
		t.Errorf("Kafka, %s: %s, want %s", compacted, kafka[compacted], want)
	}
	if want := `error 0 "<nil>"`; samsa[compacted] != want {
		t.Errorf("samsa, %s: %s, want %s", compacted, samsa[compacted], want)
	}
	delete(kafka, compacted)
	delete(samsa, compacted)
	compareProbes(t, kafka, samsa)

	const topic = "tiered-ref"
	base := time.Now().Add(-2 * time.Hour).UnixMilli()
	clients := map[string]*kgo.Client{}
	for name, addr := range addrs {
		cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
		createTopic(t, kadm.NewClient(cl), topic, 1, tieredTopicConfigs())
		produceTimed(t, cl, topic, base)
		clients[name] = cl
	}
	// Local retention from the first record would roll the active
	// segment whenever a pass finds every segment before it copied (Kafka
	// 4.4's UnifiedLog.deletableSegments), at offsets that depend on
	// timing; set once the records are in, the segments are those that
	// segment.bytes rolled, and the active one is rolled once the others
	// are copied and deleted, then copied and deleted too.
	for name, cl := range clients {
		rs, err := kadm.NewClient(cl).AlterTopicConfigs(testCtx(t, 10*time.Second),
			[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "local.retention.bytes", Value: strp("0")}}, topic)
		if err == nil {
			err = rs[0].Err
		}
		if err != nil {
			t.Fatalf("%s: local.retention.bytes=0: %v", name, err)
		}
	}
	remoteLogs := map[string]func() ([][]byte, error){
		"Kafka": func() ([][]byte, error) { return localTieredLogs(kafkaDir, topic) },
		"samsa": func() ([][]byte, error) { return bucketObjects(context.Background(), st, ".log") },
	}
	// Then the local log is empty and the remote one ends at the log end.
	held := map[string][]heldRange{}
	for name, cl := range clients {
		testutil.Eventually(t, 60*time.Second, func() error {
			logs, err := remoteLogs[name]()
			if err == nil {
				held[name], err = heldRanges(logs)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			offs := listOffsetsAt(t, cl, topic, -1, -4, -5)
			end, rs := offs[-1][0], held[name]
			if offs[-4][0] != end || offs[-5][0] != end-1 || len(rs) == 0 || rs[0].First != 0 || rs[len(rs)-1].Last != end-1 {
				return fmt.Errorf("%s: latest, earliest local, latest tiered %v; remote segments %v", name, offs, rs)
			}
			return nil
		})
	}
	// Kafka's held 0-38, 39-77, 78-116 (4 KiB each) and 117-119 (rolled
	// by local retention).
	if !slices.Equal(held["Kafka"], held["samsa"]) {
		t.Errorf("remote segments (first, last offset, batches):\nKafka %v\nsamsa %v", held["Kafka"], held["samsa"])
	}
	// Then ListOffsets answers alike, the timestamps found in the remote
	// log. MAX_TIMESTAMP (-3): Kafka 4.4 searches only the local log, so
	// with none left it names no offset, not record tieredRefMaxAt
	// (remote) whose timestamp is the largest.
	specs := map[string]int64{
		"earliest": -2, "latest": -1, "max timestamp": -3,
		"earliest local": -4, "latest tiered": -5, "earliest pending upload": -6,
		"first record's timestamp": base, "before the first record": base - 1,
		"record 30's timestamp": base + 30*tieredRefStep, "between records 20 and 21": base + 20*tieredRefStep + 5,
		"after record 49 (record 50's is the largest)": base + 49*tieredRefStep + 1,
		"record 50's timestamp":                        base + time.Hour.Milliseconds(),
		"after every record":                           base + time.Hour.Milliseconds() + 1,
	}
	answers := map[string]map[string]string{}
	for name, cl := range clients {
		answers[name] = listOffsetsAnswers(t, cl, topic, specs)
	}
	compareProbes(t, answers["Kafka"], answers["samsa"])

	for name, addr := range addrs {
		consumer := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchMaxBytes(3000))
		t.Run("consume from "+name, func(t *testing.T) { consumeTieredValues(t, consumer, tieredRefRecords) })
	}
}
