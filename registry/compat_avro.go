package registry

import (
	"slices"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"
)

// Avro compatibility, as Confluent checks it: Avro's own reader/writer
// check (Java's SchemaCompatibility), each incompatibility it finds worded
// by Confluent's avro.Difference: its type (NAME_MISMATCH,
// FIXED_SIZE_MISMATCH, MISSING_ENUM_SYMBOLS, READER_FIELD_MISSING_DEFAULT_VALUE,
// TYPE_MISMATCH, MISSING_UNION_BRANCH), a description naming the path in
// the schema (a JSON pointer: /fields/2/type) and Avro's own message as
// additionalInfo. The check walks reader and writer together: same
// types compare their parts (items, values, names, sizes, symbols,
// fields, a writer union's every branch against the reader union);
// different ones are promotions (int to long, float or double; long to
// float or double; float to double; string and bytes either way), a
// writer union's every branch read by the reader, a reader union with a
// branch that reads the writer, or a TYPE_MISMATCH. Pairs already seen
// are remembered (a recursive type's pair in progress counts as
// compatible).

// avroIssue is one incompatibility: its type, Avro's message and where.
type avroIssue struct {
	typ, info string
	loc       []string // the path's tokens, the root's "" first
}

type avroPair struct{ r, w avro.Schema }

// avroChecker is one check; memo holds each pair's issues (nil while in
// progress).
type avroChecker struct {
	memo map[avroPair]*[]avroIssue
}

// avroIssues returns why reader cannot read what writer wrote, each as
// Confluent words it (its description's %s the reader, then the writer).
func avroIssues(reader, writer avro.Schema, readerName, writerName string) []string {
	c := &avroChecker{memo: map[avroPair]*[]avroIssue{}}
	var out []string
	for _, is := range c.check("", reader, writer, nil) {
		out = append(out, "{errorType:'"+is.typ+"', description:'"+describe(is.description(), readerName, writerName)+
			"', additionalInfo:'"+is.info+"'}")
	}
	return out
}

// description is Confluent's for the issue's type.
func (is avroIssue) description() string {
	path := is.path()
	switch is.typ {
	case "FIXED_SIZE_MISMATCH":
		return "The size of FIXED type field at path '" + path + "' in the %s schema does not match with the %s schema"
	case "TYPE_MISMATCH":
		return "The type (path '" + path + "') of a field in the %s schema does not match with the %s schema"
	case "NAME_MISMATCH":
		return "The name of the schema has changed (path '" + path + "')"
	case "MISSING_ENUM_SYMBOLS":
		return "The %s schema is missing enum symbols '" + is.info + "' at path '" + path + "' in the %s schema"
	case "MISSING_UNION_BRANCH":
		return "The %s schema is missing a type inside a union field at path '" + path + "' in the %s schema"
	case "READER_FIELD_MISSING_DEFAULT_VALUE":
		return "The field '" + is.info + "' at path '" + path + "' in the %s schema has no default value and is missing in the %s schema"
	}
	return ""
}

