package broker

import (
	"math"
	"sync"
	"time"
)

// meter is the one-minute rate of a Yammer meter, what Kafka's *PerSec
// metrics show in JMX as OneMinuteRate: an exponentially weighted moving
// average of events (here bytes) per second, ticked every 5 s, the first
// tick taking the rate of its interval. /metrics exports counters, from
// which Prometheus computes rates; a meter serves the admin surfaces
// that show a rate in one request (`samsa topic describe`, the console).
type meter struct {
	mu        sync.Mutex
	last      time.Time // guarded by mu: the last tick (zero before the first mark)
	uncounted int64     // guarded by mu: marked since the last tick
	rate      float64   // guarded by mu: per second
	ticked    bool      // guarded by mu
}

const meterTick = 5 * time.Second

// meterAlpha weighs each 5 s tick in a one-minute average.
var meterAlpha = 1 - math.Exp(-meterTick.Seconds()/time.Minute.Seconds())

func (m *meter) mark(n int64, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last.IsZero() {
		m.last = now
	}
	m.tick(now)
	m.uncounted += n
}

// perSecond is the rate at now.
func (m *meter) perSecond(now time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last.IsZero() {
		return 0
	}
	m.tick(now)
	return m.rate
}

// tick folds in every whole tick from m.last to now; ticks after the
// first carry nothing, so that many of them only decay the rate.
func (m *meter) tick(now time.Time) {
	k := int64(now.Sub(m.last) / meterTick)
	if k <= 0 {
		return
	}
	instant := float64(m.uncounted) / meterTick.Seconds()
	if m.ticked {
		m.rate += meterAlpha * (instant - m.rate)
	} else {
		m.rate, m.ticked = instant, true
	}
	m.rate *= math.Pow(1-meterAlpha, float64(k-1))
	m.uncounted = 0
	m.last = m.last.Add(time.Duration(k) * meterTick)
}
