package replication

import (
	"math"
	"sync"
	"time"
)

// Throttle is one side of Kafka's replication quota: a budget of bytes
// per second shared by the throttled replicas. The leader side
// (leader.replication.throttled.rate over the replicas a topic's
// leader.replication.throttled.replicas names, which
// kafka-reassign-partitions.sh --throttle sets for the partitions it
// moves) limits what a leader reads for follower fetches of them; the
// follower side (follower.replication.throttled.rate over
// follower.replication.throttled.replicas) limits what this broker's
// fetchers ask for (Config.FollowerThrottle). A token bucket holding at
// most a second's worth: a throttled read takes at most what is left (one
// whole batch at least), and while nothing is left a throttled partition
// is left out, as Kafka leaves it out of a fetch or its response.
type Throttle struct {
	mu     sync.Mutex
	tokens float64 // bytes that may be sent now; guarded by mu
	last   time.Time
	rate   int64 // the rate tokens was filled at
}

// Allowance is how many bytes a throttled read may take now at rate
// bytes/s (math.MaxInt64: no limit); 0 when the budget is spent.
func (q *Throttle) Allowance(rate int64, now time.Time) int64 {
	if rate <= 0 || rate == math.MaxInt64 {
		return math.MaxInt64
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rate != rate || q.last.IsZero() {
		q.tokens, q.rate = float64(rate), rate
	} else {
		q.tokens = min(float64(rate), q.tokens+float64(rate)*now.Sub(q.last).Seconds())
	}
	q.last = now
	if q.tokens < 1 {
		return 0
	}
	return int64(q.tokens)
}

// Took records n bytes read by a throttled read.
func (q *Throttle) Took(n int64) {
	q.mu.Lock()
	q.tokens -= float64(n)
	q.mu.Unlock()
}
