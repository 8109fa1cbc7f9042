package registry

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// Modes, as Confluent names them.
const (
	modeReadWrite        = "READWRITE"
	modeReadOnly         = "READONLY"
	modeReadOnlyOverride = "READONLY_OVERRIDE"
	modeImport           = "IMPORT"
)

var modes = []string{modeReadWrite, modeReadOnly, modeReadOnlyOverride, modeImport}

// mode is the subject's mode, else that of its scope (scopes), else
// READWRITE; the caller holds s.mu.
func (s *State) mode(subject string) string {
	for _, k := range scopes(subject) {
		if m, ok := s.modes[k]; ok && m != "" {
			return m
		}
	}
	return modeReadWrite
}

// compatibility is the subject's level, else that of its scope (scopes),
// else defaultLevel; the caller holds s.mu.
func (s *State) compatibility(subject, defaultLevel string) string {
	for _, k := range scopes(subject) {
		if c, ok := s.configs[k]; ok && c.CompatibilityLevel != "" {
			return c.CompatibilityLevel
		}
	}
	return defaultLevel
}

// policy is the subject's compatibility policy, else that of its scope
// (scopes); "" is STRICT. The caller holds s.mu.
func (s *State) policy(subject string) string {
	for _, k := range scopes(subject) {
		if c, ok := s.configs[k]; ok && c.CompatibilityPolicy != "" {
			return c.CompatibilityPolicy
		}
	}
	return ""
}

// compatibilityPolicies are Confluent's names, upper-cased as it reads
// them; any other name unsets the policy, as in Confluent's.
var compatibilityPolicies = []string{"LOGICAL", "STRICT", "LENIENT"}

// normalize is the subject's normalize setting, else that of its scope
// (scopes); the caller holds s.mu.
func (s *State) normalize(subject string) bool {
	for _, k := range scopes(subject) {
		if c, ok := s.configs[k]; ok && c.Normalize != nil {
			return *c.Normalize
		}
	}
	return false
}

// configRequest is the body of PUT /config, and of its answer (what was
// set).
type configRequest struct {
	Compatibility       string          `json:"compatibility,omitempty"`
	CompatibilityPolicy *string         `json:"compatibilityPolicy,omitempty"`
	Normalize           *bool           `json:"normalize,omitempty"`
	ValidateFields      *bool           `json:"validateFields,omitempty"`
	Alias               string          `json:"alias,omitempty"`
	CompatibilityGroup  string          `json:"compatibilityGroup,omitempty"`
	DefaultMetadata     json.RawMessage `json:"defaultMetadata,omitempty"`
	OverrideMetadata    json.RawMessage `json:"overrideMetadata,omitempty"`
	DefaultRuleSet      json.RawMessage `json:"defaultRuleSet,omitempty"`
	OverrideRuleSet     json.RawMessage `json:"overrideRuleSet,omitempty"`
}

// configSubject is the path's subject, or "" for /config and /mode.
func configSubject(req *http.Request) (string, error) {
	if req.PathValue("subject") == "" && !strings.Contains(req.URL.Path[1:], "/") {
		return "", nil
	}
	return pathSubject(req)
}

// ownOrGlobal returns a subject's own setting, or that of its scope
// (scopes) when the subject has none and the request says
// defaultToGlobal; else Confluent's 404 with code.
func ownOrGlobal[T any](req *http.Request, settings map[string]T, subject string, code int, what string) (T, error) {
	v, ok := settings[subject]
	if !ok && subject != "" && !queryBool(req, "defaultToGlobal") {
		return v, errNoSubjectLevel(subject, code, what)
	}
	for _, k := range scopes(subject)[1:] {
		if ok {
			break
		}
		v, ok = settings[k]
	}
	return v, nil
}

func (r *Registry) getConfig(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, err := configSubject(req)
	if err != nil {
		return nil, err
	}
	s := r.state
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, err := ownOrGlobal(req, s.configs, subject, 40408, "compatibility")
	if err != nil {
		return nil, err
	}
	if c.CompatibilityLevel == "" {
		c.CompatibilityLevel = s.compatibility("", r.cfg.Compatibility)
	}
	return c, nil
}

