package restproxy

// The schema formats (avro, jsonschema and protobuf) through the
// cluster's schema registry: Confluent's wire format, a zero byte, the
// schema's id (4 bytes, big endian) and the serialized data (protobuf.go
// for protobuf's). Avro data is given and answered in Avro's JSON
// encoding (a union's value as {"type": value}, bytes as a string of code
// points 0-255), as Confluent's proxy does.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// errNoRegistry: a schema format without samsa.schema.registry.listener.
var errNoRegistry = errf(500, 50001, "The schema formats need the schema registry (samsa.schema.registry.listener)")

// schemaFormat is an embedded format that needs the registry.
func schemaFormat(f string) bool {
	return f == formatAvro || f == formatJSONSchema || f == formatProtobuf
}

// registry is the schema registry's client for the request's user.
func (p *Proxy) registry(r *http.Request) (*sr.Client, error) {
	if p.cfg.RegistryURL == "" {
		return nil, errNoRegistry
	}
	opts := []sr.ClientOpt{sr.URLs(p.cfg.RegistryURL)}
	if p.cfg.RegistryHTTP != nil {
		opts = append(opts, sr.HTTPClient(p.cfg.RegistryHTTP))
	}
	if user, pass, ok := r.BasicAuth(); ok {
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	return sr.NewClient(opts...)
}

// registryErr is a registry failure as the proxy answers it.
func registryErr(err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		switch re.StatusCode {
		case 401:
			return errf(401, 40101, "%s", re.Message)
		case 403:
			return errf(403, 40301, "%s", re.Message)
		case 404:
			return errf(404, re.ErrorCode, "%s", re.Message)
		case 409, 422:
			return errf(422, 42205, "Invalid schema: %s", re.Message)
		}
		return errf(500, 50002, "schema registry: %s", re.Message)
	}
	return errf(500, 50002, "schema registry: %v", err)
}

// registeredSchema is a schema of the registry, parsed.
type registeredSchema struct {
	id    int
	avro  avro.Schema
	json  *jsonschema.Schema
	proto protoreflect.FileDescriptor
}

// schemaCache keeps schemas by id: ids never change their schema.
type schemaCache struct {
	mu   sync.Mutex
	byID map[int]*registeredSchema // guarded by mu
}

// maxCachedSchemas bounds the cache; past it, it starts over.
const maxCachedSchemas = 1024

func (c *schemaCache) get(id int) *registeredSchema {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byID[id]
}

func (c *schemaCache) put(s *registeredSchema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil || len(c.byID) >= maxCachedSchemas {
		c.byID = map[int]*registeredSchema{}
	}
	c.byID[s.id] = s
}

// parseSchema parses a schema's text in format, refs the texts of its
// references by name (protobuf's imports).
func parseSchema(id int, format, text string, refs map[string]string) (*registeredSchema, error) {
	rs := &registeredSchema{id: id}
	switch format {
	case formatProtobuf:
		fd, err := compileProtobuf(text, refs)
		if err != nil {
			return nil, err
		}
		rs.proto = fd
	case formatAvro:
		s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
		if err != nil {
			return nil, errf(422, 42205, "Invalid schema: %v", err)
		}
		rs.avro = s
	case formatJSONSchema:
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			return nil, errf(422, 42205, "Invalid schema: %v", err)
		}
		c := jsonschema.NewCompiler()
		url := fmt.Sprintf("mem://schema/%d.json", id)
		if err := c.AddResource(url, doc); err != nil {
			return nil, errf(422, 42205, "Invalid schema: %v", err)
		}
		if rs.json, err = c.Compile(url); err != nil {
			return nil, errf(422, 42205, "Invalid schema: %v", err)
		}
	}
	return rs, nil
}

// schemaByID is the schema with id, from the cache or the registry.
func (p *Proxy) schemaByID(ctx context.Context, cl *sr.Client, format string, id int) (*registeredSchema, error) {
	if s := p.schemas.get(id); s != nil {
		return s, nil
	}
	s, err := cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, registryErr(err)
	}
	if f := formatOfType(s.Type); f != format {
		return nil, errf(422, 42205, "Invalid schema: schema %d is %s, not %s", id, s.Type, format)
	}
	var refs map[string]string
	if format == formatProtobuf && len(s.References) > 0 {
		refs = map[string]string{}
		if err := protoRefs(ctx, cl, s.References, refs); err != nil {
			return nil, err
		}
	}
	rs, err := parseSchema(id, format, s.Schema, refs)
	if err != nil {
		return nil, err
	}
	p.schemas.put(rs)
	return rs, nil
}

func formatOfType(t sr.SchemaType) string {
	switch t {
	case sr.TypeAvro:
		return formatAvro
	case sr.TypeJSON:
		return formatJSONSchema
	case sr.TypeProtobuf:
		return formatProtobuf
	}
	return ""
}

