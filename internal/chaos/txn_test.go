package chaos

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/workload"
)

// copyTopic is what the transactional copier writes.
const copyTopic = "chaos-copy"

// txnState is what the copier did with one transaction.
type txnState struct {
	n        int       // records written in it
	abort    bool      // it ended with an abort (or never tried to commit)
	decided  time.Time // when EndTransaction was sent; zero while undecided
	resolved bool      // EndTransaction(commit) answered without error: it committed
}

// copier reads the workload's topic and copies what it reads to copyTopic
// in transactions of up to 20 records, aborting every fourth on purpose,
// while read_committed readers of copyTopic record what they see. Checks:
// a reader never sees a record of an aborted transaction, nor one of a
// transaction before its commit was sent (undecided); every record of a
// transaction whose commit was answered is read back; no copy is read at
// two offsets.
type copier struct {
	w         *workload.Workload // its violations are the workload's; Stop ends it
	newClient func(opts ...kgo.Opt) (*kgo.Client, error)

	mu       sync.Mutex
	txns     map[int]*txnState // guarded by mu; by transaction number
	seen     map[string]int64  // guarded by mu; copy value → offset (partition in the value)
	nRead    int               // guarded by mu
	restarts int               // guarded by mu; transactional clients replaced after an error
}

func startCopier(w *workload.Workload, addrs []string) (*copier, error) {
	c := &copier{w: w, txns: map[int]*txnState{}, seen: map[string]int64{},
		newClient: func(opts ...kgo.Opt) (*kgo.Client, error) { return newClient(addrs, opts...) }}
	offs := map[int32]kgo.Offset{}
	for p := range int32(parts) {
		offs[p] = kgo.NewOffset().AtEnd()
	}
	src, err := c.newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	for p := range int32(parts) {
		offs[p] = kgo.NewOffset().AtStart()
	}
	rd, err := c.newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{copyTopic: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		src.Close()
		return nil, err
	}
	if !w.Go(func(ctx context.Context) { defer src.Close(); c.copy(ctx, src) }) {
		src.Close()
	}
	if !w.Go(func(ctx context.Context) { defer rd.Close(); c.read(ctx, rd, nil) }) {
		rd.Close()
	}
	return c, nil
}

func (c *copier) txnClient() (*kgo.Client, error) {
	return c.newClient(kgo.TransactionalID("chaos-copier"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(20*time.Second), kgo.ProducerLinger(0))
}

// copy runs the transactions until ctx ends. After an error the
// transactional client is replaced: the new one's InitProducerID fences
// the old and aborts what it left open.
func (c *copier) copy(ctx context.Context, src *kgo.Client) {
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for k := 1; ctx.Err() == nil; {
		if cl == nil {
			var err error
			if cl, err = c.txnClient(); err != nil {
				sleepCtx(ctx, time.Second)
				continue
			}
		}
		recs := src.PollRecords(ctx, 20).Records()
		if len(recs) == 0 {
			continue
		}
		st := &txnState{n: len(recs), abort: k%4 == 0}
		c.mu.Lock()
		c.txns[k] = st
		c.mu.Unlock()
		ok := c.transact(ctx, cl, k, st, recs)
		k++
		if !ok {
			cl.Close()
			cl = nil
			c.mu.Lock()
			c.restarts++
			c.mu.Unlock()
			sleepCtx(ctx, 200*time.Millisecond)
		}
	}
}

// transact runs transaction k; false when the client must be replaced.
func (c *copier) transact(ctx context.Context, cl *kgo.Client, k int, st *txnState, recs []*kgo.Record) bool {
	if err := cl.BeginTransaction(); err != nil {
		c.decide(st, true, false)
		return false
	}
	for i, r := range recs {
		cl.Produce(ctx, &kgo.Record{Topic: copyTopic, Partition: r.Partition, Value: fmt.Appendf(nil, "t%d-%d", k, i)}, nil)
	}
	flushed := cl.Flush(ctx) == nil
	commit := !st.abort && flushed
	c.decide(st, !commit, false)
	how := kgo.TryAbort
	if commit {
		how = kgo.TryCommit
	}
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := cl.EndTransaction(ectx, how)
	cancel()
	if commit && err == nil {
		c.decide(st, false, true)
	}
	return err == nil && flushed
}

// decide records the transaction's end before (or, resolved, after)
// EndTransaction is sent.
func (c *copier) decide(st *txnState, abort, resolved bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.decided.IsZero() {
		st.decided = time.Now()
	}
	st.abort = abort
	st.resolved = resolved
}

// read records and checks what a read_committed reader sees, until ctx
// ends or, with want, until every value in want was seen.
func (c *copier) read(ctx context.Context, cl *kgo.Client, want map[string]bool) {
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		now := time.Now()
		c.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			c.nRead++
			if want != nil {
				delete(want, v)
			}
			k, _, _ := strings.Cut(strings.TrimPrefix(v, "t"), "-")
			n, err := strconv.Atoi(k)
			st := c.txns[n]
			switch {
			case err != nil || st == nil:
				c.w.Report(r.Partition, r.Offset, "read_committed reader of %s: record %q of no transaction the copier ran", copyTopic, v)
			case st.abort:
				c.w.Report(r.Partition, r.Offset, "read_committed reader of %s: record %q of aborted transaction %d", copyTopic, v, n)
			case st.decided.IsZero() || now.Before(st.decided):
				c.w.Report(r.Partition, r.Offset, "read_committed reader of %s: record %q of transaction %d before its commit was sent", copyTopic, v, n)
			}
			key := fmt.Sprintf("%d/%s", r.Partition, v)
			if off, ok := c.seen[key]; ok && off != r.Offset {
				c.w.Report(r.Partition, r.Offset, "read_committed reader of %s: record %q at offsets %d and %d", copyTopic, v, off, r.Offset)
			}
			c.seen[key] = r.Offset
		})
		done := want != nil && len(want) == 0
		c.mu.Unlock()
		if done {
			return
		}
	}
}

// checkCommitted reads copyTopic back read_committed and flags every
// record of a transaction whose commit was answered that is not there.
// Call it after the workload stopped.
func (c *copier) checkCommitted(ctx context.Context) error {
	want := map[string]bool{}
	c.mu.Lock()
	for k, st := range c.txns {
		if st.resolved {
			for i := range st.n {
				want[fmt.Sprintf("t%d-%d", k, i)] = true
			}
		}
	}
	clear(c.seen) // the read back sees every record again
	c.mu.Unlock()
	if len(want) == 0 {
		return fmt.Errorf("the transactional copier committed nothing")
	}
	offs := map[int32]kgo.Offset{}
	for p := range int32(parts) {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl, err := c.newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{copyTopic: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	c.read(ctx, cl, want)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(want) > 0 {
		n := 0
		for v := range want {
			if n++; n <= 5 {
				c.w.Report(-1, -1, "record %q of a committed transaction not read back from %s (%d missing)", v, copyTopic, len(want))
			}
		}
	}
	return nil
}

// summary is a line for the log.
func (c *copier) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var committed, aborted, unknown int
	for _, st := range c.txns {
		switch {
		case st.resolved:
			committed++
		case st.abort:
			aborted++
		default:
			unknown++
		}
	}
	return fmt.Sprintf("copier: %d transactions committed, %d aborted, %d indeterminate, %d client restarts, %d copies read read_committed",
		committed, aborted, unknown, c.restarts, c.nRead)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
