package restproxy

// The protobuf format, as Confluent's proxy serves it: a record's JSON is
// parsed into the schema's first message (protobuf's JSON mapping, as
// JsonFormat.parser does) and written in Confluent's wire format, a zero
// byte, the schema's id (4 bytes, big endian), the message's indexes in
// the schema (zigzag varints; a single 0 for the first message) and the
// message's binary; read back, a record's message (named by its indexes)
// is printed in protobuf's JSON mapping with the fields that have no
// presence printed at their defaults (JsonFormat.printer's
// includingDefaultValueFields, as ProtobufSchemaUtils.toJson prints).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
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
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, fmt.Errorf("restproxy: protojson printed invalid JSON: %w", err)
	}
	return out.Bytes(), nil
}