// schemaType is the registry's type of a schema format.
func schemaType(format string) sr.SchemaType {
	switch format {
	case formatJSONSchema:
		return sr.TypeJSON
	case formatProtobuf:
		return sr.TypeProtobuf
	}
	return sr.TypeAvro
}

// requestSchema is the schema a produce request gives for its keys or
// values: registered under subject (TopicNameStrategy, topic-key or
// topic-value) when given as text, looked up when given by id; nil when
// neither.
func (p *Proxy) requestSchema(ctx context.Context, cl *sr.Client, format, subject string, text *string, id *int32) (*registeredSchema, error) {
	switch {
	case id != nil:
		return p.schemaByID(ctx, cl, format, int(*id))
	case text != nil:
		typ := schemaType(format)
		if _, err := parseSchema(0, format, *text, nil); err != nil {
			return nil, err
		}
		ss, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: *text, Type: typ})
		if err != nil {
			return nil, registryErr(err)
		}
		return p.schemaByID(ctx, cl, format, ss.ID)
	}
	return nil, nil
}

// encodeSchemaData serializes an embedded key or value with its schema,
// in Confluent's wire format; null is a null key or value.
func encodeSchemaData(s *registeredSchema, raw json.RawMessage) ([]byte, error) {
	if isNull(raw) {
		return nil, nil
	}
	if s.proto != nil {
		return encodeProtobuf(s, raw)
	}
	out := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(out[1:], uint32(s.id))
	switch {
	case s.avro != nil:
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, errUnprocessable("%v", err)
		}
		native, err := fromAvroJSON(s.avro, v, 0)
		if err != nil {
			return nil, errf(422, 42203, "Conversion of JSON to Object failed: %v", err)
		}
		b, err := avro.Marshal(s.avro, native)
		if err != nil {
			return nil, errf(422, 42203, "Conversion of JSON to Object failed: %v", err)
		}
		return append(out, b...), nil
	case s.json != nil:
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, errUnprocessable("%v", err)
		}
		if err := s.json.Validate(v); err != nil {
			return nil, errf(422, 42203, "Conversion of JSON to Object failed: %v", err)
		}
		b, err := reencode(raw)
		if err != nil {
			return nil, errUnprocessable("%v", err)
		}
		return append(out, b...), nil
	}
	return nil, errUnsupportedMedia
}

// decodeSchemaData is a record's key or value in format, read with the
// schema its wire header names.
func (p *Proxy) decodeSchemaData(ctx context.Context, cl *sr.Client, format string, b []byte) (json.RawMessage, error) {
	if b == nil {
		return json.RawMessage("null"), nil
	}
	if len(b) < 5 || b[0] != 0 {
		return nil, errf(408, 40801, "Error deserializing key/value: unknown magic byte")
	}
	s, err := p.schemaByID(ctx, cl, format, int(binary.BigEndian.Uint32(b[1:5])))
	if err != nil {
		return nil, err
	}
	data := b[5:]
	if s.proto != nil {
		return decodeProtobuf(s, data)
	}
	if s.json != nil {
		if !json.Valid(data) {
			return nil, errf(408, 40801, "Error deserializing key/value: not JSON")
		}
		return json.RawMessage(data), nil
	}
	var v any
	if err := avro.Unmarshal(s.avro, data, &v); err != nil {
		return nil, errf(408, 40801, "Error deserializing Avro message for id %d: %v", s.id, err)
	}
	return json.Marshal(toAvroJSON(s.avro, v))
}

// maxAvroDepth bounds the nesting the conversions follow.
const maxAvroDepth = 100

