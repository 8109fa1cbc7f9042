package compat

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// DescribeLogDirs through kadm and Kafka 4.4's kafka-log-dirs.sh: each of
// two log.dirs lists the partitions placed there with their sizes, and the
// file system's total and usable bytes.
func TestDescribeLogDirs(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	n := testutil.StartBroker(t, map[string]string{"log.dirs": d1 + "," + d2})
	const topic = "dirs"
	adm := newAdmin(t, n.Addr())
	createTopic(t, adm, topic, 4, nil)
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(4) {
		produceAll(t, cl, &kgo.Record{Topic: topic, Partition: p, Value: []byte("some bytes")})
	}
	all, err := adm.DescribeAllLogDirs(testCtx(t, 10*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := all[n.NodeID()]
	seen := map[int32]string{}
	for _, dir := range []string{d1, d2} {
		d, ok := dirs[dir]
		if !ok || d.Err != nil {
			t.Fatalf("log dir %s: %+v (listed %v)", dir, d, ok)
		}
		if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
			t.Errorf("%s: total %d usable %d bytes", dir, d.TotalBytes, d.UsableBytes)
		}
		for p, lp := range d.Topics[topic] {
			if lp.Size <= 0 {
				t.Errorf("%s-%d in %s: size %d", topic, p, dir, lp.Size)
			}
			seen[p] = dir
		}
	}
	if len(seen) != 4 {
		t.Fatalf("partitions listed: %v, want all 4", seen)
	}

	got := kafkaLogDirs(t, n.Addr(), topic)
	if len(got) != 4 {
		t.Errorf("kafka-log-dirs lists %d partitions of %s, want 4: %v", len(got), topic, got)
	}
	for p, size := range got {
		if size <= 0 {
			t.Errorf("kafka-log-dirs: %s size %d", p, size)
		}
	}

	// AlterReplicaLogDirs: partition 0 moves to the other directory, keeps
	// its records and takes more, and stays there across a restart; a
	// directory not in log.dirs is LOG_DIR_NOT_FOUND.
	dest := d1
	if seen[0] == d1 {
		dest = d2
	}
	move := kadm.AlterReplicaLogDirsReq{}
	move.Add(dest, kadm.TopicsSet{topic: {0: {}}})
	move.Add("/no/such/dir", kadm.TopicsSet{topic: {1: {}}})
	res, err := adm.AlterBrokerReplicaLogDirs(testCtx(t, 30*time.Second), n.NodeID(), move)
	if err != nil {
		t.Fatal(err)
	}
	if r := res[topic][0]; r.Err != nil {
		t.Fatalf("moving %s-0 to %s: %v", topic, dest, r.Err)
	}
	if r := res[topic][1]; !errors.Is(r.Err, kerr.LogDirNotFound) {
		t.Errorf("moving to a directory not in log.dirs: %v, want LOG_DIR_NOT_FOUND", r.Err)
	}
	where := func() string {
		t.Helper()
		all, err := adm.DescribeAllLogDirs(testCtx(t, 10*time.Second), kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		for dir, d := range all[n.NodeID()] {
			if _, ok := d.Topics[topic][0]; ok {
				return dir
			}
		}
		return ""
	}
	if got := where(); got != dest {
		t.Fatalf("%s-0 is in %q after the move, want %s", topic, got, dest)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		return cl.ProduceSync(testCtx(t, 10*time.Second), &kgo.Record{Topic: topic, Partition: 0, Value: []byte("after the move")}).FirstErr()
	})
	n.Restart()
	adm = newAdmin(t, n.Addr())
	if got := where(); got != dest {
		t.Fatalf("%s-0 is in %q after a restart, want %s", topic, got, dest)
	}
	recs := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0}, 2, 30*time.Second)
	if string(recs[0].Value) != "some bytes" || string(recs[1].Value) != "after the move" {
		t.Errorf("%s-0 after the move: %q, %q", topic, recs[0].Value, recs[1].Value)
	}
}

// kafkaLogDirs runs Kafka 4.4's kafka-log-dirs.sh --describe for topic
// against the one broker at addr and returns the size it reports of each
// partition ("topic-p").
func kafkaLogDirs(t *testing.T, addr, topic string) map[string]int64 {
	t.Helper()
	out := runKafkaTool(t, testCtx(t, 3*time.Minute), "", "org.apache.kafka.tools.LogDirsCommand",
		"--bootstrap-server", addr, "--describe", "--topic-list", topic)
	// The JSON is the line after "Received log directory information from brokers 1".
	var report struct {
		Brokers []struct {
			LogDirs []struct {
				Partitions []struct {
					Partition string `json:"partition"`
					Size      int64  `json:"size"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	var parsed bool
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "{") && json.Unmarshal([]byte(line), &report) == nil {
			parsed = true
		}
	}
	if !parsed || len(report.Brokers) != 1 {
		t.Fatalf("kafka-log-dirs printed no report:\n%s", out)
	}
	sizes := map[string]int64{}
	for _, d := range report.Brokers[0].LogDirs {
		for _, p := range d.Partitions {
			if !strings.HasPrefix(p.Partition, topic+"-") {
				t.Errorf("kafka-log-dirs --topic-list %s lists %s", topic, p.Partition)
			}
			sizes[p.Partition] = p.Size
		}
	}
	return sizes
}
