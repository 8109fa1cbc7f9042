package compat

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/broker"
	"github.com/samsa-io/samsa/internal/testutil"
	"github.com/samsa-io/samsa/logstore"
)

// A disk fails as Kafka handles it (KIP-112): broker 1 keeps its
// partitions in two log directories, and every write to the second starts
// failing with EIO. That directory goes offline: its partitions move to
// the other replicas (new leaders, broker 1 out of their ISRs) and broker
// 1 answers KAFKA_STORAGE_ERROR for them, while it keeps leading and
// replicating the partitions of its healthy directory. An idempotent
// acks=all producer writing all along loses nothing.
func TestLogDirFailureMovesItsPartitionsAway(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	fs := logstore.NewFaultFS(logstore.OS)
	c := testutil.StartClusterWith(t, 3, map[string]string{"replica.lag.time.max.ms": "3000"}, func(id int32, cfg *broker.Config) {
		if id == 1 {
			cfg.LogFS = fs
			cfg.Props, _ = cfg.Props.With(map[string]string{"log.dirs": d1 + "," + d2})
		}
	})
	const topic, parts = "logdir", 6
	createReplicatedTopic(t, c, topic, parts, 3, map[string]*string{"min.insync.replicas": strp("2")})
	inDir := func(dir string) []int32 {
		var out []int32
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if p, ok := strings.CutPrefix(e.Name(), topic+"-"); ok {
				var n int32
				fmt.Sscan(p, &n)
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out
	}
	failed, healthy := inDir(d2), inDir(d1)
	if len(failed) == 0 || len(healthy) == 0 {
		t.Fatalf("partitions in the two log dirs: %v and %v; want some in each", healthy, failed)
	}

	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.RecordRetries(1000), kgo.RetryTimeout(60*time.Second))
	acked := make([][]ackedRecord, parts)
	produce := func(n int) {
		t.Helper()
		for i := range n {
			for p := range int32(parts) {
				r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%d-%d-%d", p, len(acked[p]), i))}
				if err := cl.ProduceSync(testCtx(t, 60*time.Second), r).FirstErr(); err != nil {
					t.Fatalf("produce to %d: %v", p, err)
				}
				acked[p] = append(acked[p], ackedRecord{r.Offset, string(r.Value)})
			}
		}
	}
	produce(5)
	fs.Inject(logstore.Fault{Ops: logstore.OpWrite | logstore.OpSync | logstore.OpCreate | logstore.OpRename, Path: d2, Sticky: true, Err: syscall.EIO})
	produce(5) // the first write to d2 fails; the producer retries on the new leaders

	testutil.Eventually(t, 30*time.Second, func() error {
		for _, p := range failed {
			mp, err := partitionMeta(t, c.Node(2).Addr(), topic, p)
			if err != nil {
				return err
			}
			if mp.Leader == 1 || mp.Leader < 0 || slices.Contains(mp.ISR, 1) || !slices.Equal(mp.OfflineReplicas, []int32{1}) {
				return fmt.Errorf("partition %d on the failed dir: leader %d, ISR %v, offline replicas %v; want another leader, 1 out of the ISR and offline",
					p, mp.Leader, mp.ISR, mp.OfflineReplicas)
			}
		}
		return nil
	})
	for _, p := range failed {
		batch := rawBatch(-1, -1, -1, time.Now().UnixMilli(), []byte("x"))
		id := topicID(t, newAdmin(t, c.Node(1).Addr()), topic)
		wantCode(t, fmt.Sprintf("produce to broker 1, partition %d on its failed dir", p),
			produceRaw(t, newKgo(t, c.Node(1).Addr()), topic, id, p, batch).ErrorCode, kerr.KafkaStorageError)
	}
	produce(5)
	// The healthy directory still serves: broker 1 stays in those ISRs.
	for _, p := range healthy {
		waitISR(t, c, topic, p, 3, 30*time.Second)
	}
	for p := range int32(parts) {
		checkAcked(t, c, topic, p, acked[p])
	}
}
