package groups

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/poll"
)

// memLog is an in-memory __consumer_offsets.
type memLog struct {
	mu    sync.Mutex
	parts map[int32][]LogRecord
	gate  chan struct{} // when set, Replay waits for it to close
	// hold, when set, keeps each Append waiting until it closes (the
	// writer taken off the core between taking its write and appending
	// it); entered is told of each Append that waits.
	hold    chan struct{}
	entered chan struct{}
	// epochs is, by partition, the newest leader epoch appended in: as a
	// broker's log records its leaders' epochs, an append in an older one
	// is refused.
	epochs map[int32]int32
}

func newMemLog() *memLog { return &memLog{parts: map[int32][]LogRecord{}, epochs: map[int32]int32{}} }

func (l *memLog) Append(ctx context.Context, p, leaderEpoch int32, recs []Record) error {
	return l.AppendTxn(ctx, p, leaderEpoch, -1, -1, recs)
}

func (l *memLog) AppendTxn(ctx context.Context, p, leaderEpoch int32, pid int64, _ int16, recs []Record) error {
	l.mu.Lock()
	hold, entered := l.hold, l.entered
	l.mu.Unlock()
	if hold != nil {
		entered <- struct{}{}
		<-hold
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if leaderEpoch < l.epochs[p] {
		return kerr.FencedLeaderEpoch
	}
	l.epochs[p] = leaderEpoch
	for _, r := range recs {
		l.parts[p] = append(l.parts[p], LogRecord{Key: r.Key, Value: r.Value, ProducerID: pid})
	}
	// As the broker's: the append lands, and a writer whose context ended
	// meanwhile is told so (its wait for the high watermark ends).
	return ctx.Err()
}

// marker appends a transaction marker of pid.
func (l *memLog) marker(p int32, pid int64, commit bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parts[p] = append(l.parts[p], LogRecord{ProducerID: pid, Control: true, Commit: commit})
}

func (l *memLog) Replay(ctx context.Context, p int32, fn func(LogRecord)) error {
	l.mu.Lock()
	gate := l.gate
	l.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	recs := append([]LogRecord(nil), l.parts[p]...)
	l.mu.Unlock()
	for _, r := range recs {
		fn(r)
	}
	return nil
}

func (l *memLog) records(p int32) []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Record
	for _, r := range l.parts[p] {
		if !r.Control {
			out = append(out, Record{Key: r.Key, Value: r.Value})
		}
	}
	return out
}

func testConfig(l Log) Config {
	return Config{
		Log:               l,
		Partitions:        4,
		MinSessionTimeout: 10 * time.Millisecond,
		MaxSessionTimeout: time.Minute,
		OffsetsRetention:  time.Hour,
	}
}

// ownAll makes c own every partition and waits until they are loaded.
func ownAll(t *testing.T, c *Coordinator) {
	t.Helper()
	c.SetOwned(map[int32]int32{0: 0, 1: 0, 2: 0, 3: 0})
	poll.Eventually(t, 10*time.Second, func() error {
		if _, err := c.shardFor("x"); err != nil {
			return err
		}
		if s, loading := c.activeShards(); loading || len(s) != 4 {
			return fmt.Errorf("%d shards active, loading %v", len(s), loading)
		}
		return nil
	})
}

func simpleCommit(c *Coordinator, group, topic string, p int32, off int64) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = p, off, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.OffsetCommit(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}

func fetchOffset(c *Coordinator, group, topic string, p int32) (int64, int16) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	resp := c.OffsetFetch(req)
	if resp.ErrorCode != 0 {
		return -1, resp.ErrorCode
	}
	return resp.Topics[0].Partitions[0].Offset, 0
}

// joinAndSync makes one member join and sync; it returns its member id and
// generation.
func joinAndSync(t *testing.T, c *Coordinator, group string, session time.Duration) (string, int32) {
	t.Helper()
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Version = 3 // before KIP-394: no MEMBER_ID_REQUIRED round trip
	jr.Group, jr.ProtocolType = group, "consumer"
	jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis = int32(session/time.Millisecond), 1000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{1}
	jr.Protocols = append(jr.Protocols, p)
	resp := c.JoinGroup(context.Background(), Client{ID: "c", Host: "/127.0.0.1"}, jr)
	if resp.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	sr := kmsg.NewPtrSyncGroupRequest()
	sr.Group, sr.MemberID, sr.Generation = group, resp.MemberID, resp.Generation
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = resp.MemberID, []byte("a")
	sr.GroupAssignment = append(sr.GroupAssignment, a)
	if s := c.SyncGroup(context.Background(), sr); s.ErrorCode != 0 || string(s.MemberAssignment) != "a" {
		t.Fatalf("sync: %v %q", kerr.ErrorForCode(s.ErrorCode), s.MemberAssignment)
	}
	return resp.MemberID, resp.Generation
}

