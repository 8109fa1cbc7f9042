package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/internal/poll"
)

type rec struct{ key, value []byte }

// memLog is an in-memory __transaction_state.
type memLog struct {
	mu    sync.Mutex
	parts map[int32][]rec
	fail  error // when set, Append fails with it
	// hold, when set, keeps each Append waiting until it closes (the
	// writer taken off the core before its append); entered is told of
	// each Append that waits.
	hold    chan struct{}
	entered chan struct{}
	// epochs is, by partition, the newest leader epoch appended in: as a
	// broker's log records its leaders' epochs, an append in an older one
	// is refused.
	epochs map[int32]int32
}

func newMemLog() *memLog { return &memLog{parts: map[int32][]rec{}, epochs: map[int32]int32{}} }

func (l *memLog) Append(_ context.Context, p, leaderEpoch int32, key, value []byte) error {
	l.mu.Lock()
	hold, entered := l.hold, l.entered
	l.mu.Unlock()
	if hold != nil {
		entered <- struct{}{}
		<-hold
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	if leaderEpoch < l.epochs[p] {
		return kerr.FencedLeaderEpoch
	}
	l.epochs[p] = leaderEpoch
	l.parts[p] = append(l.parts[p], rec{key, value})
	return nil
}

func (l *memLog) Replay(_ context.Context, p int32, fn func(k, v []byte)) error {
	l.mu.Lock()
	recs := append([]rec(nil), l.parts[p]...)
	l.mu.Unlock()
	for _, r := range recs {
		fn(r.key, r.value)
	}
	return nil
}

// states are the states written for id, in order.
func (l *memLog) states(p int32, id string) []State {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []State
	for _, r := range l.parts[p] {
		k, ok, err := parseKey(r.key)
		if err != nil || !ok || k != id {
			continue
		}
		if r.value == nil {
			out = append(out, Dead)
			continue
		}
		m, err := parseValue(k, r.value)
		if err != nil {
			panic(err)
		}
		out = append(out, m.state)
	}
	return out
}

// memMarkers records the markers written; while held is set, every write
// fails.
type memMarkers struct {
	mu      sync.Mutex
	written []Marker
	held    atomic.Bool
}

func (m *memMarkers) Write(_ context.Context, mk Marker) map[TopicPartition]error {
	out := map[TopicPartition]error{}
	for _, tp := range mk.Partitions {
		if m.held.Load() {
			out[tp] = kerr.NotLeaderForPartition
		} else {
			out[tp] = nil
		}
	}
	if !m.held.Load() {
		m.mu.Lock()
		m.written = append(m.written, mk)
		m.mu.Unlock()
	}
	return out
}

func (m *memMarkers) all() []Marker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Marker(nil), m.written...)
}

type fixture struct {
	log     *memLog
	markers *memMarkers
	nextPid atomic.Int64
	now     atomic.Int64 // ms
}

