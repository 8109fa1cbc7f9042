package security

import (
	"testing"
	"time"
)

// A client that sends as fast as its throttles let it is held to its
// quota over the window.
func TestQuotaThrottleHoldsRate(t *testing.T) {
	q := NewQuotas(11, time.Second)
	const quota = 256 << 10
	q.Load(QuotaConfigs{{ClientID: "c"}: {ProducerByteRate: quota}})
	now := time.Unix(1000, 0)
	start := now
	var sent float64
	for now.Sub(start) < 10*time.Second {
		sent += 4 << 10
		d := q.Record(ProducerByteRate, "u", "c", 4<<10, now)
		now = now.Add(time.Millisecond + d)
	}
	if rate := sent / 10; rate > 1.1*quota || rate < 0.9*quota {
		t.Errorf("rate %.0f B/s, quota %d", rate, quota)
	}
	if d := q.Record(ProducerByteRate, "u", "other", 1<<20, now); d != 0 {
		t.Errorf("a client without a quota throttled %v", d)
	}
}
