package compat

// Tiered storage (KIP-405, issue 26) against Apache Kafka 4.4 with tiered
// storage on: its own LocalTieredStorage as the RemoteStorageManager
// (kafka-storage's test jar, kafkaref.TieredLibs) and its default
// TopicBasedRemoteLogMetadataManager. Both brokers get the same topic
// configs, the same records and the same requests.

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/s3test"
	"github.com/samsa-io/samsa/internal/testutil"
)

// startTieredKafkaRef starts Apache Kafka with remote storage on, its
// remote log in a LocalTieredStorage under a temp dir, and its log
// retention (which deletes what is copied) checked every 100 ms from the
// start.
func startTieredKafkaRef(t *testing.T) *kafkaref.Broker {
	t.Helper()
	props := kafkaref.TieredProps(t.TempDir())
	maps.Copy(props, map[string]string{"log.retention.check.interval.ms": "100", "log.initial.task.delay.ms": "0"})
	kb, _ := startKafkaRefWith(t, props, kafkaref.TieredLibs)
	return kb
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
// refuses; and after the same records, rolled into 4 KiB segments that
// both have copied and deleted locally, ListOffsets' answers for
// earliest, latest, max timestamp, earliest local, latest tiered,
// earliest pending upload and timestamps in the remote part match, and a
// consumer from offset 0 reads the same records from both.
func TestTieredKafkaReference(t *testing.T) {
	t.Parallel()
	kb := startTieredKafkaRef(t)
	n := admBroker(t, tieredBrokerProps(s3test.Start(t, "tiered")))
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
		createTopic(t, kadm.NewClient(cl), topic, 1, tieredTopicConfigs("local.retention.bytes", "0"))
		produceTimed(t, cl, topic, base)
		clients[name] = cl
	}
	// EARLIEST_LOCAL (-4), LATEST_TIERED (-5) and EARLIEST_PENDING_UPLOAD
	// (-6) name segment boundaries, and the two brokers roll at different
	// offsets (in one run Kafka 4.4's segments held 1, 39, 39, 39 and 2 of
	// these records, 4017 bytes each, samsa's 9), so their offsets are not
	// compared, but what both must answer once every
	// segment up to record tieredRefMaxAt is copied and deleted locally:
	// the local log starts after it and at or before the log end, the
	// remote log ends right before it, and the first offset waiting for an
	// upload is it, all written under epoch 0.
	for name, cl := range clients {
		testutil.Eventually(t, 60*time.Second, func() error {
			offs := listOffsetsAt(t, cl, topic, -1, -4, -5, -6)
			if local := offs[-4][0]; local <= tieredRefMaxAt || local > offs[-1][0] || offs[-4][1] != 0 ||
				offs[-5] != [2]int64{local - 1, 0} || offs[-6] != [2]int64{local, 0} {
				return fmt.Errorf("%s: latest, earliest local, latest tiered, earliest pending upload: %v", name, offs)
			}
			return nil
		})
	}
	// MAX_TIMESTAMP (-3): Kafka 4.4 searches only the local log, so it
	// does not name record tieredRefMaxAt (remote by now) whose timestamp
	// is the largest, but the last record when the local log holds any
	// (timestamps grow after tieredRefMaxAt), and no offset when it holds
	// none.
	for name, cl := range clients {
		offs := listOffsetsAt(t, cl, topic, -1, -4)
		want := "error 0 offset -1 epoch -1 timestamp -1"
		if last := offs[-1][0] - 1; offs[-4][0] <= last {
			want = fmt.Sprintf("error 0 offset %d epoch 0 timestamp %d", last, base+last*tieredRefStep)
		}
		if got := listOffsetsAnswers(t, cl, topic, map[string]int64{"": -3})[""]; got != want {
			t.Errorf("%s: max timestamp %s, want %s (latest %v, earliest local %v)", name, got, want, offs[-1], offs[-4])
		}
	}
	// The rest is defined by the records alone; the timestamps up to
	// record tieredRefMaxAt are found in the remote log.
	specs := map[string]int64{
		"earliest": -2, "latest": -1,
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
