package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// avroPrimitives are Avro's primitive type names, never references.
var avroPrimitives = map[string]bool{"null": true, "boolean": true, "int": true, "long": true,
	"float": true, "double": true, "bytes": true, "string": true}

// avroDef is a named type's definition in a reference, with the namespace
// its names resolve in.
type avroDef struct {
	node any
	ns   string
}

// avroResolver renders an Avro schema as Java Avro's Schema.toString()
// renders it once parsed with its references (Confluent's
// ?format=resolved): every named type defined where it is first used,
// later uses by name, names written relative to the enclosing namespace.
type avroResolver struct {
	defs    map[string]avroDef
	written map[string]bool
	depth   int
}

// resolvedAvro is text, an Avro schema, with the named types of its
// references (deps) inlined.
func resolvedAvro(text string, deps []resolvedRef) (string, error) {
	r := &avroResolver{defs: map[string]avroDef{}, written: map[string]bool{}}
	for _, d := range deps {
		v, err := decodeJSON(d.schema)
		if err != nil {
			return "", err
		}
		r.collect(v, "")
	}
	v, err := decodeJSON(text)
	if err != nil {
		return "", err
	}
	out, err := r.node(v, "", "")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	writeOrdered(&buf, out, false)
	return buf.String(), nil
}

func decodeJSON(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidSchema, err)
	}
	return v, nil
}

// avroName is the full name and namespace of the named type m, defined
// where names resolve in ns ("" when it is a named type without a name).
func avroName(m map[string]any, ns string) (full, space string) {
	name, _ := m["name"].(string)
	if name == "" {
		return "", ns
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name, name[:i]
	}
	if s, ok := m["namespace"].(string); ok {
		ns = s
	}
	return qualify(name, ns), ns
}

func qualify(name, ns string) string {
	if ns == "" || strings.Contains(name, ".") {
		return name
	}
	return ns + "." + name
}

// relative is full as Java Avro writes a name in namespace ns: short when
// it is in ns.
func relative(full, ns string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 && full[:i] == ns {
		return full[i+1:]
	}
	return full
}

func isNamedType(t any) bool {
	return t == "record" || t == "error" || t == "enum" || t == "fixed"
}

// collect records the named types v defines, its names resolving in ns.
func (r *avroResolver) collect(v any, ns string) {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			r.collect(e, ns)
		}
	case map[string]any:
		t := v["type"]
		if !isNamedType(t) {
			for _, k := range []string{"type", "items", "values"} {
				if e, ok := v[k]; ok && (k != "type" || !isString(e)) {
					r.collect(e, ns)
				}
			}
			return
		}
		full, space := avroName(v, ns)
		if _, ok := r.defs[full]; !ok && full != "" {
			r.defs[full] = avroDef{node: v, ns: ns}
		}
		fields, _ := v["fields"].([]any)
		for _, f := range fields {
			if f, ok := f.(map[string]any); ok {
				r.collect(f["type"], space)
			}
		}
	}
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// node is v rendered: its names resolve in src, it is written inside
// namespace out.
func (r *avroResolver) node(v any, src, out string) (any, error) {
	if r.depth++; r.depth > 256 {
		return nil, fmt.Errorf("%w: schema nested too deep", errInvalidSchema)
	}
	defer func() { r.depth-- }()
	switch v := v.(type) {
	case string:
		if avroPrimitives[v] {
			return v, nil
		}
		full := qualify(v, src)
		if _, ok := r.defs[full]; !ok && !r.written[full] {
			if _, ok := r.defs[v]; ok || r.written[v] {
				full = v // a name of the null namespace, as Avro falls back to
			}
		}
		if d, ok := r.defs[full]; ok && !r.written[full] {
			return r.node(d.node, d.ns, out)
		}
		return relative(full, out), nil
	case []any:
		o := make([]any, len(v))
		for i, e := range v {
			var err error
			if o[i], err = r.node(e, src, out); err != nil {
				return nil, err
			}
		}
		return o, nil
	case map[string]any:
		return r.object(v, src, out)
	}
	return v, nil
}

// object renders a schema written as a JSON object.
func (r *avroResolver) object(v map[string]any, src, out string) (any, error) {
	t := v["type"]
	o := make(map[string]any, len(v))
	for k, e := range v {
		o[k] = e
	}
	var err error
	switch {
	case isNamedType(t):
		full, space := avroName(v, src)
		if full != "" && r.written[full] {
			return relative(full, out), nil
		}
		r.written[full] = full != ""
		delete(o, "namespace")
		if full != "" {
			o["name"] = full[strings.LastIndexByte(full, '.')+1:]
		}
		if space != out {
			o["namespace"] = space
		}
		if fields, ok := v["fields"].([]any); ok {
			of := make([]any, len(fields))
			for i, f := range fields {
				fm, ok := f.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%w: a field of %s is not an object", errInvalidSchema, full)
				}
				c := make(map[string]any, len(fm))
				for k, e := range fm {
					c[k] = e
				}
				if c["type"], err = r.node(fm["type"], space, space); err != nil {
					return nil, err
				}
				of[i] = c
			}
			o["fields"] = of
		}
		return o, nil
	case t == "array" || t == "map":
		for _, k := range []string{"items", "values"} {
			if e, ok := v[k]; ok {
				if o[k], err = r.node(e, src, out); err != nil {
					return nil, err
				}
			}
		}
		return o, nil
	case isString(t):
		if len(v) == 1 {
			return r.node(t, src, out)
		}
		return o, nil
	case t != nil:
		if o["type"], err = r.node(t, src, out); err != nil {
			return nil, err
		}
		return o, nil
	}
	return o, nil
}
