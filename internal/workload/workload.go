// Package workload is the fault suites' Jepsen-style queue workload and its
// checker, shared by the compat cluster tests and internal/chaos: idempotent
// acks=all producers of unique values, assign-mode and consumer-group
// readers, and optionally a watcher of the group's committed offsets, run
// with franz-go against one topic of a cluster under faults. Every ack and
// every read is recorded; Check stops the clients, reads every partition
// back from its start and returns each violation:
//
//   - an acknowledged record lost, or another value at its offset;
//   - an offset read with two values (by the readers or by the read-back);
//   - a value written twice;
//   - a producer acknowledged at an offset not above its last one;
//   - a reader rewound within an assignment, or told of data loss;
//   - with Config.WatchCommits, a committed offset of the group gone back;
//   - with Config.ClientLoss, franz-go logging that it lost records.
//
// A failed produce is indeterminate, never a violation. Each violation
// names the phase (SetPhase) it happened in; a lost ack names the phase
// in which it was acknowledged. The package imports no project package
// but internal/poll.
package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/poll"
)

// maxReported caps the violations recorded while the workload runs; those
// of the final check are all kept.
const maxReported = 200

// Config says what a workload runs against and with how many clients.
type Config struct {
	// NewClient makes a client of the cluster under test: the caller's
	// seeds, security and timeouts, then opts.
	NewClient  func(opts ...kgo.Opt) (*kgo.Client, error)
	Topic      string
	Partitions int32
	Group      string // the group readers' group; "" is Topic+"-readers"

	Producers     int // idempotent, acks=all; each writes unique values
	GroupReaders  int // members of Group
	AssignReaders int // each reads every partition from the start

	// PerPartition runs each producer as one goroutine per partition,
	// so that a partition without a leader holds up no other. Without
	// it each of a producer's batches spans every partition, and its
	// acks stop while any partition cannot be written.
	PerPartition bool
	// WatchCommits has the group readers commit every second and flags
	// a committed offset of Group that goes back.
	WatchCommits bool
	// ClientLoss makes franz-go's log lines about lost records (and
	// OFFSET_OUT_OF_RANGE while consuming) violations.
	ClientLoss bool
}

// Validate reports what is missing or out of range in c.
func (c *Config) Validate() error {
	var errs []error
	if c.NewClient == nil {
		errs = append(errs, errors.New("workload: NewClient required"))
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("workload: Topic required"))
	}
	if c.Partitions < 1 {
		errs = append(errs, fmt.Errorf("workload: Partitions %d < 1", c.Partitions))
	}
	if c.Producers < 0 || c.GroupReaders < 0 || c.AssignReaders < 0 {
		errs = append(errs, fmt.Errorf("workload: negative client count (%d producers, %d group readers, %d assign readers)",
			c.Producers, c.GroupReaders, c.AssignReaders))
	}
	return errors.Join(errs...)
}

// Violation is one failed check.
type Violation struct {
	Phase     string    // the phase it happened in
	Partition int32     // -1: none in particular
	Offset    int64     // -1: none in particular
	At        time.Time // when it was seen, or for a lost ack when it was acknowledged
	What      string
}

func (v Violation) String() string {
	switch {
	case v.Partition < 0:
		return v.What
	case v.Offset < 0:
		return fmt.Sprintf("partition %d: %s", v.Partition, v.What)
	}
	return fmt.Sprintf("partition %d offset %d: %s", v.Partition, v.Offset, v.What)
}

// ack is one acknowledged record.
type ack struct {
	offset int64
	value  string
	at     time.Time
}

// phaseSpan is a phase and when it started.
type phaseSpan struct {
	name  string
	start time.Time
}

// Workload is a running workload; Start makes one.
type Workload struct {
	cfg    Config
	ctx    context.Context // the clients' root context, cancelled by Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	stopping  bool                       // guarded by mu; Go starts nothing once set
	acked     map[int32][]ack            // guarded by mu; by partition
	nAcked    int                        // guarded by mu
	failed    int                        // guarded by mu; indeterminate produces
	seen      map[int32]map[int64]string // guarded by mu; what any reader read at each offset
	nRead     int                        // guarded by mu
	committed map[int32]int64            // guarded by mu; the group's highest committed offsets seen
	behind    map[int32]bool             // guarded by mu; partitions flagged as committed below committed's
	problems  []Violation                // guarded by mu
	phase     string                     // guarded by mu; the phase running
	phases    []phaseSpan                // guarded by mu; every phase set, in order
}

