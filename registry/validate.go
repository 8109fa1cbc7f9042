package registry

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Broker-side schema validation, as Confluent Server makes it for a topic
// with confluent.value.schema.validation (or .key.): a record's value (or
// key) must be in the wire format of Confluent's serializers (magic byte
// 0, then a 4-byte big-endian schema id) and its id registered, in the
// default context, under the subject the topic's subject name strategy
// names. The payload after the id is not decoded, as Confluent's does
// not; a null key or value (a tombstone) has nothing to check.

// Strategy is a subject name strategy of Confluent's serializers.
type Strategy int

const (
	// TopicNameStrategy: the subject is topic-key or topic-value.
	TopicNameStrategy Strategy = iota
	// RecordNameStrategy: the subject is the schema's record name (an
	// Avro record's full name, a Protobuf message's, a JSON Schema's
	// title).
	RecordNameStrategy
	// TopicRecordNameStrategy: the subject is topic-name.
	TopicRecordNameStrategy
)

// Why CheckRecord refuses a record.
var (
	ErrNoMagicByte     = errors.New("registry: the record is not in the schema registry's wire format (magic byte 0 and a schema id)")
	ErrUnknownSchemaID = errors.New("registry: the record's schema id is not registered under its subject")
)

// CheckRecord reports whether data, the key (key) or value of a record
// produced to topic, is in the wire format with a schema id registered
// under the subject strategy names; nil when it is (or data is null).
func (r *Registry) CheckRecord(topic string, key bool, strategy Strategy, data []byte) error {
	if data == nil {
		return nil
	}
	if len(data) < 5 || data[0] != 0 {
		return ErrNoMagicByte
	}
	id := int(int32(binary.BigEndian.Uint32(data[1:5])))
	s := r.state
	s.mu.RLock()
	defer s.mu.RUnlock()
	vs := s.byID[ctxID{defaultContext, id}]
	if len(vs) == 0 {
		return fmt.Errorf("%w: schema id %d not found", ErrUnknownSchemaID, id)
	}
	subject := topic + "-value"
	if key {
		subject = topic + "-key"
	}
	if strategy != TopicNameStrategy {
		name, err := s.recordName(vs[0], data[5:])
		if err != nil {
			return fmt.Errorf("%w: schema id %d: %v", ErrUnknownSchemaID, id, err)
		}
		subject = name
		if strategy == TopicRecordNameStrategy {
			subject = topic + "-" + name
		}
	}
	for _, v := range vs {
		if v.Subject == subject && !v.Deleted {
			return nil
		}
	}
	return fmt.Errorf("%w: schema id %d, subject %s", ErrUnknownSchemaID, id, subject)
}

// CatchUp waits, up to timeout, until the state holds every record
// committed to _schemas when it is called. The broker checks a batch's
// refused records once more after it: a schema registered a moment ago,
// through the writer, may not be read on this broker yet.
func (r *Registry) CatchUp(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	from, _ := r.state.applied()
	_, next, err := r.cfg.Log.Read(ctx, from, 0)
	if err != nil {
		return err
	}
	return r.waitApplied(ctx, next)
}

// recordName is the record name of version v's schema, as the record
// strategies name the subject: for Protobuf, of the message that the
// message indexes at the start of payload select; the caller holds s.mu.
func (s *State) recordName(v *version, payload []byte) (string, error) {
	p, err := s.parsedCached(v)
	if err != nil {
		return "", err
	}
	switch {
	case p.avro != nil:
		if n, ok := p.avro.(avro.NamedSchema); ok {
			return n.FullName(), nil
		}
		return "", errors.New("an Avro schema without a name")
	case p.proto != nil:
		return protoMessageName(p.proto.file.Messages(), payload)
	case p.json != nil:
		if p.json.Title != "" {
			return p.json.Title, nil
		}
		return "", errors.New("a JSON Schema without a title")
	}
	return "", errors.New("a schema without a record name")
}

// protoMessageName follows the message indexes of Confluent's Protobuf
// wire format (a zigzag varint count, then that many zigzag varint
// indexes, each into the messages nested in the one before; a count of 0
// is the first message) and returns the message's full name.
func protoMessageName(msgs protoreflect.MessageDescriptors, payload []byte) (string, error) {
	next := func() (int64, error) {
		n, k := binary.Varint(payload)
		if k <= 0 {
			return 0, errors.New("malformed Protobuf message indexes")
		}
		payload = payload[k:]
		return n, nil
	}
	count, err := next()
	if err != nil {
		return "", err
	}
	idx := []int64{0}
	if count != 0 {
		if count < 0 || count > 64 {
			return "", fmt.Errorf("%d Protobuf message indexes", count)
		}
		idx = idx[:0]
		for range count {
			i, err := next()
			if err != nil {
				return "", err
			}
			idx = append(idx, i)
		}
	}
	var m protoreflect.MessageDescriptor
	for _, i := range idx {
		if i < 0 || i >= int64(msgs.Len()) {
			return "", fmt.Errorf("no Protobuf message at index %d", i)
		}
		m = msgs.Get(int(i))
		msgs = m.Messages()
	}
	return string(m.FullName()), nil
}

// maxParsedCache bounds State.parsed; it is emptied when full.
const maxParsedCache = 256

// parsedCached is parseVersionOf(v), kept for the next record with the
// same schema; the caller holds s.mu (for reading: the cache has a lock
// of its own).
func (s *State) parsedCached(v *version) (*parsed, error) {
	s.parsedMu.Lock()
	p := s.parsed[v]
	s.parsedMu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := s.parseVersionOf(v)
	if err != nil {
		return nil, err
	}
	s.parsedMu.Lock()
	if len(s.parsed) >= maxParsedCache {
		clear(s.parsed)
	}
	s.parsed[v] = p
	s.parsedMu.Unlock()
	return p, nil
}
