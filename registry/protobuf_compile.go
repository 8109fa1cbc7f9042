package registry

import "google.golang.org/protobuf/reflect/protoreflect"

// CompileProtobuf compiles a Protobuf schema as the registry parses it:
// text in .proto source or as a base64 FileDescriptorProto, refs the
// texts of its references by import path (in either form), the
// well-known types built in. The REST proxy reads and writes Protobuf
// records with it.
func CompileProtobuf(text string, refs map[string]string) (protoreflect.FileDescriptor, error) {
	deps := make([]resolvedRef, 0, len(refs))
	for name, src := range refs {
		deps = append(deps, resolvedRef{Reference: Reference{Name: name}, typ: typeProtobuf, schema: src})
	}
	p, err := parseProtobuf(text, deps)
	if err != nil {
		return nil, err
	}
	return p.proto.file, nil
}
