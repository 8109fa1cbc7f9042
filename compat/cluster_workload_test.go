package compat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// faultSettings are the cluster settings for the fault tests.
var faultSettings = map[string]string{
	"broker.session.timeout.ms": "3000",
	"replica.lag.time.max.ms":   "5000",
	"min.insync.replicas":       "2",
}

// workloadConfig says how many clients a workload runs.
type workloadConfig struct {
	producers     int // idempotent, acks=all; each writes unique values
	groupReaders  int // members of one consumer group
	assignReaders int // each reads every partition from the start
}

// workload runs franz-go producers and readers against a topic and
// records every acknowledgement and every read, for the checks after the
// faults: every ack read back at its offset, no offset holding two values,
// no reader rewound within an assignment, no client reporting lost records.
type workload struct {
	t     testing.TB
	c     cluster
	topic string
	parts int32

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	acked       map[int32][]ackedRecord    // guarded by mu; by partition
	nAcked      int                        // guarded by mu
	produceErrs int                        // guarded by mu; indeterminate produces
	seen        map[int32]map[int64]string // guarded by mu; what any reader read at each offset
	nRead       int                        // guarded by mu
	problems    []string                   // guarded by mu
}

// startWorkload starts cfg's clients on topic; stop ends them.
func startWorkload(t testing.TB, c cluster, topic string, parts int32, cfg workloadConfig) *workload {
	t.Helper()
	w := &workload{t: t, c: c, topic: topic, parts: parts,
		acked: map[int32][]ackedRecord{}, seen: map[int32]map[int64]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	t.Cleanup(w.stop)
	for i := range cfg.producers {
		cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.WithLogger(&lossLogger{w: w, name: fmt.Sprintf("producer %d", i)}))
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.produce(ctx, cl, i) }()
	}
	for i := range cfg.groupReaders {
		r := &reader{w: w, name: fmt.Sprintf("group reader %d", i), last: map[int32]int64{}}
		cl := newClusterKgo(t, c, kgo.ConsumerGroup(topic+"-readers"), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.BlockRebalanceOnPoll(),
			kgo.FetchMaxWait(500*time.Millisecond), kgo.WithLogger(&lossLogger{w: w, name: r.name}),
			kgo.OnPartitionsAssigned(r.forget), kgo.OnPartitionsRevoked(r.forget), kgo.OnPartitionsLost(r.forget))
		w.wg.Add(1)
		go func() { defer w.wg.Done(); r.run(ctx, cl, true) }()
	}
	for i := range cfg.assignReaders {
		r := &reader{w: w, name: fmt.Sprintf("assign reader %d", i), last: map[int32]int64{}}
		offs := map[int32]kgo.Offset{}
		for p := range parts {
			offs[p] = kgo.NewOffset().AtStart()
		}
		cl := newClusterKgo(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
			kgo.FetchMaxWait(500*time.Millisecond), kgo.WithLogger(&lossLogger{w: w, name: r.name}))
		w.wg.Add(1)
		go func() { defer w.wg.Done(); r.run(ctx, cl, false) }()
	}
	return w
}

func (w *workload) problem(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.problems) < 100 {
		w.problems = append(w.problems, fmt.Sprintf(format, args...))
	}
}

// produce writes batches of unique values round the partitions until ctx
// ends. A failed produce is indeterminate, not a failure.
func (w *workload) produce(ctx context.Context, cl *kgo.Client, id int) {
	last := map[int32]int64{}
	for seq := 0; ctx.Err() == nil; {
		recs := make([]*kgo.Record, 0, 2*w.parts)
		for range 2 * w.parts {
			recs = append(recs, &kgo.Record{Topic: w.topic, Partition: int32(seq) % w.parts,
				Value: fmt.Appendf(nil, "p%d-%d", id, seq)})
			seq++
		}
		res := cl.ProduceSync(ctx, recs...)
		w.mu.Lock()
		for _, r := range res {
			if r.Err != nil {
				w.produceErrs++
				continue
			}
			p := r.Record.Partition
			if prev, ok := last[p]; ok && r.Record.Offset <= prev {
				w.problems = append(w.problems, fmt.Sprintf("producer %d: partition %d acked offset %d after %d",
					id, p, r.Record.Offset, prev))
			}
			last[p] = r.Record.Offset
			w.acked[p] = append(w.acked[p], ackedRecord{r.Record.Offset, string(r.Record.Value)})
			w.nAcked++
		}
		w.mu.Unlock()
	}
}