func (r *Registry) putConfig(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, err := configSubject(req)
	if err != nil {
		return nil, err
	}
	var cr configRequest
	if err := decodeBody(req, &cr); err != nil {
		return nil, err
	}
	if cr.Compatibility != "" {
		level, ok := ValidLevel(cr.Compatibility)
		if !ok {
			return nil, errf(422, 42203, "Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")
		}
		cr.Compatibility = level
	}
	err = r.write(req.Context(), func() ([]Record, error) {
		s := r.state
		s.mu.RLock()
		defer s.mu.RUnlock()
		c := s.configs[subject]
		merge := func(dst *json.RawMessage, src json.RawMessage) {
			if src = rawJSON(src); src != nil {
				*dst = src
			}
		}
		if cr.Compatibility != "" {
			c.CompatibilityLevel = cr.Compatibility
		}
		if cr.CompatibilityPolicy != nil {
			c.CompatibilityPolicy = strings.ToUpper(*cr.CompatibilityPolicy)
			if !slices.Contains(compatibilityPolicies, c.CompatibilityPolicy) {
				c.CompatibilityPolicy = ""
			}
		}
		if cr.Normalize != nil {
			c.Normalize = cr.Normalize
		}
		if cr.ValidateFields != nil {
			c.ValidateFields = cr.ValidateFields
		}
		if cr.Alias != "" {
			c.Alias = cr.Alias
		}
		if cr.CompatibilityGroup != "" {
			c.CompatibilityGroup = cr.CompatibilityGroup
		}
		merge(&c.DefaultMetadata, cr.DefaultMetadata)
		merge(&c.OverrideMetadata, cr.OverrideMetadata)
		merge(&c.DefaultRuleSet, cr.DefaultRuleSet)
		merge(&c.OverrideRuleSet, cr.OverrideRuleSet)
		c.Subject = subject
		return []Record{configRecord(subject, &c)}, nil
	})
	if err != nil {
		return nil, err
	}
	cr.DefaultMetadata, cr.OverrideMetadata = rawJSON(cr.DefaultMetadata), rawJSON(cr.OverrideMetadata)
	cr.DefaultRuleSet, cr.OverrideRuleSet = rawJSON(cr.DefaultRuleSet), rawJSON(cr.OverrideRuleSet)
	return cr, nil
}

func (r *Registry) deleteConfig(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, err := configSubject(req)
	if err != nil {
		return nil, err
	}
	unset := configValue{CompatibilityLevel: r.cfg.Compatibility}
	return deleteOwn(r, req, subject, func(s *State) map[string]configValue { return s.configs }, unset,
		configRecord(subject, nil), 40408, "compatibility")
}

func errNoSubjectLevel(subject string, code int, what string) error {
	return errf(404, code, "Subject '%s' does not have subject-level %s configured", subject, what)
}

// deleteOwn deletes a subject's own setting (of settings, the State's
// configs or modes) with the tombstone tomb and returns what it was; a
// subject without one is Confluent's 404 with code, and the global
// setting (subject "") unset is unset, written as nothing.
func deleteOwn[T any](r *Registry, req *http.Request, subject string, settings func(*State) map[string]T, unset T, tomb Record, code int, what string) (T, error) {
	var old T
	err := r.write(req.Context(), func() ([]Record, error) {
		s := r.state
		s.mu.RLock()
		defer s.mu.RUnlock()
		v, ok := settings(s)[subject]
		switch {
		case !ok && subject != "":
			return nil, errNoSubjectLevel(subject, code, what)
		case !ok:
			old = unset
			return nil, nil
		}
		old = v
		return []Record{tomb}, nil
	})
	return old, err
}

type modeBody struct {
	Mode string `json:"mode"`
}

func (r *Registry) getMode(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, err := configSubject(req)
	if err != nil {
		return nil, err
	}
	s := r.state
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, err := ownOrGlobal(req, s.modes, subject, 40409, "mode")
	if err != nil {
		return nil, err
	}
	if m == "" {
		m = modeReadWrite
	}
	return modeBody{m}, nil
}

