package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/broker"
	"github.com/samsa-io/samsa/internal/testutil"
)

// JBOD: with two entries in log.dirs, a topic's partitions spread over
// both (Kafka puts a new partition in the directory holding the fewest);
// what franz-go wrote reads back, before and after a restart.
func TestJBODSpreadsPartitionsOverLogDirs(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	n := testutil.StartBroker(t, map[string]string{"log.dirs": d1 + "," + d2})
	const topic = "jbod"
	createTopic(t, newAdmin(t, n.Addr()), topic, 4, nil)
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(4) {
		for i := range 5 {
			produceAll(t, cl, &kgo.Record{Topic: topic, Partition: p, Value: []byte(itoa(int(p)) + "-" + itoa(i))})
		}
	}
	count := func(dir string) int {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), topic+"-") {
				if _, err := os.Stat(filepath.Join(dir, e.Name(), "partition.metadata")); err != nil {
					t.Fatalf("%s: %v", e.Name(), err)
				}
				n++
			}
		}
		return n
	}
	if c1, c2 := count(d1), count(d2); c1 != 2 || c2 != 2 {
		t.Fatalf("partitions in the log dirs: %d and %d, want 2 and 2", c1, c2)
	}
	from := map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0}
	consumeExact(t, n.Addr(), topic, from, 20, 30*time.Second)
	n.Restart()
	got := consumeExact(t, n.Addr(), topic, from, 20, 30*time.Second)
	for _, r := range got {
		if !strings.HasPrefix(string(r.Value), itoa(int(r.Partition))+"-") {
			t.Fatalf("partition %d offset %d holds %q", r.Partition, r.Offset, r.Value)
		}
	}
	if c1, c2 := count(d1), count(d2); c1 != 2 || c2 != 2 {
		t.Fatalf("after a restart, partitions in the log dirs: %d and %d, want 2 and 2", c1, c2)
	}
}

// logDirCounts counts the partition directories of topic in each of dirs.
func logDirCounts(t testing.TB, topic string, dirs ...string) []int {
	t.Helper()
	out := make([]int, len(dirs))
	for i, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if rest, ok := strings.CutPrefix(e.Name(), topic+"-"); ok && e.IsDir() && !strings.Contains(rest, "-") {
				out[i]++
			}
		}
	}
	return out
}

// The partitions of one CreateTopics are placed as Kafka 4.4 places them,
// each in the directory holding the fewest partitions, so they alternate:
// the broker opens new logs several at once, and every one of them chose
// the first directory while none had created its own yet (16 of 16 on an
// idle machine, 9 and 7 here). Kafka 4.4 is asked the same.
func TestJBODCreateTopicsOfManyPartitionsAlternates(t *testing.T) {
	t.Parallel()
	t.Run("samsa", func(t *testing.T) {
		d1, d2 := t.TempDir(), t.TempDir()
		n := testutil.StartBroker(t, map[string]string{"log.dirs": d1 + "," + d2})
		checkJBODPlacement(t, n.Addr(), d1, d2)
	})
	t.Run("kafka", func(t *testing.T) {
		d1, d2 := t.TempDir(), t.TempDir()
		kb, _ := startKafkaRefWith(t, map[string]string{"log.dirs": d1 + "," + d2})
		checkJBODPlacement(t, kb.Addr, d1, d2)
	})
}

// checkJBODPlacement creates four topics of 16 partitions, one after the
// other, on the broker at addr whose log.dirs are d1,d2, and then one of
// 7: each of 16 goes 8 and 8, the 7 go 4 and 3 (the first directory on a
// tie). A broker creates the logs once it has the new topic (Kafka: after
// CreateTopics answers), so each count is waited for.
func checkJBODPlacement(t *testing.T, addr, d1, d2 string) {
	t.Helper()
	adm := newAdmin(t, addr)
	placed := func(topic string, parts int) []int {
		t.Helper()
		var got []int
		testutil.Eventually(t, 30*time.Second, func() error {
			got = logDirCounts(t, topic, d1, d2)
			if got[0]+got[1] != parts {
				return fmt.Errorf("%s: %v partition directories, want %d in all", topic, got, parts)
			}
			return nil
		})
		return got
	}
	for i := range 4 {
		topic := "many" + itoa(i)
		createTopic(t, adm, topic, 16, nil)
		if got := placed(topic, 16); got[0] != 8 || got[1] != 8 {
			t.Fatalf("%s: 16 partitions in the log dirs: %v, want 8 and 8", topic, got)
		}
	}
	createTopic(t, adm, "more", 7, nil)
	if got := placed("more", 7); got[0] != 4 || got[1] != 3 {
		t.Fatalf("7 partitions in the log dirs: %v, want 4 and 3", got)
	}
}

// A broker given many replicas at once (a reassignment adding it to every
// partition of a topic) spreads them over its log directories too.
func TestJBODReplicasArrivingAtOnceSpread(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	c := testutil.StartClusterWith(t, 2, nil, func(id int32, cfg *broker.Config) {
		if id == 2 {
			cfg.Props, _ = cfg.Props.With(map[string]string{"log.dirs": d1 + "," + d2})
		}
	})
	const topic, parts = "arriving", 16
	cl := newClusterKgo(t, c)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 20000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range int32(parts) {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, []int32{1}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 30*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	adm := kadm.NewClient(cl)
	areq := kadm.AlterPartitionAssignmentsReq{}
	want := map[int32][]int32{}
	for p := range int32(parts) {
		areq.Assign(topic, p, []int32{1, 2})
		want[p] = []int32{1, 2}
	}
	admReassign(t, adm, areq)
	waitReassigned(t, c, adm, topic, want)
	if got := logDirCounts(t, topic, d1, d2); got[0] != 8 || got[1] != 8 {
		t.Fatalf("16 replicas in broker 2's log dirs: %v, want 8 and 8", got)
	}
}
