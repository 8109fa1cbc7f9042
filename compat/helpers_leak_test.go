package compat

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them, but
// for one that is no test's or broker's: go-metrics (sarama's metrics)
// starts a single ticker goroutine for every meter of the process at the
// first NewMeter, and it never returns (meterArbiter.tick loops forever).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
	)
}
