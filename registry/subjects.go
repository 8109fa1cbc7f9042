package registry

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// schemaRequest is the body of a register, a lookup or a compatibility
// check.
type schemaRequest struct {
	Schema     string          `json:"schema"`
	SchemaType string          `json:"schemaType"`
	References []Reference     `json:"references"`
	Metadata   json.RawMessage `json:"metadata"`
	RuleSet    json.RawMessage `json:"ruleSet"`
	ID         *int            `json:"id"`
	Version    *int            `json:"version"`
}

// schemaResponse is a version as Confluent answers it; the type is left
// out for Avro.
type schemaResponse struct {
	Subject    string          `json:"subject,omitempty"`
	Version    int             `json:"version,omitempty"`
	ID         int             `json:"id,omitempty"`
	GUID       string          `json:"guid,omitempty"`
	SchemaType string          `json:"schemaType,omitempty"`
	References []Reference     `json:"references,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
	Schema     string          `json:"schema"`
}

func responseOf(v *version) schemaResponse {
	out := schemaResponse{Subject: v.Subject, Version: v.Version, ID: v.ID, GUID: v.guid.String(),
		References: v.References, Metadata: v.Metadata, RuleSet: v.RuleSet, Schema: v.Schema}
	if v.SchemaType != typeAvro {
		out.SchemaType = v.SchemaType
	}
	return out
}

func (r *Registry) listSubjects(_ http.ResponseWriter, req *http.Request) (any, error) {
	s := r.state
	s.mu.RLock()
	defer s.mu.RUnlock()
	prefix := req.URL.Query().Get("subjectPrefix")
	if queryBool(req, "deletedOnly") {
		live := s.subjectNames(prefix, false)
		out := []string{}
		readable := r.readable(req)
		for _, name := range s.subjectNames(prefix, true) {
			if !slices.Contains(live, name) && readable(name) {
				out = append(out, name)
			}
		}
		return out, nil
	}
	readable := r.readable(req)
	out := slices.DeleteFunc(s.subjectNames(prefix, queryBool(req, "deleted")), func(name string) bool { return !readable(name) })
	if out == nil {
		out = []string{}
	}
	return out, nil
}

func (r *Registry) listVersions(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, err := pathSubject(req)
	if err != nil {
		return nil, err
	}
	s := r.state
	s.mu.RLock()
	defer s.mu.RUnlock()
	deletedOnly := queryBool(req, "deletedOnly")
	vs := s.versions(subject, queryBool(req, "deleted") || deletedOnly)
	if len(vs) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	out := []int{}
	for _, v := range vs {
		if !deletedOnly || v.Deleted {
			out = append(out, v.Version)
		}
	}
	return out, nil
}

// findVersion returns a subject's version n (latestVersion: its newest),
// soft-deleted ones too when deleted; the caller holds s.mu.
func (s *State) findVersion(subject string, n int, deleted bool) (*version, error) {
	vs := s.versions(subject, deleted)
	if len(vs) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	if n == latestVersion {
		return vs[len(vs)-1], nil
	}
	for _, v := range vs {
		if v.Version == n {
			return v, nil
		}
	}
	return nil, errVersionNotFound(n)
}

// pathVersion returns the version the path names.
func (r *Registry) pathVersion(req *http.Request, deleted bool) (*version, error) {
	subject, err := pathSubject(req)
	if err != nil {
		return nil, err
	}
	n, err := parseVersion(req.PathValue("version"))
	if err != nil {
		return nil, err
	}
	r.state.mu.RLock()
	defer r.state.mu.RUnlock()
	return r.state.findVersion(subject, n, deleted)
}

func (r *Registry) getVersion(_ http.ResponseWriter, req *http.Request) (any, error) {
	v, err := r.pathVersion(req, queryBool(req, "deleted"))
	if err != nil {
		return nil, err
	}
	return r.responseFor(req, v), nil
}

func (r *Registry) getVersionSchema(_ http.ResponseWriter, req *http.Request) (any, error) {
	v, err := r.pathVersion(req, queryBool(req, "deleted"))
	if err != nil {
		return nil, err
	}
	return rawBody(v.Schema), nil
}

func (r *Registry) referencedBy(_ http.ResponseWriter, req *http.Request) (any, error) {
	v, err := r.pathVersion(req, true)
	if err != nil {
		return nil, err
	}
	r.state.mu.RLock()
	defer r.state.mu.RUnlock()
	ids := r.state.referencedBy(v.Subject, v.Version, false)
	if ids == nil {
		ids = []int{}
	}
	return ids, nil
}

// resolve returns the schemas refs name, and those they reference, in the
// order they must be parsed; the caller holds s.mu.
func (s *State) resolve(refs []Reference) ([]resolvedRef, error) {
	var out []resolvedRef
	seen := map[Reference]bool{}
	var walk func(refs []Reference, depth int) error
	walk = func(refs []Reference, depth int) error {
		if depth > 32 {
			return fmt.Errorf("%w: references nested more than 32 deep", errInvalidSchema)
		}
		for _, ref := range refs {
			if seen[ref] {
				continue
			}
			seen[ref] = true
			v, err := s.findVersion(ref.Subject, ref.Version, true)
			if err != nil {
				return fmt.Errorf("%w: reference %s (subject %s, version %d) not found", errInvalidSchema, ref.Name, ref.Subject, ref.Version)
			}
			if err := walk(v.References, depth+1); err != nil {
				return err
			}
			out = append(out, resolvedRef{Reference: ref, typ: v.SchemaType, schema: v.Schema})
		}
		return nil
	}
	return out, walk(refs, 0)
}

// parseVersionOf parses a stored version; the caller holds s.mu.
func (s *State) parseVersionOf(v *version) (*parsed, error) {
	deps, err := s.resolve(v.References)
	if err != nil {
		return nil, err
	}
	return parseSchema(v.SchemaType, v.Schema, deps)
}

// parseRequest parses a request's schema with its references; the caller
// holds s.mu.
func (s *State) parseRequest(sr *schemaRequest) (*parsed, error) {
	if sr.SchemaType == "" {
		sr.SchemaType = typeAvro
	}
	if sr.Schema == "" {
		return nil, errf(422, 42201, "Empty schema")
	}
	deps, err := s.resolve(sr.References)
	if err != nil {
		return nil, err
	}
	return parseSchema(sr.SchemaType, sr.Schema, deps)
}

// text is the schema as stored: normalized when asked to.
func (p *parsed) text(normalize bool) string {
	if normalize {
		return p.normalized
	}
	return p.canonical
}

// matches reports whether version v is the schema p with refs and
// contract c.
func (s *State) matches(v *version, p *parsed, refs []Reference, c contract, normalize bool) bool {
	if v.SchemaType != p.typ || !slices.Equal(v.References, refs) || !v.sameContract(c) {
		return false
	}
	if v.Schema == p.canonical || v.Schema == p.normalized {
		return true
	}
	if p.typ == typeAvro {
		return v.avroKey != "" && v.avroKey == p.normalized
	}
	if normalize {
		_, norm, err := compactJSON(v.Schema)
		return err == nil && norm == p.normalized
	}
	return false
}

// schemaBody returns the path's subject and the request's schema.
func schemaBody(req *http.Request) (string, *schemaRequest, error) {
	subject, err := pathSubject(req)
	if err != nil {
		return "", nil, err
	}
	var sr schemaRequest
	if err := decodeBody(req, &sr); err != nil {
		return "", nil, err
	}
	return subject, &sr, nil
}

func (r *Registry) lookupSchema(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, sr, err := schemaBody(req)
	if err != nil {
		return nil, err
	}
	s := r.state
	s.mu.RLock()
	defer s.mu.RUnlock()
	deleted := queryBool(req, "deleted")
	vs := s.versions(subject, deleted)
	if len(vs) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	p, err := s.parseRequest(sr)
	if err != nil {
		return nil, err
	}
	normalize := queryBool(req, "normalize") || s.normalize(subject)
	own := contractOf(sr)
	for _, c := range []contract{own, s.completed(subject, own, s.latest(subject, false))} {
		for i := len(vs) - 1; i >= 0; i-- {
			if s.matches(vs[i], p, sr.References, c, normalize) {
				return responseOf(vs[i]), nil
			}
		}
	}
	return nil, errSchemaNotFound()
}

func (r *Registry) register(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, sr, err := schemaBody(req)
	if err != nil {
		return nil, err
	}
	var got schemaValue
	err = r.write(req.Context(), func() ([]Record, error) {
		s := r.state
		s.mu.RLock()
		defer s.mu.RUnlock()
		recs, sv, err := s.registration(subject, sr, queryBool(req, "normalize"), r.cfg.Compatibility)
		got = sv
		return recs, err
	})
	if err != nil {
		return nil, err
	}
	v := &version{schemaValue: got}
	v.derive()
	out := r.responseFor(req, v)
	out.Subject = ""
	return registerResponse{ID: v.ID, schemaResponse: out}, nil
}

// registerResponse is a registration's answer, as Confluent's
// RegisterSchemaResponse: the id first, then the version registered (or
// found) as GET /subjects/{s}/versions/{v} answers it, without the
// subject.
type registerResponse struct {
	ID int `json:"id"` // hides the embedded one
	schemaResponse
}

// registration returns the records that register sr under subject (the
// context's CONTEXT record first, as Confluent writes it, when the
// context has none) and the version they write, or no record and the
// version that has the schema when the subject has it already; the
// caller holds s.mu.
func (s *State) registration(subject string, sr *schemaRequest, normalize bool, defaultLevel string) ([]Record, schemaValue, error) {
	var none schemaValue
	mode, ctx := s.mode(subject), contextOf(subject)
	switch {
	case mode == modeReadOnly || mode == modeReadOnlyOverride:
		return nil, none, errNotPermitted("Subject %s in context %s is in read-only mode", subject, ctx)
	case sr.ID != nil && mode != modeImport:
		return nil, none, errNotPermitted("Subject %s in context %s is not in import mode", subject, ctx)
	case sr.ID == nil && mode != modeReadWrite:
		return nil, none, errNotPermitted("Subject %s in context %s is not in read-write mode", subject, ctx)
	}
	p, err := s.parseRequest(sr)
	if err != nil {
		return nil, none, err
	}
	normalize = normalize || s.normalize(subject)
	live := s.versions(subject, false)
	c := contractOf(sr)
	if mode != modeImport {
		var prev *version
		if len(live) > 0 {
			prev = live[len(live)-1]
		}
		c = s.completed(subject, c, prev)
	}
	for _, v := range live {
		if s.matches(v, p, sr.References, c, normalize) && (sr.ID == nil || *sr.ID == v.ID) {
			return nil, v.schemaValue, nil
		}
	}
	if mode != modeImport {
		if msgs := s.incompatibilities(s.rule(subject, defaultLevel), p, live, false); len(msgs) > 0 {
			return nil, none, errf(409, 409, "Schema being registered is incompatible with an earlier schema for subject \"%s\", details: %v", subject, msgs)
		}
	}
	id := -1
	if sr.ID != nil {
		id = *sr.ID
		if id < 0 {
			return nil, none, errf(422, 42201, "Invalid schema id %d", id)
		}
		if old := s.schemaByID(ctx, id); old != nil && !s.matches(old, p, sr.References, c, normalize) {
			return nil, none, errNotPermitted("Overwrite new schema with id %d in context %s is not permitted.", id, ctx)
		}
	} else {
		for k, vs := range s.byID {
			if k.ctx == ctx && s.matches(vs[0], p, sr.References, c, normalize) && (id < 0 || k.id < id) {
				id = k.id
			}
		}
		if id < 0 {
			id = s.maxID[ctx] + 1
		}
	}
	n := 1
	if last := s.latest(subject, true); last != nil {
		n = last.Version + 1
	}
	if sr.Version != nil && *sr.Version > 0 && mode == modeImport {
		n = *sr.Version
	}
	var recs []Record
	if ctx != defaultContext && !s.ctxs[ctx] {
		recs = append(recs, contextRecord(ctx))
	}
	sv := schemaValue{Subject: subject, Version: n, ID: id, SchemaType: p.typ, References: sr.References,
		Metadata: c.metadata, RuleSet: c.ruleSet, Schema: p.text(normalize)}
	return append(recs, schemaRecord(sv)), sv, nil
}

func (r *Registry) deleteVersion(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, err := pathSubject(req)
	if err != nil {
		return nil, err
	}
	n, err := parseVersion(req.PathValue("version"))
	if err != nil {
		return nil, err
	}
	permanent := queryBool(req, "permanent")
	var deleted int
	err = r.write(req.Context(), func() ([]Record, error) {
		s := r.state
		s.mu.RLock()
		defer s.mu.RUnlock()
		if m := s.mode(subject); m == modeReadOnly || m == modeReadOnlyOverride {
			return nil, errNotPermitted("Subject %s in context . is in read-only mode", subject)
		}
		v, err := s.findVersion(subject, n, permanent)
		if err != nil {
			return nil, err
		}
		deleted = v.Version
		switch {
		case !permanent && v.Deleted:
			return nil, errf(404, 40406, "Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently", subject, v.Version)
		case permanent && !v.Deleted:
			return nil, errf(404, 40407, "Subject '%s' Version %d was not deleted first before being permanently deleted", subject, v.Version)
		}
		if len(s.referencedBy(subject, v.Version, permanent)) > 0 {
			return nil, errf(422, 42206, "One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=%s,version=%d}.", subject, v.Version)
		}
		if !permanent {
			sv := v.schemaValue
			sv.Deleted = true
			return []Record{schemaRecord(sv)}, nil
		}
		recs := []Record{schemaTombstone(subject, v.Version)}
		if len(s.versions(subject, true)) == 1 {
			recs = append(recs, s.subjectSettingsTombstones(subject)...)
		}
		return recs, nil
	})
	if err != nil {
		return nil, err
	}
	return deleted, nil
}

// subjectSettingsTombstones remove a subject's config and mode, once its
// last version is gone; the caller holds s.mu.
func (s *State) subjectSettingsTombstones(subject string) []Record {
	var recs []Record
	if _, ok := s.configs[subject]; ok {
		recs = append(recs, configRecord(subject, nil))
	}
	if _, ok := s.modes[subject]; ok {
		recs = append(recs, modeRecord(subject, ""))
	}
	return recs
}

func (r *Registry) deleteSubject(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, err := pathSubject(req)
	if err != nil {
		return nil, err
	}
	permanent := queryBool(req, "permanent")
	deleted := []int{}
	err = r.write(req.Context(), func() ([]Record, error) {
		s := r.state
		s.mu.RLock()
		defer s.mu.RUnlock()
		if m := s.mode(subject); m == modeReadOnly || m == modeReadOnlyOverride {
			return nil, errNotPermitted("Subject %s in context . is in read-only mode", subject)
		}
		vs := s.versions(subject, permanent)
		if len(vs) == 0 {
			if len(s.versions(subject, true)) > 0 {
				return nil, errf(404, 40404, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subject)
			}
			return nil, errSubjectNotFound(subject)
		}
		for _, v := range vs {
			if permanent && !v.Deleted {
				return nil, errf(404, 40405, "Subject '%s' was not deleted first before being permanently deleted", subject)
			}
			for _, by := range s.referencing(subject, v.Version, permanent) {
				if by.Subject != subject {
					return nil, errf(422, 42206, "One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=%s,version=%d}.", subject, v.Version)
				}
			}
			deleted = append(deleted, v.Version)
		}
		if !permanent {
			return []Record{deleteSubjectRecord(subject, deleted[len(deleted)-1])}, nil
		}
		var recs []Record
		for i := len(deleted) - 1; i >= 0; i-- {
			recs = append(recs, schemaTombstone(subject, deleted[i]))
		}
		return append(recs, s.subjectSettingsTombstones(subject)...), nil
	})
	if err != nil {
		return nil, err
	}
	return deleted, nil
}

func (r *Registry) checkCompatibility(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, sr, err := schemaBody(req)
	if err != nil {
		return nil, err
	}
	s := r.state
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, err := s.parseRequest(sr)
	if err != nil {
		return nil, err
	}
	against := s.versions(subject, false)
	single := false
	if vs := req.PathValue("version"); vs != "" {
		n, err := parseVersion(vs)
		if err != nil {
			return nil, err
		}
		v, err := s.findVersion(subject, n, false)
		if err != nil {
			return nil, err
		}
		against, single = []*version{v}, true
	}
	msgs := s.incompatibilities(s.rule(subject, r.cfg.Compatibility), p, against, single)
	out := struct {
		Compatible bool      `json:"is_compatible"`
		Messages   *[]string `json:"messages,omitempty"`
	}{Compatible: len(msgs) == 0}
	if queryBool(req, "verbose") {
		if msgs == nil {
			msgs = []string{}
		}
		out.Messages = &msgs
	}
	return out, nil
}