func describeState(c *Coordinator, group string) string {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{group}
	return c.DescribeGroups(req).Groups[0].State
}

func TestNotCoordinatorUntilOwnedAndLoaded(t *testing.T) {
	l := newMemLog()
	l.gate = make(chan struct{})
	c := New(testConfig(l))
	defer c.Close()
	if code := simpleCommit(c, "g", "t", 0, 1); code != kerr.NotCoordinator.Code {
		t.Fatalf("commit before SetOwned: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	c.SetOwned(map[int32]int32{0: 0, 1: 0, 2: 0, 3: 0})
	if code := simpleCommit(c, "g", "t", 0, 1); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("commit while loading: %v, want COORDINATOR_LOAD_IN_PROGRESS", kerr.ErrorForCode(code))
	}
	if err := c.heartbeat(kmsgHeartbeat("g")); err != nil {
		t.Fatalf("heartbeat while loading: %v, want none (Kafka keeps the session)", err)
	}
	close(l.gate)
	ownAll(t, c)
	if code := simpleCommit(c, "g", "t", 0, 1); code != 0 {
		t.Fatalf("commit once loaded: %v", kerr.ErrorForCode(code))
	}
	// Losing the partition unloads it.
	c.SetOwned(nil)
	if _, code := fetchOffset(c, "g", "t", 0); code != kerr.NotCoordinator.Code {
		t.Fatalf("fetch after losing the partition: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
}

func kmsgHeartbeat(group string) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID = group, "m"
	return req
}

// TestReloadFromLog: a new coordinator over the same log has the offsets,
// the group with its member (whose session then runs out, emptying the
// group), and not the groups that were deleted.
func TestReloadFromLog(t *testing.T) {
	l := newMemLog()
	c := New(testConfig(l))
	ownAll(t, c)
	if code := simpleCommit(c, "simple", "t", 2, 17); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	member, gen := joinAndSync(t, c, "real", 300*time.Millisecond)
	if code := simpleCommit(c, "gone", "t", 0, 5); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	dr := kmsg.NewPtrDeleteGroupsRequest()
	dr.Groups = []string{"gone"}
	if r := c.DeleteGroups(context.Background(), dr); r.Groups[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	c.Close()

	c2 := New(testConfig(l))
	defer c2.Close()
	ownAll(t, c2)
	if off, code := fetchOffset(c2, "simple", "t", 2); code != 0 || off != 17 {
		t.Errorf("reloaded offset %d (%v), want 17", off, kerr.ErrorForCode(code))
	}
	if off, _ := fetchOffset(c2, "gone", "t", 0); off != -1 {
		t.Errorf("deleted group's offset reloaded: %d", off)
	}
	if st := describeState(c2, "gone"); st != "Dead" {
		t.Errorf("deleted group is %s after reload", st)
	}
	if st := describeState(c2, "real"); st != "Stable" {
		t.Errorf("reloaded group is %s, want Stable", st)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "real", member, gen
	if r := c2.Heartbeat(hb); r.ErrorCode != 0 {
		t.Errorf("heartbeat of the reloaded member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// Without further heartbeats its session (300 ms) expires.
	poll.Eventually(t, 10*time.Second, func() error {
		if st := describeState(c2, "real"); st != "Empty" {
			return fmt.Errorf("group %s, want Empty after the session timeout", st)
		}
		return nil
	})
}

// TestOffsetExpiry: offsets of an offsets-only group expire
// offsets.retention.minutes after their commit, and the empty group with
// them; tombstones are written for both.
func TestOffsetExpiry(t *testing.T) {
	l := newMemLog()
	cfg := testConfig(l)
	cfg.OffsetsRetention = 300 * time.Millisecond
	cfg.RetentionCheckInterval = 20 * time.Millisecond
	c := New(cfg)
	defer c.Close()
	ownAll(t, c)
	if code := simpleCommit(c, "exp", "t", 0, 9); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if off, _ := fetchOffset(c, "exp", "t", 0); off != 9 {
		t.Fatalf("offset %d, want 9", off)
	}
	poll.Eventually(t, 10*time.Second, func() error {
		if off, _ := fetchOffset(c, "exp", "t", 0); off != -1 {
			return fmt.Errorf("offset %d still there", off)
		}
		return nil
	})
	if st := describeState(c, "exp"); st != "Dead" {
		t.Errorf("expired group is %s, want Dead", st)
	}
	p := PartitionFor("exp", 4)
	poll.Eventually(t, 10*time.Second, func() error {
		var offTomb, groupTomb bool
		for _, r := range l.records(p) {
			k, err := parseKey(r.Key)
			if err != nil || k.group != "exp" || r.Value != nil {
				continue
			}
			if k.isOffset {
				offTomb = true
			} else {
				groupTomb = true
			}
		}
		if !offTomb || !groupTomb {
			return fmt.Errorf("tombstones: offset %v group %v", offTomb, groupTomb)
		}
		return nil
	})
}

// TestSessionTimeoutRemovesMember: a member that stops heartbeating is
// removed after its session timeout and the group becomes Empty with a new
// generation.
func TestSessionTimeoutRemovesMember(t *testing.T) {
	c := New(testConfig(newMemLog()))
	defer c.Close()
	ownAll(t, c)
	member, gen := joinAndSync(t, c, "sess", 200*time.Millisecond)
	poll.Eventually(t, 10*time.Second, func() error {
		if st := describeState(c, "sess"); st != "Empty" {
			return fmt.Errorf("group %s", st)
		}
		return nil
	})
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "sess", member, gen
	if r := c.Heartbeat(hb); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("heartbeat after expiry: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestGroupMaxSize: a new member beyond group.max.size is refused.
func TestGroupMaxSize(t *testing.T) {
	cfg := testConfig(newMemLog())
	cfg.MaxSize = 1
	c := New(cfg)
	defer c.Close()
	ownAll(t, c)
	joinAndSync(t, c, "small", time.Minute)
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Version = 3
	jr.Group, jr.ProtocolType = "small", "consumer"
	jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis = 60000, 1000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{1}
	jr.Protocols = append(jr.Protocols, p)
	if r := c.JoinGroup(context.Background(), Client{ID: "c2"}, jr); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("second member of a group of at most 1: %v, want GROUP_MAX_SIZE_REACHED", kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestStaleShardAppendRefused: a shard whose writer took a commit before
// the partition's leadership moved away and back (epoch 1, another
// coordinator at 2 committing meanwhile, this broker again at 3) must not
// append it: the new shard has loaded the log without it, and the
// committed offset would go back at the next load.
func TestStaleShardAppendRefused(t *testing.T) {
	l := newMemLog()
	c := New(testConfig(l))
	defer c.Close()
	owned := func(epoch int32) map[int32]int32 {
		return map[int32]int32{0: epoch, 1: epoch, 2: epoch, 3: epoch}
	}
	waitLoaded := func(c *Coordinator) {
		poll.Eventually(t, 10*time.Second, func() error {
			if s, loading := c.activeShards(); loading || len(s) != 4 {
				return fmt.Errorf("%d shards active, loading %v", len(s), loading)
			}
			return nil
		})
	}
	c.SetOwned(owned(1))
	waitLoaded(c)
	if code := simpleCommit(c, "g", "t", 0, 10); code != 0 {
		t.Fatalf("commit 10: %v", kerr.ErrorForCode(code))
	}

	// The writer takes the commit of 100 and is held before its append.
	l.mu.Lock()
	l.hold, l.entered = make(chan struct{}), make(chan struct{}, 1)
	hold := l.hold
	l.mu.Unlock()
	stale := make(chan int16, 1)
	go func() { stale <- simpleCommit(c, "g", "t", 0, 100) }()
	<-l.entered
	l.mu.Lock()
	l.hold = nil
	l.mu.Unlock()

	// Leadership moves away: another broker's coordinator (epoch 2)
	// commits 200. It comes back under epoch 3.
	c.SetOwned(nil)
	other := New(testConfig(l))
	other.SetOwned(owned(2))
	waitLoaded(other)
	if code := simpleCommit(other, "g", "t", 0, 200); code != 0 {
		t.Fatalf("commit 200 at the other coordinator: %v", kerr.ErrorForCode(code))
	}
	other.Close()
	c.SetOwned(owned(3))
	waitLoaded(c)
	if off, code := fetchOffset(c, "g", "t", 0); code != 0 || off != 200 {
		t.Fatalf("offset after the move back: %d %v, want 200", off, kerr.ErrorForCode(code))
	}

	// The held writer goes on.
	close(hold)
	if code := <-stale; code != kerr.NotCoordinator.Code {
		t.Fatalf("the stale shard's commit: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	if off, code := fetchOffset(c, "g", "t", 0); code != 0 || off != 200 {
		t.Fatalf("offset: %d %v, want 200", off, kerr.ErrorForCode(code))
	}
	// The log says what the coordinator says: the next coordinator to
	// load it has 200, not the stale 100.
	next := New(testConfig(l))
	defer next.Close()
	next.SetOwned(owned(4))
	waitLoaded(next)
	if off, code := fetchOffset(next, "g", "t", 0); code != 0 || off != 200 {
		t.Fatalf("offset loaded from the log: %d %v, want 200 (the stale shard's commit was appended)", off, kerr.ErrorForCode(code))
	}
}