// newWorkload is a workload with no clients yet.
func newWorkload(cfg Config) *Workload {
	if cfg.Group == "" {
		cfg.Group = cfg.Topic + "-readers"
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Workload{cfg: cfg, ctx: ctx, cancel: cancel,
		acked: map[int32][]ack{}, seen: map[int32]map[int64]string{},
		committed: map[int32]int64{}, behind: map[int32]bool{}, phase: "setup"}
}

// Start makes cfg's clients and starts them; Stop or Check ends them. The
// phase is "setup" until SetPhase names another.
func Start(cfg Config) (*Workload, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := newWorkload(cfg)
	if err := w.start(); err != nil {
		w.Stop()
		return nil, err
	}
	return w, nil
}

func (w *Workload) start() error {
	cfg := w.cfg
	for i := range cfg.Producers {
		cl, err := w.client(fmt.Sprintf("producer %d", i), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
		if err != nil {
			return err
		}
		w.Go(func(ctx context.Context) { defer cl.Close(); w.produce(ctx, cl, i) })
	}
	for i := range cfg.GroupReaders {
		r := &reader{w: w, name: fmt.Sprintf("group reader %d", i), last: map[int32]int64{}}
		opts := []kgo.Opt{kgo.ConsumerGroup(cfg.Group), kgo.ConsumeTopics(cfg.Topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.BlockRebalanceOnPoll(),
			kgo.FetchMaxWait(500 * time.Millisecond),
			kgo.OnPartitionsAssigned(r.forget), kgo.OnPartitionsRevoked(r.forget), kgo.OnPartitionsLost(r.forget)}
		if cfg.WatchCommits {
			opts = append(opts, kgo.AutoCommitInterval(time.Second))
		}
		cl, err := w.client(r.name, opts...)
		if err != nil {
			return err
		}
		w.Go(func(ctx context.Context) { defer cl.Close(); r.run(ctx, cl, true) })
	}
	for i := range cfg.AssignReaders {
		r := &reader{w: w, name: fmt.Sprintf("assign reader %d", i), last: map[int32]int64{}}
		cl, err := w.client(r.name, kgo.ConsumePartitions(w.fromStart()), kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			return err
		}
		w.Go(func(ctx context.Context) { defer cl.Close(); r.run(ctx, cl, false) })
	}
	if cfg.WatchCommits {
		cl, err := cfg.NewClient()
		if err != nil {
			return err
		}
		w.Go(func(ctx context.Context) { defer cl.Close(); w.watchCommits(ctx, kadm.NewClient(cl)) })
	}
	return nil
}

// client makes one of the workload's clients, named for the reports of
// lost records.
func (w *Workload) client(name string, opts ...kgo.Opt) (*kgo.Client, error) {
	if w.cfg.ClientLoss {
		opts = append(opts, kgo.WithLogger(&lossLogger{w: w, name: name}))
	}
	return w.cfg.NewClient(opts...)
}

// fromStart is every partition of the topic at its start, for
// kgo.ConsumePartitions.
func (w *Workload) fromStart() map[string]map[int32]kgo.Offset {
	offs := map[int32]kgo.Offset{}
	for p := range w.cfg.Partitions {
		offs[p] = kgo.NewOffset().AtStart()
	}
	return map[string]map[int32]kgo.Offset{w.cfg.Topic: offs}
}

// Go runs f under the workload's context, which Stop cancels before it
// waits for f to return; it reports false, running nothing, once Stop
// has been called. A caller's own clients that record into the workload
// (Report) run this way.
func (w *Workload) Go(f func(ctx context.Context)) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		return false
	}
	w.wg.Add(1)
	go func() { defer w.wg.Done(); f(w.ctx) }()
	return true
}

// Stop ends every client of the workload and waits for them.
func (w *Workload) Stop() {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
}

// SetPhase names the phase starting now, for the violations.
func (w *Workload) SetPhase(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = name
	w.phases = append(w.phases, phaseSpan{name, time.Now()})
}

// phaseAt names the phase running at t. Caller holds w.mu.
func (w *Workload) phaseAt(t time.Time) string {
	name := "setup"
	for _, s := range w.phases {
		if !t.Before(s.start) {
			name = s.name
		}
	}
	return name
}

// Report records a violation found by the caller's own checks, in the
// phase running (p or off -1: none in particular).
func (w *Workload) Report(p int32, off int64, format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.problem(p, off, format, args...)
}

// problem records a violation in the phase running, up to maxReported.
// Caller holds w.mu.
func (w *Workload) problem(p int32, off int64, format string, args ...any) {
	if len(w.problems) < maxReported {
		w.problems = append(w.problems, Violation{w.phase, p, off, time.Now(), fmt.Sprintf(format, args...)})
	}
}

// produce writes batches of unique values until ctx ends: with
// PerPartition one goroutine per partition, else each batch round every
// partition.
func (w *Workload) produce(ctx context.Context, cl *kgo.Client, id int) {
	if !w.cfg.PerPartition {
		all := make([]int32, w.cfg.Partitions)
		for p := range all {
			all[p] = int32(p)
		}
		w.produceTo(ctx, cl, id, all)
		return
	}
	var wg sync.WaitGroup
	for p := range w.cfg.Partitions {
		wg.Add(1)
		go func() { defer wg.Done(); w.produceTo(ctx, cl, id, []int32{p}) }()
	}
	wg.Wait()
}

// produceTo writes batches round ps, at least four records and two per
// partition each, until ctx ends. A failed produce is indeterminate, not a
// failure.
func (w *Workload) produceTo(ctx context.Context, cl *kgo.Client, id int, ps []int32) {
	n := max(4, 2*len(ps))
	last := map[int32]int64{}
	for seq := 0; ctx.Err() == nil; {
		recs := make([]*kgo.Record, 0, n)
		for range n {
			p := ps[seq%len(ps)]
			recs = append(recs, &kgo.Record{Topic: w.cfg.Topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d-%d", id, p, seq)})
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
			w.acknowledged(last, id, r.Record.Partition, r.Record.Offset, string(r.Record.Value), now)
		}
		w.mu.Unlock()
	}
}

// acknowledged records producer id's ack of value at p/off, and flags an
// offset not above the last one acknowledged to it in p (last, which it
// updates). Caller holds w.mu.
func (w *Workload) acknowledged(last map[int32]int64, id int, p int32, off int64, value string, at time.Time) {
	if prev, ok := last[p]; ok && off <= prev {
		w.problem(p, off, "producer %d: acked offset %d after %d", id, off, prev)
	}
	last[p] = off
	w.acked[p] = append(w.acked[p], ack{off, value, at})
	w.nAcked++
}

// watchCommits records the group's committed offsets every half second
// until ctx ends.
func (w *Workload) watchCommits(ctx context.Context, adm *kadm.Client) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		offs, err := adm.FetchOffsets(c, w.cfg.Group)
		cancel()
		if err != nil {
			continue
		}
		w.mu.Lock()
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && o.Topic == w.cfg.Topic && o.At >= 0 {
				w.committedAt(o.Partition, o.At)
			}
		})
		w.mu.Unlock()
	}
}

