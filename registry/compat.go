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
// previous (ascending) under level, or nothing when it can: BACKWARD, new
// readers read old data; FORWARD, old readers read new data; FULL, both;
// the _TRANSITIVE levels against every version, the others against the
// newest only (or against each of previous when single). The caller holds
// s.mu.
func (s *State) incompatibilities(level string, p *parsed, previous []*version, single bool) []string {
	if level == levelNone || len(previous) == 0 {
		return nil
	}
	transitive := strings.HasSuffix(level, "_TRANSITIVE")
	if !transitive && !single {
		previous = previous[len(previous)-1:]
	}
	backward := strings.HasPrefix(level, levelBackward) || strings.HasPrefix(level, levelFull)
	forward := strings.HasPrefix(level, levelForward) || strings.HasPrefix(level, levelFull)
	var msgs []string
	for i := len(previous) - 1; i >= 0; i-- {
		v := previous[i]
		old, err := s.parseVersionOf(v)
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("{oldSchemaVersion: %d} cannot be parsed: %v", v.Version, err))
			continue
		}
		if backward {
			if err := readable(p, old); err != nil {
				msgs = append(msgs, fmt.Sprintf("{errorType:'READER_INCOMPATIBLE', description:'The new schema cannot read data written with version %d: %v'}", v.Version, err))
			}
		}
		if forward {
			if err := readable(old, p); err != nil {
				msgs = append(msgs, fmt.Sprintf("{errorType:'WRITER_INCOMPATIBLE', description:'Version %d cannot read data written with the new schema: %v'}", v.Version, err))
			}
		}
		if len(msgs) > 0 {
			msgs = append(msgs, fmt.Sprintf("{oldSchemaVersion: %d}", v.Version), fmt.Sprintf("{oldSchema: '%s'}", v.Schema),
				fmt.Sprintf("{compatibility: '%s'}", level))
			break
		}
	}
	return msgs
}
