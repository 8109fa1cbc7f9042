package tiered

import (
	"container/list"
	"context"
	"sync"
)

// chunkCache holds byte ranges ("chunks") of remote objects, at most max
// bytes of them unpinned: a chunk a read result points into is pinned
// until the result is released, and only unpinned chunks are evicted,
// least recently used first. Pinned chunks may take the cache past max
// for as long as the reads holding them are being sent.
type chunkCache struct {
	store ObjectStore
	size  int64 // bytes per chunk

	mu    sync.Mutex
	max   int64                      // guarded by mu
	bytes int64                      // guarded by mu: held in entries
	lru   *list.List                 // guarded by mu: of *chunk, most recent first
	byKey map[chunkKey]*list.Element // guarded by mu
}

type chunkKey struct {
	object string
	index  int64
}

type chunk struct {
	key  chunkKey
	data []byte
	pins int // guarded by the cache's mu
}

func newChunkCache(store ObjectStore, chunkSize, max int64) *chunkCache {
	return &chunkCache{store: store, size: chunkSize, max: max, lru: list.New(), byKey: map[chunkKey]*list.Element{}}
}

// get returns chunk i of object (of objectSize bytes), pinned: the
// caller unpins it.
func (c *chunkCache) get(ctx context.Context, object string, objectSize, i int64) (*chunk, error) {
	k := chunkKey{object, i}
	c.mu.Lock()
	if e, ok := c.byKey[k]; ok {
		ch := e.Value.(*chunk)
		ch.pins++
		c.lru.MoveToFront(e)
		c.mu.Unlock()
		return ch, nil
	}
	c.mu.Unlock()
	off := i * c.size
	data, err := c.store.GetRange(ctx, object, off, min(c.size, objectSize-off))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok { // fetched meanwhile by another read
		ch := e.Value.(*chunk)
		ch.pins++
		c.lru.MoveToFront(e)
		return ch, nil
	}
	ch := &chunk{key: k, data: data, pins: 1}
	c.byKey[k] = c.lru.PushFront(ch)
	c.bytes += int64(len(data))
	c.evictLocked()
	return ch, nil
}

func (c *chunkCache) unpin(ch *chunk) {
	c.mu.Lock()
	ch.pins--
	c.evictLocked()
	c.mu.Unlock()
}

// evictLocked drops unpinned chunks, oldest first, while over max.
func (c *chunkCache) evictLocked() {
	for e := c.lru.Back(); e != nil && c.bytes > c.max; {
		prev := e.Prev()
		if ch := e.Value.(*chunk); ch.pins == 0 {
			c.lru.Remove(e)
			delete(c.byKey, ch.key)
			c.bytes -= int64(len(ch.data))
		}
		e = prev
	}
}

// held returns the bytes the cache holds (tests, metrics).
func (c *chunkCache) held() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
