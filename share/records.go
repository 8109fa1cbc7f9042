package share

// The records of __share_group_state, in Kafka's schemas
// (share-coordinator's ShareSnapshotKey and ShareSnapshotValue, both
// version 0): the key is the record type (0) and the share-partition, the
// value a flexible struct with the start offset and the state batches.
// ShareUpdate records (type 1, deltas) are read as snapshots of what they
// name and never written.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Record types of __share_group_state keys.
const (
	recordSnapshot int16 = 0
	recordUpdate   int16 = 1
)

// StateBatch is a run of offsets with one delivery state and count.
type StateBatch struct {
	First, Last int64
	State       int8 // 0 available, 2 acknowledged, 4 archived
	Count       int16
}

// Delivery states of a StateBatch that end a record's delivery.
const (
	StateAcknowledged = stateAcknowledged
	StateArchived     = stateArchived
)

// Snapshot is the persisted state of a share-partition.
type Snapshot struct {
	SnapshotEpoch, StateEpoch, LeaderEpoch int32
	Start                                  int64
	DeliveryComplete                       int32 // -1: unknown
	Created, Written                       int64 // milliseconds
	Batches                                []StateBatch
}

// EncodeKey is the __share_group_state key of k.
func EncodeKey(k Key) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(recordSnapshot))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// DecodeKey reads a __share_group_state key: the share-partition, and
// whether it is a snapshot or update record (false: another type).
func DecodeKey(b []byte) (Key, bool, error) {
	r := reader{b: b}
	typ := r.int16()
	n := r.int16()
	if r.err == nil && n < 0 {
		r.err = errShort
	}
	var k Key
	k.Group = string(r.bytes(int(n)))
	copy(k.TopicID[:], r.bytes(16))
	k.Partition = r.int32()
	if r.err != nil {
		return Key{}, false, fmt.Errorf("share state key: %w", r.err)
	}
	return k, typ == recordSnapshot || typ == recordUpdate, nil
}

// EncodeSnapshot is the ShareSnapshotValue of s.
func EncodeSnapshot(s Snapshot) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0) // value version
	b = binary.BigEndian.AppendUint32(b, uint32(s.SnapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Start))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Created))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Written))
	b = binary.AppendUvarint(b, uint64(len(s.Batches))+1)
	for _, sb := range s.Batches {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.First))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.Last))
		b = append(b, byte(sb.State))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.Count))
		b = append(b, 0) // no tagged fields
	}
	if s.DeliveryComplete < 0 {
		return append(b, 0)
	}
	b = append(b, 1, 0, 4) // one tagged field: tag 0, 4 bytes
	return binary.BigEndian.AppendUint32(b, uint32(s.DeliveryComplete))
}

// DecodeSnapshot reads a ShareSnapshotValue (or a ShareUpdateValue, whose
// fields it shares but for the create time; update is true for it).
func DecodeSnapshot(b []byte, update bool) (Snapshot, error) {
	r := reader{b: b}
	if v := r.int16(); r.err == nil && v != 0 {
		return Snapshot{}, fmt.Errorf("share state value version %d", v)
	}
	s := Snapshot{DeliveryComplete: -1}
	s.SnapshotEpoch = r.int32()
	if !update {
		s.StateEpoch = r.int32()
	}
	s.LeaderEpoch = r.int32()
	s.Start = r.int64()
	if !update {
		s.Created = r.int64()
		s.Written = r.int64()
	}
	n := r.uvarint()
	if r.err == nil && (n == 0 || n-1 > uint64(len(r.b))/19) {
		r.err = errShort // each batch takes at least 19 bytes
	}
	if r.err == nil {
		s.Batches = make([]StateBatch, 0, n-1)
		for range n - 1 {
			sb := StateBatch{First: r.int64(), Last: r.int64(), State: int8(r.byte()), Count: r.int16()}
			r.skipTags()
			s.Batches = append(s.Batches, sb)
		}
	}
	for tags := r.uvarint(); r.err == nil && tags > 0; tags-- {
		tag, size := r.uvarint(), r.uvarint()
		v := r.bytes(int(min(size, math.MaxInt32)))
		if tag == 0 && len(v) == 4 {
			s.DeliveryComplete = int32(binary.BigEndian.Uint32(v))
		}
	}
	if r.err != nil {
		return Snapshot{}, fmt.Errorf("share state value: %w", r.err)
	}
	return s, nil
}

var errShort = errors.New("truncated or malformed")

// reader reads big-endian fields, remembering the first shortfall.
type reader struct {
	b   []byte
	err error
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		if r.err == nil {
			r.err = errShort
		}
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if v := r.bytes(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) int16() int16 {
	if v := r.bytes(2); v != nil {
		return int16(binary.BigEndian.Uint16(v))
	}
	return 0
}

func (r *reader) int32() int32 {
	if v := r.bytes(4); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}

func (r *reader) int64() int64 {
	if v := r.bytes(8); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) skipTags() {
	for tags := r.uvarint(); r.err == nil && tags > 0; tags-- {
		r.uvarint()
		r.bytes(int(min(r.uvarint(), math.MaxInt32)))
	}
}
