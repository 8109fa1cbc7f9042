package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	topic = "chaos"
	parts = 4
	group = "chaos-readers"
)

// ack is one acknowledged record.
type ack struct {
	offset int64
	value  string
	at     time.Time
}

// workload is the Jepsen-style queue workload: idempotent acks=all
// producers of unique values, assign-mode and consumer-group readers, and
// a watcher of the group's committed offsets; everything they see is
// recorded for the checks.
type workload struct {
	addrs  []string
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	acked     map[int32][]ack            // guarded by mu
	failed    int                        // guarded by mu; indeterminate produces
	seen      map[int32]map[int64]string // guarded by mu; what any reader read at each offset
	nRead     int                        // guarded by mu
	committed map[int32]int64            // guarded by mu; the group's highest committed offsets seen
	behind    map[int32]bool             // guarded by mu; partitions whose committed offset is below committed's, flagged
	problems  []violation                // guarded by mu
	phase     string                     // guarded by mu; the phase running
}

// violation is one failed check.
type violation struct {
	phase     string
	partition int32
	offset    int64
	at        time.Time
	what      string
}

func (w *workload) client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(w.addrs...), kgo.RetryTimeout(60 * time.Second)}, opts...)...)
}

func startWorkload(addrs []string, producers, groupReaders, assignReaders int) (*workload, error) {
	w := &workload{addrs: addrs, acked: map[int32][]ack{}, seen: map[int32]map[int64]string{},
		committed: map[int32]int64{}, behind: map[int32]bool{}, phase: "setup"}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	var clients []*kgo.Client
	fail := func(err error) (*workload, error) {
		cancel()
		for _, cl := range clients {
			cl.Close()
		}
		return nil, err
	}
	for i := range producers {
		cl, err := w.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(0))
		if err != nil {
			return fail(err)
		}
		clients = append(clients, cl)
		w.wg.Add(1)
		go func() { defer w.wg.Done(); defer cl.Close(); w.produce(ctx, cl, i) }()
	}
	for i := range groupReaders {
		r := &reader{w: w, name: fmt.Sprintf("group reader %d", i), last: map[int32]int64{}}
		cl, err := w.client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.BlockRebalanceOnPoll(),
			kgo.FetchMaxWait(500*time.Millisecond), kgo.AutoCommitInterval(time.Second),
			kgo.OnPartitionsAssigned(r.forget), kgo.OnPartitionsRevoked(r.forget), kgo.OnPartitionsLost(r.forget))
		if err != nil {
			return fail(err)
		}
		clients = append(clients, cl)
		w.wg.Add(1)
		go func() { defer w.wg.Done(); defer cl.Close(); r.run(ctx, cl, true) }()
	}
	for i := range assignReaders {
		r := &reader{w: w, name: fmt.Sprintf("assign reader %d", i), last: map[int32]int64{}}
		offs := map[int32]kgo.Offset{}
		for p := range int32(parts) {
			offs[p] = kgo.NewOffset().AtStart()
		}
		cl, err := w.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
			kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			return fail(err)
		}
		clients = append(clients, cl)
		w.wg.Add(1)
		go func() { defer w.wg.Done(); defer cl.Close(); r.run(ctx, cl, false) }()
	}
	adm, err := w.client()
	if err != nil {
		return fail(err)
	}
	w.wg.Add(1)
	go func() { defer w.wg.Done(); defer adm.Close(); w.watchCommits(ctx, kadm.NewClient(adm)) }()
	return w, nil
}

func (w *workload) setPhase(p string) {
	w.mu.Lock()
	w.phase = p
	w.mu.Unlock()
}

// problem records a violation. Caller holds w.mu.
func (w *workload) problem(p int32, off int64, format string, args ...any) {
	if len(w.problems) < 200 {
		w.problems = append(w.problems, violation{w.phase, p, off, time.Now(), fmt.Sprintf(format, args...)})
	}
}

// produce writes unique values to every partition, one goroutine per
// partition so that a partition without a leader holds up no other, until
// ctx ends. A failed produce is indeterminate, not a failure.
func (w *workload) produce(ctx context.Context, cl *kgo.Client, id int) {
	var wg sync.WaitGroup
	for p := range int32(parts) {
		wg.Add(1)
		go func() { defer wg.Done(); w.producePartition(ctx, cl, id, p) }()
	}
	wg.Wait()
}

func (w *workload) producePartition(ctx context.Context, cl *kgo.Client, id int, p int32) {
	last := int64(-1)
	for seq := 0; ctx.Err() == nil; {
		recs := make([]*kgo.Record, 0, 4)
		for range 4 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d-%d", id, p, seq)})
			seq++
		}
		res := cl.ProduceSync(ctx, recs...)
		now := time.Now()
		w.mu.Lock()
		for _, r := range res {
			if r.Err != nil {
				w.failed++
				continue
			}
			if r.Record.Offset <= last {
				w.problem(p, r.Record.Offset, "producer %d: acked offset %d after %d", id, r.Record.Offset, last)
			}
			last = r.Record.Offset
			w.acked[p] = append(w.acked[p], ack{r.Record.Offset, string(r.Record.Value), now})
		}
		w.mu.Unlock()
	}
}

// watchCommits records the group's committed offsets and flags one that
// goes back, once until it has caught up.
func (w *workload) watchCommits(ctx context.Context, adm *kadm.Client) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		offs, err := adm.FetchOffsets(c, group)
		cancel()
		if err != nil {
			continue
		}
		w.mu.Lock()
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.Topic != topic || o.At < 0 {
				return
			}
			// Flag a partition once each time it goes back: the
			// following polls see it behind until the group commits
			// past its highest offset again.
			prev, ok := w.committed[o.Partition]
			back := ok && o.At < prev
			if back && !w.behind[o.Partition] {
				w.problem(o.Partition, o.At, "committed offset of group %s went back from %d to %d", group, prev, o.At)
			}
			w.behind[o.Partition] = back
			w.committed[o.Partition] = max(w.committed[o.Partition], o.At)
		})
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
	for _, p := range m[topic] {
		delete(r.last, p)
	}
}