// committedAt records that the group's committed offset of p is at, and
// flags it going back, once each time: the following polls see it behind
// until the group commits past its highest offset again. Caller holds
// w.mu.
func (w *Workload) committedAt(p int32, at int64) {
	prev, ok := w.committed[p]
	back := ok && at < prev
	if back && !w.behind[p] {
		w.problem(p, at, "committed offset of group %s went back from %d to %d", w.cfg.Group, prev, at)
	}
	w.behind[p] = back
	w.committed[p] = max(w.committed[p], at)
}

// reader consumes and checks that offsets only go forward within an
// assignment.
type reader struct {
	w    *Workload
	name string

	mu   sync.Mutex
	last map[int32]int64 // guarded by mu; last offset delivered in the current assignment
}

// forget starts a new assignment for the partitions named.
func (r *reader) forget(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range m[r.w.cfg.Topic] {
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
		fs.EachRecord(func(rec *kgo.Record) { r.read(rec.Partition, rec.Offset, string(rec.Value)) })
		w.mu.Unlock()
		r.mu.Unlock()
		if grouped {
			cl.AllowRebalance()
		}
	}
}

// read records value read at p/off. Caller holds r.mu and r.w.mu.
func (r *reader) read(p int32, off int64, value string) {
	w := r.w
	if prev, ok := r.last[p]; ok && off <= prev {
		w.problem(p, off, "%s: rewound from offset %d to %d", r.name, prev, off)
	}
	r.last[p] = off
	at := w.seen[p]
	if at == nil {
		at = map[int64]string{}
		w.seen[p] = at
	}
	if v, ok := at[off]; ok && v != value {
		w.problem(p, off, "%s: offset read as %q and as %q", r.name, v, value)
	}
	at[off] = value
	w.nRead++
}

