package registry

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// version is one registered version of a subject.
type version struct {
	schemaValue
	// avroKey is an Avro schema's text with its object keys in a fixed
	// order (parsed.normalized), for matching: key order never tells two
	// Avro schemas apart, as Confluent compares Avro's own rendering.
	avroKey string
	guid    guid // its GUID (guidOf)
}

// derive sets what a version's fields derive.
func (v *version) derive() {
	if v.SchemaType == typeAvro {
		_, v.avroKey, _ = compactJSON(v.Schema)
	}
	v.guid = guidOf(&v.schemaValue)
}

// State is the registry as replayed from _schemas: subjects and their
// versions, ids, configs and modes. Its methods are safe for concurrent
// use.
type State struct {
	mu       sync.RWMutex
	subjects map[string]map[int]*version // guarded by mu; subject → version number → version
	byID     map[ctxID][]*version        // guarded by mu; context and id → the versions registered with it
	byGUID   map[guid][]*version         // guarded by mu; GUID → the versions whose schema has it
	maxID    map[string]int              // guarded by mu; context → the highest id seen in it
	configs  map[string]configValue      // guarded by mu; "" is the global config
	modes    map[string]string           // guarded by mu; "" is the global mode
	ctxs     map[string]bool             // guarded by mu; the contexts of CONTEXT records (".ctx")
	next     int64                       // guarded by mu; the offset of the next record to apply
	moved    chan struct{}               // guarded by mu; closed and replaced when next advances

	parsedMu sync.Mutex
	parsed   map[*version]*parsed // guarded by parsedMu; schemas parsed for CheckRecord (parsedCached)
}

func newState() *State {
	return &State{subjects: map[string]map[int]*version{}, byID: map[ctxID][]*version{}, byGUID: map[guid][]*version{}, maxID: map[string]int{},
		configs: map[string]configValue{}, modes: map[string]string{}, ctxs: map[string]bool{}, moved: make(chan struct{}),
		parsed: map[*version]*parsed{}}
}

// applied returns the offset of the next record to apply, and a channel
// closed once it moves.
func (s *State) applied() (int64, <-chan struct{}) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.next, s.moved
}

// apply applies records read from _schemas, in offset order, and returns
// the errors of those it could not read (which it skipped).
func (s *State) apply(recs []Record, next int64) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, r := range recs {
		if err := s.applyOne(r); err != nil {
			errs = append(errs, fmt.Errorf("offset %d: %w", r.Offset, err))
		}
	}
	if next > s.next {
		s.next = next
		close(s.moved)
		s.moved = make(chan struct{})
	}
	return errs
}

func (s *State) applyOne(r Record) error {
	k, err := parseKey(r.Key)
	if err != nil {
		return err
	}
	subject := ""
	if k.Subject != nil {
		subject = *k.Subject
	}
	switch k.KeyType {
	case keySchema:
		if r.Value == nil {
			s.dropVersion(subject, k.Version)
			return nil
		}
		var v schemaValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("%w: SCHEMA value: %v", errBadRecord, err)
		}
		if v.Subject == "" || v.Version < 1 || v.ID < 0 {
			return fmt.Errorf("%w: SCHEMA value without subject, version or id", errBadRecord)
		}
		if v.SchemaType == "" {
			v.SchemaType = typeAvro
		}
		s.putVersion(&version{schemaValue: v})
	case keyConfig:
		if r.Value == nil {
			delete(s.configs, subject)
			return nil
		}
		var v configValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("%w: CONFIG value: %v", errBadRecord, err)
		}
		v.Subject = ""
		s.configs[subject] = v
	case keyMode:
		if r.Value == nil {
			delete(s.modes, subject)
			return nil
		}
		var v modeValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("%w: MODE value: %v", errBadRecord, err)
		}
		s.modes[subject] = v.Mode
	case keyDeleteSubject:
		if r.Value == nil {
			return nil
		}
		var v subjectValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("%w: DELETE_SUBJECT value: %v", errBadRecord, err)
		}
		for n, ver := range s.subjects[v.Subject] {
			if n <= v.Version {
				ver.Deleted = true
			}
		}
	case keyClearSubject:
		if r.Value == nil {
			return nil
		}
		var v subjectValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("%w: CLEAR_SUBJECT value: %v", errBadRecord, err)
		}
		for n, ver := range s.subjects[v.Subject] {
			if ver.Deleted {
				s.dropVersion(v.Subject, n)
			}
		}
	case keyContext:
		if k.Tenant != "" && k.Tenant != defaultTenant {
			return nil // another tenant's (Confluent Cloud's)
		}
		if r.Value == nil {
			delete(s.ctxs, k.Context)
		} else if k.Context != "" {
			s.ctxs[k.Context] = true
		}
	}
	// NOOP and key types of later Confluent versions carry no state here.
	return nil
}

