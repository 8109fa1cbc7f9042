package groups

import (
	"context"
	"time"
)

// waitTimer is the time a request spent waiting for a rebalance; only the
// request's goroutine touches it.
type waitTimer struct{ d time.Duration }

type waitTimerKey struct{}

// WithWaitTimer returns a context in which JoinGroup and SyncGroup add
// the time they wait for the rebalance (the other members, the leader's
// assignment) to a timer, and a function reading it: the broker leaves
// that time out of the handler's work (request_percentage), as Kafka's
// handler threads do not hold a join parked in its purgatory.
func WithWaitTimer(ctx context.Context) (context.Context, func() time.Duration) {
	w := &waitTimer{}
	return context.WithValue(ctx, waitTimerKey{}, w), func() time.Duration { return w.d }
}

// waited adds the time since start to ctx's wait timer, if it has one.
func waited(ctx context.Context, start time.Time) {
	if w, ok := ctx.Value(waitTimerKey{}).(*waitTimer); ok {
		w.d += time.Since(start)
	}
}
