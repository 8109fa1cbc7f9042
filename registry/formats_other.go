package registry

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

// JSON Schema and Protobuf are parsed (a schema that does not compile is
// refused with 42201, its references resolved among the registry's) and
// registered and looked up by their text; their compatibility is checked
// on the compiled forms (compat_json.go, compat_protobuf.go).

// memBase is where JSON Schemas and their references live for the
// compiler; nothing is ever loaded from elsewhere.
const memBase = "mem://registry/"

// noLoader refuses every $ref the registry does not hold: no file or
// network is read for a client's schema.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s is not a reference of the schema", u)
}

// refURL is where a JSON Schema reference named name is found: its name
// when that is an absolute URL, else beside the schema.
func refURL(name string) string {
	if u, err := url.Parse(name); err == nil && u.IsAbs() {
		return name
	}
	return memBase + strings.TrimPrefix(name, "/")
}

func parseJSONSchema(text string, deps []resolvedRef) (*parsed, error) {
	canonical, normalized, err := compactJSON(text)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	add := func(loc, src string) error {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
		if err != nil {
			return err
		}
		// A schema is an object or a boolean; jsonschema v6.0.1 panics
		// compiling anything else (FuzzParseSchema found it).
		switch doc.(type) {
		case map[string]any, bool:
		default:
			return fmt.Errorf("a JSON Schema is an object or a boolean, not %T", doc)
		}
		return c.AddResource(loc, doc)
	}
	for _, d := range deps {
		if err := add(refURL(d.Name), d.schema); err != nil {
			return nil, fmt.Errorf("%w: reference %s: %v", errInvalidSchema, d.Name, err)
		}
	}
	const loc = memBase + "schema.json"
	if err := add(loc, text); err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidSchema, err)
	}
	compiled, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidSchema, err)
	}
	return &parsed{typ: typeJSON, canonical: canonical, normalized: normalized, json: compiled}, nil
}

// protoFile is the name a Protobuf schema in .proto text is compiled
// under; its references are named by their import paths.
const protoFile = "schema.proto"

// protoDescriptor reads a Protobuf schema sent as Confluent's clients
// send it: a FileDescriptorProto, serialized and base64-encoded (text has
// spaces and semicolons, which base64 has not).
func protoDescriptor(text string) (*descriptorpb.FileDescriptorProto, bool) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil {
		return nil, false
	}
	var fdp descriptorpb.FileDescriptorProto
	if err := proto.Unmarshal(b, &fdp); err != nil {
		return nil, false
	}
	// A descriptor without json_names (Python's) would read as custom
	// names "" to the compiler: give them protoc's default.
	var fill func(ms []*descriptorpb.DescriptorProto)
	fill = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			for _, f := range m.Field {
				if f.GetJsonName() == "" {
					f.JsonName = proto.String(jsonCamelCase(f.GetName()))
				}
			}
			fill(m.NestedType)
		}
	}
	fill(fdp.MessageType)
	return &fdp, true
}

// jsonCamelCase is protoc's default JSON name of a field: its name with
// each underscore dropped and the letter after it upper-cased.
func jsonCamelCase(name string) string {
	var b strings.Builder
	upper := false
	for _, r := range name {
		switch {
		case r == '_':
			upper = true
		case upper && 'a' <= r && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			upper = false
		default:
			b.WriteRune(r)
			upper = false
		}
	}
	return b.String()
}

// parseProtobuf compiles a Protobuf schema, in .proto text or as a
// base64 FileDescriptorProto, with its references (each of either form)
// and the well-known types.
func parseProtobuf(text string, deps []resolvedRef) (*parsed, error) {
	srcs := map[string]string{}
	refs := map[string]Reference{}
	for _, d := range deps {
		srcs[d.Name] = d.schema
		refs[d.Name] = d.Reference
	}
	name := protoFile
	if fdp, ok := protoDescriptor(text); ok && fdp.GetName() != "" {
		name = fdp.GetName()
	}
	srcs[name] = text
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
			src, ok := srcs[path]
			if !ok {
				return protocompile.SearchResult{}, fmt.Errorf("%s is not a reference of the schema", path)
			}
			if fdp, ok := protoDescriptor(src); ok {
				fdp.Name = proto.String(path)
				return protocompile.SearchResult{Proto: fdp}, nil
			}
			return protocompile.SearchResult{Source: strings.NewReader(src)}, nil
		})),
	}
	files, err := c.Compile(context.Background(), name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidSchema, err)
	}
	t := strings.TrimSpace(text)
	return &parsed{typ: typeProtobuf, canonical: t, normalized: t, proto: &protoSchema{file: files[0], refs: refs}}, nil
}

// serialized is a Protobuf schema as ?format=serialized answers it: its
// FileDescriptorProto, serialized and base64-encoded.
func (p *protoSchema) serialized() string {
	b, err := proto.Marshal(protodesc.ToFileDescriptorProto(p.file))
	if err != nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(b)
}

// responseFor is v as the request asks for it: with ?format=serialized, a
// Protobuf schema as its base64 FileDescriptorProto (what Confluent's
// Protobuf deserializers ask for); with ?format=resolved, an Avro schema
// with its references inlined.
func (r *Registry) responseFor(req *http.Request, v *version) schemaResponse {
	out := responseOf(v)
	out.Schema = r.formatted(req, v)
	return out
}

// formatted is v's schema text in the request's ?format (Confluent's
// formattedString): serialized for Protobuf, resolved for Avro, the text
// as stored otherwise (JSON Schema has no other format).
func (r *Registry) formatted(req *http.Request, v *version) string {
	format := strings.ToLower(req.URL.Query().Get("format"))
	if !(v.SchemaType == typeProtobuf && format == "serialized") && !(v.SchemaType == typeAvro && format == "resolved") {
		return v.Schema
	}
	r.state.mu.RLock()
	defer r.state.mu.RUnlock()
	deps, err := r.state.resolve(v.References)
	if err != nil {
		return v.Schema
	}
	if v.SchemaType == typeAvro {
		if s, err := resolvedAvro(v.Schema, deps); err == nil {
			return s
		}
		return v.Schema
	}
	if p, err := parseSchema(v.SchemaType, v.Schema, deps); err == nil {
		return p.proto.serialized()
	}
	return v.Schema
}
