package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema types, as Confluent names them.
const (
	typeAvro     = "AVRO"
	typeJSON     = "JSON"
	typeProtobuf = "PROTOBUF"
)

// supportedTypes are the schema types this registry parses, as
// /schemas/types lists them (in Confluent's order).
var supportedTypes = []string{typeJSON, typeProtobuf, typeAvro}

// errInvalidSchema wraps every reason a schema does not parse.
var errInvalidSchema = errors.New("invalid schema")

// parsed is a schema that parsed, with its references.
type parsed struct {
	typ string
	// canonical is the schema as stored and compared: its JSON compacted.
	canonical string
	// normalized is canonical with object keys sorted, for normalize=true.
	normalized string
	avro       avro.Schema
	proto      *protoSchema
	json       *jsonschema.Schema
}

// resolvedRef is a reference's schema, found in the registry.
type resolvedRef struct {
	Reference
	typ, schema string
}

// parseSchema parses text as a schema of type typ, its references (deps,
// in the order they must be parsed: those a reference uses before it)
// resolved.
func parseSchema(typ, text string, deps []resolvedRef) (*parsed, error) {
	for _, d := range deps {
		if d.typ != typ {
			return nil, fmt.Errorf("%w: reference %s is a %s schema, not %s", errInvalidSchema, d.Name, d.typ, typ)
		}
	}
	switch typ {
	case typeAvro:
		return parseAvro(text, deps)
	case typeJSON:
		return parseJSONSchema(text, deps)
	case typeProtobuf:
		return parseProtobuf(text, deps)
	}
	return nil, fmt.Errorf("%w: unsupported schema type %s", errInvalidSchema, typ)
}

func parseAvro(text string, deps []resolvedRef) (*parsed, error) {
	canonical, normalized, err := compactJSON(text)
	if err != nil {
		return nil, err
	}
	// A cache of its own per parse: hamba/avro's default cache is global,
	// and names must resolve only to this schema's references.
	cache := &avro.SchemaCache{}
	for _, d := range deps {
		if _, err := avro.ParseWithCache(d.schema, "", cache); err != nil {
			return nil, fmt.Errorf("%w: reference %s: %v", errInvalidSchema, d.Name, err)
		}
	}
	s, err := avro.ParseWithCache(text, "", cache)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidSchema, err)
	}
	return &parsed{typ: typeAvro, canonical: canonical, normalized: normalized, avro: s}, nil
}

// compactJSON returns text compacted, and compacted with its object keys
// in a fixed order: Avro's attributes first, in the order Avro writes
// them (type, name, namespace, doc, ...), then the others sorted.
func compactJSON(text string) (compact, sorted string, err error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(text)); err != nil {
		return "", "", fmt.Errorf("%w: %v", errInvalidSchema, err)
	}
	dec := json.NewDecoder(bytes.NewReader(buf.Bytes()))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", "", fmt.Errorf("%w: %v", errInvalidSchema, err)
	}
	var out bytes.Buffer
	writeOrdered(&out, v, false)
	return buf.String(), out.String(), nil
}

// avroKeyOrder ranks the attributes of Avro schemas as Avro writes them,
// fieldKeyOrder those of a record's fields: Java's Schema.toJson writes a
// named type's or a field's other properties (unranked: 100, by name here,
// in insertion order there) and then its aliases last.
var (
	avroKeyOrder = map[string]int{"type": 1, "name": 2, "namespace": 3, "doc": 4,
		"fields": 6, "symbols": 6, "items": 6, "values": 6, "size": 6, "default": 7,
		"logicalType": 9, "precision": 10, "scale": 11, "aliases": 101}
	fieldKeyOrder = map[string]int{"name": 1, "type": 2, "doc": 3, "default": 4, "order": 5, "aliases": 101}
)

// writeOrdered writes v compacted, object keys ordered; field says v is a
// record's field.
func writeOrdered(buf *bytes.Buffer, v any, field bool) {
	order := avroKeyOrder
	if field {
		order = fieldKeyOrder
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			ra, rb := order[a], order[b]
			if ra == 0 {
				ra = 100
			}
			if rb == 0 {
				rb = 100
			}
			if ra != rb {
				return ra - rb
			}
			return strings.Compare(a, b)
		})
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(marshal(k))
			buf.WriteByte(':')
			if fields, ok := v[k].([]any); ok && k == "fields" {
				writeArray(buf, fields, true)
				continue
			}
			writeOrdered(buf, v[k], false)
		}
		buf.WriteByte('}')
	case []any:
		writeArray(buf, v, false)
	default:
		buf.Write(marshal(v))
	}
}

func writeArray(buf *bytes.Buffer, v []any, fields bool) {
	buf.WriteByte('[')
	for i, e := range v {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeOrdered(buf, e, fields)
	}
	buf.WriteByte(']')
}
