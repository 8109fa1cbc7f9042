package replication

import (
	"slices"
	"sync"
	"time"

	"github.com/samsa-io/samsa/logstore"
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

// SetReplicas makes the tracked followers those of replicas (a
// reassignment adds or removes some while this broker leads): a new one
// starts as of unknown log end offset, caught up now; a removed one is
// forgotten.
func (l *Leader) SetReplicas(replicas []int32, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.followers {
		if !slices.Contains(replicas, id) {
			delete(l.followers, id)
		}
	}
	for _, r := range replicas {
		if r != l.self && l.followers[r] == nil {
			l.followers[r] = &follower{leo: -1, lastFetchLEO: -1, lastCaughtUp: now}
		}
	}
}

// EpochStart is the log end offset at which this leader epoch began.
func (l *Leader) EpochStart() int64 { return l.epochStart }

// EpochLog is what a leader reads of its own log to validate a follower's
// fetch position: *logstore.Log.
type EpochLog interface {
	StartOffset() int64
	EndOffset() int64
	// EndOffsetForEpoch is the largest epoch <= epoch the log knows and
	// where it ends; (-1, -1) when none.
	EndOffsetForEpoch(epoch int32) (int32, int64)
}

// Divergence tells a follower where its log left the leader's (Fetch v12+
// DivergingEpoch): the largest epoch the leader knows up to the follower's
// last fetched epoch, and its end offset in the leader's log.
type Divergence struct {
	Epoch     int32
	EndOffset int64
}

// FetchCheck is the leader's verdict on one follower fetch.
type FetchCheck struct {
	// Replica is false when the fetching broker is no replica of the
	// partition.
	Replica bool
	// Diverging is set when the follower's log diverged from the leader's
	// at or before its fetch offset: the answer carries it and no records.
	Diverging *Divergence
	// Err is logstore.ErrOffsetOutOfRange when the fetch offset lies
	// outside the leader's log (past its end, or before its start), or when
	// the leader knows no epoch up to the follower's.
	Err error
}

// Counted reports whether the fetch was recorded as the follower's log
// end offset.
func (c FetchCheck) Counted() bool { return c.Replica && c.Diverging == nil && c.Err == nil }

// ValidateFetch checks a follower's position against the leader's log as
// Kafka's Partition.readRecords does (KIP-320, KIP-595): with a last
// fetched epoch (-1: none, an old peer), the leader's end offset for that
// epoch must not be below the fetch offset and must be of that very epoch,
// else the follower diverged; and the fetch offset must lie within the
// leader's log.
func ValidateFetch(log EpochLog, fetchOffset int64, lastFetchedEpoch int32) (*Divergence, error) {
	return validateFetch(log, log.EndOffset(), fetchOffset, lastFetchedEpoch)
}

// validateFetch is ValidateFetch against the log end offset leo.
func validateFetch(log EpochLog, leo, fetchOffset int64, lastFetchedEpoch int32) (*Divergence, error) {
	if lastFetchedEpoch >= 0 {
		epoch, end := log.EndOffsetForEpoch(lastFetchedEpoch)
		if epoch < 0 || end < 0 {
			return nil, logstore.ErrOffsetOutOfRange
		}
		if epoch < lastFetchedEpoch || end < fetchOffset {
			return &Divergence{Epoch: epoch, EndOffset: end}, nil
		}
	}
	if fetchOffset < log.StartOffset() || fetchOffset > leo {
		return nil, logstore.ErrOffsetOutOfRange
	}
	return nil, nil
}

// Fetched validates a fetch by follower id (of broker epoch brokerEpoch)
// at fetchOffset, its log end offset, whose last batch was of
// lastFetchedEpoch, against the leader's log, and records it when valid:
// the follower's log end offset and caught-up time move only for a fetch
// within the leader's log that does not diverge from it, so a follower
// with a divergent tail never counts toward the high watermark or the ISR
// (Kafka updates a follower's fetch state only then).
func (l *Leader) Fetched(id int32, brokerEpoch, fetchOffset int64, lastFetchedEpoch int32, log EpochLog, now time.Time) FetchCheck {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.followers[id]
	if f == nil {
		return FetchCheck{}
	}
	// The log end offset before the read, as Kafka takes it: appends
	// after the check do not keep a follower from being caught up.
	leaderLEO := log.EndOffset()
	div, err := validateFetch(log, leaderLEO, fetchOffset, lastFetchedEpoch)
	if div != nil || err != nil {
		return FetchCheck{Replica: true, Diverging: div, Err: err}
	}
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, now)
	case f.lastFetchLEO >= 0 && fetchOffset >= f.lastFetchLEO:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, f.lastFetch)
	}
	f.leo, f.brokerEpoch = fetchOffset, brokerEpoch
	f.lastFetchLEO, f.lastFetch = leaderLEO, now
	return FetchCheck{Replica: true}
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
