package share

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Record states, as Kafka names them (RecordState; the numbers are the
// delivery states __share_group_state persists).
const (
	stateAvailable    int8 = 0
	stateAcquired     int8 = 1
	stateAcknowledged int8 = 2
	stateArchived     int8 = 4
)

// Acknowledge types of ShareFetch and ShareAcknowledge.
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4 // v2 with IsRenewAck (KIP-1222)
)

// Config is what a share-partition follows: the broker's group.share.*
// settings.
type Config struct {
	LockDuration  time.Duration // group.share.record.lock.duration.ms
	DeliveryLimit int16         // group.share.delivery.count.limit
	MaxLocks      int           // group.share.partition.max.record.locks
	MaxSessions   int           // group.share.max.share.sessions
	Store         Store         // nil: state in memory only
}

func (c *Config) defaults() {
	if c.LockDuration <= 0 {
		c.LockDuration = 30 * time.Second
	}
	if c.DeliveryLimit <= 0 {
		c.DeliveryLimit = 5
	}
	if c.MaxLocks <= 0 {
		c.MaxLocks = 2000
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = 2000
	}
}

// Store keeps share-partition state durable: the broker's
// __share_group_state. Read reports false for a share-partition without
// state.
type Store interface {
	Read(ctx context.Context, k Key) (Snapshot, bool, error)
	Write(ctx context.Context, k Key, s Snapshot) error
}

// rec is the state of one in-flight offset.
type rec struct {
	state    int8
	count    int16 // deliveries so far
	member   string
	deadline time.Time
}

// Batch is one record batch of the log as the share-partition sees it: its
// offsets, and whether it is a control batch or, for a read_committed
// group, a batch of an aborted transaction (either is archived, never
// delivered).
type Batch struct {
	Base, Last int64
	Control    bool
	Aborted    bool
}

// Acquired is a range of offsets handed to a member, all delivered Count
// times (ShareFetch's AcquiredRecords).
type Acquired struct {
	First, Last int64
	Count       int16
}

// AckBatch is one acknowledgement batch: a type for the whole range, or
// one per offset.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

// Partition is one share-partition. Its methods are safe for concurrent use.
type Partition struct {
	cfg Config // guarded by mu

	mu      sync.Mutex
	start   int64 // SPSO: every offset below is acknowledged or archived
	recs    []rec // offsets start .. start+len(recs)-1; the end (SPEO) is after them
	changed chan struct{}
	timer   *time.Timer
	timerAt time.Time
	closed  bool
	epoch   int32 // state epoch: bumped when an admin resets the start
	// dirty is set on each change the store has not written yet.
	dirty bool

	writeMu sync.Mutex // one write to the store at a time, in order
}

func newPartition(cfg Config, start int64) *Partition {
	return &Partition{cfg: cfg, start: start, changed: make(chan struct{})}
}

// SetLimits applies the group's lock duration, delivery limit and
// in-flight limit from now on (its group configs may change).
func (p *Partition) SetLimits(lock time.Duration, deliveryLimit int16, maxLocks int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if lock > 0 {
		p.cfg.LockDuration = lock
	}
	if deliveryLimit > 0 {
		p.cfg.DeliveryLimit = deliveryLimit
	}
	if maxLocks > 0 {
		p.cfg.MaxLocks = maxLocks
	}
}

// Offsets are the share-partition start and end offsets.
func (p *Partition) Offsets() (start, end int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start, p.start + int64(len(p.recs))
}

// Changed is closed when records become available again (released, or
// their locks expired), for a ShareFetch waiting for records.
func (p *Partition) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

func (p *Partition) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// NextOffset is where the next read of the log should start: the first
// available offset in flight, else the end, unless the in-flight window is
// full (ok false: nothing can be acquired now).
func (p *Partition) NextOffset(now time.Time) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	for i := range p.recs {
		if p.recs[i].state == stateAvailable {
			return p.start + int64(i), true
		}
	}
	return p.start + int64(len(p.recs)), len(p.recs) < p.cfg.MaxLocks
}

// SkipTo moves the start up to the log start offset when retention
// removed records that were never done.
func (p *Partition) SkipTo(logStart int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if logStart <= p.start {
		return
	}
	n := min(logStart-p.start, int64(len(p.recs)))
	p.recs = slices.Delete(p.recs, 0, int(n))
	p.start = logStart
	if len(p.recs) == 0 {
		p.recs = nil
	}
	p.dirty = true
}

