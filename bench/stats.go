package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// percentile returns the q-quantile (0 <= q <= 1) of sorted by the
// nearest-rank method; zero for an empty slice.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	if q <= 0 {
		return sorted[0]
	}
	if q >= 1 {
		return sorted[len(sorted)-1]
	}
	// Nearest rank: the smallest value with at least q of the samples at or
	// below it, i.e. rank ceil(q*n); the epsilon absorbs float error such as
	// 0.99*100 = 99.00000000000001.
	rank := int(math.Ceil(q*float64(len(sorted)) - 1e-9))
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}

// latencySummary sorts lat in place and returns its p50 and p99.
func latencySummary(lat []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(lat)
	return percentile(lat, 0.50), percentile(lat, 0.99)
}

// rate returns bytes and records per second over d; MB is 10^6 bytes.
func rate(bytes int64, records int, d time.Duration) (mbps, rps float64) {
	s := d.Seconds()
	if s <= 0 {
		return 0, 0
	}
	return float64(bytes) / 1e6 / s, float64(records) / s
}

func fmtMS(d time.Duration) string {
	return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond))
}

func fmtMiB(b int64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
