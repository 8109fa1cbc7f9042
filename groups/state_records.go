package groups

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// stateSchema is the record types of the state of one kind of group
// (consumer_records.go, share_records.go, streams_records.go), as Kafka's
// group coordinator writes them: a key is the type (int16), the group and,
// for a member's records, the member; a value is its version (int16, 0)
// and then the fields.
type stateSchema struct {
	what        string  // the kind, for errors
	types       []int16 // the kind's record types
	memberTypes []int16 // those whose key has a member
	ignored     int16   // a type read and dropped (no longer written); 0: none
	// The group's metadata record (its tombstone ends the group's
	// state), a member's metadata and its target assignment.
	groupMeta, memberMeta, targetMember int16
}

// stateKey is a key of a stateSchema's record.
type stateKey struct {
	typ           int16
	group, member string
}

// key encodes the key of a record of type typ.
func (sc *stateSchema) key(typ int16, group, member string) []byte {
	k := kbin.AppendInt16(nil, typ)
	k = kbin.AppendString(k, group)
	if slices.Contains(sc.memberTypes, typ) {
		k = kbin.AppendString(k, member)
	}
	return k
}

// parseKey reads a key of the schema's records; errNotKindRecord for the
// key of another record.
func (sc *stateSchema) parseKey(key []byte) (stateKey, error) {
	if len(key) < 2 {
		return stateKey{}, errNotKindRecord
	}
	r := kbin.Reader{Src: key}
	k := stateKey{typ: r.Int16()}
	switch {
	case sc.ignored != 0 && k.typ == sc.ignored:
		return k, nil
	case !slices.Contains(sc.types, k.typ):
		return stateKey{}, errNotKindRecord
	}
	k.group = r.String()
	if slices.Contains(sc.memberTypes, k.typ) {
		k.member = r.String()
	}
	if err := r.Complete(); err != nil {
		return stateKey{}, fmt.Errorf("%s record key %d: %w", sc.what, k.typ, err)
	}
	return k, nil
}

// stateGroup is a kind of group whose state is a stateSchema's records.
type stateGroup interface {
	group
	writtenRecords() stateRecords
	// forget drops what the tombstone of a member's record deletes.
	forget(k stateKey)
}

// stateLog is what the log holds of the state of a consumer, share or
// streams group: written (record key -> value), as last written.
type stateLog struct{ written stateRecords }

func newStateLog() stateLog { return stateLog{written: stateRecords{}} }

func (w *stateLog) writtenRecords() stateRecords { return w.written }

// stateTombstones deletes every record of the group's state.
func (w *stateLog) stateTombstones() []Record { return w.written.tombstones() }

// forgetMember is forget of a group with members and target: a member's
// metadata tombstone drops the member, its target assignment's its target.
func forgetMember[M, T any](sc *stateSchema, k stateKey, members map[string]M, target map[string]T) {
	switch k.typ {
	case sc.memberMeta:
		delete(members, k.member)
	case sc.targetMember:
		delete(target, k.member)
	}
}

// loadState applies one record of a kind's state read from the log:
// errNotKindRecord for a record of another kind. The group becomes one
// of the kind (mk, over its core) at a record that is not a tombstone;
// apply reads a value, its version read.
func loadState[T stateGroup](l *loader, sc *stateSchema, key, value []byte, mk func(*groupCore) T, apply func(T, stateKey, *kbin.Reader) error) error {
	k, err := sc.parseKey(key)
	if err != nil || k.typ == sc.ignored {
		return err
	}
	if value == nil {
		// A tombstone of a group of another kind is of state deleted before.
		if g, ok := l.get(k.group).(T); ok {
			delete(g.writtenRecords(), string(key))
			g.forget(k)
			if k.typ == sc.groupMeta {
				l.reset(k.group)
			}
		}
		return nil
	}
	g := loadAs(l, k.group, mk)
	g.writtenRecords()[string(key)] = bytes.Clone(value)
	r := kbin.Reader{Src: value}
	if r.Int16() != 0 {
		return fmt.Errorf("%s record %d: unknown value version", sc.what, k.typ)
	}
	return apply(g, k, &r)
}
