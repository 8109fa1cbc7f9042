package registry

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode/utf16"
)

// GUIDs, as Confluent's registry (8.0 on) gives them: besides its id,
// each schema has a GUID, the MD5 of its text, its references (name,
// subject, version as 4 bytes big-endian), then, when present, a byte 1
// and its metadata (tags by name, each tag's values, properties by name
// with their values, sensitive names; each sorted as Java sorts strings),
// then a byte 1 and its rule set (each rule's name, doc, kind, mode,
// type, tags, params, expr, onSuccess, onFailure and a byte 1 when
// disabled; then enableAt), all as UTF-8, written as a UUID
// (8-4-4-4-12 hex digits). A GUID is thus the same in every context and
// on every registry that holds the same schema, and nothing of it is
// stored: a SCHEMA record's "md5" (base64; Confluent writes one when it
// encrypts sensitive metadata, hashed before) is taken when there is
// one. Confluent's serializers put the GUID in the record header
// __value_schema_id or __key_schema_id (magic byte 1, the 16 bytes, then
// Protobuf's message indexes), and the deserializers fetch the schema
// with GET /schemas/guids/{guid}.

// guid is a schema's GUID.
type guid [16]byte

func (g guid) String() string {
	var b [36]byte
	hex.Encode(b[0:8], g[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], g[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], g[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], g[8:10])
	b[23] = '-'
	hex.Encode(b[24:], g[10:])
	return string(b[:])
}

// parseGUID reads a GUID as Confluent's registry reads one: a UUID
// (8-4-4-4-12 hex digits, in any case) or its 32 hex digits alone.
func parseGUID(s string) (guid, bool) {
	var g guid
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' {
		s = s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
	}
	if len(s) != 32 {
		return g, false
	}
	_, err := hex.Decode(g[:], []byte(s))
	return g, err == nil
}

// guidOf is the GUID of a stored schema.
func guidOf(v *schemaValue) guid {
	var g guid
	if b, err := base64.StdEncoding.DecodeString(v.MD5); err == nil && len(b) == len(g) {
		copy(g[:], b)
		return g
	}
	h := md5.New()
	io.WriteString(h, v.Schema)
	for _, r := range v.References {
		io.WriteString(h, r.Name)
		io.WriteString(h, r.Subject)
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(r.Version)))
	}
	if m := rawJSON(v.Metadata); m != nil {
		h.Write([]byte{1})
		hashMetadata(h, m)
	}
	if rs := rawJSON(v.RuleSet); rs != nil {
		h.Write([]byte{1})
		hashRuleSet(h, rs)
	}
	h.Sum(g[:0])
	return g
}

// scalar is a JSON string, or a number's or a boolean's text (as Jackson
// reads either where a string goes); "" for anything else.
type scalar string

func (s *scalar) UnmarshalJSON(b []byte) error {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil
	}
	switch v := v.(type) {
	case string:
		*s = scalar(v)
	case json.Number:
		*s = scalar(v)
	case bool:
		*s = "false"
		if v {
			*s = "true"
		}
	}
	return nil
}

// javaOrder sorts strings as Java's String.compareTo does, by UTF-16
// code unit.
func javaOrder(a, b scalar) int {
	return slices.Compare(utf16.Encode([]rune(string(a))), utf16.Encode([]rune(string(b))))
}

// hashSet hashes a set of strings (a Java SortedSet): sorted, once each.
func hashSet(h hash.Hash, set []scalar) {
	set = slices.Clone(set)
	slices.SortFunc(set, javaOrder)
	for _, s := range slices.Compact(set) {
		io.WriteString(h, string(s))
	}
}

// hashMap hashes a map (a Java SortedMap) by key, each key followed by
// what value writes of its value.
func hashMap[V any](h hash.Hash, m map[scalar]V, value func(V)) {
	keys := make([]scalar, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, javaOrder)
	for _, k := range keys {
		io.WriteString(h, string(k))
		value(m[k])
	}
}

func hashMetadata(h hash.Hash, raw json.RawMessage) {
	var m struct {
		Tags       map[scalar][]scalar `json:"tags"`
		Properties map[scalar]scalar   `json:"properties"`
		Sensitive  []scalar            `json:"sensitive"`
	}
	json.Unmarshal(raw, &m) // what does not fit its field is left out
	hashMap(h, m.Tags, func(v []scalar) { hashSet(h, v) })
	hashMap(h, m.Properties, func(v scalar) { io.WriteString(h, string(v)) })
	hashSet(h, m.Sensitive)
}

