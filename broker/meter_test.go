package broker

import (
	"math"
	"testing"
	"time"
)

// TestMeter: the one-minute rate as a Yammer meter computes it: nothing
// before the first 5 s tick, the first tick's rate as is, then an
// exponential decay of 1/e a minute while nothing is marked.
func TestMeter(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var m meter
	if got := m.perSecond(t0); got != 0 {
		t.Fatalf("unmarked: %v", got)
	}
	m.mark(400, t0)
	m.mark(100, t0.Add(2*time.Second))
	tests := []struct {
		at   time.Duration
		want float64
	}{
		{4 * time.Second, 0},
		{5 * time.Second, 100},
		{9 * time.Second, 100},
		{65 * time.Second, 100 / math.E},
		{24 * time.Hour, 0},
	}
	for _, tt := range tests {
		if got := m.perSecond(t0.Add(tt.at)); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("at %v: %v/s, want %v", tt.at, got, tt.want)
		}
	}
	// Marks after a long idle time start from the decayed rate.
	at := t0.Add(24 * time.Hour)
	m.mark(600, at)
	if got, want := m.perSecond(at.Add(5*time.Second)), 120*meterAlpha; math.Abs(got-want) > 1e-6 {
		t.Errorf("after idling: %v/s, want %v", got, want)
	}
}
