package replication

import "sync"

// FetchWaiter is a Fetch parked until its partitions move (Kafka's
// DelayedFetch): each partition it reads holds it (Partition.Watch) and
// tells it when it moved, so that the fetch re-reads only those, and,
// for a follower's fetch, how many bytes were appended, so that it wakes
// only once its min bytes may be there. Safe for concurrent use.
type FetchWaiter struct {
	ready chan struct{} // holds a token once the fetch should look again

	mu    sync.Mutex
	need  int64                   // guarded by mu; bytes still wanted
	bytes int64                   // guarded by mu; appended since the last Take
	moved map[*Partition]struct{} // guarded by mu; since the last Take
}

// NewFetchWaiter returns a waiter that wants need more bytes.
func NewFetchWaiter(need int64) *FetchWaiter {
	return &FetchWaiter{ready: make(chan struct{}, 1), need: need, moved: map[*Partition]struct{}{}}
}

// Ready receives once something moved that the fetch should look at.
func (w *FetchWaiter) Ready() <-chan struct{} { return w.ready }

// Take returns the partitions that moved since the last Take and forgets
// them.
func (w *FetchWaiter) Take() []*Partition {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*Partition, 0, len(w.moved))
	for p := range w.moved {
		out = append(out, p)
	}
	clear(w.moved)
	w.bytes = 0
	return out
}

// SetNeed sets the bytes the fetch still wants.
func (w *FetchWaiter) SetNeed(n int64) {
	w.mu.Lock()
	w.need = n
	w.mu.Unlock()
}

// Mark records that p moved, and wakes the fetch.
func (w *FetchWaiter) Mark(p *Partition) { w.note(p, 0, true) }

// note records that p moved: bytes appended to it (for a follower's
// fetch), or, with wake, a change the fetch must see now (the high
// watermark, the leadership).
func (w *FetchWaiter) note(p *Partition, bytes int64, wake bool) {
	w.mu.Lock()
	w.moved[p] = struct{}{}
	w.bytes += bytes
	wake = wake || w.bytes >= w.need
	w.mu.Unlock()
	if wake {
		select {
		case w.ready <- struct{}{}:
		default:
		}
	}
}

// Watch makes p tell w when it moves: for a follower's fetch (it reads to
// the log end) at every append, with its size; for a consumer's when the
// high watermark moves; for both at a change of leadership or ISR, a
// deletion or a truncation. Unwatch ends it.
func (p *Partition) Watch(w *FetchWaiter, follower bool) {
	p.mu.Lock()
	if p.watchers == nil {
		p.watchers = map[*FetchWaiter]bool{}
	}
	p.watchers[w] = follower
	p.mu.Unlock()
}

// Unwatch stops p telling w.
func (p *Partition) Unwatch(w *FetchWaiter) {
	p.mu.Lock()
	delete(p.watchers, w)
	p.mu.Unlock()
}

// notifyLocked tells the watchers that bytes were appended and whether
// the high watermark moved; wakeAll wakes every one. Caller holds p.mu;
// the waiters' locks are taken under it, never the other way round.
func (p *Partition) notifyLocked(bytes int64, hwMoved, wakeAll bool) {
	for w, follower := range p.watchers {
		switch {
		case wakeAll || hwMoved:
			w.note(p, bytes, true)
		case follower:
			w.note(p, bytes, false)
		}
	}
}