// rule is a rule as hashed; kind and mode default as Confluent's Rule
// defaults them.
type rule struct {
	Name      scalar            `json:"name"`
	Doc       scalar            `json:"doc"`
	Kind      scalar            `json:"kind"`
	Mode      scalar            `json:"mode"`
	Type      scalar            `json:"type"`
	Tags      []scalar          `json:"tags"`
	Params    map[scalar]scalar `json:"params"`
	Expr      scalar            `json:"expr"`
	OnSuccess scalar            `json:"onSuccess"`
	OnFailure scalar            `json:"onFailure"`
	Disabled  bool              `json:"disabled"`
}

func hashRuleSet(h hash.Hash, raw json.RawMessage) {
	var rs struct {
		MigrationRules []rule `json:"migrationRules"`
		DomainRules    []rule `json:"domainRules"`
		EncodingRules  []rule `json:"encodingRules"`
		EnableAt       scalar `json:"enableAt"`
	}
	json.Unmarshal(raw, &rs) // what does not fit its field is left out
	for _, r := range slices.Concat(rs.MigrationRules, rs.DomainRules, rs.EncodingRules) {
		if r.Kind == "" {
			r.Kind = "TRANSFORM"
		}
		if r.Mode == "" {
			r.Mode = "WRITEREAD"
		}
		for _, s := range []scalar{r.Name, r.Doc, r.Kind, r.Mode, r.Type} {
			io.WriteString(h, string(s))
		}
		hashSet(h, r.Tags)
		hashMap(h, r.Params, func(v scalar) { io.WriteString(h, string(v)) })
		for _, s := range []scalar{r.Expr, r.OnSuccess, r.OnFailure} {
			io.WriteString(h, string(s))
		}
		if r.Disabled {
			h.Write([]byte{1})
		}
	}
	io.WriteString(h, string(rs.EnableAt))
}

// guidVersions returns the versions whose schema has GUID g, soft-deleted
// ones too, in the order Confluent's registry looks for one: the default
// context first, then the others by name; within a context by id, then
// subject and version; the caller holds s.mu.
func (s *State) guidVersions(g guid) []*version {
	vs := slices.Clone(s.byGUID[g])
	slices.SortFunc(vs, func(a, b *version) int {
		ca, cb := contextOf(a.Subject), contextOf(b.Subject)
		switch {
		case ca != cb:
			return strings.Compare(ca, cb) // "." sorts first
		case a.ID != b.ID:
			return a.ID - b.ID
		case a.Subject != b.Subject:
			return strings.Compare(a.Subject, b.Subject)
		}
		return a.Version - b.Version
	})
	return vs
}

// byGUIDPath returns the versions with the path's GUID the request may
// read, in guidVersions' order, and whether there are any it may not.
func (r *Registry) byGUIDPath(req *http.Request) (vs []*version, hidden bool) {
	g, ok := parseGUID(req.PathValue("guid"))
	if !ok {
		return nil, false
	}
	s := r.state
	s.mu.RLock()
	defer s.mu.RUnlock()
	all := s.guidVersions(g)
	n := len(all)
	readable := r.readable(req)
	vs = slices.DeleteFunc(all, func(v *version) bool { return !readable(v.Subject) })
	return vs, len(vs) < n
}

// getSchemaByGUID (GET /schemas/guids/{guid}) answers as GET
// /schemas/ids/{id} does, with the schema of the first context holding
// the GUID.
func (r *Registry) getSchemaByGUID(_ http.ResponseWriter, req *http.Request) (any, error) {
	vs, hidden := r.byGUIDPath(req)
	switch {
	case len(vs) == 0 && hidden:
		return nil, errf(403, 40301, "User is denied operation Read on Schema: %s", req.PathValue("guid"))
	case len(vs) == 0:
		return nil, errf(404, 40403, "Schema %s not found", req.PathValue("guid"))
	}
	out := r.responseFor(req, vs[0])
	out.Subject, out.Version, out.ID = "", 0, 0
	return out, nil
}

// contextID is an id within its context, as GET /schemas/guids/{guid}/ids
// lists it.
type contextID struct {
	Context string `json:"context"`
	ID      int    `json:"id"`
}

// getGUIDIDs (GET /schemas/guids/{guid}/ids) lists the id the GUID has in
// each context holding it, the default context first; none (not a 404)
// for a GUID nowhere.
func (r *Registry) getGUIDIDs(_ http.ResponseWriter, req *http.Request) (any, error) {
	out := []contextID{}
	vs, _ := r.byGUIDPath(req)
	for _, v := range vs {
		ctx := contextOf(v.Subject)
		if len(out) == 0 || out[len(out)-1].Context != ctx {
			out = append(out, contextID{ctx, v.ID})
		}
	}
	return out, nil
}
