package groups

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one record of __consumer_offsets; a nil Value is a tombstone.
type Record struct {
	Key, Value []byte
}

// Key versions of __consumer_offsets records: 0 and 1 are offset commits,
// 2 is group metadata. Later versions (KIP-848 groups) are skipped on load.
const (
	offsetKeyVersion = 1
	groupKeyVersion  = 2
	// Value versions written: offset commits with leader epochs (KIP-320),
	// group metadata with static members (KIP-345).
	offsetValueVersion = 3
	groupValueVersion  = 3
)

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetValue(o offset) []byte {
	v := kmsg.OffsetCommitValue{
		Version:         offsetValueVersion,
		Offset:          o.offset,
		LeaderEpoch:     o.leaderEpoch,
		Metadata:        o.metadata,
		CommitTimestamp: o.commitMs,
	}
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: group}
	return k.AppendTo(nil)
}

// groupValue is the group metadata record of g: its generation, protocol,
// leader and every member with its subscription and assignment.
func groupValue(g *classicGroup) []byte {
	v := kmsg.GroupMetadataValue{
		Version:               groupValueVersion,
		ProtocolType:          g.protocolType,
		Generation:            g.generation,
		CurrentStateTimestamp: g.stateTime.UnixMilli(),
	}
	if g.protocolName != "" {
		v.Protocol = &g.protocolName
	}
	if g.leader != "" {
		v.Leader = &g.leader
	}
	for _, m := range g.sortedMembers() {
		mv := kmsg.NewGroupMetadataValueMember()
		mv.MemberID = m.id
		if m.instanceID != "" {
			mv.InstanceID = &m.instanceID
		}
		mv.ClientID = m.clientID
		mv.ClientHost = m.clientHost
		mv.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		mv.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		mv.Subscription = m.metadataFor(g.protocolName)
		mv.Assignment = m.assignment
		v.Members = append(v.Members, mv)
	}
	return v.AppendTo(nil)
}

var errSkipRecord = errors.New("not a classic group record")

// parsedKey is a decoded __consumer_offsets key.
type parsedKey struct {
	group     string
	isOffset  bool
	topic     string
	partition int32
}

func parseKey(key []byte) (parsedKey, error) {
	if len(key) < 2 {
		return parsedKey{}, fmt.Errorf("__consumer_offsets key of %d bytes", len(key))
	}
	switch v := int16(key[0])<<8 | int16(key[1]); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return parsedKey{}, fmt.Errorf("offset commit key: %w", err)
		}
		return parsedKey{group: k.Group, isOffset: true, topic: k.Topic, partition: k.Partition}, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return parsedKey{}, fmt.Errorf("group metadata key: %w", err)
		}
		return parsedKey{group: k.Group}, nil
	default:
		return parsedKey{}, errSkipRecord
	}
}

// recordsChanged are the records that bring the log from the records
// written (key -> value) to those of now: tombstones of the keys gone,
// then the values that changed, each in key order.
func recordsChanged(written, now map[string][]byte) []Record {
	var recs []Record
	for _, k := range slices.Sorted(maps.Keys(written)) {
		if _, ok := now[k]; !ok {
			recs = append(recs, Record{Key: []byte(k)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(now)) {
		if !bytes.Equal(written[k], now[k]) {
			recs = append(recs, Record{Key: []byte(k), Value: now[k]})
		}
	}
	return recs
}

// stateRecords is what the log holds of a KIP-848 or KIP-1071 group's
// state: record key -> value, as last written.
type stateRecords map[string][]byte

// changed returns the records that bring the log from what was written to
// now (keys gone as tombstones, first), and takes now as written.
func (w *stateRecords) changed(now stateRecords) []Record {
	recs := recordsChanged(*w, now)
	*w = now
	return recs
}

// tombstones deletes every record written, and forgets them.
func (w *stateRecords) tombstones() []Record { return w.changed(stateRecords{}) }

// persistState enqueues recs, the records of a change of g's state; done
// (may be nil: failures are logged) gets the result. The caller holds the
// shard's mu.
func (g *groupCore) persistState(recs []Record, what string, done func(error)) {
	if done == nil {
		id := g.id
		done = func(err error) {
			if err != nil {
				g.s.c.log.Warn("writing "+what+" state failed", "group", id, "err", err)
			}
		}
	}
	if len(recs) == 0 {
		go done(nil)
		return
	}
	g.s.enqueue(recs, done)
}
