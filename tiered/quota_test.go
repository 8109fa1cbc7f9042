package tiered

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
)

// TestRateQuota: the rate is the bytes of the samples kept over the time
// they span, at least one window; take refuses while it is above the
// limit (read at each check), and old samples stop counting.
func TestRateQuota(t *testing.T) {
	now := time.Unix(1000, 0)
	var limit atomic.Int64
	limit.Store(1000)
	q := newRateQuota(limit.Load, time.Second, 3)
	q.now = func() time.Time { return now }
	step := func(d time.Duration, n int64, want bool) {
		t.Helper()
		now = now.Add(d)
		if got := q.take(n); got != want {
			t.Fatalf("at +%v take(%d) = %v, want %v (rate %.0f)", now.Sub(time.Unix(1000, 0)), n, got, want, q.rate())
		}
	}
	step(0, 600, true)
	step(0, 600, true) // 600 B/s before it
	step(0, 1, false)  // 1200 B over one window
	step(500*time.Millisecond, 1, false)
	step(800*time.Millisecond, 1, true) // 1200 B over 1.3 s
	step(5*time.Second, 1, true)        // the old samples gone
	if r := q.rate(); r != 1 {
		t.Fatalf("rate %.1f after the old samples went, want 1", r)
	}
	q.record(5000)
	if !q.exceeded() {
		t.Fatal("5001 B in a window not over 1000 B/s")
	}
	limit.Store(1<<63 - 1) // Kafka's default: no quota
	if q.exceeded() {
		t.Fatal("exceeded with the limit at Long.MAX_VALUE")
	}
}

// TestManagerQuotas: with remote.log.manager.copy.max.bytes.per.second
// low, the bytes copied (the upload byte metric's source) stay within the
// quota over the time measured; with .fetch.max.bytes.per.second low,
// reads over it answer no records and a reader going on reads the whole
// remote log, at about the quota.
func TestManagerQuotas(t *testing.T) {
	t.Parallel()
	const (
		rate    = 32 << 10
		segment = 16 << 10
	)
	meta, id := metaStore(t)
	store := testStore(t, "")
	l := newTestLog(t, segment)
	appendLog(t, l, 600) // about 13 segments
	r := leaderReplica(id, l, 0, 600)
	var mu sync.Mutex
	var copied, fetched int64
	m := NewManager(ManagerConfig{NodeID: 1, Store: store, Meta: meta, Interval: 50 * time.Millisecond,
		CopyRate: func() int64 { return rate }, FetchRate: func() int64 { return rate },
		Replicas: func() []Replica { return []Replica{r} },
		Observe: func(_ string, op Op, n int64, failed bool) {
			mu.Lock()
			defer mu.Unlock()
			if op == OpCopy && !failed {
				copied += n
			}
		}})
	// bound is what the quota lets through in d: a window's worth at
	// once, then the rate, and the last segment or read taken under it,
	// with half as much again of slack.
	bound := func(d time.Duration, last int64) int64 {
		return int64(1.5*rate*(d.Seconds()+1)) + last
	}

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	start := time.Now()
	go func() { defer close(ran); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-ran })
	const want = 5 * segment
	poll.Eventually(t, 60*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		took := time.Since(start)
		if copied > bound(took, segment) {
			t.Fatalf("%d bytes copied in %v, over the quota of %d B/s", copied, took, rate)
		}
		if copied < want {
			return fmt.Errorf("%d bytes copied in %v", copied, took)
		}
		return nil
	})

	// Reads of what is copied so far, from offset 0 on, 4 KiB each.
	md, err := m.Metadata(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	end, off, throttled := md.CopiedEnd(), int64(0), 0
	start = time.Now()
	poll.Eventually(t, 60*time.Second, func() error {
		for off < end {
			res, err := m.Read(ctx, "t", id, 0, off, 4096, 1<<62, true)
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			if res.Size == 0 {
				throttled++
				return fmt.Errorf("read %d: over the fetch quota (%d bytes read in %v)", off, fetched, time.Since(start))
			}
			fetched += res.Size
			off = res.NextOffset
			res.Release()
			if took := time.Since(start); fetched > bound(took, 4096) {
				t.Fatalf("%d bytes read in %v, over the quota of %d B/s", fetched, took, rate)
			}
		}
		return nil
	})
	if throttled == 0 {
		t.Errorf("%d bytes read from the remote log in %v, never over a quota of %d B/s", fetched, time.Since(start), rate)
	}
}