// Acquire hands member the available records of batches (read from the
// log from NextOffset on, in offset order): at most maxRecords, rounded up
// to whole batches unless exact (record_limit acquire mode). It returns
// the acquired ranges and, for each batch, whether it holds any of them.
func (p *Partition) Acquire(member string, batches []Batch, maxRecords int, exact bool, now time.Time) ([]Acquired, []bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	var out []Acquired
	used := make([]bool, len(batches))
	n := 0
	deadline := now.Add(p.cfg.LockDuration)
batches:
	for bi, b := range batches {
		if n >= maxRecords {
			break
		}
		end := p.start + int64(len(p.recs))
		if b.Last < p.start {
			continue
		}
		if b.Base >= end && len(p.recs) >= p.cfg.MaxLocks {
			break
		}
		for off := max(b.Base, p.start); off <= b.Last; off++ {
			if exact && n >= maxRecords {
				break batches
			}
			idx := off - p.start
			for int64(len(p.recs)) <= idx {
				// Offsets the log does not have (compacted away, or
				// before the first batch read) are done at once.
				st := stateAvailable
				if p.start+int64(len(p.recs)) < off {
					st = stateArchived
				}
				p.recs = append(p.recs, rec{state: st})
			}
			r := &p.recs[idx]
			if r.state != stateAvailable {
				continue
			}
			if b.Control || b.Aborted {
				r.state = stateArchived
				continue
			}
			r.state, r.member, r.deadline = stateAcquired, member, deadline
			r.count++
			n++
			used[bi] = true
			if k := len(out); k > 0 && out[k-1].Last == off-1 && out[k-1].Count == r.count {
				out[k-1].Last = off
			} else {
				out = append(out, Acquired{First: off, Last: off, Count: r.count})
			}
		}
	}
	p.dirty = true
	p.advanceLocked()
	if len(out) > 0 {
		p.scheduleLocked(deadline)
	}
	return out, used
}

// Acknowledge applies member's acknowledgements, all or none: INVALID_REQUEST
// for a malformed batch, INVALID_RECORD_STATE when a record is not acquired
// by member. renew allows AckRenew.
func (p *Partition) Acknowledge(member string, acks []AckBatch, renew bool, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	for _, a := range acks {
		if a.First > a.Last || len(a.Types) == 0 || len(a.Types) != 1 && int64(len(a.Types)) != a.Last-a.First+1 {
			return fmt.Errorf("%w: acknowledgement batch %d-%d with %d types", kerr.InvalidRequest, a.First, a.Last, len(a.Types))
		}
		for _, t := range a.Types {
			if t < AckGap || t > AckRenew || t == AckRenew && !renew {
				return fmt.Errorf("%w: acknowledge type %d", kerr.InvalidRequest, t)
			}
		}
		for off := a.First; off <= a.Last; off++ {
			idx := off - p.start
			if idx < 0 || idx >= int64(len(p.recs)) || p.recs[idx].state != stateAcquired || p.recs[idx].member != member {
				return fmt.Errorf("%w: offset %d is not acquired by member %s", kerr.InvalidRecordState, off, member)
			}
		}
	}
	released := false
	for _, a := range acks {
		for off := a.First; off <= a.Last; off++ {
			t := a.Types[0]
			if len(a.Types) > 1 {
				t = a.Types[off-a.First]
			}
			r := &p.recs[off-p.start]
			switch t {
			case AckAccept:
				r.state, r.member = stateAcknowledged, ""
			case AckGap, AckReject:
				r.state, r.member = stateArchived, ""
			case AckRelease:
				p.releaseLocked(r)
				released = true
			case AckRenew:
				r.deadline = now.Add(p.cfg.LockDuration)
				p.scheduleLocked(r.deadline)
			}
		}
	}
	p.dirty = true
	p.advanceLocked()
	if released {
		p.signalLocked()
	}
	return nil
}

// ReleaseMember makes the records member holds available again (its
// share session closed, or it left the group).
func (p *Partition) ReleaseMember(member string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseWhereLocked(func(r *rec) bool { return r.member == member })
}

// releaseLocked ends r's lock: available again, or archived once it was
// delivered DeliveryLimit times.
func (p *Partition) releaseLocked(r *rec) {
	r.member, r.deadline = "", time.Time{}
	if r.count >= p.cfg.DeliveryLimit {
		r.state = stateArchived
	} else {
		r.state = stateAvailable
	}
}

// expireLocked releases the records whose lock is past.
func (p *Partition) expireLocked(now time.Time) bool {
	return p.releaseWhereLocked(func(r *rec) bool { return !r.deadline.After(now) })
}

