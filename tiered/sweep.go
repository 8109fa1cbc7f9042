package tiered

import (
	"context"
	"path"
	"strings"
	"time"
)

// The orphan sweep. A copy given up on (its call timed out) leaves its
// segment in Copying; the next pass deletes what it wrote and forgets it.
// But a PUT of that copy may still be in the network, delayed past its
// timeout (the kernel retransmits a closed connection's data for up to
// tcp_retries2, some 15 minutes), and create its object after the
// deletion: an object that no metadata names. So a leader lists the
// partition's objects and deletes those of no segment the metadata
// records: when it starts leading the partition here, and every
// sweepEvery for sweepWindow after it finished a copy left half way.
const (
	sweepEvery  = 30 * time.Second
	sweepWindow = 15 * time.Minute
)

// sweepState is when a partition led here is swept next.
type sweepState struct {
	next  time.Time // the next sweep at or after it
	until time.Time // no sweep after it (but the first)
	swept bool      // swept once since leading here
}

// watchOrphans opens (or extends) the partition's window of sweeps, the
// first at its next pass.
func (m *Manager) watchOrphans(k partKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	s := m.sweeps[k]
	s.next, s.until = now, now.Add(m.sweepWindow)
	m.sweeps[k] = s
}

// sweepDue reports whether the partition is due for a sweep.
func (m *Manager) sweepDue(k partKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sweeps[k]
	now := m.now()
	return !s.swept || !now.Before(s.next) && !now.After(s.until)
}

func (m *Manager) swept(k partKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sweeps[k]
	s.swept, s.next = true, m.now().Add(m.sweepEvery)
	m.sweeps[k] = s
}

// forgetSweeps drops the sweep state of the partitions not led here now
// (a leader here again sweeps first).
func (m *Manager) forgetSweeps(led map[partKey]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.sweeps {
		if !led[k] {
			delete(m.sweeps, k)
		}
	}
}

// sweep deletes the partition's objects of no segment its metadata
// records. The metadata is read after the listing: a segment is recorded
// (Copying) before its first object is written, so an object listed
// whose segment the metadata then names in no list is not written by a
// copy under way, and what an upload wrote after its segment was
// forgotten is deleted.
func (l *leader) sweep(ctx context.Context) error {
	objs, err := l.m.cfg.Store.List(ctx, l.obj.prefix())
	if err != nil {
		return err
	}
	md, rev, err := l.m.load(ctx, l.r.TopicID, l.r.Partition)
	if err != nil {
		return err
	}
	l.md, l.rev = md, rev
	named := map[string]bool{}
	for _, list := range [][]RemoteSegment{md.Segments, md.Copying, md.Deleting} {
		for _, s := range list {
			named[s.ID] = true
		}
	}
	n := 0
	for _, o := range objs {
		id, ok := segmentIDOf(o.Key)
		if !ok || named[id] {
			continue
		}
		if err := l.m.cfg.Store.Delete(ctx, o.Key); err != nil {
			return err
		}
		n++
	}
	if n > 0 {
		l.m.cfg.Logger.Info("tiered storage: objects of no remote segment deleted", "topic", l.r.Topic, "partition", l.r.Partition, "objects", n)
	}
	return nil
}

// segmentIDOf is the segment id in an object key (RemoteSegment.Key:
// <prefix><base offset>-<id>.<ext>); false for a key of another form.
func segmentIDOf(key string) (string, bool) {
	name := path.Base(key)
	_, rest, ok := strings.Cut(name, "-")
	if !ok {
		return "", false
	}
	dot := strings.LastIndexByte(rest, '.')
	if dot <= 0 {
		return "", false
	}
	return rest[:dot], true
}
