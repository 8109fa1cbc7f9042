package groups

import (
	"errors"
	"time"
)

// loader rebuilds the groups of a shard from the records of its
// partition, in offset order (shard.Load).
type loader struct {
	s      *shard
	start  time.Time
	groups map[string]group
}

func newLoader(s *shard, start time.Time) *loader {
	return &loader{s: s, start: start, groups: make(map[string]group)}
}

// get returns group id as loaded so far: an empty classic group if no
// record has named it yet.
func (l *loader) get(id string) group {
	g := l.groups[id]
	if g == nil {
		g = newClassicGroup(newCore(l.s, id), l.start)
		l.groups[id] = g
	}
	return g
}

// loadAs returns group id as a group of kind T: one of another kind is
// replaced by a new T (mk) over its core, its offsets kept.
func loadAs[T group](l *loader, id string, mk func(*groupCore) T) T {
	g := l.get(id)
	if t, ok := g.(T); ok {
		return t
	}
	t := mk(g.core())
	l.groups[id] = t
	return t
}

// reset makes group id an empty classic group, its offsets kept: the
// records of its kind's state were deleted.
func (l *loader) reset(id string) {
	l.groups[id] = newClassicGroup(l.get(id).core(), l.start)
}

// errNotKindRecord is what a kind's record loader answers for a record of
// another kind.
var errNotKindRecord = errors.New("not a record of this kind of group")

// kindLoaders load the records of the consumer, share and streams groups'
// state (consumer_records.go, share_records.go, streams_records.go).
var kindLoaders = []struct {
	what string
	load func(l *loader, key, value []byte) error
}{
	{"consumer group", loadConsumerRecord},
	{"share group", loadShareRecord},
	{"streams group", loadStreamsRecord},
}

// apply applies one record of the partition.
func (l *loader) apply(r LogRecord) {
	s := l.s
	if r.Control {
		for _, g := range l.groups {
			g.core().completeTxn(r.ProducerID, r.Commit)
		}
		return
	}
	key, value := r.Key, r.Value
	for _, k := range kindLoaders {
		if err := k.load(l, key, value); !errors.Is(err, errNotKindRecord) {
			if err != nil {
				s.c.log.Warn("skipping unreadable "+k.what+" record", "partition", s.id, "err", err)
			}
			return
		}
	}
	k, err := parseKey(key)
	if err != nil {
		if !errors.Is(err, errSkipRecord) {
			s.c.log.Warn("skipping unreadable __consumer_offsets record", "partition", s.id, "err", err)
		}
		return
	}
	switch {
	case k.isOffset:
		l.applyOffset(k, r)
	case value == nil:
		// Group deleted: its offsets were tombstoned before it.
		delete(l.groups, k.group)
	default:
		g := loadAs(l, k.group, func(c *groupCore) *classicGroup { return newClassicGroup(c, l.start) })
		if err := g.restore(value); err != nil {
			s.c.log.Warn("skipping unreadable group metadata", "group", k.group, "err", err)
		}
	}
}

// applyOffset applies an offset commit (pending until its marker, in a
// transactional batch) or its tombstone.
func (l *loader) applyOffset(k parsedKey, r LogRecord) {
	g := l.get(k.group).core()
	tp := topicPartition{k.topic, k.partition}
	switch {
	case r.ProducerID >= 0 && r.Value != nil:
		if o, err := parseOffsetValue(r.Value); err == nil {
			g.addPendingTxn(r.ProducerID, map[topicPartition]offset{tp: o})
		}
	case r.Value == nil:
		delete(g.offsets, tp)
	default:
		o, err := parseOffsetValue(r.Value)
		if err != nil {
			l.s.c.log.Warn("skipping unreadable offset commit", "group", k.group, "err", err)
			return
		}
		g.offsets[tp] = o
	}
}