func (r *reader) run(ctx context.Context, cl *kgo.Client, grouped bool) {
	w := r.w
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		r.mu.Lock()
		w.mu.Lock()
		fs.EachError(func(_ string, p int32, err error) {
			if dl, ok := errors.AsType[*kgo.ErrDataLoss](err); ok {
				w.problem(p, dl.ConsumedTo, "%s: %v", r.name, dl)
			}
		})
		fs.EachRecord(func(rec *kgo.Record) {
			p := rec.Partition
			if prev, ok := r.last[p]; ok && rec.Offset <= prev {
				w.problem(p, rec.Offset, "%s: rewound from offset %d to %d", r.name, prev, rec.Offset)
			}
			r.last[p] = rec.Offset
			at := w.seen[p]
			if at == nil {
				at = map[int64]string{}
				w.seen[p] = at
			}
			if v, ok := at[rec.Offset]; ok && v != string(rec.Value) {
				w.problem(p, rec.Offset, "%s: offset read as %q and as %q", r.name, v, rec.Value)
			}
			at[rec.Offset] = string(rec.Value)
			w.nRead++
		})
		w.mu.Unlock()
		r.mu.Unlock()
		if grouped {
			cl.AllowRebalance()
		}
	}
}

// acks is how many records are acknowledged.
func (w *workload) acks() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, a := range w.acked {
		n += len(a)
	}
	return n
}

func (w *workload) stop() {
	w.cancel()
	w.wg.Wait()
}

// summary is a line for the log.
func (w *workload) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, a := range w.acked {
		n += len(a)
	}
	return fmt.Sprintf("%d records acknowledged, %d produces indeterminate, %d records read", n, w.failed, w.nRead)
}

// readBack reads every partition from its start up to its last
// acknowledged offset. Caller holds w.mu.
func (w *workload) readBack(ctx context.Context) (map[int32]map[int64]string, error) {
	want := map[int32]int64{}
	offs := map[int32]kgo.Offset{}
	for p, acks := range w.acked {
		for _, a := range acks {
			want[p] = max(want[p], a.offset)
		}
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl, err := w.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	got := map[int32]map[int64]string{}
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return got, fmt.Errorf("read back: still missing the last acknowledged offsets %v", want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			m := got[r.Partition]
			if m == nil {
				m = map[int64]string{}
				got[r.Partition] = m
			}
			if prev, ok := m[r.Offset]; ok && prev != string(r.Value) {
				w.problem(r.Partition, r.Offset, "read back: offset read as %q and as %q", prev, r.Value)
			}
			m[r.Offset] = string(r.Value)
			if last, ok := want[r.Partition]; ok && r.Offset >= last {
				delete(want, r.Partition)
			}
		})
	}
	return got, nil
}

// check stops the workload and returns every violation: an acknowledged
// record lost or at another offset, an offset read with two values, a
// value written twice, a reader rewound, a committed offset gone back.
func (w *workload) check(ctx context.Context) ([]violation, error) {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = "read back"
	if len(w.acked) == 0 {
		return nil, errors.New("nothing was acknowledged")
	}
	got, err := w.readBack(ctx)
	if err != nil {
		return w.problems, err
	}
	at := map[string]int64{}
	for p, offs := range got {
		for off, v := range offs {
			if prev, ok := w.seen[p][off]; ok && prev != v {
				w.problem(p, off, "read by a reader as %q, read back as %q", prev, v)
			}
			if first, ok := at[v]; ok {
				w.problem(p, off, "record %q written twice, at offsets %d and %d", v, min(first, off), max(first, off))
			}
			at[v] = off
		}
	}
	for p, acks := range w.acked {
		for _, a := range acks {
			v, ok := got[p][a.offset]
			where := " (read back nowhere)"
			if off, ok := at[a.value]; ok {
				where = fmt.Sprintf(" (read back at offset %d)", off)
			}
			switch {
			case !ok:
				w.problems = append(w.problems, violation{w.phaseAt(a.at), p, a.offset, a.at,
					fmt.Sprintf("acknowledged record %q lost%s", a.value, where)})
			case v != a.value:
				w.problems = append(w.problems, violation{w.phaseAt(a.at), p, a.offset, a.at,
					fmt.Sprintf("holds %q, acknowledged %q%s", v, a.value, where)})
			}
		}
	}
	return w.problems, nil
}

// phases is the suite's record of when each phase ran, for phaseAt.
var phases struct {
	mu   sync.Mutex
	list []phaseSpan
}

type phaseSpan struct {
	name       string
	start, end time.Time
}

// phaseAt names the phase running at t.
func (w *workload) phaseAt(t time.Time) string {
	phases.mu.Lock()
	defer phases.mu.Unlock()
	name := "setup"
	for _, s := range phases.list {
		if !t.Before(s.start) {
			name = s.name
		}
	}
	return name
}

// ackTimes is every ack's time in [from, to), by partition (-1: all).
func (w *workload) ackTimes(from, to time.Time) map[int32][]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[int32][]time.Time{}
	for p, acks := range w.acked {
		for _, a := range acks {
			if !a.at.Before(from) && a.at.Before(to) {
				out[p] = append(out[p], a.at)
				out[-1] = append(out[-1], a.at)
			}
		}
	}
	return out
}
