package compat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
