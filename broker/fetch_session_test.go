package broker

import (
	"testing"
	"time"
)

func TestFetchSessionCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newFetchSessions(2)
	a, b := c.create(), c.create()
	if a.id == b.id || a.id == 0 || b.id == 0 {
		t.Fatalf("session ids %d and %d", a.id, b.id)
	}
	// Both in use: no room for a third, and nobody is evicted.
	if c.create() != nil || c.get(a.id) != a || c.get(b.id) != b {
		t.Fatal("a full cache of active sessions made room")
	}
	long := time.Now().Add(-2 * sessionEvictionAge).UnixNano()
	a.lastUsed.Store(long + 1)
	b.lastUsed.Store(long)
	third := c.create()
	if c.get(b.id) != nil {
		t.Fatal("the least recently used session survived")
	}
	if c.get(a.id) != a || c.get(third.id) != third {
		t.Fatal("a recent session was evicted")
	}
	c.remove(a.id)
	if c.get(a.id) != nil {
		t.Fatal("removed session still found")
	}
}

func TestFetchSessionUpsertAndForget(t *testing.T) {
	s := &fetchSession{parts: map[fetchKey]*sessPart{}}
	k1, k2 := fetchKey{topic: "t", part: 0}, fetchKey{topic: "t", part: 1}
	s.upsert(k1, 5, 100, -1, -1, 0)
	s.upsert(k2, 7, 100, -1, -1, 0)
	s.upsert(k1, 9, 200, 3, -1, 0)
	if len(s.order) != 2 || s.order[0] != k1 || s.parts[k1].fetchOffset != 9 || s.parts[k1].maxBytes != 200 {
		t.Fatalf("after upserts: order %v, k1 %+v", s.order, s.parts[k1])
	}
	if s.parts[k2].sentHW != -1 {
		t.Fatal("a new partition must be sent in the next answer (sentHW -1)")
	}
	s.forget(k1)
	s.forget(fetchKey{topic: "nope"})
	if len(s.order) != 1 || s.order[0] != k2 || s.parts[k1] != nil {
		t.Fatalf("after forget: order %v", s.order)
	}
}

func TestNextEpochWraps(t *testing.T) {
	if nextEpoch(1) != 2 || nextEpoch(1<<31-1) != 1 {
		t.Fatal("nextEpoch")
	}
}