func newFixture() *fixture {
	f := &fixture{log: newMemLog(), markers: &memMarkers{}}
	f.nextPid.Store(1000)
	f.now.Store(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	return f
}

// start returns a coordinator over the fixture's log that owns every
// partition (4 of them) at epoch, loaded.
func (f *fixture) start(t *testing.T, epoch int32) *Coordinator {
	t.Helper()
	c := New(Config{
		Log: f.log, Markers: f.markers, Partitions: 4,
		NewProducerID:    func(context.Context) (int64, error) { return f.nextPid.Add(1), nil },
		MaxTimeout:       time.Minute,
		IDExpiration:     time.Hour,
		AbortInterval:    time.Hour, // tests call AbortTimedOut
		RemoveInterval:   time.Hour,
		MarkerRetryDelay: time.Millisecond,
		Now:              func() time.Time { return time.UnixMilli(f.now.Load()) },
	})
	t.Cleanup(c.Close)
	c.SetOwned(map[int32]int32{0: epoch, 1: epoch, 2: epoch, 3: epoch})
	poll.Eventually(t, 5*time.Second, func() error {
		if _, loading := c.activeShards(); loading {
			return errors.New("loading")
		}
		return nil
	})
	return c
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

func waitState(t *testing.T, c *Coordinator, id string, want State) Description {
	t.Helper()
	var d Description
	poll.Eventually(t, 5*time.Second, func() error {
		var err error
		d, err = c.Describe(id)
		if err != nil {
			return err
		}
		if d.State != want {
			return fmt.Errorf("state %v, want %v", d.State, want)
		}
		return nil
	})
	return d
}

func TestInitBumpsEpochAndFences(t *testing.T) {
	f := newFixture()
	c := f.start(t, 1)
	ctx := context.Background()
	a, err := c.InitProducerID(ctx, "tx", 10000, nil)
	wantErr(t, "init", err, nil)
	if a.Epoch != 0 {
		t.Fatalf("first epoch %d, want 0", a.Epoch)
	}
	b, err := c.InitProducerID(ctx, "tx", 10000, nil)
	wantErr(t, "second init", err, nil)
	if b.ID != a.ID || b.Epoch != 1 {
		t.Fatalf("second init %+v, want id %d epoch 1", b, a.ID)
	}
	tp := TopicPartition{"t", 0}
	wantErr(t, "add with the fenced epoch", c.AddPartitions(ctx, "tx", a.ID, a.Epoch, []TopicPartition{tp}, TV1), kerr.ProducerFenced)
	wantErr(t, "add with another producer id", c.AddPartitions(ctx, "tx", a.ID+1, b.Epoch, []TopicPartition{tp}, TV1), kerr.InvalidProducerIDMapping)
	wantErr(t, "end with the fenced epoch", endV1(c, ctx, "tx", a.ID, a.Epoch, true), kerr.ProducerFenced)
	wantErr(t, "end of an unknown id", endV1(c, ctx, "nope", a.ID, 0, true), kerr.InvalidProducerIDMapping)
	wantErr(t, "end with nothing ongoing", endV1(c, ctx, "tx", b.ID, b.Epoch, true), kerr.InvalidTxnState)
	_, err = c.InitProducerID(ctx, "tx", 0, nil)
	wantErr(t, "timeout 0", err, kerr.InvalidTransactionTimeout)
	_, err = c.InitProducerID(ctx, "tx", 60001, nil)
	wantErr(t, "timeout above the max", err, kerr.InvalidTransactionTimeout)
	_, err = c.InitProducerID(ctx, "", 1000, nil)
	wantErr(t, "empty id", err, kerr.InvalidRequest)

	// KIP-360: the current producer recovers with its id and epoch; a
	// retry of that (its answer lost) gets the same epoch; the old epoch
	// is fenced.
	r, err := c.InitProducerID(ctx, "tx", 10000, &ProducerIDEpoch{b.ID, b.Epoch})
	wantErr(t, "recover", err, nil)
	if r.Epoch != b.Epoch+1 {
		t.Fatalf("recovered epoch %d, want %d", r.Epoch, b.Epoch+1)
	}
	r2, err := c.InitProducerID(ctx, "tx", 10000, &ProducerIDEpoch{b.ID, b.Epoch})
	wantErr(t, "retried recover", err, nil)
	if r2 != r {
		t.Fatalf("retried recover %+v, want %+v", r2, r)
	}
	_, err = c.InitProducerID(ctx, "tx", 10000, &ProducerIDEpoch{a.ID, a.Epoch})
	wantErr(t, "recover with a fenced epoch", err, kerr.ProducerFenced)
}

func TestCommitWritesMarkersThenCompletes(t *testing.T) {
	f := newFixture()
	c := f.start(t, 7)
	ctx := context.Background()
	pe, err := c.InitProducerID(ctx, "tx", 10000, nil)
	wantErr(t, "init", err, nil)
	parts := []TopicPartition{{"b", 1}, {"a", 0}}
	wantErr(t, "add", c.AddPartitions(ctx, "tx", pe.ID, pe.Epoch, parts, TV1), nil)
	wantErr(t, "add again", c.AddPartitions(ctx, "tx", pe.ID, pe.Epoch, parts[:1], TV1), nil)
	d, err := c.Describe("tx")
	wantErr(t, "describe", err, nil)
	if d.State != Ongoing || len(d.Partitions) != 2 || d.StartMs != f.now.Load() {
		t.Fatalf("described %+v", d)
	}
	vr, err := c.VerifyPartitions("tx", pe.ID, pe.Epoch, []TopicPartition{{"a", 0}, {"c", 0}})
	wantErr(t, "verify", err, nil)
	if vr[TopicPartition{"a", 0}] != nil || !errors.Is(vr[TopicPartition{"c", 0}], kerr.InvalidTxnState) {
		t.Fatalf("verify: %v", vr)
	}
	wantErr(t, "commit", endV1(c, ctx, "tx", pe.ID, pe.Epoch, true), nil)
	waitState(t, c, "tx", CompleteCommit)
	wantErr(t, "commit retried", endV1(c, ctx, "tx", pe.ID, pe.Epoch, true), nil)
	wantErr(t, "abort after commit", endV1(c, ctx, "tx", pe.ID, pe.Epoch, false), kerr.InvalidTxnState)
	ms := f.markers.all()
	if len(ms) != 1 || !ms[0].Commit || ms[0].CoordinatorEpoch != 7 || ms[0].ProducerID != pe.ID || len(ms[0].Partitions) != 2 {
		t.Fatalf("markers %+v", ms)
	}
	p := c.PartitionFor("tx")
	got := fmt.Sprint(f.log.states(p, "tx"))
	if want := fmt.Sprint([]State{Empty, Ongoing, PrepareCommit, CompleteCommit}); got != want {
		t.Fatalf("written states %s, want %s", got, want)
	}
	// A new transaction after the commit starts afresh.
	wantErr(t, "add to the next", c.AddPartitions(ctx, "tx", pe.ID, pe.Epoch, parts[1:], TV1), nil)
	d, _ = c.Describe("tx")
	if len(d.Partitions) != 1 {
		t.Fatalf("next transaction's partitions %v", d.Partitions)
	}
}

// A coordinator that takes over a partition completes the transactions it
// finds prepared, with its own coordinator epoch.
func TestNewCoordinatorCompletesPrepared(t *testing.T) {
	f := newFixture()
	c := f.start(t, 1)
	ctx := context.Background()
	pe, _ := c.InitProducerID(ctx, "tx", 10000, nil)
	wantErr(t, "add", c.AddPartitions(ctx, "tx", pe.ID, pe.Epoch, []TopicPartition{{"a", 0}}, TV1), nil)
	f.markers.held.Store(true)
	wantErr(t, "commit", endV1(c, ctx, "tx", pe.ID, pe.Epoch, true), nil)
	d, _ := c.Describe("tx")
	if d.State != PrepareCommit {
		t.Fatalf("state %v with markers held", d.State)
	}
	wantErr(t, "add while completing", c.AddPartitions(ctx, "tx", pe.ID, pe.Epoch, []TopicPartition{{"a", 0}}, TV1), kerr.ConcurrentTransactions)
	_, err := c.InitProducerID(ctx, "tx", 10000, nil)
	wantErr(t, "init while completing", err, kerr.ConcurrentTransactions)
	c.Close()

	f.markers.held.Store(false)
	c2 := f.start(t, 2)
	waitState(t, c2, "tx", CompleteCommit)
	ms := f.markers.all()
	if len(ms) != 1 || !ms[0].Commit || ms[0].CoordinatorEpoch != 2 {
		t.Fatalf("markers %+v", ms)
	}
	if _, err := c.Describe("tx"); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("closed coordinator: %v", err)
	}
}

// An Ongoing transaction past its timeout is aborted with the epoch
// bumped, so its producer is fenced; InitProducerID on an Ongoing
// transaction aborts it the same way and asks for a retry.
func TestTimeoutAbortsAndFences(t *testing.T) {
	f := newFixture()
	c := f.start(t, 1)
	ctx := context.Background()
	pe, _ := c.InitProducerID(ctx, "tx", 1000, nil)
	wantErr(t, "add", c.AddPartitions(ctx, "tx", pe.ID, pe.Epoch, []TopicPartition{{"a", 0}}, TV1), nil)
	c.AbortTimedOut()
	if d, _ := c.Describe("tx"); d.State != Ongoing {
		t.Fatalf("aborted before its timeout: %v", d.State)
	}
	f.now.Add(1001)
	c.AbortTimedOut()
	d := waitState(t, c, "tx", CompleteAbort)
	if d.ProducerEpoch != pe.Epoch+1 {
		t.Fatalf("epoch after the timeout %d, want %d", d.ProducerEpoch, pe.Epoch+1)
	}
	if ms := f.markers.all(); len(ms) != 1 || ms[0].Commit || ms[0].ProducerEpoch != pe.Epoch+1 {
		t.Fatalf("markers %+v", ms)
	}
	wantErr(t, "commit by the fenced producer", endV1(c, ctx, "tx", pe.ID, pe.Epoch, true), kerr.ProducerFenced)

	pe2, err := c.InitProducerID(ctx, "tx2", 10000, nil)
	wantErr(t, "init tx2", err, nil)
	wantErr(t, "add tx2", c.AddPartitions(ctx, "tx2", pe2.ID, pe2.Epoch, []TopicPartition{{"a", 0}}, TV1), nil)
	_, err = c.InitProducerID(ctx, "tx2", 10000, nil)
	wantErr(t, "init over an ongoing transaction", err, kerr.ConcurrentTransactions)
	waitState(t, c, "tx2", CompleteAbort)
	pe3, err := c.InitProducerID(ctx, "tx2", 10000, nil)
	wantErr(t, "init after the abort", err, nil)
	if pe3.Epoch != pe2.Epoch+2 {
		t.Fatalf("epoch %d, want %d (one bump to fence, one for the new producer)", pe3.Epoch, pe2.Epoch+2)
	}
}

func TestExpireIDsAndList(t *testing.T) {
	f := newFixture()
	c := f.start(t, 1)
	ctx := context.Background()
	a, _ := c.InitProducerID(ctx, "idle", 10000, nil)
	b, _ := c.InitProducerID(ctx, "busy", 10000, nil)
	wantErr(t, "add", c.AddPartitions(ctx, "busy", b.ID, b.Epoch, []TopicPartition{{"a", 0}}, TV1), nil)
	f.now.Add(500)

	list, unknown, err := c.List(ListFilter{States: []string{"Ongoing", "Bogus"}, MinDuration: -1})
	wantErr(t, "list", err, nil)
	if len(list) != 1 || list[0].ID != "busy" || fmt.Sprint(unknown) != "[Bogus]" {
		t.Fatalf("list ongoing: %+v, unknown %v", list, unknown)
	}
	if list, _, _ = c.List(ListFilter{ProducerIDs: []int64{a.ID}, MinDuration: -1}); len(list) != 1 || list[0].ID != "idle" {
		t.Fatalf("list by producer id: %+v", list)
	}
	if list, _, _ = c.List(ListFilter{States: []string{"Ongoing"}, MinDuration: 500}); len(list) != 0 {
		t.Fatalf("list running longer than 500 ms: %+v", list)
	}
	if list, _, _ = c.List(ListFilter{States: []string{"Ongoing"}, MinDuration: 499}); len(list) != 1 {
		t.Fatalf("list running longer than 499 ms: %+v", list)
	}

	f.now.Add(time.Hour.Milliseconds())
	c.ExpireIDs()
	if _, err := c.Describe("idle"); !errors.Is(err, kerr.TransactionalIDNotFound) {
		t.Fatalf("expired id: %v", err)
	}
	if _, err := c.Describe("busy"); err != nil {
		t.Fatalf("an id with a transaction under way expired: %v", err)
	}
	c.Close()
	c2 := f.start(t, 2)
	if _, err := c2.Describe("idle"); !errors.Is(err, kerr.TransactionalIDNotFound) {
		t.Fatalf("expired id after a reload: %v", err)
	}
	if d, err := c2.Describe("busy"); err != nil || d.State != Ongoing || d.ProducerID != b.ID {
		t.Fatalf("reloaded: %+v, %v", d, err)
	}
}

// A failed write leaves the state as it was and tells the client what
// Kafka does.
func TestFailedWriteChangesNothing(t *testing.T) {
	f := newFixture()
	c := f.start(t, 1)
	ctx := context.Background()
	pe, _ := c.InitProducerID(ctx, "tx", 10000, nil)
	f.log.mu.Lock()
	f.log.fail = kerr.NotEnoughReplicas
	f.log.mu.Unlock()
	wantErr(t, "add", c.AddPartitions(ctx, "tx", pe.ID, pe.Epoch, []TopicPartition{{"a", 0}}, TV1), kerr.CoordinatorNotAvailable)
	if d, _ := c.Describe("tx"); d.State != Empty {
		t.Fatalf("state %v after a failed write", d.State)
	}
	_, err := c.InitProducerID(ctx, "new", 10000, nil)
	wantErr(t, "init", err, kerr.CoordinatorNotAvailable)
	if _, err := c.Describe("new"); !errors.Is(err, kerr.TransactionalIDNotFound) {
		t.Fatalf("an id whose first write failed: %v", err)
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	m := &txnMeta{id: "x", pid: 5, prevPid: 3, epoch: 9, timeoutMs: 60000, state: Ongoing, startMs: 100, updateMs: 200,
		partitions: map[TopicPartition]struct{}{{"b", 2}: {}, {"a", 1}: {}, {"a", 0}: {}}}
	id, ok, err := parseKey(recordKey("x"))
	if err != nil || !ok || id != "x" {
		t.Fatalf("key: %q %v %v", id, ok, err)
	}
	got, err := parseValue("x", recordValue(m))
	if err != nil {
		t.Fatal(err)
	}
	if got.pid != 5 || got.prevPid != 3 || got.epoch != 9 || got.timeoutMs != 60000 || got.state != Ongoing ||
		got.startMs != 100 || got.updateMs != 200 || fmt.Sprint(got.sortedPartitions()) != fmt.Sprint(m.sortedPartitions()) {
		t.Fatalf("round trip: %+v", got)
	}
	if _, err := parseValue("x", []byte{0, 1, 2}); err == nil {
		t.Fatal("a truncated value parsed")
	}
}

// endV1 is EndTxn as a client of transactions version 1 sends it.
func endV1(c *Coordinator, ctx context.Context, id string, pid int64, epoch int16, commit bool) error {
	_, err := c.EndTxn(ctx, id, pid, epoch, commit, TV1)
	return err
}

// Transactions version 2 (KIP-890 part 2): every end bumps the epoch, the
// markers carry the bumped epoch, a retry (the epoch before the bump) gets
// the same answer, the old epoch is fenced, an abort with nothing ongoing
// bumps too, and the epoch's overflow moves the producer to a new id.
func TestTV2EndBumpsEpoch(t *testing.T) {
	f := newFixture()
	c := f.start(t, 3)
	ctx := context.Background()
	pe, err := c.InitProducerID(ctx, "tx", 10000, nil)
	wantErr(t, "init", err, nil)
	tp := TopicPartition{"a", 0}
	wantErr(t, "implicit add", c.AddPartitions(ctx, "tx", pe.ID, pe.Epoch, []TopicPartition{tp}, TV2), nil)
	next, err := c.EndTxn(ctx, "tx", pe.ID, pe.Epoch, true, TV2)
	wantErr(t, "commit", err, nil)
	if next != (ProducerIDEpoch{pe.ID, pe.Epoch + 1}) {
		t.Fatalf("commit answered %+v, want epoch %d", next, pe.Epoch+1)
	}
	waitState(t, c, "tx", CompleteCommit)
	ms := f.markers.all()
	if len(ms) != 1 || ms[0].ProducerEpoch != pe.Epoch+1 || ms[0].TransactionVersion != TV2 {
		t.Fatalf("markers %+v, want one at epoch %d of TV2", ms, pe.Epoch+1)
	}
	retried, err := c.EndTxn(ctx, "tx", pe.ID, pe.Epoch, true, TV2)
	wantErr(t, "commit retried", err, nil)
	if retried != next {
		t.Fatalf("retried commit answered %+v, want %+v", retried, next)
	}
	wantErr(t, "abort of the committed transaction, late", second(c.EndTxn(ctx, "tx", pe.ID, pe.Epoch, false, TV2)), kerr.InvalidTxnState)
	wantErr(t, "add with the old epoch", c.AddPartitions(ctx, "tx", pe.ID, pe.Epoch, []TopicPartition{tp}, TV2), kerr.ProducerFenced)
	wantErr(t, "commit of nothing", second(c.EndTxn(ctx, "tx", next.ID, next.Epoch, true, TV2)), kerr.InvalidTxnState)

	// An abort with nothing ongoing: an empty transaction, epoch bumped.
	empty, err := c.EndTxn(ctx, "tx", next.ID, next.Epoch, false, TV2)
	wantErr(t, "empty abort", err, nil)
	if empty != (ProducerIDEpoch{pe.ID, next.Epoch + 1}) {
		t.Fatalf("empty abort answered %+v", empty)
	}
	waitState(t, c, "tx", CompleteAbort)
	if n := len(f.markers.all()); n != 1 {
		t.Fatalf("the empty abort sent markers: %d in all", n)
	}

	// The epochs used up: the end takes a new producer id, which the
	// producer is told and which the state holds once complete.
	s, _ := c.shardFor("tx")
	s.mu.Lock()
	s.txns["tx"].epoch = maxEpoch
	s.mu.Unlock()
	wantErr(t, "add at the last epoch", c.AddPartitions(ctx, "tx", pe.ID, maxEpoch, []TopicPartition{tp}, TV2), nil)
	rot, err := c.EndTxn(ctx, "tx", pe.ID, maxEpoch, false, TV2)
	wantErr(t, "abort at the last epoch", err, nil)
	if rot.ID == pe.ID || rot.Epoch != 0 {
		t.Fatalf("abort at the last epoch answered %+v, want a new id at epoch 0", rot)
	}
	d := waitState(t, c, "tx", CompleteAbort)
	if d.ProducerID != rot.ID || d.ProducerEpoch != 0 {
		t.Fatalf("state after the rotation %+v, want %+v", d, rot)
	}
	ms = f.markers.all()
	if last := ms[len(ms)-1]; last.ProducerID != pe.ID || last.ProducerEpoch != maxEpoch+1 {
		t.Fatalf("marker of the rotation %+v, want the old id at the top epoch", last)
	}
	again, err := c.EndTxn(ctx, "tx", pe.ID, maxEpoch, false, TV2)
	wantErr(t, "abort at the last epoch retried", err, nil)
	if again != rot {
		t.Fatalf("retried abort answered %+v, want %+v", again, rot)
	}
	// The state survives a reload with the rotation done.
	c.Close()
	c2 := f.start(t, 4)
	d2, err := c2.Describe("tx")
	wantErr(t, "describe after reload", err, nil)
	if d2.ProducerID != rot.ID || d2.ProducerEpoch != 0 || d2.State != CompleteAbort {
		t.Fatalf("reloaded %+v", d2)
	}
}

func second[T any](_ T, err error) error { return err }

// TestStaleShardAppendRefused: a shard whose write was under way when the
// partition's leadership moved away and back (epoch 1; another coordinator
// at 2 fences the producer; this broker again at 3) must not append it:
// the state it writes is from before the fence, and the next coordinator
// to load the log would have the fenced producer's transaction back.
func TestStaleShardAppendRefused(t *testing.T) {
	f := newFixture()
	c := f.start(t, 1)
	ctx := context.Background()
	a, err := c.InitProducerID(ctx, "tx", 10000, nil)
	wantErr(t, "init", err, nil)

	// The producer adds a partition; the writer is held before its append.
	f.log.mu.Lock()
	f.log.hold, f.log.entered = make(chan struct{}), make(chan struct{}, 1)
	hold := f.log.hold
	f.log.mu.Unlock()
	stale := make(chan error, 1)
	go func() { stale <- c.AddPartitions(ctx, "tx", a.ID, a.Epoch, []TopicPartition{{"t", 0}}, TV1) }()
	<-f.log.entered
	f.log.mu.Lock()
	f.log.hold = nil
	f.log.mu.Unlock()

	// Leadership moves away: the coordinator at epoch 2 fences the
	// producer (a new instance's InitProducerID); it comes back under 3.
	c.SetOwned(nil)
	other := f.start(t, 2)
	b, err := other.InitProducerID(ctx, "tx", 10000, nil)
	wantErr(t, "init at the other coordinator", err, nil)
	other.Close()
	c.SetOwned(map[int32]int32{0: 3, 1: 3, 2: 3, 3: 3})
	waitState(t, c, "tx", Empty)

	close(hold)
	wantErr(t, "the stale shard's add", <-stale, kerr.NotCoordinator)
	// The log says what the coordinator says: the producer fenced, no
	// transaction under way.
	next := f.start(t, 4)
	d := waitState(t, next, "tx", Empty)
	if d.ProducerEpoch != b.Epoch || len(d.Partitions) != 0 {
		t.Fatalf("loaded from the log: %+v, want epoch %d and no partitions (the stale shard's write was appended)", d, b.Epoch)
	}
}
