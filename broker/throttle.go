package broker

import (
	"math"
	"sync"
	"time"
)

// replicationThrottle is the leader side of Kafka's replication quota
// (leader.replication.throttled.rate over the replicas that a topic's
// leader.replication.throttled.replicas names, which
// kafka-reassign-partitions.sh --throttle sets for the partitions it
// moves): follower fetches of throttled replicas share one budget of
// bytes per second. A token bucket holding at most a second's worth: a
// throttled read takes at most what is left (one whole batch at least),
// and while nothing is left the leader answers such fetches with no
// records, as Kafka leaves a throttled partition out of its response.
type replicationThrottle struct {
	mu     sync.Mutex
	tokens float64 // bytes that may be sent now; guarded by mu
	last   time.Time
	rate   int64 // the rate tokens was filled at
}

// allowance is how many bytes a throttled read may take now at rate
// bytes/s (math.MaxInt64: no limit); 0 when the budget is spent.
func (q *replicationThrottle) allowance(rate int64, now time.Time) int64 {
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

// took records n bytes sent by a throttled read.
func (q *replicationThrottle) took(n int64) {
	q.mu.Lock()
	q.tokens -= float64(n)
	q.mu.Unlock()
}
