package share

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Key names a share-partition: a group and a topic partition.
type Key struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// TP is a topic partition of a share session.
type TP struct {
	TopicID   [16]byte
	Partition int32
}

// Session is the share session of one member with this broker: the
// partitions it fetches, and the epoch its next request must carry.
type Session struct {
	Group, Member string
	epoch         int32
	parts         map[TP]struct{}
	conn          uint64 // the connection whose ShareFetch opened it
}

// Partitions are the session's partitions, sorted.
func (s *Session) Partitions() []TP {
	return slices.SortedFunc(maps.Keys(s.parts), compareTP)
}

// SortTPs sorts topic partitions by topic id, then partition.
func SortTPs(tps []TP) { slices.SortFunc(tps, compareTP) }

func compareTP(a, b TP) int {
	return cmp.Or(bytes.Compare(a.TopicID[:], b.TopicID[:]), cmp.Compare(a.Partition, b.Partition))
}

// Manager holds the share-partitions and share sessions of a broker.
type Manager struct {
	cfg Config

	mu       sync.Mutex
	parts    map[Key]*Partition
	sessions map[[2]string]*Session
	conns    map[uint64]*Session // by the connection that opened it
	closed   bool
}

// NewManager returns an empty manager.
func NewManager(cfg Config) *Manager {
	cfg.defaults()
	return &Manager{cfg: cfg, parts: map[Key]*Partition{}, sessions: map[[2]string]*Session{}, conns: map[uint64]*Session{}}
}

// LockDuration is the acquisition lock of records handed out.
func (m *Manager) LockDuration() int32 { return int32(m.cfg.LockDuration.Milliseconds()) }

// Partition returns the share-partition of k: the one held, else its
// persisted state, else a new one from the start offset start gives.
func (m *Manager) Partition(ctx context.Context, k Key, start func() int64) (*Partition, error) {
	m.mu.Lock()
	p := m.parts[k]
	m.mu.Unlock()
	if p != nil {
		return p, nil
	}
	if m.cfg.Store != nil {
		snap, ok, err := m.cfg.Store.Read(ctx, k)
		if err != nil {
			return nil, err
		}
		switch {
		case ok && snap.Start == Uninitialized:
			// Its state was deleted: a new start, under the state's epoch.
			p = newPartition(m.cfg, start())
			p.epoch, p.dirty = snap.StateEpoch, true
		case ok:
			p = restore(m.cfg, snap)
		}
	}
	if p == nil {
		p = newPartition(m.cfg, start())
		p.dirty = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.parts[k]; q != nil {
		return q, nil
	}
	if m.closed {
		p.closed = true
	}
	m.parts[k] = p
	return p, nil
}

// Persist writes p's state to the store when it changed since the last
// write; writes of one share-partition go out in order.
func (m *Manager) Persist(ctx context.Context, k Key, p *Partition, leaderEpoch int32) error {
	if m.cfg.Store == nil {
		return nil
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.mu.Lock()
	if !p.dirty {
		p.mu.Unlock()
		return nil
	}
	s := p.snapshotLocked()
	p.dirty = false
	p.mu.Unlock()
	s.LeaderEpoch = leaderEpoch
	now := time.Now().UnixMilli()
	s.Created, s.Written = now, now
	if err := m.cfg.Store.Write(ctx, k, s); err != nil {
		p.mu.Lock()
		p.dirty = true
		p.mu.Unlock()
		return err
	}
	return nil
}

// Uninitialized is the start offset of a share-partition whose state was
// deleted (Kafka's as well): its next leader starts it anew, from the
// group's share.auto.offset.reset.
const Uninitialized int64 = -1

// Retain drops the share-partitions for which keep is false (their
// partition is no longer led here): a later leadership reads their state
// again instead of serving what this broker held.
func (m *Manager) Retain(keep func(Key) bool) {
	m.mu.Lock()
	var gone []*Partition
	for k, p := range m.parts {
		if !keep(k) {
			gone = append(gone, p)
			delete(m.parts, k)
		}
	}
	m.mu.Unlock()
	for _, p := range gone {
		p.close()
	}
}

// Lookup returns the share-partition of k, or nil when it has none.
func (m *Manager) Lookup(k Key) *Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.parts[k]
}

// GroupPartitions are the share-partitions of group held here.
func (m *Manager) GroupPartitions(group string) map[Key]*Partition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[Key]*Partition{}
	for k, p := range m.parts {
		if k.Group == group {
			out[k] = p
		}
	}
	return out
}

// Drop forgets the share-partition of k (its state was deleted, or the
// partition is no longer led here).
func (m *Manager) Drop(k Key) {
	m.mu.Lock()
	p := m.parts[k]
	delete(m.parts, k)
	m.mu.Unlock()
	if p != nil {
		p.close()
	}
}

