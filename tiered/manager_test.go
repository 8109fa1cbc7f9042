package tiered

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/poll"
	"github.com/samsa-io/samsa/internal/s3test"
	"github.com/samsa-io/samsa/logstore"
)

// metaStore starts an embedded etcd and opens the controller's store on
// it, with topic "t" (one partition, replicas 1 and 2, led by 1 in epoch
// 0) created.
func metaStore(t *testing.T) (*controller.Store, [16]byte) {
	t.Helper()
	e, err := controller.StartEmbedded(controller.EmbeddedConfig{Dir: filepath.Join(t.TempDir(), "etcd"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := controller.Open(ctx, controller.Config{Endpoints: e.Endpoints(), NodeID: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	id := [16]byte{1, 2, 3}
	if err := s.CreateTopic(ctx, "t", id, [][]int32{{1, 2}}, nil); err != nil {
		t.Fatal(err)
	}
	return s, id
}

// failingStore fails every Put after the first puts ones while failing
// is set.
type failingStore struct {
	ObjectStore
	failing atomic.Bool
	puts    atomic.Int32
}

func (f *failingStore) Put(ctx context.Context, key string, body io.ReadSeeker, size int64) error {
	if f.failing.Load() && f.puts.Add(-1) < 0 {
		return errors.New("injected: 503 SlowDown")
	}
	return f.ObjectStore.Put(ctx, key, body, size)
}

// appendLog appends n batches of 300 bytes to l.
func appendLog(t *testing.T, l *logstore.Log, n int) {
	t.Helper()
	now := time.Now()
	for i := range n {
		b, err := logstore.BuildBatch(0, logstore.CodecNone, []logstore.Record{{Timestamp: now.UnixMilli(), Value: bytes.Repeat([]byte{byte(i)}, 300)}}, -1, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, 0, now); err != nil {
			t.Fatal(err)
		}
	}
	// What passCopies expects copied is what RolledSegments lists before
	// and after the pass: not a segment that a roll here seals meanwhile.
	l.WaitRolled()
}

func newTestLog(t *testing.T, segmentBytes int64) *logstore.Log {
	t.Helper()
	l, err := logstore.Open(t.TempDir(), logstore.Config{SegmentBytes: segmentBytes, SegmentMs: 1 << 40, RetentionMs: -1, RetentionBytes: -1,
		IndexIntervalBytes: 256, MaxMessageBytes: 1 << 20, SegmentIndexBytes: 1 << 20, FlushMessages: 1 << 62, FlushMs: 1 << 62}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// checkContiguous fails unless the segments serve every offset from
// from to end once.
func checkContiguous(t *testing.T, md Metadata, from, end int64) {
	t.Helper()
	at := from
	for _, s := range md.Segments {
		if s.StartOffset != at {
			t.Fatalf("segment %+v starts at %d, want %d (segments %+v)", s, s.StartOffset, at, md.Segments)
		}
		at = s.EndOffset
	}
	if at != end {
		t.Fatalf("segments end at %d, want %d", at, end)
	}
}

// leaderReplica is partition 0 of topic t led here in epoch, with no
// retention.
func leaderReplica(id [16]byte, l *logstore.Log, epoch int32, lso int64) Replica {
	return Replica{Topic: "t", TopicID: id, Log: l, Leader: true, LeaderEpoch: epoch, LastStableOffset: lso,
		RetentionMs: -1, RetentionBytes: -1, LocalRetentionMs: -1, LocalRetentionBytes: -1}
}

// passCopies runs a pass of m and fails unless the remote segments then
// serve every offset from start (the first remote one) to the end of the
// last segment of r's log rolled below its last stable offset (or its
// local start, when local retention left no rolled segment).
func passCopies(t *testing.T, m *Manager, r Replica, start int64) Metadata {
	t.Helper()
	ctx := context.Background()
	// The end of what is rolled below the last stable offset, before the
	// pass (local retention may delete segments) and after it.
	end := int64(0)
	lastRolled := func() {
		end = max(end, r.Log.LocalStartOffset()) // what local retention left: all copied
		if rolled := r.Log.RolledSegments(r.LastStableOffset); len(rolled) > 0 {
			end = max(end, rolled[len(rolled)-1].Next)
		}
	}
	lastRolled()
	m.pass(ctx)
	lastRolled()
	md, err := m.Metadata(ctx, r.TopicID, r.Partition)
	if err != nil {
		t.Fatal(err)
	}
	checkContiguous(t, md, start, end)
	return md
}

// checkNoOrphans fails if the bucket holds an object that no segment of
// md names.
func checkNoOrphans(t *testing.T, s ObjectStore, md Metadata) {
	t.Helper()
	objs, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		named := false
		for _, seg := range md.Segments {
			named = named || strings.Contains(o.Key, seg.ID)
		}
		if !named {
			t.Errorf("orphan object %s", o.Key)
		}
	}
}

// TestManagerLeaderCopies: the leader copies every rolled segment below
// the last stable offset once; a deposed leader writes nothing; the new
// leader, whose segments are cut elsewhere, continues where the metadata
// stands, without a gap or an overlap.
func TestManagerLeaderCopies(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	store := testStore(t, "")
	ctx := context.Background()

	l1 := newTestLog(t, 4096)
	appendLog(t, l1, 40)
	r1 := leaderReplica(id, l1, 0, 30)
	m1 := NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, Replicas: func() []Replica { return []Replica{r1} }})
	md := passCopies(t, m1, r1, 0)
	// A second pass copies nothing again.
	m1.pass(ctx)
	if again, _ := m1.Metadata(ctx, id, 0); len(again.Segments) != len(md.Segments) {
		t.Fatalf("second pass: %d segments, was %d", len(again.Segments), len(md.Segments))
	}
	checkNoOrphans(t, store, md)

	// Broker 2 leads in epoch 1; its log rolled at other offsets.
	tp, err := meta.Topic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	st := tp.Partitions[0]
	st.Leader, st.LeaderEpoch = 2, 1
	if _, err := meta.UpdatePartitionState(ctx, "t", 0, st); err != nil {
		t.Fatal(err)
	}
	r1.LastStableOffset = 40
	m1.pass(ctx) // deposed: fenced
	l2 := newTestLog(t, 5000)
	appendLog(t, l2, 60)
	r2 := leaderReplica(id, l2, 1, 60)
	m2 := NewManager(ManagerConfig{NodeID: 2, Store: store, Meta: meta, Replicas: func() []Replica { return []Replica{r2} }})
	md2 := passCopies(t, m2, r2, 0)
	if md2.Segments[len(md.Segments)-1].ID != md.Segments[len(md.Segments)-1].ID {
		t.Errorf("the old leader's segments changed: %+v", md2.Segments)
	}
	for _, s := range md2.Segments[len(md.Segments):] {
		if s.LeaderEpoch != 1 {
			t.Errorf("segment %+v copied by epoch %d", s, s.LeaderEpoch)
		}
	}
	checkNoOrphans(t, store, md2)
}

// TestManagerUploadFails: an upload that fails half way leaves its
// segment in Copying; the next pass deletes what it wrote and copies the
// segment again, leaving no orphan object, not even one a delayed PUT
// of the failed upload writes after that.
func TestManagerUploadFails(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	store := &failingStore{ObjectStore: testStore(t, "")}
	ctx := context.Background()
	l := newTestLog(t, 4096)
	appendLog(t, l, 20)
	r := leaderReplica(id, l, 0, 20)
	m := NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, Replicas: func() []Replica { return []Replica{r} }})
	m.sweepEvery = 0
	// The first segment's log and index go, then every put fails.
	store.puts.Store(2)
	store.failing.Store(true)
	m.pass(ctx)
	md, _ := m.Metadata(ctx, id, 0)
	if len(md.Segments) != 0 || len(md.Copying) != 1 {
		t.Fatalf("after a failed upload: %+v", md)
	}
	left := md.Copying[0]
	store.failing.Store(false)
	md = passCopies(t, m, r, 0)
	if len(md.Copying) != 0 {
		t.Fatalf("copying left: %+v", md.Copying)
	}
	checkNoOrphans(t, store, md)

	// A PUT of the copy given up on, delayed in the network, lands after
	// its segment's objects were deleted: a later pass sweeps it.
	late := left.Key(r.objects(), "index")
	if err := store.Put(ctx, late, strings.NewReader("late"), 4); err != nil {
		t.Fatal(err)
	}
	m.pass(ctx)
	md, _ = m.Metadata(ctx, id, 0)
	checkNoOrphans(t, store, md)
}

// localRetentionLeader is a log of a tiered topic, n batches in segments
// of 4 KiB, and partition 0 of topic t led here in epoch 0 with every
// batch stable and local.retention.bytes 0.
func localRetentionLeader(t *testing.T, id [16]byte, n int) (*logstore.Log, Replica) {
	t.Helper()
	l := newTestLog(t, 4096)
	l.SetConfig(logstore.Config{SegmentBytes: 4096, SegmentMs: 1 << 40, RetentionMs: -1, RetentionBytes: -1, IndexIntervalBytes: 256,
		MaxMessageBytes: 1 << 20, SegmentIndexBytes: 1 << 20, FlushMessages: 1 << 62, FlushMs: 1 << 62, RemoteStorage: true})
	appendLog(t, l, n)
	r := leaderReplica(id, l, 0, int64(n))
	r.LocalRetentionBytes = 0
	return l, r
}

// TestManagerRetention: local retention deletes only copied segments and
// keeps the log start; retention.bytes over the whole log, DeleteRecords
// and retention.ms delete the oldest remote segments with their objects,
// moving the log start past them; the copy never starts over.
func TestManagerRetention(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	store := testStore(t, "")
	l, r := localRetentionLeader(t, id, 60)
	m := NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, Replicas: func() []Replica { return []Replica{r} }})
	md := passCopies(t, m, r, 0)
	if l.StartOffset() != 0 || l.LocalStartOffset() != md.CopiedEnd() {
		t.Fatalf("local retention: start %d, local start %d, copied to %d", l.StartOffset(), l.LocalStartOffset(), md.CopiedEnd())
	}

	// retention.bytes: the whole log (remote, and local not copied) in
	// at most the remote segments' size less the first two.
	r.RetentionBytes = md.Size() + l.SizeFrom(md.CopiedEnd()) - md.Segments[0].LogSize() - md.Segments[1].LogSize()
	md = passCopies(t, m, r, md.Segments[2].StartOffset)
	if l.StartOffset() != md.Segments[0].StartOffset {
		t.Fatalf("log start %d, first remote segment %+v", l.StartOffset(), md.Segments[0])
	}
	checkNoOrphans(t, store, md)

	// DeleteRecords past the next segment: it goes at the next pass.
	r.RetentionBytes = -1
	if _, err := l.DeleteRecordsBefore(md.Segments[1].StartOffset + 1); err != nil {
		t.Fatal(err)
	}
	md = passCopies(t, m, r, md.Segments[1].StartOffset)

	// retention.ms: every remote segment expires; nothing is copied again.
	r.RetentionMs = 1000
	m.now = func() time.Time { return time.Now().Add(time.Hour) }
	m.pass(context.Background())
	md, _ = m.Metadata(context.Background(), id, 0)
	if len(md.Segments) != 0 || md.CopiedEnd() != l.LocalStartOffset() || l.StartOffset() != md.CopiedEnd() {
		t.Fatalf("after retention.ms: %+v, log start %d, local start %d", md, l.StartOffset(), l.LocalStartOffset())
	}
	checkNoOrphans(t, store, md)
}

