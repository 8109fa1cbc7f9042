package replication

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/protocol"
)

// Config configures a Manager.
type Config struct {
	// NodeID is this broker's id, sent as the replica id of its fetches.
	NodeID int32
	// BrokerEpoch returns this broker's current registration epoch.
	BrokerEpoch func() int64
	// Resolve returns the address of a broker's replication listener.
	Resolve func(id int32) (string, bool)
	// PartitionMaxBytes is replica.fetch.max.bytes; MaxBytes
	// replica.fetch.response.max.bytes; MinBytes and MaxWait
	// replica.fetch.min.bytes and replica.fetch.wait.max.ms.
	PartitionMaxBytes, MaxBytes, MinBytes int32
	MaxWait                               time.Duration
	// Backoff is the pause after a failed fetch (replica.fetch.backoff.ms).
	Backoff time.Duration
	// Timeout bounds one request beyond MaxWait (replica.socket.timeout.ms).
	Timeout time.Duration
	// Dial, when set, opens the connections to leaders instead of a
	// net.Dialer. A test seam: tests pass one that can cut links.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnAppend, when set, is told the bytes of each batch run a fetcher
	// appended (the broker's ReplicationBytesIn metric). It must not block.
	OnAppend func(bytes int)
	// FollowerThrottle, when set, reports follower.replication.throttled.rate
	// and whether follower.replication.throttled.replicas names this
	// broker's replica of the partition. A throttled replica that has not
	// caught up (Kafka's isReplicaInSync) is fetched within the rate, all
	// of them sharing the Manager's budget, and left out of a fetch while
	// it is spent. It must not call back into the Manager.
	FollowerThrottle func(topic string, partition int32) (rate int64, throttled bool)
	Logger           *slog.Logger
}

func (c *Config) setDefaults() {
	if c.PartitionMaxBytes <= 0 {
		c.PartitionMaxBytes = 1 << 20
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 10 << 20
	}
	if c.MinBytes <= 0 {
		c.MinBytes = 1
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 500 * time.Millisecond
	}
	if c.Backoff <= 0 {
		c.Backoff = 100 * time.Millisecond
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.BrokerEpoch == nil {
		c.BrokerEpoch = func() int64 { return -1 }
	}
}

// Replica is one partition this broker follows.
type Replica struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
	Log       *logstore.Log
	// OnFetched is called after each fetch answered for this partition
	// with the leader's high watermark, capped at the local log end offset.
	// It must not call back into the Manager.
	OnFetched func(hw int64)
	// OnTruncated is called after the fetcher cut a divergent tail, with
	// the new log end offset. It must not call back into the Manager.
	OnTruncated func(end int64)
	// OnMovedToTiered rebuilds the log from the remote log (tiered
	// storage) when the leader answered OFFSET_MOVED_TO_TIERED_STORAGE,
	// with the leader's log start offset (-1 unknown): the log restarts
	// where the remote copy ends, as Kafka's follower rebuilds its
	// state. nil: the fetch is retried after a backoff. It runs on the
	// fetcher's goroutine, outside its lock, and must not call back into
	// the Manager.
	OnMovedToTiered func(ctx context.Context, leaderLogStart int64) error
}

type key struct {
	topic string
	part  int32
}

// Manager runs this broker's fetchers, one per leader broker.
type Manager struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool               // guarded by mu
	fetchers map[int32]*fetcher // guarded by mu; by leader id
	owner    map[key]int32      // guarded by mu; the leader each partition is fetched from

	throttle Throttle // the follower side of the replication quota
}

