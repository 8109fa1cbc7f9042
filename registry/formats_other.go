package registry

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// JSON Schema and Protobuf are parsed (a schema that does not compile is
// refused with 42201, its references resolved among the registry's) and
// registered and looked up by their text; their compatibility rules are
// not implemented yet: every evolution of them passes the check.

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
	if _, err := c.Compile(loc); err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidSchema, err)
	}
	return &parsed{typ: typeJSON, canonical: canonical, normalized: normalized}, nil
}

// protoFile is the name a Protobuf schema is compiled under; its
// references are named by their import paths.
const protoFile = "schema.proto"

func parseProtobuf(text string, deps []resolvedRef) (*parsed, error) {
	srcs := map[string]string{protoFile: text}
	for _, d := range deps {
		srcs[d.Name] = d.schema
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: func(path string) (io.ReadCloser, error) {
				src, ok := srcs[path]
				if !ok {
					return nil, fmt.Errorf("%s is not a reference of the schema", path)
				}
				return io.NopCloser(strings.NewReader(src)), nil
			},
		}),
	}
	if _, err := c.Compile(context.Background(), protoFile); err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidSchema, err)
	}
	t := strings.TrimSpace(text)
	return &parsed{typ: typeProtobuf, canonical: t, normalized: t}, nil
}
