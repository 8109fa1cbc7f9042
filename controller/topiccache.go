package controller

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The topic cache holds every topic as etcd has it: read once, then kept
// current by one watch whose events are applied key by key, so that a
// change of one partition state decodes that state and not the 10,000
// others (a full read of Topics is every topic's JSON). Its topics are
// values shared by every reader, replaced and never modified: a topic
// that did not change is the same *Topic in the next snapshot, which lets
// a reader skip it. Readers that must see their own write (an admin
// request answered after it) reload it from etcd; the controller waits for
// the revision it wrote.

// topicCache is the store's topic cache (CachedTopics).
type topicCache struct {
	s *Store

	mu      sync.Mutex
	rev     int64                   // guarded by mu: the etcd revision applied through
	topics  map[string]*Topic       // guarded by mu: replaced, never modified
	pieces  map[string]*topicPieces // guarded by mu: the keys of each topic, decoded
	changed chan struct{}           // guarded by mu: closed and replaced when rev or topics move
}

// topicPieces are the decoded keys of one topic name: its topic key, its
// partition states and its config overrides, each present or not (a watch
// may show them in any order).
type topicPieces struct {
	topic     *Topic // /brokers/topics/<name>; nil when absent
	states    map[int]PartitionState
	config    map[string]string // /config/topics/<name>; nil when absent
	configRev int64
}

// build is the topic the pieces make, or nil without a topic key.
func (pc *topicPieces) build() *Topic {
	if pc.topic == nil {
		return nil
	}
	t := *pc.topic
	t.Partitions = make([]PartitionState, len(t.Assignment))
	for p := range t.Partitions {
		st, ok := pc.states[p]
		if !ok {
			st = PartitionState{Leader: -1}
		}
		t.Partitions[p] = st
	}
	t.Configs, t.ConfigVersion = pc.config, pc.configRev
	if t.Configs == nil {
		t.Configs, t.ConfigVersion = map[string]string{}, 0
	}
	return &t
}

// topicRange is the key range the cache reads and watches: from
// /brokers/topics/ to the end of /config/topics/. It also spans
// /config/brokers/, /config/clients/ and /config/groups/, whose few keys
// the cache ignores, so that one watch sees every change of a topic in
// etcd's order.
func (s *Store) topicRange() (start, end string) {
	return s.topicsPrefix(), clientv3.GetPrefixRangeEnd(s.topicConfigsPrefix())
}

// cache returns the store's topic cache, starting it at the first call.
func (s *Store) cache(ctx context.Context) (*topicCache, error) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if s.tc != nil {
		return s.tc, nil
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	c := &topicCache{s: s, topics: map[string]*Topic{}, pieces: map[string]*topicPieces{}, changed: make(chan struct{})}
	rev, err := c.reload(ctx)
	if err != nil {
		return nil, err
	}
	if !s.spawn(func(ctx context.Context) { c.run(ctx, rev) }) {
		return nil, ErrClosed
	}
	s.tc = c
	return c, nil
}

// CachedTopics returns every topic from the store's topic cache (started
// by the first call, with one read of every topic) and the etcd revision
// it reflects. The topics are shared: read them, never modify them. A
// topic unchanged since an earlier call is the same *Topic.
func (s *Store) CachedTopics(ctx context.Context) (map[string]*Topic, int64, error) {
	c, err := s.cache(ctx)
	if err != nil {
		return nil, 0, err
	}
	t, rev := c.snapshot()
	return t, rev, nil
}

// ReloadTopics reads every topic from etcd into the topic cache, as Topics
// does, and returns the cache's topics: what a caller wrote before is in
// them.
func (s *Store) ReloadTopics(ctx context.Context) (map[string]*Topic, int64, error) {
	c, err := s.cache(ctx)
	if err != nil {
		return nil, 0, err
	}
	if _, err := c.reload(ctx); err != nil {
		return nil, 0, err
	}
	t, rev := c.snapshot()
	return t, rev, nil
}