// TestManagerHungPartitionHoldsUpNoOther: the store hangs every request
// for one partition's objects (for longer than the test waits: its calls
// time out after a minute). The other partition's segments are still
// copied meanwhile, each replica's pass running on a worker of its own;
// once the store answers again the stuck copy completes.
func TestManagerHungPartitionHoldsUpNoOther(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	ctx := context.Background()
	hungID := [16]byte{4, 5, 6}
	if err := meta.CreateTopic(ctx, "u", hungID, [][]int32{{1, 2}}, nil); err != nil {
		t.Fatal(err)
	}
	st := s3test.Start(t, "tiered")
	fault := st.Faulty(t)
	store := storeOf(t, fault.TieredProps(
		"rsm.config.storage.s3.api.call.attempt.timeout", "60000", "rsm.config.storage.s3.api.call.timeout", "120000"))
	hung := Replica{Topic: "u", TopicID: hungID}.objects().topicPrefix()
	fault.SetFor(s3test.Hang, func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/"+hung) })

	lt, lu := newTestLog(t, 4096), newTestLog(t, 4096)
	appendLog(t, lt, 20)
	appendLog(t, lu, 20)
	rt := leaderReplica(id, lt, 0, 20)
	ru := leaderReplica(hungID, lu, 0, 20)
	ru.Topic = "u"
	m := NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, Interval: 50 * time.Millisecond,
		Replicas: func() []Replica { return []Replica{ru, rt} }})
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); m.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-ran })

	rolledEnd := func(l *logstore.Log) int64 {
		rolled := l.RolledSegments(20)
		return rolled[len(rolled)-1].Next
	}
	poll.Eventually(t, 20*time.Second, func() error {
		if len(fault.Held()) == 0 {
			return errors.New("no request for u-0 hangs yet")
		}
		if md, _ := m.Metadata(ctx, id, 0); md.CopiedEnd() < rolledEnd(lt) {
			return fmt.Errorf("t-0 copied to %d of %d while u-0 hangs (held: %v)", md.CopiedEnd(), rolledEnd(lt), fault.Held())
		}
		return nil
	})
	if md, _ := m.Metadata(ctx, hungID, 0); len(md.Segments) != 0 {
		t.Fatalf("u-0 copied while its store hangs: %+v", md.Segments)
	}
	fault.Set(s3test.Pass)
	poll.Eventually(t, 30*time.Second, func() error {
		if md, _ := m.Metadata(ctx, hungID, 0); md.CopiedEnd() < rolledEnd(lu) || len(md.Copying) > 0 {
			return fmt.Errorf("u-0 copied to %d of %d, %d copying", md.CopiedEnd(), rolledEnd(lu), len(md.Copying))
		}
		return nil
	})
	md, _ := m.Metadata(ctx, hungID, 0)
	checkContiguous(t, md, 0, rolledEnd(lu))
}