// putVersion records v, replacing the version of the same subject and
// number; the caller holds mu.
func (s *State) putVersion(v *version) {
	s.dropVersion(v.Subject, v.Version)
	v.derive()
	vs := s.subjects[v.Subject]
	if vs == nil {
		vs = map[int]*version{}
		s.subjects[v.Subject] = vs
	}
	vs[v.Version] = v
	k := ctxID{contextOf(v.Subject), v.ID}
	s.byID[k] = append(s.byID[k], v)
	s.byGUID[v.guid] = append(s.byGUID[v.guid], v)
	s.maxID[k.ctx] = max(s.maxID[k.ctx], v.ID)
}

// dropVersion forgets a version (a hard delete); the caller holds mu.
func (s *State) dropVersion(subject string, n int) {
	vs := s.subjects[subject]
	old := vs[n]
	if old == nil {
		return
	}
	delete(vs, n)
	if len(vs) == 0 {
		delete(s.subjects, subject)
	}
	unindex(s.byID, ctxID{contextOf(subject), old.ID}, old)
	unindex(s.byGUID, old.guid, old)
}

// unindex removes v from an index's entry k.
func unindex[K comparable](index map[K][]*version, k K, v *version) {
	if vs := slices.DeleteFunc(index[k], func(o *version) bool { return o == v }); len(vs) == 0 {
		delete(index, k)
	} else {
		index[k] = vs
	}
}

// versions returns a subject's versions in ascending order, soft-deleted
// ones only when deleted; the caller holds mu.
func (s *State) versions(subject string, deleted bool) []*version {
	var out []*version
	for _, v := range s.subjects[subject] {
		if deleted || !v.Deleted {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// latest returns a subject's newest version, or nil; the caller holds mu.
func (s *State) latest(subject string, deleted bool) *version {
	vs := s.versions(subject, deleted)
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1]
}

// subjectNames returns the subjects with a version (soft-deleted ones
// count only when deleted), sorted; the caller holds mu.
func (s *State) subjectNames(prefix string, deleted bool) []string {
	var out []string
	for name := range s.subjects {
		if subjectMatches(name, prefix) && len(s.versions(name, deleted)) > 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// schemaByID returns the first version registered with id in context
// ctx; the caller holds mu.
func (s *State) schemaByID(ctx string, id int) *version {
	vs := s.byID[ctxID{ctx, id}]
	if len(vs) == 0 {
		return nil
	}
	return vs[0]
}

// referencedBy returns the ids of the versions that reference subject's
// version n; the caller holds mu.
func (s *State) referencedBy(subject string, n int, deleted bool) []int {
	var ids []int
	for _, v := range s.referencing(subject, n, deleted) {
		if !slices.Contains(ids, v.ID) {
			ids = append(ids, v.ID)
		}
	}
	sort.Ints(ids)
	return ids
}

// referencing returns the versions that reference subject's version n;
// the caller holds mu.
func (s *State) referencing(subject string, n int, deleted bool) []*version {
	var out []*version
	for _, vs := range s.subjects {
		for _, v := range vs {
			if v.Deleted && !deleted {
				continue
			}
			if slices.ContainsFunc(v.References, func(r Reference) bool { return r.Subject == subject && r.Version == n }) {
				out = append(out, v)
			}
		}
	}
	return out
}
