package broker

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/samsa-io/samsa/internal/config"
)

// connLimits holds the state of the connection limits beyond the counts
// (server.go's accept): max.connection.creation.rate's token bucket and
// the parsed max.connections.per.ip.overrides. The zero value is ready.
type connLimits struct {
	mu     sync.Mutex
	tokens float64   // guarded by mu
	last   time.Time // guarded by mu; when tokens was last refilled

	overMu  sync.Mutex
	overRaw string         // guarded by overMu; the setting overs was parsed from
	overs   map[string]int // guarded by overMu
	overOK  bool           // guarded by overMu; overs parsed once
}

// waitCreation takes one connection creation from the bucket of rate per
// second (burst: one second's worth), waiting while it is empty, as
// Kafka's acceptor waits out the throttle of max.connection.creation.rate
// (KIP-612) while the kernel's backlog holds the connections. The rate is
// read again every 100 ms, since it is dynamic. It returns false once ctx
// ends.
func (l *connLimits) waitCreation(ctx context.Context, rate func() int32) bool {
	for {
		r := rate()
		if r == math.MaxInt32 {
			return true
		}
		wait := 100 * time.Millisecond
		l.mu.Lock()
		now := time.Now()
		if l.last.IsZero() {
			l.tokens = float64(r)
		} else {
			l.tokens = min(l.tokens+now.Sub(l.last).Seconds()*float64(r), float64(max(r, 1)))
		}
		l.last = now
		if l.tokens >= 1 {
			l.tokens--
			l.mu.Unlock()
			return true
		}
		if r > 0 {
			wait = min(wait, time.Duration((1-l.tokens)/float64(r)*float64(time.Second))+time.Millisecond)
		}
		l.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// perIPLimit is max.connections.per.ip for ip, or its override.
func (b *Broker) perIPLimit(s *config.BrokerSettings, ip string) int {
	l := &b.limits
	l.overMu.Lock()
	defer l.overMu.Unlock()
	if !l.overOK || l.overRaw != s.MaxConnectionsPerIPOver {
		m, err := config.ParseIPOverrides(s.MaxConnectionsPerIPOver, nil)
		if err != nil {
			b.log.Warn("max.connections.per.ip.overrides not applied", "err", err)
		}
		l.overs, l.overRaw, l.overOK = m, s.MaxConnectionsPerIPOver, true
	}
	if n, ok := l.overs[ip]; ok {
		return n
	}
	return int(s.MaxConnectionsPerIP)
}