// TestManagerLocalRetentionDuringPass: with local.retention.bytes 0, a
// pass copying many rolled segments deletes each one locally as soon as
// its copy is recorded, not at the pass's end; no segment goes before the
// metadata records its copy.
func TestManagerLocalRetentionDuringPass(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	store := testStore(t, "")
	l, r := localRetentionLeader(t, id, 80)
	var m *Manager
	// The local start at each copy (before its copy is recorded), and any
	// copy found deleted locally before the metadata recorded it.
	var starts []int64
	var early []string
	m = NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, Replicas: func() []Replica { return []Replica{r} },
		Observe: func(_ string, op Op, _ int64, _ bool) {
			if op != OpCopy {
				return
			}
			md, _ := m.Cached(id, 0)
			if local := l.LocalStartOffset(); local > md.CopiedEnd() {
				early = append(early, fmt.Sprintf("local start %d above the copy's end %d", local, md.CopiedEnd()))
			}
			starts = append(starts, l.LocalStartOffset())
		}})
	md := passCopies(t, m, r, 0)
	if len(early) > 0 {
		t.Fatalf("segments deleted before their copy was recorded: %v", early)
	}
	if len(md.Segments) < 5 || len(starts) != len(md.Segments) {
		t.Fatalf("%d segments copied, %d copies observed", len(md.Segments), len(starts))
	}
	// At the copy of segment i every segment before it is gone.
	for i, s := range md.Segments {
		if starts[i] != s.BaseOffset {
			t.Fatalf("at the copy of segment %d (base %d) the local log starts at %d (all: %v)", i, s.BaseOffset, starts[i], starts)
		}
	}
}