// path is the issue's location as a JSON pointer, the root token left
// out.
func (is avroIssue) path() string {
	var parts []string
	for _, t := range is.loc[1:] {
		parts = append(parts, strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return "/" + strings.Join(parts, "/")
}

// deref follows a reference to a named type.
func deref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// check compares reader r with writer w at loc plus token.
func (c *avroChecker) check(token string, r, w avro.Schema, loc []string) []avroIssue {
	loc = append(slices.Clip(loc), token)
	r, w = deref(r), deref(w)
	k := avroPair{r, w}
	if got, ok := c.memo[k]; ok {
		if got == nil {
			return nil // in progress: a recursive type
		}
		return *got
	}
	c.memo[k] = nil
	issues := c.compare(r, w, loc)
	c.memo[k] = &issues
	return issues
}

// readsAlone reports whether r reads w, checked from a root of its own
// (as Avro checks union branches).
func (c *avroChecker) readsAlone(r, w avro.Schema) bool {
	return len(c.check("", r, w, nil)) == 0
}

func issueAt(typ, info string, loc []string, tokens ...string) avroIssue {
	return avroIssue{typ: typ, info: info, loc: append(slices.Clone(loc), tokens...)}
}

func typeName(s avro.Schema) string { return strings.ToUpper(string(s.Type())) }

func (c *avroChecker) compare(r, w avro.Schema, loc []string) []avroIssue {
	if r.Type() == w.Type() {
		switch r := r.(type) {
		case *avro.ArraySchema:
			return c.check("items", r.Items(), w.(*avro.ArraySchema).Items(), loc)
		case *avro.MapSchema:
			return c.check("values", r.Values(), w.(*avro.MapSchema).Values(), loc)
		case *avro.FixedSchema:
			issues := avroNames(r, w.(avro.NamedSchema), loc)
			if rs, ws := r.Size(), w.(*avro.FixedSchema).Size(); rs != ws {
				issues = append(issues, issueAt("FIXED_SIZE_MISMATCH", "expected: "+strconv.Itoa(ws)+", found: "+strconv.Itoa(rs), loc, "size"))
			}
			return issues
		case *avro.EnumSchema:
			return append(avroNames(r, w.(avro.NamedSchema), loc), avroSymbols(r, w.(*avro.EnumSchema), loc)...)
		case *avro.RecordSchema:
			return append(avroNames(r, w.(avro.NamedSchema), loc), c.fields(r, w.(*avro.RecordSchema), loc)...)
		case *avro.UnionSchema:
			var issues []avroIssue
			for i, wb := range w.(*avro.UnionSchema).Types() {
				if !c.readsAlone(r, wb) {
					issues = append(issues, issueAt("MISSING_UNION_BRANCH", "reader union lacking writer type: "+typeName(wb), loc, strconv.Itoa(i)))
				}
			}
			return issues
		}
		return nil // the same primitive
	}
	if wu, ok := w.(*avro.UnionSchema); ok {
		var issues []avroIssue
		for i, wb := range wu.Types() {
			issues = append(issues, c.check(strconv.Itoa(i), r, wb, loc)...)
		}
		return issues
	}
	wt := w.Type()
	switch r.Type() {
	case avro.Long:
		if wt == avro.Int {
			return nil
		}
	case avro.Float:
		if wt == avro.Int || wt == avro.Long {
			return nil
		}
	case avro.Double:
		if wt == avro.Int || wt == avro.Long || wt == avro.Float {
			return nil
		}
	case avro.Bytes:
		if wt == avro.String {
			return nil
		}
	case avro.String:
		if wt == avro.Bytes {
			return nil
		}
	case avro.Union:
		for _, rb := range r.(*avro.UnionSchema).Types() {
			if c.readsAlone(rb, w) {
				return nil
			}
		}
		return []avroIssue{issueAt("MISSING_UNION_BRANCH", "reader union lacking writer type: "+typeName(w), loc)}
	}
	return []avroIssue{issueAt("TYPE_MISMATCH", "reader type: "+typeName(r)+" not compatible with writer type: "+typeName(w), loc)}
}

// avroNames: the reader's name (its own, not its namespace) must be the
// writer's, or one of its aliases the writer's full name.
func avroNames(r, w avro.NamedSchema, loc []string) []avroIssue {
	if r.Name() == w.Name() || slices.Contains(r.Aliases(), w.FullName()) {
		return nil
	}
	return []avroIssue{issueAt("NAME_MISMATCH", "expected: "+w.FullName(), loc, "name")}
}

// avroSymbols: the reader knows every symbol of the writer's, or has a
// default among its own.
func avroSymbols(r, w *avro.EnumSchema, loc []string) []avroIssue {
	var missing []string
	for _, s := range w.Symbols() {
		if !slices.Contains(r.Symbols(), s) && !slices.Contains(missing, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 || (r.HasDefault() && slices.Contains(r.Symbols(), r.Default())) {
		return nil
	}
	slices.Sort(missing)
	return []avroIssue{issueAt("MISSING_ENUM_SYMBOLS", "["+strings.Join(missing, ", ")+"]", loc, "symbols")}
}

// fields: each reader field reads the writer's of its name (or of one of
// its aliases), or has a default. A reader field missing from the writer
// whose type is an enum with a default is compared with the writer's
// record itself, as Avro does.
func (c *avroChecker) fields(r, w *avro.RecordSchema, loc []string) []avroIssue {
	var issues []avroIssue
	loc = append(slices.Clip(loc), "fields")
	for i, rf := range r.Fields() {
		floc := append(slices.Clip(loc), strconv.Itoa(i))
		wf := writerField(w, rf)
		switch {
		case wf != nil:
			issues = append(issues, c.check("type", rf.Type(), wf.Type(), floc)...)
		case rf.HasDefault():
		case isEnumWithDefault(rf.Type()):
			issues = append(issues, c.check("type", rf.Type(), w, floc)...)
		default:
			issues = append(issues, issueAt("READER_FIELD_MISSING_DEFAULT_VALUE", rf.Name(), floc))
		}
	}
	return issues
}

func isEnumWithDefault(s avro.Schema) bool {
	e, ok := deref(s).(*avro.EnumSchema)
	return ok && e.HasDefault()
}

// writerField is the writer's field of the reader field's name, else of
// one of its aliases.
func writerField(w *avro.RecordSchema, rf *avro.Field) *avro.Field {
	for _, name := range append([]string{rf.Name()}, rf.Aliases()...) {
		for _, f := range w.Fields() {
			if f.Name() == name {
				return f
			}
		}
	}
	return nil
}