// lossLogger turns franz-go's reports of lost records into violations.
type lossLogger struct {
	w    *Workload
	name string
}

func (l *lossLogger) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *lossLogger) Log(_ kgo.LogLevel, msg string, kv ...any) {
	if strings.Contains(msg, "lost records") || strings.Contains(msg, "OFFSET_OUT_OF_RANGE while consuming") {
		l.w.Report(-1, -1, "%s: franz-go: %s %v", l.name, msg, kv)
	}
}

// Acks is how many records were acknowledged so far.
func (w *Workload) Acks() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nAcked
}

// Reads is how many records the readers read so far.
func (w *Workload) Reads() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nRead
}

// WaitAcks waits until n more records than now are acknowledged, and
// fails tb after timeout.
func (w *Workload) WaitAcks(tb testing.TB, n int, timeout time.Duration) {
	tb.Helper()
	want := w.Acks() + n
	poll.Eventually(tb, timeout, func() error {
		if got := w.Acks(); got < want {
			return fmt.Errorf("%d records acknowledged, waiting for %d", got, want)
		}
		return nil
	})
}

// AckTimes is every ack's time in [from, to), by partition and, at -1,
// of all partitions.
func (w *Workload) AckTimes(from, to time.Time) map[int32][]time.Time {
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

// Summary is a line for the log.
func (w *Workload) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d records acknowledged, %d produces indeterminate, %d records read", w.nAcked, w.failed, w.nRead)
}

// Check stops the workload, reads every partition back from its start up
// to its last acknowledged offset, and returns every violation, those
// recorded while it ran first. The error says why the check could not be
// completed (nothing acknowledged, the read-back short at ctx's end); the
// violations found until then are returned with it.
func (w *Workload) Check(ctx context.Context) ([]Violation, error) {
	w.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = "read back"
	if w.nAcked == 0 {
		return w.problems, errors.New("nothing was acknowledged")
	}
	got, err := w.readBack(ctx)
	if err != nil {
		return w.problems, err
	}
	w.verify(got)
	return w.problems, nil
}

// readBack reads every partition from its start up to its last
// acknowledged offset. Caller holds w.mu.
func (w *Workload) readBack(ctx context.Context) (map[int32]map[int64]string, error) {
	want := map[int32]int64{}
	for p, acks := range w.acked {
		for _, a := range acks {
			want[p] = max(want[p], a.offset)
		}
	}
	cl, err := w.cfg.NewClient(kgo.ConsumePartitions(w.fromStart()), kgo.FetchMaxWait(500*time.Millisecond))
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
			w.readBackOne(got, r.Partition, r.Offset, string(r.Value))
			if last, ok := want[r.Partition]; ok && r.Offset >= last {
				delete(want, r.Partition)
			}
		})
	}
	return got, nil
}

// readBackOne records value read back at p/off into got. Caller holds
// w.mu.
func (w *Workload) readBackOne(got map[int32]map[int64]string, p int32, off int64, value string) {
	m := got[p]
	if m == nil {
		m = map[int64]string{}
		got[p] = m
	}
	if prev, ok := m[off]; ok && prev != value {
		w.problem(p, off, "read back: offset read as %q and as %q", prev, value)
	}
	m[off] = value
}

// verify compares what was read back (got) with what the readers read and
// with every ack. Caller holds w.mu.
func (w *Workload) verify(got map[int32]map[int64]string) {
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
				w.problems = append(w.problems, Violation{w.phaseAt(a.at), p, a.offset, a.at,
					fmt.Sprintf("acknowledged record %q lost%s", a.value, where)})
			case v != a.value:
				w.problems = append(w.problems, Violation{w.phaseAt(a.at), p, a.offset, a.at,
					fmt.Sprintf("holds %q, acknowledged %q%s", v, a.value, where)})
			}
		}
	}
}