// reader consumes and checks that offsets only go forward within an
// assignment.
type reader struct {
	w    *workload
	name string

	mu   sync.Mutex
	last map[int32]int64 // guarded by mu; last offset delivered in the current assignment
}

// forget starts a new assignment for the partitions named.
func (r *reader) forget(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range m[r.w.topic] {
		delete(r.last, p)
	}
}

func (r *reader) run(ctx context.Context, cl *kgo.Client, group bool) {
	w := r.w
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, p int32, err error) {
			if dl, ok := errors.AsType[*kgo.ErrDataLoss](err); ok {
				w.problem("%s: %v", r.name, dl)
			}
		})
		r.mu.Lock()
		w.mu.Lock()
		fs.EachRecord(func(rec *kgo.Record) {
			p := rec.Partition
			if prev, ok := r.last[p]; ok && rec.Offset <= prev && len(w.problems) < 100 {
				w.problems = append(w.problems, fmt.Sprintf("%s: partition %d rewound from offset %d to %d",
					r.name, p, prev, rec.Offset))
			}
			r.last[p] = rec.Offset
			at := w.seen[p]
			if at == nil {
				at = map[int64]string{}
				w.seen[p] = at
			}
			if v, ok := at[rec.Offset]; ok && v != string(rec.Value) && len(w.problems) < 100 {
				w.problems = append(w.problems, fmt.Sprintf("%s: partition %d offset %d read as %q and as %q",
					r.name, p, rec.Offset, v, rec.Value))
			}
			at[rec.Offset] = string(rec.Value)
			w.nRead++
		})
		w.mu.Unlock()
		r.mu.Unlock()
		if group {
			cl.AllowRebalance()
		}
	}
}

// lossLogger turns franz-go's reports of lost records into problems.
type lossLogger struct {
	w    *workload
	name string
}

func (l *lossLogger) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *lossLogger) Log(_ kgo.LogLevel, msg string, kv ...any) {
	if strings.Contains(msg, "lost records") || strings.Contains(msg, "OFFSET_OUT_OF_RANGE while consuming") {
		l.w.problem("%s: franz-go: %s %v", l.name, msg, kv)
	}
}

// acks is how many records were acknowledged so far.
func (w *workload) acks() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nAcked
}

// waitAcks waits until n more records than now are acknowledged.
func (w *workload) waitAcks(n int, timeout time.Duration) {
	w.t.Helper()
	want := w.acks() + n
	testutil.Eventually(w.t, timeout, func() error {
		if got := w.acks(); got < want {
			return fmt.Errorf("%d records acknowledged, waiting for %d", got, want)
		}
		return nil
	})
}

// stop ends every client of the workload and waits for them.
func (w *workload) stop() {
	w.cancel()
	w.wg.Wait()
}

// summary is a line for t.Logf.
func (w *workload) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d records acknowledged, %d produces indeterminate, %d records read", w.nAcked, w.produceErrs, w.nRead)
}