// AwaitTopics waits until the topic cache has applied etcd revision rev
// (a write to a topic key returned it), or ctx ends.
func (s *Store) AwaitTopics(ctx context.Context, rev int64) error {
	c, err := s.cache(ctx)
	if err != nil {
		return err
	}
	for {
		c.mu.Lock()
		done, ch := c.rev >= rev, c.changed
		c.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WatchCachedTopics calls onChange after the topic cache changed past
// etcd revision fromRevision (the one CachedTopics returned; 0: from now):
// a topic, a partition state or a config override. Calls are coalesced
// and never concurrent; the caller reads CachedTopics. It runs until ctx
// ends or the store is closed.
func (s *Store) WatchCachedTopics(ctx context.Context, fromRevision int64, onChange func()) error {
	c, err := s.cache(ctx)
	if err != nil {
		return err
	}
	s.spawnWatch(ctx, func(wctx context.Context) {
		c.mu.Lock()
		behind, ch := fromRevision > 0 && c.rev > fromRevision, c.changed
		c.mu.Unlock()
		for {
			if !behind {
				select {
				case <-ch:
				case <-wctx.Done():
					return
				}
				// A burst of writes (a failover's states, in batches) is
				// one change: wait a moment for the rest of it.
				if !sleepCtx(wctx, watchCoalesce) {
					return
				}
			}
			behind = false
			c.mu.Lock()
			ch = c.changed
			c.mu.Unlock()
			onChange()
		}
	})
	return nil
}

// snapshot returns the topics and the revision they reflect.
func (c *topicCache) snapshot() (map[string]*Topic, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.topics, c.rev
}

// reload reads the whole topic range and, unless the cache has applied a
// later revision meanwhile, replaces the cache's content with it. It
// returns the revision read.
func (c *topicCache) reload(ctx context.Context) (int64, error) {
	start, end := c.s.topicRange()
	resp, err := c.s.cli.Get(ctx, start, clientv3.WithRange(end))
	if err != nil {
		return 0, fmt.Errorf("controller: reading topics: %w", err)
	}
	rev := resp.Header.Revision
	pieces := map[string]*topicPieces{}
	dirty := map[string]bool{}
	for _, kv := range resp.Kvs {
		c.applyKV(pieces, kv, false, dirty)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev <= c.rev {
		return rev, nil // a watch event or another reload got further
	}
	topics := make(map[string]*Topic, len(pieces))
	for name, pc := range pieces {
		t := pc.build()
		switch old := c.topics[name]; {
		case t == nil:
		case old != nil && sameRevisions(old, t):
			topics[name] = old // the same keys: readers may skip it
		default:
			topics[name] = t
		}
	}
	c.pieces, c.topics = pieces, topics
	c.movedLocked(rev)
	return rev, nil
}

// sameRevisions reports whether a and b were read from the same revisions
// of the same keys, and so hold the same values.
func sameRevisions(a, b *Topic) bool {
	if a.Version != b.Version || a.created != b.created || a.ConfigVersion != b.ConfigVersion || len(a.Partitions) != len(b.Partitions) {
		return false
	}
	for i := range a.Partitions {
		if a.Partitions[i].Version != b.Partitions[i].Version {
			return false
		}
	}
	return true
}

// movedLocked records that the cache reflects rev. Caller holds mu.
func (c *topicCache) movedLocked(rev int64) {
	c.rev = rev
	close(c.changed)
	c.changed = make(chan struct{})
}

// run applies the watch's events from revision rev+1 until ctx ends; when
// the watch breaks (compaction, no etcd leader, connection lost) it reads
// every topic again and watches on from there.
func (c *topicCache) run(ctx context.Context, rev int64) {
	start, end := c.s.topicRange()
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		// WithRequireLeader: a member cut off from its quorum ends the
		// watch instead of leaving the cache silently stale.
		wch := c.s.cli.Watch(clientv3.WithRequireLeader(wctx), start, clientv3.WithRange(end), clientv3.WithRev(rev+1))
		for resp := range wch {
			if resp.CompactRevision != 0 || resp.Err() != nil || resp.Canceled {
				if ctx.Err() == nil {
					c.s.log.Info("etcd topic watch ended; reading every topic again", "compact_revision", resp.CompactRevision, "err", resp.Err())
				}
				break
			}
			if len(resp.Events) > 0 {
				rev = max(rev, c.apply(resp.Events))
				backoff = 50 * time.Millisecond
			}
		}
		cancel()
		for ctx.Err() == nil {
			if !sleepCtx(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, 2*time.Second)
			r, err := c.reload(ctx)
			if err == nil {
				rev = max(rev, r)
				break
			}
			if ctx.Err() == nil {
				c.s.log.Warn("etcd: reading every topic again", "err", err)
			}
		}
	}
}

// apply applies a watch response's events past the cache's revision and
// returns the revision of the last.
func (c *topicCache) apply(evs []*clientv3.Event) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := evs[len(evs)-1].Kv.ModRevision
	if last <= c.rev {
		return last // a reload read past them
	}
	dirty := map[string]bool{}
	for _, ev := range evs {
		if ev.Kv.ModRevision <= c.rev {
			continue
		}
		c.applyKV(c.pieces, ev.Kv, ev.Type == mvccpb.DELETE, dirty)
	}
	if len(dirty) > 0 {
		topics := maps.Clone(c.topics)
		for name := range dirty {
			pc := c.pieces[name]
			t := pc.build()
			if t == nil {
				delete(topics, name)
			} else {
				topics[name] = t
			}
			if pc.topic == nil && len(pc.states) == 0 && pc.config == nil {
				delete(c.pieces, name)
			}
		}
		c.topics = topics
	}
	c.movedLocked(last)
	return last
}

// applyKV applies one key's value (deleted: its deletion) to pieces and
// marks its topic in dirty. Keys outside a topic's are ignored; a value
// that does not parse is logged and counts as absent.
func (c *topicCache) applyKV(pieces map[string]*topicPieces, kv *mvccpb.KeyValue, deleted bool, dirty map[string]bool) {
	key := string(kv.Key)
	piece := func(name string) *topicPieces {
		pc := pieces[name]
		if pc == nil {
			pc = &topicPieces{}
			pieces[name] = pc
		}
		dirty[name] = true
		return pc
	}
	if rest, ok := strings.CutPrefix(key, c.s.topicsPrefix()); ok {
		name, sub, isState := strings.Cut(rest, "/")
		if !isState {
			pc := piece(name)
			pc.topic = nil
			if deleted {
				return
			}
			t, err := decodeTopic(name, kv.Value)
			if err != nil {
				c.s.log.Warn("etcd: skipping malformed topic", "key", key, "err", err)
				return
			}
			t.Version, t.created = kv.ModRevision, kv.CreateRevision
			pc.topic = t
			return
		}
		// <topic>/partitions/<p>/state
		ps, ok1 := strings.CutPrefix(sub, "partitions/")
		ps, ok2 := strings.CutSuffix(ps, "/state")
		p, err := strconv.Atoi(ps)
		if !ok1 || !ok2 || err != nil || p < 0 {
			return
		}
		pc := piece(name)
		delete(pc.states, p)
		if deleted {
			return
		}
		st, err := decodeState(kv.Value)
		if err != nil {
			c.s.log.Warn("etcd: skipping malformed partition state", "key", key, "err", err)
			return
		}
		st.Version = kv.ModRevision
		if pc.states == nil {
			pc.states = map[int]PartitionState{}
		}
		pc.states[p] = st
		return
	}
	if name, ok := strings.CutPrefix(key, c.s.topicConfigsPrefix()); ok && !strings.Contains(name, "/") {
		pc := piece(name)
		pc.config, pc.configRev = nil, 0
		if deleted {
			return
		}
		cfg, err := decodeConfig(kv.Value)
		if err != nil {
			c.s.log.Warn("etcd: skipping malformed topic config", "key", key, "err", err)
			return
		}
		pc.config, pc.configRev = cfg, kv.ModRevision
	}
}
