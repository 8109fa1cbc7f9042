// Package poll waits in tests for a condition instead of sleeping for a
// guess. It imports no project package, so every package's internal tests
// can use it (internal/testutil imports broker and cannot be imported from
// below it).
package poll

import (
	"testing"
	"time"
)

// Interval is how often Eventually asks again.
const Interval = 10 * time.Millisecond

// Eventually calls cond every Interval until it returns nil, and fails the
// test with cond's last error once timeout has passed. cond runs at least
// once, and once more after the deadline, so a condition met just in time
// is not missed.
func Eventually(tb testing.TB, timeout time.Duration, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("condition not met after %v: %v", timeout, err)
		}
		time.Sleep(Interval)
	}
}
