package tiered

import (
	"sync"
	"time"
)

// rateQuota is a broker-wide byte rate limit, as Kafka's RLMQuotaManager
// (remote.log.manager.copy.max.bytes.per.second and
// .fetch.max.bytes.per.second): the bytes recorded over the last samples
// windows of one window each, divided by the time they span (at least
// one window), against the limit. It never sleeps: a caller over quota
// skips its work (Kafka's copy task waits before a segment, its remote
// fetch answers without records) and tries again later.
type rateQuota struct {
	limit   func() int64 // bytes per second, read at each check (dynamic); <= 0 or MaxInt64: none
	window  time.Duration
	samples int
	now     func() time.Time

	mu   sync.Mutex
	ring []rateSample // guarded by mu: the samples, oldest first
}

type rateSample struct {
	start time.Time
	bytes int64
}

func newRateQuota(limit func() int64, window time.Duration, samples int) *rateQuota {
	if limit == nil {
		limit = func() int64 { return 0 }
	}
	if window <= 0 {
		window = time.Second
	}
	if samples <= 0 {
		samples = 11
	}
	return &rateQuota{limit: limit, window: window, samples: samples, now: time.Now}
}

// purge drops the samples that ended before the last samples windows.
// Caller holds q.mu.
func (q *rateQuota) purge(now time.Time) {
	horizon := now.Add(-time.Duration(q.samples) * q.window)
	i := 0
	for i < len(q.ring) && !q.ring[i].start.Add(q.window).After(horizon) {
		i++
	}
	q.ring = q.ring[i:]
}

// rate is the bytes per second recorded over the window. Caller holds
// q.mu.
func (q *rateQuota) rate() float64 {
	now := q.now()
	q.purge(now)
	if len(q.ring) == 0 {
		return 0
	}
	var total int64
	for _, s := range q.ring {
		total += s.bytes
	}
	span := max(now.Sub(q.ring[0].start), q.window)
	return float64(total) / span.Seconds()
}

// exceeded reports whether the rate is above the limit.
func (q *rateQuota) exceeded() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.over()
}

// over is exceeded. Caller holds q.mu.
func (q *rateQuota) over() bool {
	limit := q.limit()
	if limit <= 0 || limit == 1<<63-1 {
		return false
	}
	return q.rate() > float64(limit)
}

// take records n bytes moved now and reports true, unless the rate is
// above the limit: then it records nothing and reports false. Check and
// record are one step, so that workers copying at once do not all pass
// the same check.
func (q *rateQuota) take(n int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.over() {
		return false
	}
	q.add(n)
	return true
}

// record counts n bytes moved now.
func (q *rateQuota) record(n int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.add(n)
}

// add counts n bytes moved now. Caller holds q.mu.
func (q *rateQuota) add(n int64) {
	if n <= 0 {
		return
	}
	now := q.now()
	q.purge(now)
	if last := len(q.ring) - 1; last >= 0 && now.Sub(q.ring[last].start) < q.window {
		q.ring[last].bytes += n
		return
	}
	q.ring = append(q.ring, rateSample{start: now, bytes: n})
}
