package compat

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// Kafka Streams 4.4 with group.protocol=streams (KIP-1071): two instances
// of the exactly_once_v2 word count share the application's eight tasks
// (two subtopologies over four partitions), which the broker assigns; the
// broker creates the repartition and changelog topics. One instance is
// killed (SIGKILL) in the middle of the input: after its session times out
// the other holds all eight tasks, and at read_committed each word's
// counts are 1, 2, ... n exactly, n its true count. kafka-streams-groups.sh
// lists and describes the group meanwhile.
func TestStreamsGroupJava(t *testing.T) {
	t.Parallel()
	props := maps.Clone(streamsProps)
	props["transaction.abort.timed.out.transaction.cleanup.interval.ms"] = "500"
	n := testutil.StartBroker(t, props)
	adm := newAdmin(t, n.Addr())
	const prefix = "wcsg"
	app, in, out := prefix+"-eos", prefix+"-eos-in", prefix+"-eos-out"
	createTopic(t, adm, in, 4, nil)
	createTopic(t, adm, out, 4, nil)
	cl := newKgo(t, n.Addr())
	want := map[string]int64{}
	produceAll(t, cl, wcLines(in, 0, 400, want)...)

	streams := "-Dsamsa.group.protocol=streams"
	a := startStreams(t, n.Addr(), prefix, t.TempDir(), streams)
	b := startStreams(t, n.Addr(), prefix, t.TempDir(), streams)
	a.awaitRunning(t)
	b.awaitRunning(t)

	describe := func() kmsg.StreamsGroupDescribeResponseGroup {
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = []string{app}
		resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
		if err != nil || len(resp.Groups) != 1 {
			t.Fatalf("StreamsGroupDescribe: %v %v", resp, err)
		}
		return resp.Groups[0]
	}
	// activeTasks counts each member's active tasks once the group is
	// stable.
	activeTasks := func() ([]int, error) {
		g := describe()
		if g.ErrorCode != 0 || g.State != "Stable" {
			return nil, fmt.Errorf("group %s: error %d, state %s", app, g.ErrorCode, g.State)
		}
		var counts []int
		for _, m := range g.Members {
			c := 0
			for _, ts := range m.Assignment.ActiveTasks {
				c += len(ts.Partitions)
			}
			counts = append(counts, c)
		}
		return counts, nil
	}
	testutil.Eventually(t, 2*time.Minute, func() error {
		counts, err := activeTasks()
		if err != nil {
			return err
		}
		if len(counts) != 2 || counts[0] != 4 || counts[1] != 4 {
			return fmt.Errorf("active tasks per member %v, want [4 4]", counts)
		}
		return nil
	})

	tool := kafkaToolIn(t, testCtx(t, 3*time.Minute), n.Addr(), t.TempDir())
	const cmd = "org.apache.kafka.tools.streams.StreamsGroupCommand"
	if list, err := tool("", cmd, "--list"); err != nil || !strings.Contains(list, app) {
		t.Errorf("kafka-streams-groups.sh --list: %v\n%s", err, list)
	}
	members, err := tool("", cmd, "--describe", "--members", "--group", app)
	if err != nil || strings.Count(members, "\n"+app+" ") != 2 || strings.Count(members, "ACTIVE: ") != 2 {
		t.Errorf("kafka-streams-groups.sh --describe --members: two members of %s wanted: %v\n%s", app, err, members)
	}
	state, err := tool("", cmd, "--describe", "--state", "--group", app)
	if err != nil || !strings.Contains(state, "Stable") {
		t.Errorf("kafka-streams-groups.sh --describe --state: %v\n%s", err, state)
	}
	offsets, err := tool("", cmd, "--describe", "--offsets", "--group", app)
	if err != nil || !strings.Contains(offsets, in) || !strings.Contains(offsets, app+"-words-repartition") {
		t.Errorf("kafka-streams-groups.sh --describe --offsets: %v\n%s", err, offsets)
	}
	t.Logf("kafka-streams-groups.sh --describe --members:\n%s", members)

	wc := newWordCountReader(t, n.Addr(), out)
	wc.awaitSome(t)
	produceAll(t, cl, wcLines(in, 400, 800, want)...)
	a.kill()
	testutil.Eventually(t, 2*time.Minute, func() error {
		counts, err := activeTasks()
		if err != nil {
			return err
		}
		if len(counts) != 1 || counts[0] != 8 {
			return fmt.Errorf("active tasks per member %v, want [8] once the killed member's session ended", counts)
		}
		return nil
	})
	wc.awaitExact(t, want, 3*time.Minute, b.output)
}

// wordCountReader reads the word count's output at read_committed: every
// count each word got, in order.
type wordCountReader struct {
	t      *testing.T
	cl     *kgo.Client
	counts map[string][]int64
}

func newWordCountReader(t *testing.T, addr, topic string) *wordCountReader {
	cl := newKgo(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	return &wordCountReader{t: t, cl: cl, counts: map[string][]int64{}}
}

func (r *wordCountReader) read(d time.Duration) {
	fs := r.cl.PollFetches(testCtx(r.t, d))
	for _, rec := range fs.Records() {
		var v int64
		for _, b := range rec.Value {
			v = v<<8 | int64(b)
		}
		r.counts[string(rec.Key)] = append(r.counts[string(rec.Key)], v)
	}
}

// awaitSome reads until a first count is committed.
func (r *wordCountReader) awaitSome(t *testing.T) {
	t.Helper()
	testutil.Eventually(t, 2*time.Minute, func() error {
		r.read(time.Second)
		if len(r.counts) == 0 {
			return fmt.Errorf("no committed count yet")
		}
		return nil
	})
}

// awaitExact reads until each word's last count is its true count, and
// then checks that the counts of each were 1..n, each once.
func (r *wordCountReader) awaitExact(t *testing.T, want map[string]int64, within time.Duration, output func() string) {
	t.Helper()
	done := func() bool {
		for w, c := range want {
			cs := r.counts[w]
			if len(cs) == 0 || cs[len(cs)-1] != c {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(within)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("counts at read_committed %v, want the last of each %v\n%s", lastCounts(r.counts), want, output())
		}
		r.read(time.Second)
	}
	r.read(2 * time.Second) // a duplicate would come after the last count
	for w, cs := range r.counts {
		for i, c := range cs {
			if c != int64(i+1) {
				t.Fatalf("word %s: counts %v, want 1..%d each once", w, cs, want[w])
			}
		}
		if int64(len(cs)) != want[w] {
			t.Fatalf("word %s: %d counts, want %d", w, len(cs), want[w])
		}
	}
}
