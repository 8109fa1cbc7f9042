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

// controller_mutation_rate's token bucket, strict and permissive, as
// Kafka's TokenBucket and StrictControllerMutationQuota count.
func TestMutationBucket(t *testing.T) {
	q := NewQuotas(11, time.Second)
	q.Load(QuotaConfigs{{ClientID: "c"}: {ControllerMutationRate: 2}})
	now := time.Unix(1000, 0)
	if d, ok := q.Mutate("", "c", 20, true, now); !ok || d != 0 {
		t.Fatalf("within the burst of 22: %v %v", d, ok)
	}
	if d, ok := q.Mutate("", "c", 10, true, now); !ok || d != 0 {
		t.Fatalf("the bucket not yet below zero: %v %v", d, ok)
	}
	if d, ok := q.Mutate("", "c", 1, true, now); ok || d != 4*time.Second {
		t.Fatalf("8 below zero at 2/s: %v %v, want refused for 4 s", d, ok)
	}
	if d, ok := q.Mutate("", "c", 1, true, now.Add(4*time.Second)); !ok || d != 0 {
		t.Fatalf("refilled to zero: %v %v", d, ok)
	}
	if d, ok := q.Mutate("", "c", 3, false, now.Add(4*time.Second)); !ok || d != 2*time.Second {
		t.Fatalf("permissive: %v %v, want through with 2 s of throttle", d, ok)
	}
	if d, ok := q.Mutate("", "other", 100, true, now); !ok || d != 0 {
		t.Fatalf("no quota: %v %v", d, ok)
	}
}
