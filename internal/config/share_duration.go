package config

import (
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads the duration of share.auto.offset.reset's
// by_duration:<PnDTnHnMn.nS> (Java's Duration.parse, days and smaller
// units, as GroupConfig validates it).
func ParseDuration(s string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || strings.HasPrefix(s, "-") {
		return 0, false
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
		if m[i+1] != "" {
			n, err := strconv.ParseInt(m[i+1], 10, 64)
			if err != nil {
				return 0, false
			}
			d += time.Duration(n) * unit
		}
	}
	if m[4] != "" {
		f, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return 0, false
		}
		d += time.Duration(f * float64(time.Second))
	}
	return d, true
}
