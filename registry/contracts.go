package registry

import (
	"encoding/json"
	"slices"
)

// Data contracts, as Confluent's registry keeps them: a version's
// metadata and rule set are part of the schema (two versions of the same
// text with other rules are two schemas, with two ids). A registration
// that brings neither takes the subject's latest version's (outside
// IMPORT mode); the subject's config then adds its defaultMetadata and
// defaultRuleSet under them and its overrideMetadata and overrideRuleSet
// over them, merged as Confluent merges: metadata's tags and properties
// by key, its sensitive names as a set, rules by name (a rule of the same
// name replaced). A lookup that finds no version with the request's own
// contract tries again with the contract so completed, as Confluent's
// does.

// contract is a schema's metadata and rule set (nil when it has none).
type contract struct {
	metadata, ruleSet json.RawMessage
}

// contractOf is a request's own contract.
func contractOf(sr *schemaRequest) contract {
	return contract{rawJSON(sr.Metadata), rawJSON(sr.RuleSet)}
}

// sameJSON reports whether two JSON values (nil: none) are equal, their
// object keys in any order.
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	_, na, errA := compactJSON(string(a))
	_, nb, errB := compactJSON(string(b))
	return errA == nil && errB == nil && na == nb
}

// sameContract reports whether version v has contract c.
func (v *version) sameContract(c contract) bool {
	return sameJSON(rawJSON(v.Metadata), c.metadata) && sameJSON(rawJSON(v.RuleSet), c.ruleSet)
}

// completed is c with what it lacks taken from prev (the subject's latest
// version, or nil) and the config's defaults and overrides merged in, as
// Confluent's maybeSetMetadataRuleSet; the caller holds s.mu.
func (s *State) completed(subject string, c contract, prev *version) contract {
	if prev != nil {
		if c.metadata == nil {
			c.metadata = rawJSON(prev.Metadata)
		}
		if c.ruleSet == nil {
			c.ruleSet = rawJSON(prev.RuleSet)
		}
	}
	var cfg configValue
	for _, k := range scopes(subject) {
		if v, ok := s.configs[k]; ok {
			cfg = v
			break
		}
	}
	c.metadata = mergeMetadata(mergeMetadata(rawJSON(cfg.DefaultMetadata), c.metadata), rawJSON(cfg.OverrideMetadata))
	c.ruleSet = mergeRuleSets(mergeRuleSets(rawJSON(cfg.DefaultRuleSet), c.ruleSet), rawJSON(cfg.OverrideRuleSet))
	return c
}

// mergeObjects merges two JSON values (nil: none) field by field, each
// field with merge; a value that is not an object is replaced.
func mergeObjects(old, next json.RawMessage, merge func(field string, old, next any) any) json.RawMessage {
	if old == nil {
		return next
	}
	if next == nil {
		return old
	}
	var o, n map[string]any
	if json.Unmarshal(old, &o) != nil || json.Unmarshal(next, &n) != nil {
		return next
	}
	for k, nv := range n {
		if ov, ok := o[k]; ok && ov != nil && nv != nil {
			nv = merge(k, ov, nv)
		}
		o[k] = nv
	}
	return marshal(o)
}

// mergeMetadata is Confluent's Metadata.mergeMetadata.
func mergeMetadata(old, next json.RawMessage) json.RawMessage {
	return mergeObjects(old, next, func(field string, ov, nv any) any {
		switch field {
		case "tags", "properties":
			om, ok1 := ov.(map[string]any)
			nm, ok2 := nv.(map[string]any)
			if ok1 && ok2 {
				for k, v := range nm {
					om[k] = v
				}
				return om
			}
		case "sensitive":
			ol, ok1 := ov.([]any)
			nl, ok2 := nv.([]any)
			if ok1 && ok2 {
				set := map[string]bool{}
				for _, e := range append(ol, nl...) {
					if s, ok := e.(string); ok {
						set[s] = true
					}
				}
				out := make([]string, 0, len(set))
				for s := range set {
					out = append(out, s)
				}
				slices.Sort(out)
				return out
			}
		}
		return nv
	})
}

// mergeRuleSets is Confluent's RuleSet.mergeRuleSets: each list of rules
// keeps the old rules not named among the new ones, then the new.
func mergeRuleSets(old, next json.RawMessage) json.RawMessage {
	return mergeObjects(old, next, func(field string, ov, nv any) any {
		ol, ok1 := ov.([]any)
		nl, ok2 := nv.([]any)
		if !ok1 || !ok2 || len(nl) == 0 {
			if ok1 && ok2 {
				return ol
			}
			return nv
		}
		name := func(r any) any {
			if m, ok := r.(map[string]any); ok {
				return m["name"]
			}
			return nil
		}
		out := slices.DeleteFunc(ol, func(r any) bool {
			return slices.ContainsFunc(nl, func(n any) bool { return name(n) == name(r) })
		})
		return append(out, nl...)
	})
}
