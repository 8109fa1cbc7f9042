package restproxy

// The protobuf format, as Confluent's proxy serves it: a record's JSON is
// parsed into the schema's first message (protobuf's JSON mapping, as
// JsonFormat.parser does) and written in Confluent's wire format, a zero
// byte, the schema's id (4 bytes, big endian), the message's indexes in
// the schema (zigzag varints; a single 0 for the first message) and the
// message's binary; read back, a record's message (named by its indexes)
// is printed in protobuf's JSON mapping with the fields that have no
// presence printed at their defaults (JsonFormat.printer's
// includingDefaultValueFields, as ProtobufSchemaUtils.toJson prints), in
// order of field number, as JsonFormat prints them (protojson prints
// them in order of declaration: numberOrder reorders its output).

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/samsa-io/samsa/registry"
)

// maxProtoRefs bounds the references a Protobuf schema pulls in, and
// maxProtoIndexes the nesting a record's message indexes name.
const (
	maxProtoRefs    = 64
	maxProtoIndexes = 32
)

// compileProtobuf compiles a Protobuf schema with its references.
func compileProtobuf(text string, refs map[string]string) (protoreflect.FileDescriptor, error) {
	fd, err := registry.CompileProtobuf(text, refs)
	if err != nil {
		return nil, errf(422, 42205, "Invalid schema: %v", err)
	}
	if fd.Messages().Len() == 0 {
		return nil, errf(422, 42205, "Invalid schema: the schema has no message")
	}
	return fd, nil
}

// protoRefs adds the texts of refs, and of theirs, to out by import
// path, from the registry.
func protoRefs(ctx context.Context, cl *sr.Client, refs []sr.SchemaReference, out map[string]string) error {
	for _, ref := range refs {
		if _, ok := out[ref.Name]; ok {
			continue
		}
		if len(out) >= maxProtoRefs {
			return errf(422, 42205, "Invalid schema: more than %d references", maxProtoRefs)
		}
		ss, err := cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
		if err != nil {
			return registryErr(err)
		}
		out[ref.Name] = ss.Schema.Schema
		if err := protoRefs(ctx, cl, ss.References, out); err != nil {
			return err
		}
	}
	return nil
}

// encodeProtobuf is raw, JSON, as the schema's first message, in
// Confluent's wire format.
func encodeProtobuf(s *registeredSchema, raw json.RawMessage) ([]byte, error) {
	m := dynamicpb.NewMessage(s.proto.Messages().Get(0))
	if err := protojson.Unmarshal(raw, m); err != nil {
		return nil, errf(422, 42203, "Conversion of JSON to Object failed: %v", err)
	}
	out, _ := (&sr.ConfluentHeader{}).AppendEncode(nil, s.id, []int{0})
	out, err := proto.MarshalOptions{}.MarshalAppend(out, m)
	if err != nil {
		return nil, errf(422, 42203, "Conversion of JSON to Object failed: %v", err)
	}
	return out, nil
}