// fromAvroJSON turns a value in Avro's JSON encoding (numbers as
// json.Number) into what hamba/avro marshals for schema s.
func fromAvroJSON(s avro.Schema, v any, depth int) (any, error) {
	if depth > maxAvroDepth {
		return nil, errors.New("nested too deep")
	}
	switch s := s.(type) {
	case *avro.NullSchema:
		if v != nil {
			return nil, fmt.Errorf("expected null, got %v", v)
		}
		return nil, nil
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("expected an object for record %s", s.FullName())
		}
		out := make(map[string]any, len(s.Fields()))
		for _, f := range s.Fields() {
			fv, ok := m[f.Name()]
			if !ok {
				if !f.HasDefault() {
					return nil, fmt.Errorf("field %s of %s is missing", f.Name(), s.FullName())
				}
				out[f.Name()] = f.Default()
				continue
			}
			c, err := fromAvroJSON(f.Type(), fv, depth+1)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name(), err)
			}
			out[f.Name()] = c
		}
		return out, nil
	case *avro.ArraySchema:
		a, ok := v.([]any)
		if !ok {
			return nil, errors.New("expected an array")
		}
		out := make([]any, len(a))
		for i, e := range a {
			c, err := fromAvroJSON(s.Items(), e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, errors.New("expected an object for a map")
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			c, err := fromAvroJSON(s.Values(), e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case *avro.UnionSchema:
		if v == nil {
			if _, pos := s.Types().Get("null"); pos < 0 {
				return nil, errors.New("null is not in the union")
			}
			return nil, nil
		}
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return nil, errors.New(`expected {"type": value} for a union`)
		}
		for name, e := range m {
			t, _ := s.Types().Get(name)
			if t == nil {
				return nil, fmt.Errorf("%s is not in the union", name)
			}
			c, err := fromAvroJSON(t, e, depth+1)
			if err != nil {
				return nil, err
			}
			return map[string]any{name: c}, nil
		}
	case *avro.EnumSchema:
		sym, ok := v.(string)
		if !ok {
			return nil, errors.New("expected a string for an enum")
		}
		return sym, nil
	case *avro.FixedSchema:
		return latin1Bytes(v)
	case *avro.PrimitiveSchema:
		return fromAvroPrimitive(s.Type(), v)
	}
	return nil, fmt.Errorf("schema type %s is not supported", s.Type())
}

func fromAvroPrimitive(t avro.Type, v any) (any, error) {
	num := func() (json.Number, error) {
		n, ok := v.(json.Number)
		if !ok {
			return "", fmt.Errorf("expected a number for %s", t)
		}
		return n, nil
	}
	switch t {
	case avro.Boolean:
		b, ok := v.(bool)
		if !ok {
			return nil, errors.New("expected a boolean")
		}
		return b, nil
	case avro.String:
		s, ok := v.(string)
		if !ok {
			return nil, errors.New("expected a string")
		}
		return s, nil
	case avro.Bytes:
		return latin1Bytes(v)
	case avro.Int, avro.Long:
		n, err := num()
		if err != nil {
			return nil, err
		}
		i, err := n.Int64()
		if err != nil {
			return nil, err
		}
		if t == avro.Int {
			if int64(int32(i)) != i {
				return nil, fmt.Errorf("%d is out of an int's range", i)
			}
			return int(i), nil
		}
		return i, nil
	case avro.Float, avro.Double:
		n, err := num()
		if err != nil {
			return nil, err
		}
		f, err := n.Float64()
		if err != nil {
			return nil, err
		}
		if t == avro.Float {
			return float32(f), nil
		}
		return f, nil
	}
	return nil, fmt.Errorf("schema type %s is not supported", t)
}

// latin1Bytes is Avro's JSON encoding of bytes: a string whose code
// points (0-255) are the bytes.
func latin1Bytes(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, errors.New("expected a string for bytes")
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 255 {
			return nil, fmt.Errorf("code point %U is not a byte", r)
		}
		out = append(out, byte(r))
	}
	return out, nil
}

// toAvroJSON turns what hamba/avro unmarshalled for schema s into Avro's
// JSON encoding.
func toAvroJSON(s avro.Schema, v any) any {
	switch s := s.(type) {
	case *avro.RecordSchema:
		m, _ := v.(map[string]any)
		out := make(map[string]any, len(m))
		for _, f := range s.Fields() {
			out[f.Name()] = toAvroJSON(f.Type(), m[f.Name()])
		}
		return out
	case *avro.ArraySchema:
		a, _ := v.([]any)
		out := make([]any, len(a))
		for i, e := range a {
			out[i] = toAvroJSON(s.Items(), e)
		}
		return out
	case *avro.MapSchema:
		m, _ := v.(map[string]any)
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[k] = toAvroJSON(s.Values(), e)
		}
		return out
	case *avro.UnionSchema:
		if v == nil {
			return nil
		}
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for name, e := range m {
				if t, _ := s.Types().Get(name); t != nil {
					return map[string]any{name: toAvroJSON(t, e)}
				}
			}
		}
		// A nullable union decodes to its value alone.
		for _, t := range s.Types() {
			if t.Type() != avro.Null {
				return map[string]any{unionName(t): toAvroJSON(t, v)}
			}
		}
		return v
	case *avro.FixedSchema, *avro.PrimitiveSchema:
		b, ok := v.([]byte)
		if rv := reflect.ValueOf(v); !ok && rv.Kind() == reflect.Array && rv.Type().Elem().Kind() == reflect.Uint8 {
			// A fixed decodes to an array of its size.
			b, ok = make([]byte, rv.Len()), true
			reflect.Copy(reflect.ValueOf(b), rv)
		}
		if ok {
			var sb strings.Builder
			for _, c := range b {
				sb.WriteRune(rune(c))
			}
			return sb.String()
		}
	}
	return v
}

// unionName is the name a union member goes by in Avro's JSON encoding.
func unionName(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}
