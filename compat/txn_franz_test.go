package compat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// readCommitted reads topic from the start at read_committed until a
// record with value last arrives, and returns every value read before it.
func readCommitted(t *testing.T, addr, topic, last string, opts ...kgo.Opt) []string {
	t.Helper()
	opts = append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())}, opts...)
	cl := newKgo(t, addr, opts...)
	defer cl.Close()
	ctx := testCtx(t, 60*time.Second)
	var vals []string
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d values before the deadline, no %q", topic, len(vals), last)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("read %s: partition %d: %v", topic, fe.Partition, fe.Err)
		}
		for _, r := range fs.Records() {
			if string(r.Value) == last {
				return vals
			}
			vals = append(vals, string(r.Value))
		}
	}
}

// commitOne produces value in a transaction of its own and commits it.
func commitOne(t *testing.T, cl *kgo.Client, topic string, partition int32, value string) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(value)}).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", value, err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit %s: %v", value, err)
	}
}

// franz-go's transactional producer: committed transactions are read at
// read_committed, aborted ones never; read_uncommitted sees both. It runs
// transactions version 2, which samsa finalizes.
func TestFranzTxnCommitAbort(t *testing.T) {
	n := txnBroker(t)
	adm := newAdmin(t, n.Addr())
	const topic = "fg-txn"
	createTopic(t, adm, topic, 3, nil)
	cl := newKgo(t, n.Addr(), kgo.TransactionalID("fg-txn-1"), kgo.TransactionTimeout(20*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testCtx(t, 90*time.Second)
	want := map[string]bool{}
	for i := range 6 {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		commit := i%2 == 0
		for j := range 10 {
			v := fmt.Sprintf("a%d-%d", i, j)
			if commit {
				v = fmt.Sprintf("c%d-%d", i, j)
				want[v] = true
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(j % 3), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction %d (commit %v): %v", i, commit, err)
		}
	}
	for p := range int32(3) {
		commitOne(t, cl, topic, p, "end")
	}
	// Each partition ends with an "end": read until all three are seen.
	seen := map[string]int{}
	for _, v := range readAllCommitted(t, n.Addr(), topic, 3) {
		seen[v]++
	}
	for v := range want {
		if seen[v] != 1 {
			t.Errorf("committed %s read %d times at read_committed", v, seen[v])
		}
	}
	for v, k := range seen {
		if strings.HasPrefix(v, "a") {
			t.Errorf("aborted %s read %d times at read_committed", v, k)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// read_uncommitted: every data record of both kinds, no control record.
	all := consumeExact(t, n.Addr(), topic, map[int32]int64{0: 0, 1: 0, 2: 0}, 63, 30*time.Second)
	aborted := 0
	for _, r := range all {
		if strings.HasPrefix(string(r.Value), "a") {
			aborted++
		}
	}
	if aborted != 30 {
		t.Fatalf("read_uncommitted: %d aborted records, want 30", aborted)
	}
	// kgo runs transactions version 2 (Produce v12, EndTxn v5): each of
	// the nine ends bumped the epoch.
	d, err := adm.DescribeTransactions(ctx, "fg-txn-1")
	if err != nil {
		t.Fatal(err)
	}
	if e := d["fg-txn-1"].ProducerEpoch; e != 9 {
		t.Fatalf("producer epoch %d after nine transactions, want 9 (transactions version 2)", e)
	}
}

// readAllCommitted reads topic at read_committed until "end" was read ends
// times (one per partition) and returns the other values.
func readAllCommitted(t *testing.T, addr, topic string, ends int) []string {
	t.Helper()
	cl := newKgo(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	defer cl.Close()
	ctx := testCtx(t, 60*time.Second)
	var vals []string
	for ends > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %d values, %d ends missing at the deadline", topic, len(vals), ends)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("read %s: partition %d: %v", topic, fe.Partition, fe.Err)
		}
		for _, r := range fs.Records() {
			if string(r.Value) == "end" {
				ends--
				continue
			}
			vals = append(vals, string(r.Value))
		}
	}
	return vals
}

// A second producer of a transactional id fences the first: the first's
// commit fails with a fencing error and its records are never read at
// read_committed.
func TestFranzTxnFenced(t *testing.T) {
	n := txnBroker(t)
	adm := newAdmin(t, n.Addr())
	const topic = "fg-fenced"
	createTopic(t, adm, topic, 1, nil)
	ctx := testCtx(t, 60*time.Second)
	old := newKgo(t, n.Addr(), kgo.TransactionalID("fenced-id"), kgo.TransactionTimeout(20*time.Second))
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	// The new producer's InitProducerId aborts the open transaction and
	// bumps the epoch.
	cur := newKgo(t, n.Addr(), kgo.TransactionalID("fenced-id"), kgo.TransactionTimeout(20*time.Second))
	commitOne(t, cur, topic, 0, "fresh")
	err := old.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the fenced producer's commit: %v, want PRODUCER_FENCED", err)
	}
	commitOne(t, cur, topic, 0, "end")
	got := readCommitted(t, n.Addr(), topic, "end")
	if fmt.Sprint(got) != "[fresh]" {
		t.Fatalf("read_committed: %q, want [fresh]", got)
	}
	descs, err := adm.DescribeTransactions(ctx, "fenced-id")
	if err != nil {
		t.Fatal(err)
	}
	d, err := descs.On("fenced-id", nil)
	if err != nil || d.Err != nil {
		t.Fatalf("DescribeTransactions: %v %v", err, d.Err)
	}
	if d.State != "CompleteCommit" || d.ProducerEpoch < 2 {
		t.Fatalf("described %+v", d)
	}
	list, err := adm.ListTransactions(ctx, nil, []string{"CompleteCommit"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := list["fenced-id"]; !ok {
		t.Fatalf("ListTransactions CompleteCommit: %v", list.TransactionalIDs())
	}
}

// eosPipeline runs a consume-transform-produce pipeline of GroupTransactSessions
// from input to output; each member copies a record's value with the prefix
// "out-". kill stops a member without ending its transaction.
type eosMember struct {
	sess   *kgo.GroupTransactSession
	cancel context.CancelFunc
	done   chan struct{}
}

func startEOSMember(t *testing.T, addrs []string, group, txnID, input, output string, midTxn chan<- struct{}) *eosMember {
	t.Helper()
	// The victim's open transaction holds the output's LSO until the
	// coordinator aborts it at its timeout: a short one. The others' must
	// outlast a slow transaction on a loaded machine, or the coordinator
	// aborts it and fences them (a fatal error with transactions version 1,
	// as in Kafka).
	timeout := time.Minute
	if midTxn != nil {
		timeout = 8 * time.Second
	}
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(addrs...),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(timeout),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(6*time.Second),
		kgo.RetryTimeout(30*time.Second),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &eosMember{sess: sess, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := sess.PollRecords(ctx, 20)
			if ctx.Err() != nil {
				return
			}
			recs := fs.Records()
			if len(recs) == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				return
			}
			for i, r := range recs {
				out := &kgo.Record{Topic: output, Key: r.Key, Value: append([]byte("out-"), r.Value...)}
				if midTxn == nil {
					sess.Produce(ctx, out, nil)
					continue
				}
				// The victim writes half its records, then dies with its
				// transaction open.
				if err := sess.ProduceSync(ctx, out).FirstErr(); err != nil {
					t.Logf("victim: produce: %v", err)
				}
				if i == len(recs)/2 {
					midTxn <- struct{}{}
					<-ctx.Done()
					return
				}
			}
			if _, err := sess.End(ctx, kgo.TryCommit); err != nil && ctx.Err() == nil {
				t.Logf("member %s: end: %v", txnID, err)
			}
		}
	}()
	return m
}

// kill stops the member's loop and closes its client without ending its
// transaction (the coordinator aborts it once it times out, or when the id
// is initialized again).
func (m *eosMember) kill() {
	m.cancel()
	<-m.done
	m.sess.Client().Close()
}

func (m *eosMember) stop() {
	m.cancel()
	<-m.done
	m.sess.Close()
}

// A GroupTransactSession pipeline of three members, one of them killed in
// the middle of a transaction: a read_committed reader of the output finds
// every input record exactly once.
func TestFranzGroupTransactSession(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
		"group.initial.rebalance.delay.ms":                            "0",
	})
	runEOSPipeline(t, []string{n.Addr()}, nil)
}

// runEOSPipeline feeds 600 records through three members, kills one
// mid-transaction (and calls during, if set, then), and checks the output.
func runEOSPipeline(t *testing.T, addrs []string, during func()) {
	t.Helper()
	cl := newKgo(t, addrs[0])
	adm := kadm.NewClient(cl)
	const input, output, group, total = "eos-in", "eos-out", "eos-group", 600
	for _, topic := range []string{input, output} {
		resp, err := adm.CreateTopic(testCtx(t, 30*time.Second), 6, int16(min(len(addrs), 3)), nil, topic)
		if err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
	}
	var recs []*kgo.Record
	for i := range total / 2 {
		recs = append(recs, &kgo.Record{Topic: input, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%04d", i))})
	}
	produceAll(t, cl, recs...)

	mid := make(chan struct{}, 1)
	victim := startEOSMember(t, addrs, group, "eos-victim", input, output, mid)
	var members []*eosMember
	for i := range 2 {
		members = append(members, startEOSMember(t, addrs, group, fmt.Sprintf("eos-%d", i), input, output, nil))
	}
	select {
	case <-mid:
	case <-time.After(60 * time.Second):
		t.Fatal("the victim never began a transaction")
	}
	victim.kill()
	if during != nil {
		during()
	}
	recs = recs[:0]
	for i := total / 2; i < total; i++ {
		recs = append(recs, &kgo.Record{Topic: input, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%04d", i))})
	}
	produceAll(t, cl, recs...)

	reader := newKgo(t, addrs[0], kgo.ConsumeTopics(output), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	ctx := testCtx(t, 120*time.Second)
	for len(seen) < total {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed output: %d of %d distinct records before the deadline", len(seen), total)
		}
		for _, r := range fs.Records() {
			seen[string(r.Value)]++
		}
	}
	for _, m := range members {
		m.stop()
	}
	// Read a little longer: a duplicate would come after the last new one.
	fs := reader.PollFetches(testCtx(t, 2*time.Second))
	for _, r := range fs.Records() {
		seen[string(r.Value)]++
	}
	for i := range total {
		v := fmt.Sprintf("out-v%04d", i)
		if seen[v] != 1 {
			t.Errorf("%s read %d times", v, seen[v])
		}
	}
	if len(seen) != total {
		t.Errorf("%d distinct output values, want %d", len(seen), total)
	}
}

// The same pipeline on three brokers (every topic with three replicas,
// __transaction_state and __consumer_offsets too), with a broker killed
// after the victim member: coordinators and partition leaders move, and the
// output is still every input record exactly once.
func TestFranzGroupTransactSessionCluster(t *testing.T) {
	c := testutil.StartCluster(t, 3, map[string]string{
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
		"group.initial.rebalance.delay.ms":                            "0",
	})
	runEOSPipeline(t, c.Addrs(), func() { c.Node(2).Kill() })
}