// decodeProtobuf is data (a record past its schema id) as JSON: the
// message its indexes name, printed as Confluent's proxy prints it.
func decodeProtobuf(s *registeredSchema, data []byte) (json.RawMessage, error) {
	idx, msg, err := (&sr.ConfluentHeader{}).DecodeIndex(data, maxProtoIndexes)
	if err != nil {
		return nil, errf(408, 40801, "Error deserializing Protobuf message for id %d: bad message indexes", s.id)
	}
	var md protoreflect.MessageDescriptor
	msgs := s.proto.Messages()
	for _, i := range idx {
		if i < 0 || i >= msgs.Len() {
			return nil, errf(408, 40801, "Error deserializing Protobuf message for id %d: no message at indexes %v", s.id, idx)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(msg, m); err != nil {
		return nil, errf(408, 40801, "Error deserializing Protobuf message for id %d: %v", s.id, err)
	}
	b, err := protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(m)
	if err != nil {
		return nil, errf(500, 50002, "Failed to convert Protobuf to JSON: %v", err)
	}
	// protojson varies its spacing on purpose; Confluent's is compact.
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, fmt.Errorf("restproxy: protojson printed invalid JSON: %w", err)
	}
	if err := numberOrder(&out, compact.Bytes(), md); err != nil {
		return nil, fmt.Errorf("restproxy: reordering protojson's JSON: %w", err)
	}
	return out.Bytes(), nil
}

// specialJSON are the well-known types that protobuf's JSON mapping
// prints as something other than an object of their fields (or whose
// fields come in a fixed order, Any's "@type" first).
var specialJSON = map[protoreflect.FullName]bool{
	"google.protobuf.Any": true, "google.protobuf.Timestamp": true, "google.protobuf.Duration": true,
	"google.protobuf.FieldMask": true, "google.protobuf.Struct": true, "google.protobuf.Value": true,
	"google.protobuf.ListValue": true, "google.protobuf.DoubleValue": true, "google.protobuf.FloatValue": true,
	"google.protobuf.Int64Value": true, "google.protobuf.UInt64Value": true, "google.protobuf.Int32Value": true,
	"google.protobuf.UInt32Value": true, "google.protobuf.BoolValue": true, "google.protobuf.StringValue": true,
	"google.protobuf.BytesValue": true, "google.protobuf.Empty": true,
}

// numberOrder writes v, compact JSON that protojson printed of a message
// of md, to out with the fields of every message in it (nested ones, in
// lists and as map values too) in order of field number, as Java's
// JsonFormat prints a TreeMap of the fields. Values and map entries are
// written as they are; keys that name no field (none, as protojson
// prints) keep their place after the fields.
func numberOrder(out *bytes.Buffer, v []byte, md protoreflect.MessageDescriptor) error {
	if specialJSON[md.FullName()] || len(v) == 0 || v[0] != '{' {
		out.Write(v)
		return nil
	}
	members, err := jsonMembers(v)
	if err != nil {
		return err
	}
	number := func(m jsonMember) protoreflect.FieldNumber {
		if fd := md.Fields().ByJSONName(m.name); fd != nil {
			return fd.Number()
		}
		return protowire.MaxValidNumber + 1
	}
	slices.SortStableFunc(members, func(a, b jsonMember) int { return cmp.Compare(number(a), number(b)) })
	return writeObject(out, members, func(m jsonMember) error {
		return numberOrderValue(out, m.value, md.Fields().ByJSONName(m.name))
	})
}

// writeObject writes members as a JSON object, each value through
// value.
func writeObject(out *bytes.Buffer, members []jsonMember, value func(jsonMember) error) error {
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(m.key)
		out.WriteByte(':')
		if err := value(m); err != nil {
			return err
		}
	}
	out.WriteByte('}')
	return nil
}

// numberOrderValue writes v, the JSON of field fd's value (fd nil: no
// field), reordering the messages in it.
func numberOrderValue(out *bytes.Buffer, v []byte, fd protoreflect.FieldDescriptor) error {
	switch {
	case fd == nil:
		out.Write(v)
		return nil
	case fd.IsMap():
		vd := fd.MapValue().Message()
		if vd == nil || len(v) == 0 || v[0] != '{' {
			out.Write(v)
			return nil
		}
		entries, err := jsonMembers(v)
		if err != nil {
			return err
		}
		return writeObject(out, entries, func(e jsonMember) error { return numberOrder(out, e.value, vd) })
	case fd.Message() == nil:
		out.Write(v)
		return nil
	case fd.IsList():
		var elems []json.RawMessage
		if err := json.Unmarshal(v, &elems); err != nil {
			return err
		}
		out.WriteByte('[')
		for i, e := range elems {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := numberOrder(out, e, fd.Message()); err != nil {
				return err
			}
		}
		out.WriteByte(']')
		return nil
	}
	return numberOrder(out, v, fd.Message())
}

// jsonMember is one member of a JSON object: its key as written (quoted,
// escaped), the name it spells, and its value as written.
type jsonMember struct {
	key   []byte
	name  string
	value json.RawMessage
}

// jsonMembers are the members of obj, a compact JSON object, in order.
func jsonMembers(obj []byte) ([]jsonMember, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object: %.40q", obj)
	}
	var out []jsonMember
	for dec.More() {
		start := dec.InputOffset()
		if obj[start] == ',' {
			start++
		}
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		end := dec.InputOffset()
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, jsonMember{key: obj[start:end], name: name, value: v})
	}
	return out, nil
}
