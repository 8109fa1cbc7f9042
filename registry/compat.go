package registry

import (
	"fmt"
	"slices"
	"strings"
)

// Compatibility levels, as Confluent names them.
const (
	levelNone               = "NONE"
	levelBackward           = "BACKWARD"
	levelBackwardTransitive = "BACKWARD_TRANSITIVE"
	levelForward            = "FORWARD"
	levelForwardTransitive  = "FORWARD_TRANSITIVE"
	levelFull               = "FULL"
	levelFullTransitive     = "FULL_TRANSITIVE"
)

var levels = []string{levelNone, levelBackward, levelBackwardTransitive, levelForward,
	levelForwardTransitive, levelFull, levelFullTransitive}

// ValidLevel reports whether level names a compatibility level (in any
// case), and returns its name.
func ValidLevel(level string) (string, bool) {
	l := strings.ToUpper(strings.TrimSpace(level))
	return l, slices.Contains(levels, l)
}

// incompatibilities returns why schema p cannot follow the versions
// previous (ascending) under level, or nothing when it can, in the words
// of Confluent's validator: BACKWARD, the new schema reads data of the old
// ("new" the reader, "old" the writer); FORWARD, the old reads data of the
// new; FULL, both (the FORWARD messages first, without the old schema
// appended). The _TRANSITIVE levels check every version, newest first,
// and stop at the first that fails; the others the newest only (or each
// of previous when single). The last message is Confluent's summary of
// the rule. The caller holds s.mu.
func (s *State) incompatibilities(rule compatRule, p *parsed, previous []*version, single bool) []string {
	level, policy := rule.level, rule.policy
	if level == levelNone || len(previous) == 0 {
		return nil
	}
	transitive := strings.HasSuffix(level, "_TRANSITIVE")
	if !transitive && !single {
		previous = previous[len(previous)-1:]
	}
	full := strings.HasPrefix(level, levelFull)
	backward := strings.HasPrefix(level, levelBackward) || full
	forward := strings.HasPrefix(level, levelForward) || full
	var msgs []string
	for i := len(previous) - 1; i >= 0 && len(msgs) == 0; i-- {
		v := previous[i]
		old, err := s.parseVersionOf(v)
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("{oldSchemaVersion: %d} cannot be parsed: %v", v.Version, err))
			break
		}
		if old.typ != p.typ {
			msgs = append(msgs, "Incompatible because of different schema type")
			break
		}
		withOld := func(m []string) []string {
			if len(m) == 0 {
				return m
			}
			return append(m, fmt.Sprintf("{oldSchemaVersion: %d}", v.Version), oldSchemaMessage(v.Schema))
		}
		if forward {
			m := readIssues(old, p, policy, "old", "new")
			if !full {
				m = withOld(m)
			}
			msgs = append(msgs, m...)
		}
		if backward {
			msgs = append(msgs, withOld(readIssues(p, old, policy, "new", "old"))...)
		}
	}
	if len(msgs) > 0 {
		msgs = append(msgs, fmt.Sprintf("{validateFields: '%t', compatibility: '%s'}", rule.validateFields, level))
	}
	return msgs
}

// maxLoggedSchema is the most of an old schema the messages show, in
// characters (Confluent's MAX_SCHEMA_SIZE_FOR_LOGGING).
const maxLoggedSchema = 10 * 1024

// oldSchemaMessage shows the old schema, cut as Confluent cuts it.
func oldSchemaMessage(schema string) string {
	if r := []rune(schema); len(r) > maxLoggedSchema {
		return "{oldSchema: <truncated> '" + string(r[:maxLoggedSchema]) + "...'}"
	}
	return "{oldSchema: '" + schema + "'}"
}

// compatRule is what a subject's schemas are checked under: its level,
// its policy ("" is STRICT) and its validateFields setting (shown in the
// messages; its reserved-field checks are not made here).
type compatRule struct {
	level, policy  string
	validateFields bool
}

// rule is the subject's compatRule, each setting looked up through its
// scopes, the level defaulting to defaultLevel; the caller holds s.mu.
func (s *State) rule(subject, defaultLevel string) compatRule {
	r := compatRule{level: s.compatibility(subject, defaultLevel), policy: s.policy(subject)}
	for _, k := range scopes(subject) {
		if c, ok := s.configs[k]; ok && c.ValidateFields != nil {
			r.validateFields = *c.ValidateFields
			break
		}
	}
	return r
}

// readIssues returns why schema reader cannot read data written with
// schema writer under the compatibility policy (STRICT when ""), each
// difference as Confluent words it, the reader named readerName and the
// writer writerName.
func readIssues(reader, writer *parsed, policy, readerName, writerName string) []string {
	switch {
	case reader.avro != nil && writer.avro != nil:
		return avroIssues(reader.avro, writer.avro, readerName, writerName)
	case reader.proto != nil && writer.proto != nil:
		return protoIssues(writer.proto, reader.proto, readerName, writerName)
	case reader.json != nil && writer.json != nil:
		return jsonIssues(writer.json, reader.json, policy == "LENIENT", readerName, writerName)
	}
	return nil
}

// describe fills a Confluent description template: its first %s is the
// reader, its second the writer.
func describe(template, readerName, writerName string) string {
	template = strings.Replace(template, "%s", readerName, 1)
	return strings.Replace(template, "%s", writerName, 1)
}