// TestManagerRollsOncePerRetentionCheck: local retention rolls a
// partition's active segment past it (so that an idle partition ends up
// all remote) at the first pass of each log.retention.check.interval.ms,
// as Kafka's retention check does, not at every pass of the copier.
func TestManagerRollsOncePerRetentionCheck(t *testing.T) {
	t.Parallel()
	meta, id := metaStore(t)
	store := testStore(t, "")
	l, r := localRetentionLeader(t, id, 30)
	r.RollUpTo = l.EndOffset()
	m := NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, RollEvery: time.Hour, Replicas: func() []Replica { return []Replica{r} }})
	now := time.Now()
	m.now = func() time.Time { return now }
	ctx := context.Background()
	pass := func() (rolled []logstore.SegmentRange, copied int64) {
		m.pass(ctx)
		l.WaitRolled()
		md, err := m.Metadata(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		return l.RolledSegments(l.EndOffset()), md.CopiedEnd()
	}
	// The first check: the rolled segments are copied and deleted, and
	// the active one rolls; the next pass copies and deletes it.
	pass()
	if rolled, copied := pass(); len(rolled) != 0 || copied != 30 || l.LocalStartOffset() != 30 {
		t.Fatalf("after the first check: rolled %v, copied to %d, local start %d; want all 30 remote", rolled, copied, l.LocalStartOffset())
	}
	// Within the hour the new records stay in the active segment.
	appendLog(t, l, 3)
	r.RollUpTo, r.LastStableOffset = l.EndOffset(), l.EndOffset()
	if rolled, copied := pass(); len(rolled) != 0 || copied != 30 {
		t.Fatalf("a pass within the check interval: rolled %v, copied to %d; want the active segment kept", rolled, copied)
	}
	// The next check rolls it, and the pass after copies it.
	now = now.Add(time.Hour)
	if rolled, _ := pass(); len(rolled) != 1 || rolled[0].Base != 30 || rolled[0].Next != 33 {
		t.Fatalf("at the next check: rolled %v, want [30, 33)", rolled)
	}
	if _, copied := pass(); copied != 33 {
		t.Fatalf("copied to %d after the roll, want 33", copied)
	}
}