// MemberLeft releases what member holds in every share-partition of group
// and closes its session.
func (m *Manager) MemberLeft(group, member string) {
	m.mu.Lock()
	m.removeLocked(m.sessions[[2]string{group, member}])
	var ps []*Partition
	for k, p := range m.parts {
		if k.Group == group {
			ps = append(ps, p)
		}
	}
	m.mu.Unlock()
	for _, p := range ps {
		p.ReleaseMember(member)
	}
}

// Close stops every lock timer.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	ps := slices.Collect(maps.Values(m.parts))
	m.mu.Unlock()
	for _, p := range ps {
		p.close()
	}
}

// Session epochs (ShareRequestMetadata).
const (
	InitialEpoch int32 = 0
	FinalEpoch   int32 = -1
)

func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// OpenSession checks a request's session epoch and returns its session:
// epoch 0 opens a new one (replacing the member's old one), -1 is the
// last request of the session (which the caller then closes), any other
// must be the epoch the session expects. fetch is false for
// ShareAcknowledge, which cannot open a session. conn is the number of
// the connection the request came on: the session a connection opened ends
// when it closes (ConnClosed).
func (m *Manager) OpenSession(group, member string, epoch int32, fetch bool, conn uint64) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{group, member}
	s := m.sessions[k]
	switch {
	case epoch == InitialEpoch && !fetch:
		return nil, fmt.Errorf("%w: a share session cannot start with ShareAcknowledge", kerr.InvalidShareSessionEpoch)
	case epoch == InitialEpoch:
		if s == nil && len(m.sessions) >= m.cfg.MaxSessions {
			return nil, kerr.ShareSessionLimitReached
		}
		m.removeLocked(s)
		s = &Session{Group: group, Member: member, epoch: 1, parts: map[TP]struct{}{}, conn: conn}
		m.sessions[k] = s
		m.conns[conn] = s
		return s, nil
	case s == nil:
		return nil, fmt.Errorf("%w: no share session for member %s of group %s", kerr.ShareSessionNotFound, member, group)
	case epoch == FinalEpoch:
		return s, nil
	case epoch != s.epoch:
		return nil, fmt.Errorf("%w: epoch %d, expected %d", kerr.InvalidShareSessionEpoch, epoch, s.epoch)
	}
	s.epoch = nextEpoch(s.epoch)
	return s, nil
}

// Update adds partitions to the session and removes forgotten ones.
func (m *Manager) Update(s *Session, add, forget []TP) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, tp := range add {
		s.parts[tp] = struct{}{}
	}
	for _, tp := range forget {
		delete(s.parts, tp)
	}
}

// CloseSession ends s (a request with the final epoch): what the member
// holds in the session's partitions is released.
func (m *Manager) CloseSession(s *Session) {
	m.mu.Lock()
	ps := m.endLocked(s)
	m.mu.Unlock()
	for _, p := range ps {
		p.ReleaseMember(s.Member)
	}
}

// endLocked forgets s and returns the share-partitions of its partitions.
func (m *Manager) endLocked(s *Session) []*Partition {
	m.removeLocked(s)
	var ps []*Partition
	for tp := range s.parts {
		if p := m.parts[Key{s.Group, tp.TopicID, tp.Partition}]; p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// ConnClosed ends the share session the connection numbered conn opened,
// if it is still the member's session (not ended, nor replaced by one
// opened elsewhere), and releases what the member holds in its partitions
// at once, as Kafka does when a share consumer's connection drops: other
// members need not wait for the acquisition locks to expire. Delivery
// counts stay as they are: a record counts a delivery when acquired.
func (m *Manager) ConnClosed(conn uint64) {
	m.mu.Lock()
	s := m.conns[conn]
	if s == nil || m.sessions[[2]string{s.Group, s.Member}] != s {
		m.mu.Unlock()
		return
	}
	ps := m.endLocked(s)
	m.mu.Unlock()
	for _, p := range ps {
		p.ReleaseMember(s.Member)
	}
}

// removeLocked forgets s (nil or already gone is fine).
func (m *Manager) removeLocked(s *Session) {
	if s == nil {
		return
	}
	if k := [2]string{s.Group, s.Member}; m.sessions[k] == s {
		delete(m.sessions, k)
	}
	if m.conns[s.conn] == s {
		delete(m.conns, s.conn)
	}
}

// DeleteGroup drops every share-partition and session of group.
func (m *Manager) DeleteGroup(group string) {
	m.mu.Lock()
	var ps []*Partition
	for k, p := range m.parts {
		if k.Group == group {
			ps = append(ps, p)
			delete(m.parts, k)
		}
	}
	for k, s := range m.sessions {
		if k[0] == group {
			m.removeLocked(s)
		}
	}
	m.mu.Unlock()
	for _, p := range ps {
		p.close()
	}
}