// NewManager returns a Manager; Close stops it.
func NewManager(cfg Config) *Manager {
	cfg.setDefaults()
	m := &Manager{cfg: cfg, fetchers: map[int32]*fetcher{}, owner: map[key]int32{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// Follow makes this broker fetch r from leader in leaderEpoch. A divergent
// tail is cut where the leader's first fetch answer says (DivergingEpoch),
// or after an OffsetForLeaderEpoch when the leader knows none of our
// epochs; the same leader and epoch again changes nothing.
func (m *Manager) Follow(r *Replica, leader, leaderEpoch int32) {
	k := key{r.Topic, r.Partition}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if old, ok := m.owner[k]; ok && old != leader {
		m.fetchers[old].remove(k)
	}
	f := m.fetchers[leader]
	if f == nil {
		f = &fetcher{m: m, leader: leader, parts: map[key]*followed{}, wake: make(chan struct{}, 1)}
		m.fetchers[leader] = f
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			f.run(m.ctx)
		}()
	}
	m.owner[k] = leader
	f.add(k, r, leaderEpoch)
}

// Unfollow stops fetching a partition; it returns once no append of the
// fetcher to its log is in flight, so the caller may then lead it or
// close it.
func (m *Manager) Unfollow(topic string, partition int32) {
	k := key{topic, partition}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.owner[k]; ok {
		m.fetchers[old].remove(k)
		delete(m.owner, k)
	}
}

// Close stops every fetcher and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// Position is where a follower stands in one partition.
type Position struct {
	Topic                 string
	Partition             int32
	LeaderEpoch           int32
	LogEnd, HighWatermark int64
}

// Positions is where this broker stands in each partition it fetches from
// leader: the leader epoch it follows, its log end and the leader's high
// watermark in the last fetch answered (-1 when none was).
func (m *Manager) Positions(leader int32) []Position {
	m.mu.Lock()
	f := m.fetchers[leader]
	m.mu.Unlock()
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Position, 0, len(f.parts))
	for k, fp := range f.parts {
		hw := fp.hw
		if fp.truncate {
			hw = -1
		}
		out = append(out, Position{Topic: k.topic, Partition: k.part, LeaderEpoch: fp.epoch,
			LogEnd: fp.r.Log.EndOffset(), HighWatermark: hw})
	}
	return out
}

// followed is one partition of a fetcher.
type followed struct {
	r         *Replica
	epoch     int32
	truncate  bool      // OffsetForLeaderEpoch pending (the leader could not place our last epoch)
	tiered    bool      // OFFSET_MOVED_TO_TIERED_STORAGE: the log is rebuilt from the remote log first
	logStart  int64     // the leader's log start offset with it
	retryAt   time.Time // after an error, the next attempt
	hw        int64     // the leader's high watermark in the last fetch it answered; -1: none
	throttled bool      // this fetch of it is within the follower throttle
}

type fetcher struct {
	m      *Manager
	leader int32
	wake   chan struct{}

	mu    sync.Mutex // held while a fetched partition's log is written
	parts map[key]*followed

	// used by run only
	conn   net.Conn
	rd     *bufio.Reader
	corr   int32
	buf    []byte
	format *kmsg.RequestFormatter
	warned time.Time
	sess   followerSession
}

// followerSession is this follower's side of its KIP-227 fetch session
// with the leader, as Kafka's FetchSessionHandler: the first request (epoch
// 0) names every partition, later ones only those whose fetch position
// changed and those to forget, and the leader answers only the partitions
// with news. A follower in sync on many partitions then sends and receives
// a few bytes per fetch instead of every partition every time.
type followerSession struct {
	id    int32              // 0: none yet
	epoch int32              // of the next request; 0: a full fetch
	sent  map[key]fetchState // what the leader's session holds
}

// fetchState is what a fetch request tells the leader about one partition.
type fetchState struct {
	topicID     [16]byte
	leaderEpoch int32
	offset      int64
	lastEpoch   int32
	logStart    int64
	maxBytes    int32
}

// reset makes the next fetch a full one that replaces the session (Kafka
// closes the old one and opens a new one on the same id with epoch 0).
func (s *followerSession) reset() {
	s.epoch, s.sent = 0, nil
}

func (f *fetcher) add(k key, r *Replica, epoch int32) {
	f.mu.Lock()
	if cur := f.parts[k]; cur == nil || cur.r != r || cur.epoch != epoch {
		// Fetching at once: the leader checks our last fetched epoch and
		// answers a divergent tail with where it ends (KIP-320), so no
		// OffsetForLeaderEpoch round trip comes first, as Kafka's
		// followers since 2.7 (truncation on fetch).
		f.parts[k] = &followed{r: r, epoch: epoch, hw: -1}
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) remove(k key) {
	f.mu.Lock()
	delete(f.parts, k)
	f.mu.Unlock()
}

func (f *fetcher) snapshot() []*followed {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*followed, 0, len(f.parts))
	for _, fp := range f.parts {
		out = append(out, fp)
	}
	return out
}

// current reports whether fp is still what the fetcher follows for k.
// Caller holds f.mu.
func (f *fetcher) current(k key, fp *followed) bool { return f.parts[k] == fp }

func (f *fetcher) run(ctx context.Context) {
	defer f.closeConn()
	f.format = kmsg.NewRequestFormatter(kmsg.FormatterClientID(fmt.Sprintf("samsa-replica-%d", f.m.cfg.NodeID)))
	for ctx.Err() == nil {
		all := f.snapshot()
		now := time.Now()
		var ready, trunc, tiered []*followed
		next := time.Time{}
		f.mu.Lock()
		for _, fp := range all {
			if now.Before(fp.retryAt) {
				if next.IsZero() || fp.retryAt.Before(next) {
					next = fp.retryAt
				}
				continue
			}
			if fp.tiered {
				tiered = append(tiered, fp)
			} else if fp.truncate {
				trunc = append(trunc, fp)
			} else {
				ready = append(ready, fp)
			}
		}
		f.mu.Unlock()
		if len(tiered) > 0 {
			f.rebuildFromRemote(ctx, tiered)
			continue
		}
		if len(ready) == 0 && len(trunc) == 0 {
			if len(all) == 0 {
				f.closeConn()
			}
			wait := time.Hour
			if !next.IsZero() {
				wait = time.Until(next)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-f.wake:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		var err error
		if err = f.dial(ctx); err == nil {
			if len(trunc) > 0 {
				err = f.truncate(ctx, trunc)
			} else {
				err = f.fetch(ctx, ready)
			}
		}
		if err != nil {
			f.closeConn()
			if ctx.Err() != nil {
				return
			}
			if time.Since(f.warned) > 10*time.Second {
				f.m.cfg.Logger.Warn("replica fetcher: request to leader failed", "leader", f.leader, "err", err)
				f.warned = time.Now()
			}
			t := time.NewTimer(f.m.cfg.Backoff)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

func (f *fetcher) dial(ctx context.Context) error {
	if f.conn != nil {
		return nil
	}
	addr, ok := f.m.cfg.Resolve(f.leader)
	if !ok {
		return fmt.Errorf("broker %d not registered", f.leader)
	}
	// A dial into a partition waits out SYN retransmissions: give up
	// within the liveness bound and try again.
	dial := (&net.Dialer{}).DialContext
	if f.m.cfg.Dial != nil {
		dial = f.m.cfg.Dial
	}
	dctx, cancel := context.WithTimeout(ctx, min(f.m.cfg.Timeout, livenessTimeout))
	defer cancel()
	c, err := dial(dctx, "tcp", addr)
	if err != nil {
		return err
	}
	f.conn, f.rd = c, bufio.NewReaderSize(c, 64<<10)
	return nil
}

func (f *fetcher) closeConn() {
	f.sess.reset()
	if f.conn != nil {
		f.conn.Close()
		f.conn, f.rd = nil, nil
	}
}

// roundTrip sends req and decodes the answer into resp.
func (f *fetcher) roundTrip(ctx context.Context, req kmsg.Request, resp kmsg.Response, wait time.Duration) error {
	f.corr++
	f.buf = f.format.AppendRequest(f.buf[:0], req, f.corr)
	// The connection as of now: the func may run after roundTrip returned
	// and the fetcher dropped it (f.conn nil).
	conn := f.conn
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	// The leader answers within wait: a connection whose answer has not
	// begun liveness later is dead (packets dropped by a partition), and
	// is dropped now rather than after replica.socket.timeout.ms, so the
	// follower is back in the ISR within seconds of a heal. Once the
	// answer flows, the whole of replica.socket.timeout.ms is allowed.
	liveness := min(f.m.cfg.Timeout, livenessTimeout)
	if err := f.setDeadline(ctx, wait+liveness); err != nil {
		return err
	}
	if _, err := f.conn.Write(f.buf); err != nil {
		return err
	}
	if _, err := f.rd.Peek(4); err != nil {
		return err
	}
	if err := f.setDeadline(ctx, f.m.cfg.Timeout); err != nil {
		return err
	}
	frame, err := protocol.ReadFrame(f.rd, f.buf[:0], f.m.cfg.MaxBytes+(16<<20))
	if err != nil {
		return err
	}
	return protocol.DecodeResponse(frame, req, f.corr, resp)
}

// livenessTimeout bounds how long after its wait a leader's answer may
// take to begin.
const livenessTimeout = 3 * time.Second

// setDeadline sets the connection's deadline d from now, or ctx's when
// sooner; it fails once ctx is done.
func (f *fetcher) setDeadline(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	if cd, ok := ctx.Deadline(); ok && cd.Before(deadline) {
		deadline = cd
	}
	if err := f.conn.SetDeadline(deadline); err != nil {
		return err
	}
	return ctx.Err() // cancelled meanwhile: the deadline set by ctx's AfterFunc may be overridden
}

// rebuildFromRemote restarts the logs of partitions whose leader moved
// their fetch offset to tiered storage, one at a time (the leader is not
// asked: their state comes from the remote log).
func (f *fetcher) rebuildFromRemote(ctx context.Context, parts []*followed) {
	for _, fp := range parts {
		f.mu.Lock()
		logStart := fp.logStart
		f.mu.Unlock()
		err := fp.r.OnMovedToTiered(ctx, logStart)
		f.mu.Lock()
		fp.tiered = false
		if err != nil {
			fp.retryAt = time.Now().Add(f.m.cfg.Backoff)
			f.m.cfg.Logger.Warn("replica fetcher: rebuilding from the remote log failed", "topic", fp.r.Topic, "partition", fp.r.Partition, "err", err)
		}
		f.mu.Unlock()
	}
}

// truncate asks the leader where each partition's latest epoch ends and
// cuts a divergent tail (KIP-101, KIP-279): to the leader's end offset for
// our latest epoch when the leader knows it, else to the smaller of the
// leader's and our own end offsets for the largest epoch both know. Never
// to the high watermark.
func (f *fetcher) truncate(ctx context.Context, parts []*followed) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 4
	req.ReplicaID = f.m.cfg.NodeID
	idx := map[string]int{}
	type sent struct {
		fp     *followed
		latest int32
	}
	sents := map[key]sent{}
	f.mu.Lock()
	for _, fp := range parts {
		k := key{fp.r.Topic, fp.r.Partition}
		if !f.current(k, fp) {
			continue
		}
		latest := fp.r.Log.LatestEpoch()
		if latest < 0 {
			fp.truncate = false // nothing written under any epoch: nothing to cut
			continue
		}
		i, ok := idx[k.topic]
		if !ok {
			i = len(req.Topics)
			idx[k.topic] = i
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = k.topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = k.part, fp.epoch, latest
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
		sents[k] = sent{fp, latest}
	}
	f.mu.Unlock()
	if len(sents) == 0 {
		return nil
	}
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	if err := f.roundTrip(ctx, req, resp, 0); err != nil {
		return err
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			k := key{t.Topic, p.Partition}
			s, ok := sents[k]
			if !ok || !f.current(k, s.fp) {
				continue
			}
			if p.ErrorCode != 0 {
				s.fp.retryAt = now.Add(f.m.cfg.Backoff)
				continue
			}
			target, done := truncationOffset(s.fp.r.Log, p.LeaderEpoch, p.EndOffset)
			if !f.truncateTo(s.fp, target, now) {
				continue
			}
			// Not done: our log holds the leader's epoch no longer; ask
			// again for the epoch we now end in (Kafka's second round).
			s.fp.truncate = !done
		}
	}
	return nil
}

// truncationOffset is where a follower's log l must be cut, given that
// the leader's log ends epoch leaderEpoch at leaderEnd (an
// OffsetForLeaderEpoch answer or a fetch's DivergingEpoch), as Kafka's
// AbstractFetcherThread.getOffsetTruncationState: to the smaller of the
// leader's and our own end of that epoch when we know it; when our largest
// epoch up to it is an older one, to our end of that older epoch, and done
// is false: the leader must be asked again about it. Never past our log
// end, and never to the high watermark.
func truncationOffset(l *logstore.Log, leaderEpoch int32, leaderEnd int64) (target int64, done bool) {
	leo := l.EndOffset()
	if leaderEpoch < 0 || leaderEnd < 0 {
		// The leader knows no epoch up to ours: its log holds nothing we
		// have under a known epoch.
		return min(leo, l.StartOffset()), true
	}
	epoch, own := l.EndOffsetForEpoch(leaderEpoch)
	switch {
	case epoch < 0 || own < 0:
		// We know no epoch up to the leader's: keep what the leader has.
		return min(leaderEnd, leo), true
	case epoch != leaderEpoch:
		return min(own, leo), false
	default:
		return min(own, leaderEnd, leo), true
	}
}

// truncateTo cuts fp's log to target when it ends past it, reporting
// whether it succeeded. Caller holds f.mu.
func (f *fetcher) truncateTo(fp *followed, target int64, now time.Time) bool {
	l := fp.r.Log
	leo := l.EndOffset()
	// Called at or past the end too: an epoch of ours that starts at our
	// log end, with no record, goes.
	end, err := l.TruncateTo(target)
	if err != nil {
		f.m.cfg.Logger.Error("replica fetcher: truncation failed", "topic", fp.r.Topic, "partition", fp.r.Partition, "err", err)
		fp.retryAt = now.Add(f.m.cfg.Backoff)
		return false
	}
	if end >= leo {
		return true
	}
	f.m.cfg.Logger.Info("replica fetcher: truncated divergent tail", "topic", fp.r.Topic, "partition", fp.r.Partition,
		"leader", f.leader, "leader_epoch", fp.epoch, "from", leo, "to", end)
	if fp.r.OnTruncated != nil {
		fp.r.OnTruncated(end)
	}
	return true
}

// fetch sends one Fetch for parts, in the fetch session (only what changed
// since the last request), and appends what comes back.
func (f *fetcher) fetch(ctx context.Context, parts []*followed) error {
	cfg := &f.m.cfg
	req := kmsg.NewPtrFetchRequest()
	req.Version = 15
	req.ReplicaID = -1
	req.ReplicaState.ID = cfg.NodeID
	req.ReplicaState.Epoch = cfg.BrokerEpoch()
	req.MaxWaitMillis = int32(cfg.MaxWait / time.Millisecond)
	req.MinBytes = cfg.MinBytes
	req.MaxBytes = cfg.MaxBytes
	sess := &f.sess
	req.SessionID, req.SessionEpoch = sess.id, sess.epoch
	full := sess.epoch == 0
	type sent struct {
		fp     *followed
		offset int64
	}
	sents := map[key]sent{}
	want := make(map[key]fetchState, len(parts))
	names := map[[16]byte]string{}
	idx := map[[16]byte]int{}
	addTopic := func(topics *[]kmsg.FetchRequestTopic, name string, id [16]byte) *kmsg.FetchRequestTopic {
		i, ok := idx[id]
		if !ok {
			i = len(*topics)
			idx[id] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = name, id
			*topics = append(*topics, t)
		}
		return &(*topics)[i]
	}
	now := time.Now()
	f.mu.Lock()
	for _, fp := range parts {
		k := key{fp.r.Topic, fp.r.Partition}
		if !f.current(k, fp) {
			continue
		}
		maxBytes := f.throttledMaxBytes(fp, now)
		if maxBytes == 0 {
			continue // forgotten by the session meanwhile
		}
		l := fp.r.Log
		st := fetchState{topicID: fp.r.TopicID, leaderEpoch: fp.epoch, offset: l.EndOffset(), lastEpoch: l.LatestEpoch(),
			logStart: l.StartOffset(), maxBytes: maxBytes}
		want[k] = st
		sents[k] = sent{fp, st.offset}
		names[st.topicID] = k.topic
		if prev, ok := sess.sent[k]; ok && !full && prev == st {
			continue // the leader's session has it as it is
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = k.part
		p.CurrentLeaderEpoch = st.leaderEpoch
		p.FetchOffset = st.offset
		p.LastFetchedEpoch = st.lastEpoch
		p.LogStartOffset = st.logStart
		p.PartitionMaxBytes = st.maxBytes
		t := addTopic(&req.Topics, k.topic, st.topicID)
		t.Partitions = append(t.Partitions, p)
	}
	f.mu.Unlock()
	if len(sents) == 0 {
		return nil
	}
	if !full {
		// What the session holds and this fetch does not want (led
		// elsewhere now, backing off, truncating) is forgotten.
		idx = map[[16]byte]int{}
		for k, st := range sess.sent {
			if _, ok := want[k]; ok {
				continue
			}
			i, ok := idx[st.topicID]
			if !ok {
				i = len(req.ForgottenTopics)
				idx[st.topicID] = i
				ft := kmsg.NewFetchRequestForgottenTopic()
				ft.Topic, ft.TopicID = k.topic, st.topicID
				req.ForgottenTopics = append(req.ForgottenTopics, ft)
			}
			req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, k.part)
		}
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if err := f.roundTrip(ctx, req, resp, cfg.MaxWait); err != nil {
		return err
	}
	switch resp.ErrorCode {
	case 0:
	case kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code:
		// The leader lost or evicted the session (a restart, a full
		// cache): start over with a full fetch at once.
		sess.id = 0
		sess.reset()
		return nil
	default:
		return fmt.Errorf("fetch: %w", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp.SessionID == 0 {
		sess.id = 0 // the leader keeps no session: every fetch is full
		sess.reset()
	} else {
		sess.id, sess.epoch, sess.sent = resp.SessionID, nextSessionEpoch(sess.epoch), want
	}
	now = time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range resp.Topics {
		name, ok := names[t.TopicID]
		if !ok {
			continue
		}
		for _, rp := range t.Partitions {
			k := key{name, rp.Partition}
			s, ok := sents[k]
			if !ok || !f.current(k, s.fp) {
				continue
			}
			f.apply(s.fp, s.offset, &rp, now)
		}
	}
	return nil
}

// nextSessionEpoch is the fetch session epoch after e, wrapping past
// MaxInt32 to 1 (0 opens a session).
func nextSessionEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// throttledMaxBytes is what fp's fetch may ask for: replica.fetch.max.bytes,
// or within the follower throttle's budget when fp is a throttled replica
// that has not caught up; 0 (and a retry soon) while the budget is spent.
// Caller holds f.mu.
func (f *fetcher) throttledMaxBytes(fp *followed, now time.Time) int32 {
	limit := f.m.cfg.PartitionMaxBytes
	fp.throttled = false
	caughtUp := fp.hw >= 0 && fp.r.Log.EndOffset() >= fp.hw // Kafka's isReplicaInSync
	if f.m.cfg.FollowerThrottle == nil || caughtUp {
		return limit
	}
	rate, throttled := f.m.cfg.FollowerThrottle(fp.r.Topic, fp.r.Partition)
	if !throttled {
		return limit
	}
	allowed := f.m.throttle.Allowance(rate, now)
	if allowed == 0 {
		fp.retryAt = now.Add(throttleRetry)
		return 0
	}
	fp.throttled = allowed != math.MaxInt64
	return int32(min(int64(limit), allowed))
}

// throttleRetry is how soon a replica left out of a fetch by the follower
// throttle is tried again.
const throttleRetry = 100 * time.Millisecond

// apply handles one partition of a fetch response. Caller holds f.mu.
func (f *fetcher) apply(fp *followed, offset int64, rp *kmsg.FetchResponseTopicPartition, now time.Time) {
	l := fp.r.Log
	log := f.m.cfg.Logger
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetMovedToTieredStorage.Code:
		if fp.r.OnMovedToTiered == nil {
			fp.retryAt = now.Add(f.m.cfg.Backoff)
			return
		}
		fp.tiered, fp.logStart = true, rp.LogStartOffset
		return
	case kerr.OffsetOutOfRange.Code:
		if rp.LogStartOffset >= 0 && offset < rp.LogStartOffset {
			if err := l.TruncateFullyAndStartAt(rp.LogStartOffset); err != nil {
				log.Error("replica fetcher: reset failed", "topic", fp.r.Topic, "partition", fp.r.Partition, "err", err)
				fp.retryAt = now.Add(f.m.cfg.Backoff)
			}
			return
		}
		fp.truncate = true
		return
	default:
		// Not leader (yet), fenced or unknown epoch: the metadata watch
		// brings the new state; retry meanwhile.
		fp.retryAt = now.Add(f.m.cfg.Backoff)
		return
	}
	if l.EndOffset() != offset {
		return // the log moved meanwhile (truncated); fetch again
	}
	if rp.DivergingEpoch.Epoch >= 0 && rp.DivergingEpoch.EndOffset >= 0 {
		// Our log left the leader's (KIP-320): cut it where the leader
		// says and fetch on from there; the leader counted nothing of
		// this fetch and sent no records.
		target, _ := truncationOffset(l, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
		f.truncateTo(fp, target, now)
		return
	}
	if recs := wholeBatches(rp.RecordBatches); len(recs) > 0 {
		if _, err := l.AppendAsFollower(recs, now); err != nil {
			log.Warn("replica fetcher: append failed", "topic", fp.r.Topic, "partition", fp.r.Partition, "offset", offset, "err", err)
			fp.retryAt = now.Add(f.m.cfg.Backoff)
			if errors.Is(err, logstore.ErrUnexpectedOffset) {
				fp.truncate = true
			}
			return
		}
		if f.m.cfg.OnAppend != nil {
			f.m.cfg.OnAppend(len(recs))
		}
		if fp.throttled {
			f.m.throttle.Took(int64(len(recs)))
		}
	}
	fp.hw = rp.HighWatermark
	if ls := min(rp.LogStartOffset, rp.HighWatermark, l.EndOffset()); ls > l.StartOffset() {
		// The leader's log start moved (DeleteRecords, retention): the
		// follower's follows, as Kafka's does, so that a later leader
		// does not serve again what was deleted.
		if _, err := l.DeleteRecordsBefore(ls); err != nil {
			log.Warn("replica fetcher: log start not moved", "topic", fp.r.Topic, "partition", fp.r.Partition, "to", ls, "err", err)
		}
	}
	if fp.r.OnFetched != nil && rp.HighWatermark >= 0 {
		fp.r.OnFetched(min(rp.HighWatermark, l.EndOffset()))
	}
}

// wholeBatches drops a trailing partial batch (a fetch may end inside one).
func wholeBatches(b []byte) []byte {
	n := 0
	for len(b)-n >= 12 {
		size := int64(binary.BigEndian.Uint32(b[n+8:]))
		if int64(len(b)-n) < 12+size {
			break
		}
		n += 12 + int(size)
	}
	return b[:n]
}