// check stops the workload and fails the test unless every acknowledged
// record is read back at its offset, no offset was read with two values
// (by the readers or by the read-back), no value is written twice, and no
// reader was rewound or told of lost records.
func (w *workload) check() {
	t := w.t
	t.Helper()
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.problems {
		t.Error(p)
	}
	if w.nAcked == 0 {
		t.Fatal("nothing was acknowledged")
	}
	got := w.readBack()
	at := map[string]int64{}
	for p, offs := range got {
		for off, v := range offs {
			if prev, ok := w.seen[p][off]; ok && prev != v {
				t.Errorf("partition %d offset %d read by a reader as %q, read back as %q", p, off, prev, v)
			}
			if first, ok := at[v]; ok {
				t.Errorf("record %q written twice, at offsets %d and %d", v, min(first, off), max(first, off))
			}
			at[v] = off
		}
	}
	for p, acks := range w.acked {
		for _, a := range acks {
			v, ok := got[p][a.offset]
			switch {
			case !ok:
				t.Errorf("partition %d: acknowledged record %q at offset %d lost%s", p, a.value, a.offset, foundAt(at, a.value))
			case v != a.value:
				t.Errorf("partition %d: offset %d holds %q, acknowledged %q%s", p, a.offset, v, a.value, foundAt(at, a.value))
			}
		}
	}
}

// foundAt says where else a record was read back, if anywhere: a record
// acknowledged at the wrong offset is not lost, but misreported.
func foundAt(at map[string]int64, v string) string {
	if off, ok := at[v]; ok {
		return fmt.Sprintf(" (read back at offset %d)", off)
	}
	return " (read back nowhere)"
}

// readBack reads every partition from its start up to the last
// acknowledged offset. Caller holds w.mu.
func (w *workload) readBack() map[int32]map[int64]string {
	t := w.t
	t.Helper()
	want := map[int32]int64{}
	offs := map[int32]kgo.Offset{}
	for p, acks := range w.acked {
		want[p] = slices.MaxFunc(acks, func(a, b ackedRecord) int { return int(a.offset - b.offset) }).offset
		offs[p] = kgo.NewOffset().AtStart()
	}
	got := map[int32]map[int64]string{}
	cl := newClusterKgo(t, w.c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: offs}),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx := testCtx(t, 90*time.Second)
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back: still missing the last acknowledged offsets %v", want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			m := got[r.Partition]
			if m == nil {
				m = map[int64]string{}
				got[r.Partition] = m
			}
			if prev, ok := m[r.Offset]; ok && prev != string(r.Value) {
				t.Errorf("read back: partition %d offset %d read as %q and as %q", r.Partition, r.Offset, prev, r.Value)
			}
			m[r.Offset] = string(r.Value)
			if last, ok := want[r.Partition]; ok && r.Offset >= last {
				delete(want, r.Partition)
			}
		})
	}
	return got
}

// waitHealthy waits until every node is registered and every partition of
// topic has a leader and all rf replicas in sync, and returns how long
// that took.
func waitHealthy(t testing.TB, c *testutil.FaultCluster, topic string, parts int32, rf int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	c.WaitRegistered(timeout)
	for p := range parts {
		waitISR(t, c, topic, p, rf, max(timeout-time.Since(start), 5*time.Second))
	}
	return time.Since(start)
}

// partitionLeaders maps each partition of topic to its leader, as a
// running node reports it.
func partitionLeaders(t testing.TB, c cluster, topic string) (map[int32]int32, error) {
	t.Helper()
	adm := kadm.NewClient(newClusterKgo(t, c))
	defer adm.Close()
	md, err := adm.Metadata(testCtx(t, 10*time.Second), topic)
	if err != nil {
		return nil, err
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	out := map[int32]int32{}
	for p, pd := range td.Partitions {
		out[p] = pd.Leader
	}
	return out, nil
}

// controllerID is the controller a running node reports.
func controllerID(t testing.TB, c cluster) (int32, error) {
	t.Helper()
	adm := kadm.NewClient(newClusterKgo(t, c))
	defer adm.Close()
	md, err := adm.BrokerMetadata(testCtx(t, 10*time.Second))
	if err != nil {
		return -1, err
	}
	return md.Controller, nil
}
