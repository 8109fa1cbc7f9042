package replication

import (
	"slices"
	"sync"
	"time"
)

// Leader tracks the followers of one partition while this broker leads it.
// Methods are safe for concurrent use.
type Leader struct {
	self       int32
	epochStart int64 // log end offset when this leader epoch began

	mu        sync.Mutex
	followers map[int32]*follower // guarded by mu
}

type follower struct {
	leo          int64 // -1: not fetched since this leader epoch began
	brokerEpoch  int64
	lastFetchLEO int64 // the leader's log end offset at the previous fetch
	lastFetch    time.Time
	lastCaughtUp time.Time
}

// NewLeader starts tracking replicas (this broker, self, among them) for a
// leader epoch that began at log end offset epochStart. Every follower
// counts as caught up now, as in Kafka, and as of unknown log end offset:
// the high watermark waits for the ISR's first fetches.
func NewLeader(self int32, replicas []int32, epochStart int64, now time.Time) *Leader {
	l := &Leader{self: self, epochStart: epochStart, followers: map[int32]*follower{}}
	for _, r := range replicas {
		if r != self {
			l.followers[r] = &follower{leo: -1, lastFetchLEO: -1, lastCaughtUp: now}
		}
	}
	return l
}

// EpochStart is the log end offset at which this leader epoch began.
func (l *Leader) EpochStart() int64 { return l.epochStart }

// Fetched records a fetch by follower id (of broker epoch brokerEpoch) at
// fetchOffset — its log end offset — when the leader's log ended at
// leaderLEO. A follower not among the replicas is ignored; it reports
// whether id is one.
func (l *Leader) Fetched(id int32, brokerEpoch, fetchOffset, leaderLEO int64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.followers[id]
	if f == nil {
		return false
	}
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, now)
	case f.lastFetchLEO >= 0 && fetchOffset >= f.lastFetchLEO:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, f.lastFetch)
	}
	f.leo, f.brokerEpoch = fetchOffset, brokerEpoch
	f.lastFetchLEO, f.lastFetch = leaderLEO, now
	return true
}

// FollowerLEO is a follower's log end offset, -1 when unknown.
func (l *Leader) FollowerLEO(id int32) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.followers[id]; f != nil {
		return f.leo
	}
	return -1
}

// HighWatermark is the smallest log end offset over isr, the leader's
// being leaderLEO; ok is false while an ISR member's is unknown.
func (l *Leader) HighWatermark(isr []int32, leaderLEO int64) (hw int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	hw = leaderLEO
	for _, r := range isr {
		if r == l.self {
			continue
		}
		f := l.followers[r]
		if f == nil || f.leo < 0 {
			return -1, false
		}
		hw = min(hw, f.leo)
	}
	return hw, true
}

// WantISR returns the ISR the partition should have and whether it differs
// from isr: members (other than the leader) whose log end offset trails
// leaderLEO and who were last caught up more than lag ago leave; replicas
// outside it whose log end offset reached both hw and the start of this
// leader epoch, and who are not lagging as above, join if eligible says
// their broker epoch is current.
func (l *Leader) WantISR(isr []int32, leaderLEO, hw int64, now time.Time, lag time.Duration, eligible func(id int32, brokerEpoch int64) bool) ([]int32, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var next []int32
	changed := false
	for _, r := range isr {
		f := l.followers[r]
		if r != l.self && f != nil && f.leo != leaderLEO && now.Sub(f.lastCaughtUp) > lag {
			changed = true
			continue
		}
		next = append(next, r)
	}
	if !slices.Contains(next, l.self) {
		next = append([]int32{l.self}, next...)
		changed = true
	}
	ids := make([]int32, 0, len(l.followers))
	for id := range l.followers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		f := l.followers[id]
		if slices.Contains(next, id) || f.leo < 0 || f.leo < hw || f.leo < l.epochStart ||
			f.leo != leaderLEO && now.Sub(f.lastCaughtUp) > lag {
			continue
		}
		if eligible != nil && !eligible(id, f.brokerEpoch) {
			continue
		}
		next = append(next, id)
		changed = true
	}
	return next, changed
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
