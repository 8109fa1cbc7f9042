package main

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- { // 100ms..1ms, unsorted
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	p50, p99 := latencySummary(lat)
	if p50 != 50*time.Millisecond || p99 != 99*time.Millisecond {
		t.Fatalf("p50=%v p99=%v, want 50ms 99ms", p50, p99)
	}
	tests := []struct {
		n    int
		q    float64
		want time.Duration
	}{
		{1, 0.5, 1}, {1, 0.99, 1}, {2, 0.5, 1}, {3, 0.5, 2}, {10, 0.99, 10}, {1000, 0.99, 990}, {5, 0, 1}, {5, 1, 5},
	}
	for _, tc := range tests {
		s := make([]time.Duration, tc.n)
		for i := range s {
			s[i] = time.Duration(i + 1)
		}
		if got := percentile(s, tc.q); got != tc.want {
			t.Errorf("percentile(1..%d, %v) = %v, want %v", tc.n, tc.q, got, tc.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile(nil) = %v, want 0", got)
	}
}

func TestRate(t *testing.T) {
	mb, rs := rate(2e6, 1000, 2*time.Second)
	if mb != 1 || rs != 500 {
		t.Fatalf("rate = %v MB/s %v rec/s, want 1 and 500", mb, rs)
	}
	if mb, rs := rate(10, 1, 0); mb != 0 || rs != 0 {
		t.Fatalf("rate over zero time = %v %v, want 0 0", mb, rs)
	}
}

func TestMedian(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median odd = %v", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median even = %v", m)
	}
	if m := median(nil); m != 0 {
		t.Errorf("median empty = %v", m)
	}
}

func TestPacedRecords(t *testing.T) {
	for _, tc := range []struct {
		records int
		rate    float64
		want    int
	}{
		{200000, 5000, 20000}, {200000, 1000, 4000}, {5000, 5000, 1000}, {1000000, 5000, 20000},
	} {
		if got := pacedRecords(config{records: tc.records, rate: tc.rate}); got != tc.want {
			t.Errorf("pacedRecords(%d, %v) = %d, want %d", tc.records, tc.rate, got, tc.want)
		}
	}
}