// releaseWhereLocked releases the acquired records for which match is
// true and, if there were any, records the change and wakes the
// fetches waiting for records; it reports whether there were any.
func (p *Partition) releaseWhereLocked(match func(*rec) bool) bool {
	any := false
	for i := range p.recs {
		if r := &p.recs[i]; r.state == stateAcquired && match(r) {
			p.releaseLocked(r)
			any = true
		}
	}
	if any {
		p.dirty = true
		p.advanceLocked()
		p.signalLocked()
	}
	return any
}

// advanceLocked moves the start past the records that are done.
func (p *Partition) advanceLocked() {
	n := 0
	for n < len(p.recs) && (p.recs[n].state == stateAcknowledged || p.recs[n].state == stateArchived) {
		n++
	}
	if n == 0 {
		return
	}
	p.start += int64(n)
	p.recs = slices.Delete(p.recs, 0, n)
	if len(p.recs) == 0 {
		p.recs = nil
	}
}

// scheduleLocked arms the lock timer for a deadline, unless it fires
// before it anyway.
func (p *Partition) scheduleLocked(deadline time.Time) {
	if p.closed || p.timer != nil && !p.timerAt.After(deadline) {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timerAt = deadline
	p.timer = time.AfterFunc(time.Until(deadline), p.onTimer)
}

func (p *Partition) onTimer() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = nil
	if p.closed {
		return
	}
	now := time.Now()
	p.expireLocked(now)
	var next time.Time
	for i := range p.recs {
		if r := &p.recs[i]; r.state == stateAcquired && (next.IsZero() || r.deadline.Before(next)) {
			next = r.deadline
		}
	}
	if !next.IsZero() {
		p.scheduleLocked(next)
	}
}

func (p *Partition) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}

// Reset sets the start offset (AlterShareGroupOffsets on an empty group):
// nothing is in flight after it.
func (p *Partition) Reset(start int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start, p.recs = start, nil
	p.epoch++
	p.dirty = true
	p.signalLocked()
}

// InFlight counts the records held now and those in flight, for describe tools and tests.
func (p *Partition) InFlight() (acquired, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.recs {
		if r.state == stateAcquired {
			acquired++
		}
	}
	return acquired, len(p.recs)
}

// Summary is what DescribeShareGroupOffsets shows: the start offset, the
// state epoch, and how many offsets in flight are already done (the lag
// is the high watermark less the start and those).
func (p *Partition) Summary() (start int64, epoch int32, done int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.recs {
		if r.state == stateAcknowledged || r.state == stateArchived {
			done++
		}
	}
	return p.start, p.epoch, done
}

// snapshotLocked is the state to persist: the start offset and the
// in-flight offsets as runs of one state and delivery count. An acquired
// record is persisted as available (its lock dies with the leader), with
// its count.
func (p *Partition) snapshotLocked() Snapshot {
	s := Snapshot{StateEpoch: p.epoch, Start: p.start, DeliveryComplete: 0}
	for i, r := range p.recs {
		st := r.state
		if st == stateAcquired {
			st = stateAvailable
		}
		if st != stateAvailable {
			s.DeliveryComplete++
		}
		off := p.start + int64(i)
		if n := len(s.Batches); n > 0 && s.Batches[n-1].Last == off-1 && s.Batches[n-1].State == st && s.Batches[n-1].Count == r.count {
			s.Batches[n-1].Last = off
			continue
		}
		s.Batches = append(s.Batches, StateBatch{First: off, Last: off, State: st, Count: r.count})
	}
	return s
}

// restore is a share-partition from its persisted state. Records that
// reached the delivery limit without being done are archived: they were
// delivered as often as they may be.
func restore(cfg Config, s Snapshot) *Partition {
	p := newPartition(cfg, s.Start)
	p.epoch = s.StateEpoch
	for _, b := range s.Batches {
		if b.Last < p.start || b.Last < b.First || b.Last-b.First > int64(cfg.MaxLocks)*4 {
			continue // nothing of it is in flight, or not a batch we would write
		}
		for off := max(b.First, p.start); off <= b.Last; off++ {
			for p.start+int64(len(p.recs)) < off {
				p.recs = append(p.recs, rec{state: stateAvailable})
			}
			if p.start+int64(len(p.recs)) > off {
				continue
			}
			st := b.State
			switch {
			case st != stateAcknowledged && st != stateArchived:
				st = stateAvailable
				if b.Count >= cfg.DeliveryLimit {
					st = stateArchived
				}
			}
			p.recs = append(p.recs, rec{state: st, count: b.Count})
		}
	}
	p.advanceLocked()
	return p
}