func (r *Registry) putMode(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, err := configSubject(req)
	if err != nil {
		return nil, err
	}
	var mb modeBody
	if err := decodeBody(req, &mb); err != nil {
		return nil, err
	}
	mb.Mode = strings.ToUpper(strings.TrimSpace(mb.Mode))
	if !slices.Contains(modes, mb.Mode) {
		return nil, errf(422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD.")
	}
	force := queryBool(req, "force")
	err = r.write(req.Context(), func() ([]Record, error) {
		s := r.state
		s.mu.RLock()
		defer s.mu.RUnlock()
		if mb.Mode == modeImport && s.mode(subject) != modeImport && !force {
			has := len(s.subjectNames("", false)) > 0
			if subject != "" {
				has = len(s.versions(subject, false)) > 0
			}
			if has {
				return nil, errNotPermitted("Cannot import since found existing subjects")
			}
		}
		return []Record{modeRecord(subject, mb.Mode)}, nil
	})
	if err != nil {
		return nil, err
	}
	return mb, nil
}

func (r *Registry) deleteMode(_ http.ResponseWriter, req *http.Request) (any, error) {
	subject, err := pathSubject(req)
	if err != nil {
		return nil, err
	}
	old, err := deleteOwn(r, req, subject, func(s *State) map[string]string { return s.modes }, "",
		modeRecord(subject, ""), 40409, "mode")
	if err != nil {
		return nil, err
	}
	return modeBody{old}, nil
}

// idVersion is an entry of /schemas/ids/{id}/versions.
type idVersion struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// idVersions returns the versions registered with id in context ctx, by
// subject and version; the caller holds s.mu.
func (s *State) idVersions(ctx string, id int, deleted bool) []*version {
	var out []*version
	for _, v := range s.byID[ctxID{ctx, id}] {
		if deleted || !v.Deleted {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Subject != out[j].Subject {
			return out[i].Subject < out[j].Subject
		}
		return out[i].Version < out[j].Version
	})
	return out
}

// byIDPath returns a version registered with the path's id, found as
// Confluent's registry finds it (getSchemaKeyUsingContexts) from the
// query's ?subject=: none or a bare context (":.ctx:", as
// /contexts/.ctx/schemas/ids/... asks), any version with the id in that
// context; a qualified subject, that subject's only; a subject of the
// default context, its own, else the subject of that name in another
// context, else any version with the id in the default context (a
// deserializer asks with its topic's subject, which need not be the one
// the writer registered under).
func (r *Registry) byIDPath(req *http.Request) (*version, error) {
	id, err := pathID(req)
	if err != nil {
		return nil, err
	}
	s := r.state
	s.mu.RLock()
	defer s.mu.RUnlock()
	q := req.URL.Query().Get("subject")
	ctx, name := SplitSubject(q)
	subject := normalSubject(q)
	of := func(ctx, subject string) []*version {
		return slices.DeleteFunc(s.idVersions(ctx, id, true), func(v *version) bool { return v.Subject != subject })
	}
	var vs []*version
	switch {
	case name == "":
		vs = s.idVersions(ctx, id, true)
	case ctx != defaultContext:
		vs = of(ctx, subject)
	default:
		if vs = of(ctx, subject); len(vs) == 0 {
			for _, c := range s.contexts() {
				if vs = of(c, qualifiedContext(c)+name); c != defaultContext && len(vs) > 0 {
					break
				}
			}
		}
		if len(vs) == 0 {
			vs = s.idVersions(defaultContext, id, true)
		}
	}
	if len(vs) == 0 {
		return nil, errSchemaIDNotFound(id)
	}
	readable := r.readable(req)
	if vs = slices.DeleteFunc(vs, func(v *version) bool { return !readable(v.Subject) }); len(vs) == 0 {
		return nil, errf(403, 40301, "User is denied operation Read on Schema: %d", id)
	}
	return vs[0], nil
}

func (r *Registry) getSchemaByID(_ http.ResponseWriter, req *http.Request) (any, error) {
	v, err := r.byIDPath(req)
	if err != nil {
		return nil, err
	}
	out := r.responseFor(req, v)
	out.Subject, out.Version, out.ID = "", 0, 0
	return out, nil
}

func (r *Registry) getSchemaByIDText(_ http.ResponseWriter, req *http.Request) (any, error) {
	v, err := r.byIDPath(req)
	if err != nil {
		return nil, err
	}
	return rawBody(r.formatted(req, v)), nil
}

func (r *Registry) getIDVersions(_ http.ResponseWriter, req *http.Request) (any, error) {
	return r.idUsage(req)
}

func (r *Registry) getIDSubjects(_ http.ResponseWriter, req *http.Request) (any, error) {
	usage, err := r.idUsage(req)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, u := range usage {
		if !slices.Contains(out, u.Subject) {
			out = append(out, u.Subject)
		}
	}
	return out, nil
}

// idUsage returns the subjects and versions registered with the path's
// id.
func (r *Registry) idUsage(req *http.Request) ([]idVersion, error) {
	id, err := pathID(req)
	if err != nil {
		return nil, err
	}
	s := r.state
	s.mu.RLock()
	defer s.mu.RUnlock()
	ctx := queryContext(req)
	if len(s.byID[ctxID{ctx, id}]) == 0 {
		return nil, errSchemaIDNotFound(id)
	}
	out := []idVersion{}
	readable := r.readable(req)
	for _, v := range s.idVersions(ctx, id, queryBool(req, "deleted")) {
		if !readable(v.Subject) {
			continue
		}
		out = append(out, idVersion{v.Subject, v.Version})
	}
	return out, nil
}

func (r *Registry) listSchemas(_ http.ResponseWriter, req *http.Request) (any, error) {
	s := r.state
	s.mu.RLock()
	defer s.mu.RUnlock()
	q := req.URL.Query()
	deleted, latestOnly := queryBool(req, "deleted"), queryBool(req, "latestOnly")
	out := []schemaResponse{}
	for _, subject := range s.subjectNames(q.Get("subjectPrefix"), deleted) {
		if !r.allowed(req, OpRead, subject) {
			continue
		}
		vs := s.versions(subject, deleted)
		if latestOnly {
			vs = vs[len(vs)-1:]
		}
		for _, v := range vs {
			out = append(out, responseOf(v))
		}
	}
	offset, limit := queryInt(req, "offset", 0), queryInt(req, "limit", -1)
	if offset > 0 {
		out = out[min(offset, len(out)):]
	}
	if limit >= 0 {
		out = out[:min(limit, len(out))]
	}
	return out, nil
}
