package broker

// Fetch sessions (KIP-227). A client that sends epoch 0 gets a session: the
// broker remembers the partitions it fetches, later requests name only the
// partitions that changed (or are forgotten), and responses carry only the
// partitions with news: records, a moved high watermark or log start offset,
// or an error.

import (
	"sync"
	"sync/atomic"
	"time"
)

// fetchKey names a partition in a session: by topic id from Fetch v13 on,
// by topic name before.
type fetchKey struct {
	topic string
	id    [16]byte
	part  int32
}

// sessPart is one partition of a session: what the client asked for last,
// and what the broker last told it.
type sessPart struct {
	key          fetchKey
	fetchOffset  int64
	maxBytes     int32
	leaderEpoch  int32
	lastEpoch    int32 // last fetched epoch (a follower's, v12+; -1 none)
	clientLogSt  int64
	sentHW       int64
	sentLogStart int64
	sentErr      int16
}

type fetchSession struct {
	id   int32
	byID bool // the session names topics by id (Fetch v13+)

	mu       sync.Mutex // held for the whole of a fetch that uses the session
	epoch    int32      // the epoch the next request must carry
	parts    map[fetchKey]*sessPart
	order    []fetchKey   // partitions in the order they were added
	lastUsed atomic.Int64 // unix nanoseconds
	size     atomic.Int32 // len(parts), for the metrics without mu
}

func (s *fetchSession) upsert(k fetchKey, offset int64, maxBytes, leaderEpoch, lastEpoch int32, logStart int64) {
	sp := s.parts[k]
	if sp == nil {
		sp = &sessPart{key: k, sentHW: -1, sentLogStart: -1}
		s.parts[k] = sp
		s.order = append(s.order, k)
	}
	sp.fetchOffset, sp.maxBytes, sp.leaderEpoch, sp.lastEpoch, sp.clientLogSt = offset, maxBytes, leaderEpoch, lastEpoch, logStart
	s.size.Store(int32(len(s.parts)))
}

// forget removes partitions from the session, in one pass over its order:
// a follower whose leader moved forgets thousands at once.
func (s *fetchSession) forget(ks ...fetchKey) {
	n := len(s.parts)
	for _, k := range ks {
		delete(s.parts, k)
	}
	if len(s.parts) == n {
		return
	}
	s.size.Store(int32(len(s.parts)))
	keep := s.order[:0]
	for _, k := range s.order {
		if _, ok := s.parts[k]; ok {
			keep = append(keep, k)
		}
	}
	clear(s.order[len(keep):])
	s.order = keep
}

// rotate moves the partitions that returned records to the end of the
// session's order, keeping their relative order, so that a partition with
// a backlog cannot take every response's byte budget (Kafka's
// FetchSession.PartitionIterator does the same).
func (s *fetchSession) rotate(parts []*fetchPart) {
	var moved []fetchKey
	keep := s.order[:0]
	for _, fp := range parts {
		if fp.read.Size > 0 {
			moved = append(moved, fp.key)
		}
	}
	if len(moved) == 0 {
		return
	}
	gone := make(map[fetchKey]bool, len(moved))
	for _, k := range moved {
		gone[k] = true
	}
	for _, k := range s.order {
		if !gone[k] {
			keep = append(keep, k)
		}
	}
	s.order = append(keep, moved...)
}

// fetchSessions is the broker's session cache, bounded like Kafka's
// max.incremental.fetch.session.cache.slots; when full, the least recently
// used session goes.
type fetchSessions struct {
	mu     sync.Mutex
	max    int
	nextID int32
	m      map[int32]*fetchSession
}

func newFetchSessions(max int) *fetchSessions {
	return &fetchSessions{max: max, m: make(map[int32]*fetchSession)}
}

func (c *fetchSessions) get(id int32) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

// stats are the sessions held and the partitions in them (Kafka's
// NumIncrementalFetchSessions and NumIncrementalFetchPartitionsCached).
func (c *fetchSessions) stats() (sessions, partitions int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.m {
		partitions += int(s.size.Load())
	}
	return len(c.m), partitions
}

func (c *fetchSessions) remove(id int32) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// sessionEvictionAge is min.incremental.fetch.session.eviction.ms: a full
// cache gives up a session only once it has been idle this long.
const sessionEvictionAge = 120 * time.Second

// create opens a session, or returns nil when the cache is full of sessions
// in use: the fetch then goes on without one (session id 0), which every
// client accepts, as Kafka does rather than evict an active consumer.
func (c *fetchSessions) create() *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		var oldest *fetchSession
		for _, s := range c.m {
			if oldest == nil || s.lastUsed.Load() < oldest.lastUsed.Load() {
				oldest = s
			}
		}
		if time.Since(time.Unix(0, oldest.lastUsed.Load())) < sessionEvictionAge {
			return nil
		}
		delete(c.m, oldest.id)
	}
	for {
		c.nextID++
		if c.nextID <= 0 {
			c.nextID = 1
		}
		if _, taken := c.m[c.nextID]; !taken {
			break
		}
	}
	s := &fetchSession{id: c.nextID, parts: make(map[fetchKey]*sessPart)}
	s.lastUsed.Store(time.Now().UnixNano())
	c.m[s.id] = s
	return s
}
