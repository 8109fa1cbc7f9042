package registry

import (
	"maps"
	"math/big"
	"reflect"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// JSON Schema compatibility, as Confluent's JsonSchema diffs two schemas
// (io.confluent.kafka.schemaregistry.json.diff; its STRICT policy, or
// LENIENT's jsonCompatibleLenient): each
// schema is seen as the Everit library Confluent parses with sees it (a
// typed schema per "type", several combined; enum, const, not, allOf,
// anyOf, oneOf; {} and true empty, false false; $ref followed), the two
// walked side by side, and every difference typed; those not in
// jsonCompatible make the schemas incompatible. The reader's schema is the
// update, the writer's the original. An object is an open content model
// when it permits any additional property (additionalProperties absent or
// true, no patternProperties, unevaluatedProperties absent or true).

// JSON Schema difference types, as Confluent names them.
const (
	jsTypeChanged                = "TYPE_CHANGED"
	jsTypeExtended               = "TYPE_EXTENDED"
	jsTypeNarrowed               = "TYPE_NARROWED"
	jsIDChanged                  = "ID_CHANGED"
	jsDescriptionChanged         = "DESCRIPTION_CHANGED"
	jsTitleChanged               = "TITLE_CHANGED"
	jsDefaultChanged             = "DEFAULT_CHANGED"
	jsSchemaAdded                = "SCHEMA_ADDED"
	jsSchemaRemoved              = "SCHEMA_REMOVED"
	jsRequiredAdded              = "REQUIRED_ATTRIBUTE_ADDED"
	jsRequiredWithDefaultAdded   = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
	jsRequiredRemoved            = "REQUIRED_ATTRIBUTE_REMOVED"
	jsAdditionalPropsAdded       = "ADDITIONAL_PROPERTIES_ADDED"
	jsAdditionalPropsRemoved     = "ADDITIONAL_PROPERTIES_REMOVED"
	jsAdditionalPropsExtended    = "ADDITIONAL_PROPERTIES_EXTENDED"
	jsAdditionalPropsNarrowed    = "ADDITIONAL_PROPERTIES_NARROWED"
	jsUnevalPropsAdded           = "UNEVALUATED_PROPERTIES_ADDED"
	jsUnevalPropsRemoved         = "UNEVALUATED_PROPERTIES_REMOVED"
	jsUnevalPropsExtended        = "UNEVALUATED_PROPERTIES_EXTENDED"
	jsUnevalPropsNarrowed        = "UNEVALUATED_PROPERTIES_NARROWED"
	jsDepArrayAdded              = "DEPENDENCY_ARRAY_ADDED"
	jsDepArrayRemoved            = "DEPENDENCY_ARRAY_REMOVED"
	jsDepArrayExtended           = "DEPENDENCY_ARRAY_EXTENDED"
	jsDepArrayNarrowed           = "DEPENDENCY_ARRAY_NARROWED"
	jsDepArrayChanged            = "DEPENDENCY_ARRAY_CHANGED"
	jsDepSchemaAdded             = "DEPENDENCY_SCHEMA_ADDED"
	jsDepSchemaRemoved           = "DEPENDENCY_SCHEMA_REMOVED"
	jsReqPropAddedOpen           = "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
	jsReqPropDefaultAddedOpen    = "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"
	jsOptPropAddedOpen           = "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
	jsEmptyPropAddedOpen         = "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
	jsReqPropAddedUnopen         = "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
	jsReqPropDefaultAddedUnopen  = "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
	jsOptPropAddedUnopen         = "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
	jsPropRemovedOpen            = "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL"
	jsFalsePropRemovedClosed     = "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	jsPropRemovedClosed          = "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	jsPropRemovedCovered         = "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jsPropRemovedNotCovered      = "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jsPropAddedCovered           = "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jsPropAddedNotCovered        = "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jsAdditionalItemsAdded       = "ADDITIONAL_ITEMS_ADDED"
	jsAdditionalItemsRemoved     = "ADDITIONAL_ITEMS_REMOVED"
	jsAdditionalItemsExtended    = "ADDITIONAL_ITEMS_EXTENDED"
	jsAdditionalItemsNarrowed    = "ADDITIONAL_ITEMS_NARROWED"
	jsItemAddedOpen              = "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
	jsEmptyItemAddedOpen         = "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
	jsItemAddedClosed            = "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL"
	jsItemRemovedOpen            = "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL"
	jsFalseItemRemovedClosed     = "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	jsItemRemovedClosed          = "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	jsItemRemovedCovered         = "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jsItemRemovedNotCovered      = "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jsItemAddedCovered           = "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jsItemAddedNotCovered        = "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jsUniqueItemsAdded           = "UNIQUE_ITEMS_ADDED"
	jsUniqueItemsRemoved         = "UNIQUE_ITEMS_REMOVED"
	jsEnumExtended               = "ENUM_ARRAY_EXTENDED"
	jsEnumNarrowed               = "ENUM_ARRAY_NARROWED"
	jsEnumChanged                = "ENUM_ARRAY_CHANGED"
	jsCombinedExtended           = "COMBINED_TYPE_EXTENDED"
	jsCombinedChanged            = "COMBINED_TYPE_CHANGED"
	jsProductExtended            = "PRODUCT_TYPE_EXTENDED"
	jsProductNarrowed            = "PRODUCT_TYPE_NARROWED"
	jsSumExtended                = "SUM_TYPE_EXTENDED"
	jsSumNarrowed                = "SUM_TYPE_NARROWED"
	jsCombinedSubschemasChanged  = "COMBINED_TYPE_SUBSCHEMAS_CHANGED"
	jsNotExtended                = "NOT_TYPE_EXTENDED"
	jsNotNarrowed                = "NOT_TYPE_NARROWED"
	jsPatternAdded               = "PATTERN_ADDED"
	jsPatternRemoved             = "PATTERN_REMOVED"
	jsPatternChanged             = "PATTERN_CHANGED"
	jsMultipleOfAdded            = "MULTIPLE_OF_ADDED"
	jsMultipleOfRemoved          = "MULTIPLE_OF_REMOVED"
	jsMultipleOfExpanded         = "MULTIPLE_OF_EXPANDED"
	jsMultipleOfReduced          = "MULTIPLE_OF_REDUCED"
	jsMultipleOfChanged          = "MULTIPLE_OF_CHANGED"
	jsUnevaluatedItemsAdded      = "UNEVALUATED_ITEMS_ADDED"
	jsUnevaluatedItemsRemoved    = "UNEVALUATED_ITEMS_REMOVED"
	jsUnevaluatedItemsExtended   = "UNEVALUATED_ITEMS_EXTENDED"
	jsUnevaluatedItemsNarrowed   = "UNEVALUATED_ITEMS_NARROWED"
	jsTooComplexToCompareChanged = jsTypeChanged
)

// jsonCompatible are the differences a reader copes with (Confluent's
// COMPATIBLE_CHANGES_STRICT), with jsonBounds' that loosen.
var jsonCompatible = withLoosenedBounds(map[string]bool{
	jsIDChanged: true, jsDescriptionChanged: true, jsTitleChanged: true, jsDefaultChanged: true,
	jsSchemaRemoved: true, jsTypeExtended: true, jsPatternRemoved: true,
	jsMultipleOfReduced: true, jsMultipleOfRemoved: true,
	jsRequiredWithDefaultAdded: true, jsRequiredRemoved: true,
	jsDepArrayNarrowed: true, jsDepArrayRemoved: true, jsDepSchemaRemoved: true,
	jsAdditionalPropsAdded: true, jsAdditionalPropsExtended: true,
	jsUnevalPropsAdded: true, jsUnevalPropsExtended: true,
	jsEmptyPropAddedOpen: true, jsReqPropDefaultAddedUnopen: true, jsOptPropAddedUnopen: true,
	jsFalsePropRemovedClosed: true, jsPropRemovedOpen: true, jsPropAddedCovered: true, jsPropRemovedCovered: true,
	jsUniqueItemsRemoved: true, jsAdditionalItemsAdded: true, jsAdditionalItemsExtended: true,
	jsUnevaluatedItemsAdded: true, jsUnevaluatedItemsExtended: true,
	jsEmptyItemAddedOpen: true, jsItemAddedClosed: true, jsFalseItemRemovedClosed: true, jsItemRemovedOpen: true,
	jsItemAddedCovered: true, jsItemRemovedCovered: true,
	jsEnumExtended: true, jsCombinedExtended: true, jsProductNarrowed: true, jsSumExtended: true, jsNotNarrowed: true,
})

// jsonCompatibleLenient are those of the LENIENT compatibility policy
// (Confluent's COMPATIBLE_CHANGES_LENIENT, Confluent 8.0.3 on): the
// strict ones, and properties added to or removed from an open content
// model, or where additionalProperties or unevaluatedProperties were
// narrowed or removed; a reader is assumed to ignore what it does not
// know.
var jsonCompatibleLenient = func() map[string]bool {
	out := maps.Clone(jsonCompatible)
	for _, t := range []string{jsAdditionalPropsNarrowed, jsAdditionalPropsRemoved, jsUnevalPropsNarrowed, jsUnevalPropsRemoved,
		jsReqPropDefaultAddedOpen, jsOptPropAddedOpen, jsPropRemovedOpen, jsPropRemovedClosed, jsPropAddedNotCovered, jsPropRemovedNotCovered} {
		out[t] = true
	}
	return out
}()

// jsonBounds are the numeric keywords compared as bounds: a maximum (a
// reader copes with it raised or removed) or a minimum (lowered or
// removed). Their differences are KEYWORD_ADDED, _REMOVED, _INCREASED and
// _DECREASED.
var jsonBounds = []struct {
	keyword, name string
	max           bool
}{
	{"maxLength", "MAX_LENGTH", true}, {"minLength", "MIN_LENGTH", false},
	{"maximum", "MAXIMUM", true}, {"minimum", "MINIMUM", false},
	{"exclusiveMaximum", "EXCLUSIVE_MAXIMUM", true}, {"exclusiveMinimum", "EXCLUSIVE_MINIMUM", false},
	{"maxProperties", "MAX_PROPERTIES", true}, {"minProperties", "MIN_PROPERTIES", false},
	{"maxItems", "MAX_ITEMS", true}, {"minItems", "MIN_ITEMS", false},
	{"maxContains", "MAX_CONTAINS", true}, {"minContains", "MIN_CONTAINS", false},
}

func withLoosenedBounds(compatible map[string]bool) map[string]bool {
	for _, b := range jsonBounds {
		compatible[b.name+"_REMOVED"] = true
		compatible[b.name+pick(b.max, "_INCREASED", "_DECREASED")] = true
	}
	return compatible
}

// jsonDescriptions are Confluent's words for the incompatible
// differences: the first %s is the reader, the second the writer, and
// {path} the difference's path.
var jsonDescriptions = jsonDescriptionTable()

func jsonDescriptionTable() map[string]string {
	out := map[string]string{}
	words := []struct {
		template string
		types    []string
	}{
		{"The keyword at path '{path}' in the %s schema is not present in the %s schema", []string{
			"MAXIMUM_ADDED", "MINIMUM_ADDED", "EXCLUSIVE_MAXIMUM_ADDED", "EXCLUSIVE_MINIMUM_ADDED", jsMultipleOfAdded,
			"MAX_LENGTH_ADDED", "MIN_LENGTH_ADDED", jsPatternAdded, jsRequiredAdded, "MAX_PROPERTIES_ADDED",
			"MIN_PROPERTIES_ADDED", jsDepArrayAdded, jsDepSchemaAdded, "MAX_ITEMS_ADDED", "MIN_ITEMS_ADDED",
			"MAX_CONTAINS_ADDED", "MIN_CONTAINS_ADDED", jsUniqueItemsAdded, jsAdditionalItemsRemoved,
			jsAdditionalPropsRemoved, jsUnevalPropsRemoved, jsUnevaluatedItemsRemoved}},
		{"The value at path '{path}' in the %s schema is more than its value in the %s schema", []string{
			"MIN_LENGTH_INCREASED", "MINIMUM_INCREASED", "EXCLUSIVE_MINIMUM_INCREASED", "MIN_PROPERTIES_INCREASED",
			jsMultipleOfExpanded, "MIN_ITEMS_INCREASED", "MIN_CONTAINS_INCREASED"}},
		{"The value at path '{path}' in the %s schema is less than its value in the %s schema", []string{
			"MAX_LENGTH_DECREASED", "MAXIMUM_DECREASED", "MAX_ITEMS_DECREASED", "MAX_CONTAINS_DECREASED",
			"EXCLUSIVE_MAXIMUM_DECREASED", "MAX_PROPERTIES_DECREASED"}},
		{"The value at path '{path}' is different between the %s and %s schema", []string{
			jsPatternChanged, jsMultipleOfChanged, jsDepArrayChanged}},
		{"An array or combined type at path '{path}' has fewer elements in the %s schema than the %s schema", []string{
			jsAdditionalItemsNarrowed, jsEnumNarrowed, jsSumNarrowed, jsAdditionalPropsNarrowed, jsUnevalPropsNarrowed,
			jsUnevaluatedItemsNarrowed}},
		{"An array or combined type at path '{path}' has more elements in the %s schema than the %s schema", []string{
			jsDepArrayExtended, jsProductExtended, jsSumExtended, jsNotExtended}},
		{"A type at path '{path}' is different between the %s schema and the %s schema", []string{
			jsTypeChanged, jsTypeNarrowed, jsCombinedChanged, jsCombinedSubschemasChanged, jsEnumChanged}},
		{"The %s schema has an open content model and has a property or item at path '{path}' which is missing in the %s schema", []string{
			jsReqPropAddedOpen, jsReqPropDefaultAddedOpen, jsOptPropAddedOpen, jsItemAddedOpen}},
		{"The %s schema has an unopen content model and has a required property at path '{path}' which is missing in the %s schema", []string{
			jsReqPropAddedUnopen}},
		{"The %s has a closed content model and is missing a property or item present at path '{path}' in the %s schema", []string{
			jsPropRemovedClosed, jsItemRemovedClosed}},
		{"A property or item is missing in the %s schema but present at path '{path}' in the %s schema and is not covered by its partially open content model", []string{
			jsPropRemovedNotCovered, jsItemRemovedNotCovered}},
		{"The %s schema has a property or item at path '{path}' which is missing in the %s schema and is not covered by its partially open content model", []string{
			jsPropAddedNotCovered, jsItemAddedNotCovered}},
	}
	for _, w := range words {
		for _, t := range w.types {
			out[t] = w.template
		}
	}
	return out
}

// jsonIssues returns the incompatible differences from original (the
// writer's schema) to update (the reader's), as Confluent words them.
func jsonIssues(original, update *jsonschema.Schema, lenient bool, readerName, writerName string) []string {
	budget := 100000
	d := &jsonDiff{inProgress: map[jsonPair]bool{}, budget: &budget, ok: jsonCompatible}
	if lenient {
		d.ok = jsonCompatibleLenient
	}
	d.compare(original, update)
	var out []string
	for _, df := range d.diffs {
		if !d.ok[df.typ] {
			desc := strings.ReplaceAll(describe(jsonDescriptions[df.typ], readerName, writerName), "{path}", df.path)
			out = append(out, `{errorType:"`+df.typ+`", description:"`+desc+`'}`)
		}
	}
	return out
}

// jsonDiff is one comparison: the path being compared and the
// differences found. The comparisons a check may make are bounded: a
// schema that takes more is reported changed.
type jsonDiff struct {
	path       []string
	diffs      []schemaDiff
	inProgress map[jsonPair]bool // pairs being compared, against $ref cycles
	budget     *int
	ok         map[string]bool // the compatible differences: jsonCompatible or jsonCompatibleLenient
}

type jsonPair struct {
	o, u         *jsonschema.Schema
	oKind, uKind string
}

func (d *jsonDiff) add(typ string) {
	d.diffs = append(d.diffs, schemaDiff{typ, "#/" + strings.Join(d.path, "/")})
}

func (d *jsonDiff) addAt(attr, typ string) {
	d.path = append(d.path, attr)
	d.add(typ)
	d.path = d.path[:len(d.path)-1]
}

func (d *jsonDiff) enter(p string) { d.path = append(d.path, p) }
func (d *jsonDiff) leave()         { d.path = d.path[:len(d.path)-1] }

// sub is a comparison of its own at the same path, sharing the cycle
// guard and the budget.
func (d *jsonDiff) sub() *jsonDiff {
	return &jsonDiff{path: slices.Clone(d.path), inProgress: d.inProgress, budget: d.budget, ok: d.ok}
}

func (d *jsonDiff) compatible() bool {
	return !slices.ContainsFunc(d.diffs, func(df schemaDiff) bool { return !d.ok[df.typ] })
}

// jnode is a schema as Everit models it.
type jnode struct {
	kind      string // empty, false, string, number, boolean, null, object, array, enum, const, not, combined
	s         *jsonschema.Schema
	integer   bool     // number: "integer"
	criterion string   // combined: allOf, anyOf, oneOf
	subs      []*jnode // combined
}

// sniffTypes returns the types whose keywords a schema without "type"
// has.
func sniffTypes(s *jsonschema.Schema) []string {
	var out []string
	if s.Properties != nil || s.Required != nil || s.AdditionalProperties != nil || s.PatternProperties != nil ||
		s.MinProperties != nil || s.MaxProperties != nil || s.Dependencies != nil || s.DependentRequired != nil ||
		s.DependentSchemas != nil || s.PropertyNames != nil || s.UnevaluatedProperties != nil {
		out = append(out, "object")
	}
	if s.Items != nil || s.Items2020 != nil || s.PrefixItems != nil || s.AdditionalItems != nil || s.MinItems != nil ||
		s.MaxItems != nil || s.UniqueItems || s.Contains != nil || s.UnevaluatedItems != nil {
		out = append(out, "array")
	}
	if s.MinLength != nil || s.MaxLength != nil || s.Pattern != nil {
		out = append(out, "string")
	}
	if s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil || s.MultipleOf != nil {
		out = append(out, "number")
	}
	return out
}

// nodeOf models s as Everit does.
func nodeOf(s *jsonschema.Schema) *jnode {
	for i := 0; s.Ref != nil && i < 64; i++ {
		s = s.Ref
	}
	if s.Bool != nil {
		return &jnode{kind: pick(*s.Bool, "empty", "false"), s: s}
	}
	var parts []*jnode
	if s.Enum != nil {
		parts = append(parts, &jnode{kind: "enum", s: s})
	}
	for _, c := range []struct {
		criterion string
		subs      []*jsonschema.Schema
	}{{"allOf", s.AllOf}, {"anyOf", s.AnyOf}, {"oneOf", s.OneOf}} {
		if len(c.subs) > 0 {
			n := &jnode{kind: "combined", s: s, criterion: c.criterion}
			for _, sub := range c.subs {
				n.subs = append(n.subs, nodeOf(sub))
			}
			parts = append(parts, n)
		}
	}
	if s.Not != nil {
		parts = append(parts, &jnode{kind: "not", s: s})
	}
	if s.Const != nil {
		parts = append(parts, &jnode{kind: "const", s: s})
	}
	types := sniffTypes(s)
	if s.Types != nil {
		types = s.Types.ToStrings()
	}
	var typed []*jnode
	for _, t := range types {
		switch t {
		case "integer":
			if !slices.Contains(types, "number") {
				typed = append(typed, &jnode{kind: "number", s: s, integer: true})
			}
		default:
			typed = append(typed, &jnode{kind: t, s: s})
		}
	}
	switch len(typed) {
	case 0:
	case 1:
		parts = append(parts, typed[0])
	default:
		parts = append(parts, &jnode{kind: "combined", s: s, criterion: "anyOf", subs: typed})
	}
	switch len(parts) {
	case 0:
		return &jnode{kind: "empty", s: s}
	case 1:
		return parts[0]
	}
	return &jnode{kind: "combined", s: s, criterion: "allOf", subs: parts}
}

func (d *jsonDiff) compare(o, u *jsonschema.Schema) {
	switch {
	case o == nil && u == nil:
	case o == nil:
		d.add(jsSchemaAdded)
	case u == nil:
		d.add(jsSchemaRemoved)
	default:
		d.compareNodes(nodeOf(o), nodeOf(u))
	}
}

func (d *jsonDiff) compareNodes(o, u *jnode) {
	if *d.budget--; *d.budget < 0 {
		// Too many comparisons (combinations of combinations): changed.
		d.add(jsTooComplexToCompareChanged)
		return
	}
	key := jsonPair{o.s, u.s, o.kind + o.criterion, u.kind + u.criterion}
	if d.inProgress[key] {
		return // a cycle through $ref: compatible, as Confluent assumes
	}
	d.inProgress[key] = true
	defer delete(d.inProgress, key)
	d.compareTypes(o, u)
}

// firstCompatible compares o with each of subs, each in a comparison of
// its own, and keeps the differences of the first that is compatible.
func (d *jsonDiff) firstCompatible(o *jnode, subs []*jnode, u bool) bool {
	for _, s := range subs {
		sub := d.sub()
		if u {
			sub.compareNodes(o, s)
		} else {
			sub.compareNodes(s, o)
		}
		if sub.compatible() {
			d.diffs = append(d.diffs, sub.diffs...)
			return true
		}
	}
	return false
}

func (d *jsonDiff) compareTypes(o, u *jnode) {
	switch {
	case o.kind != "combined" && u.kind == "combined":
		if len(u.subs) == 1 {
			if d.firstCompatible(o, u.subs, true) {
				return
			}
		} else if u.criterion != "allOf" && d.firstCompatible(o, u.subs, true) {
			d.add(jsSumExtended)
			return
		}
	case o.kind == "combined" && u.kind != "combined":
		if len(o.subs) == 1 {
			if d.firstCompatible(u, o.subs, false) {
				return
			}
		} else if o.criterion == "allOf" && d.firstCompatible(u, o.subs, false) {
			d.add(jsProductNarrowed)
			return
		}
	}
	if o.kind != u.kind {
		if o.kind == "false" || u.kind == "empty" {
			return
		}
		d.add(jsTypeChanged)
		return
	}
	if o.s.ID != u.s.ID {
		d.add(jsIDChanged)
	}
	if o.s.Title != u.s.Title {
		d.add(jsTitleChanged)
	}
	if o.s.Description != u.s.Description {
		d.add(jsDescriptionChanged)
	}
	if (o.s.Default == nil) != (u.s.Default == nil) || o.s.Default != nil && !reflect.DeepEqual(*o.s.Default, *u.s.Default) {
		d.add(jsDefaultChanged)
	}
	switch o.kind {
	case "string":
		d.bounds(o.s, u.s, "maxLength", "minLength")
		d.pattern(o.s, u.s)
	case "number":
		d.bounds(o.s, u.s, "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum")
		d.multipleOf(o.s.MultipleOf, u.s.MultipleOf)
		if o.integer != u.integer {
			d.add(pick(o.integer, jsTypeExtended, jsTypeNarrowed))
		}
	case "const":
		if !reflect.DeepEqual(*o.s.Const, *u.s.Const) {
			d.addAt("const", jsEnumChanged)
		}
	case "enum":
		d.enum(o.s.Enum.Values, u.s.Enum.Values)
	case "combined":
		d.combined(o, u)
	case "not":
		d.enter("not")
		sub := d.sub()
		sub.compare(u.s.Not, o.s.Not) // reversed
		d.add(pick(sub.compatible(), jsNotNarrowed, jsNotExtended))
		d.leave()
	case "object":
		d.object(o.s, u.s)
	case "array":
		d.array(o.s, u.s)
	}
}

// setChange compares two lists of values as sets: "" when equal, else
// EXTENDED (u has every value of o), NARROWED (o has every value of u)
// or CHANGED.
func setChange[T any](o, u []T) string {
	contains := func(all, some []T) bool {
		for _, v := range some {
			if !slices.ContainsFunc(all, func(w T) bool { return reflect.DeepEqual(v, w) }) {
				return false
			}
		}
		return true
	}
	switch ou, uo := contains(u, o), contains(o, u); {
	case ou && uo:
		return ""
	case ou:
		return "EXTENDED"
	case uo:
		return "NARROWED"
	}
	return "CHANGED"
}

func (d *jsonDiff) enum(o, u []any) {
	if c := setChange(o, u); c != "" {
		d.addAt("enum", "ENUM_ARRAY_"+c)
	}
}

func (d *jsonDiff) pattern(o, u *jsonschema.Schema) {
	switch {
	case o.Pattern == nil && u.Pattern != nil:
		d.addAt("pattern", jsPatternAdded)
	case o.Pattern != nil && u.Pattern == nil:
		d.addAt("pattern", jsPatternRemoved)
	case o.Pattern != nil && o.Pattern.String() != u.Pattern.String():
		d.addAt("pattern", jsPatternChanged)
	}
}

func (d *jsonDiff) multipleOf(o, u *big.Rat) {
	zero := func(r *big.Rat) bool { return r.Sign() == 0 }
	divides := func(a, b *big.Rat) bool { // b is a multiple of a
		q := new(big.Rat).Quo(b, a)
		return q.IsInt()
	}
	switch {
	case o == nil && u == nil, o != nil && u != nil && o.Cmp(u) == 0:
	case o == nil:
		d.addAt("multipleOf", jsMultipleOfAdded)
	case u == nil:
		d.addAt("multipleOf", jsMultipleOfRemoved)
	case !zero(o) && divides(o, u):
		d.addAt("multipleOf", jsMultipleOfExpanded)
	case !zero(u) && divides(u, o):
		d.addAt("multipleOf", jsMultipleOfReduced)
	default:
		d.addAt("multipleOf", jsMultipleOfChanged)
	}
}

// boundOf returns a numeric keyword of s, or nil.
func boundOf(s *jsonschema.Schema, keyword string) *big.Rat {
	i := func(p *int) *big.Rat {
		if p == nil {
			return nil
		}
		return new(big.Rat).SetInt64(int64(*p))
	}
	switch keyword {
	case "maxLength":
		return i(s.MaxLength)
	case "minLength":
		return i(s.MinLength)
	case "maximum":
		return s.Maximum
	case "minimum":
		return s.Minimum
	case "exclusiveMaximum":
		return s.ExclusiveMaximum
	case "exclusiveMinimum":
		return s.ExclusiveMinimum
	case "maxProperties":
		return i(s.MaxProperties)
	case "minProperties":
		return i(s.MinProperties)
	case "maxItems":
		return i(s.MaxItems)
	case "minItems":
		return i(s.MinItems)
	case "maxContains":
		return i(s.MaxContains)
	case "minContains":
		return i(s.MinContains)
	}
	return nil
}

func (d *jsonDiff) bounds(o, u *jsonschema.Schema, keywords ...string) {
	for _, b := range jsonBounds {
		if !slices.Contains(keywords, b.keyword) {
			continue
		}
		ov, uv := boundOf(o, b.keyword), boundOf(u, b.keyword)
		switch {
		case ov == nil && uv == nil, ov != nil && uv != nil && ov.Cmp(uv) == 0:
		case ov == nil:
			d.addAt(b.keyword, b.name+"_ADDED")
		case uv == nil:
			d.addAt(b.keyword, b.name+"_REMOVED")
		case ov.Cmp(uv) < 0:
			d.addAt(b.keyword, b.name+"_INCREASED")
		default:
			d.addAt(b.keyword, b.name+"_DECREASED")
		}
	}
}

func (d *jsonDiff) combined(o, u *jnode) {
	switch {
	case o.criterion == u.criterion:
	case u.criterion == "anyOf" || len(o.subs) == 1 && len(u.subs) == 1 ||
		len(o.subs) == 1 && u.criterion == "oneOf" || len(u.subs) == 1 && o.criterion == "allOf":
		d.add(jsCombinedExtended)
	default:
		d.add(jsCombinedChanged)
		return
	}
	switch {
	case len(o.subs) < len(u.subs):
		d.add(pick(u.criterion == "allOf", jsProductExtended, jsSumExtended))
	case len(o.subs) > len(u.subs):
		d.add(pick(o.criterion == "allOf", jsProductNarrowed, jsSumNarrowed))
	}
	// The compatible pairs (original member, update member), then a
	// matching of the most members (Kuhn's augmenting paths).
	edges := make([][][]schemaDiff, len(o.subs))
	for i, os := range o.subs {
		edges[i] = make([][]schemaDiff, len(u.subs))
		d.enter(o.criterion + "/" + itoa(i))
		for j, us := range u.subs {
			sub := d.sub()
			sub.compareNodes(os, us)
			if sub.compatible() {
				edges[i][j] = append([]schemaDiff{}, sub.diffs...) // non-nil: an edge
			}
		}
		d.leave()
	}
	matchOf := make([]int, len(u.subs)) // update member → original member, -1
	for j := range matchOf {
		matchOf[j] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for j := range u.subs {
			if edges[i][j] == nil || seen[j] {
				continue
			}
			seen[j] = true
			if matchOf[j] < 0 || try(matchOf[j], seen) {
				matchOf[j] = i
				return true
			}
		}
		return false
	}
	matched := 0
	for i := range o.subs {
		if try(i, make([]bool, len(u.subs))) {
			matched++
		}
	}
	for j, i := range matchOf {
		if i >= 0 {
			d.diffs = append(d.diffs, edges[i][j]...)
		}
	}
	if matched < min(len(o.subs), len(u.subs)) {
		d.add(jsCombinedSubschemasChanged)
	}
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }

// additional returns a schema's additionalProperties (or
// additionalItems): whether it permits more, and its schema when it is
// one.
func additional(v any) (bool, *jsonschema.Schema) {
	switch v := v.(type) {
	case bool:
		return v, nil
	case *jsonschema.Schema:
		if v.Bool != nil {
			return *v.Bool, nil
		}
		return true, v
	}
	return true, nil
}

func isFalse(s *jsonschema.Schema) bool { return s != nil && s.Bool != nil && !*s.Bool }
func isEmpty(s *jsonschema.Schema) bool { return s != nil && nodeOf(s).kind == "empty" }

// open reports whether an object (or an array) permits anything more:
// additional absent or true, unevaluated absent or true.
func open(permits bool, schemaOf *jsonschema.Schema, patterns bool, uneval *jsonschema.Schema) bool {
	return permits && schemaOf == nil && !patterns && (uneval == nil || isEmpty(uneval))
}

// partial returns the schema a partially open model gives what it does
// not name: additional's schema, else unevaluated's (neither true nor
// false).
func partial(permits bool, schemaOf, uneval *jsonschema.Schema) *jsonschema.Schema {
	if schemaOf != nil {
		return schemaOf
	}
	if permits && uneval != nil && !isFalse(uneval) && !isEmpty(uneval) {
		return uneval
	}
	return nil
}

func (d *jsonDiff) object(o, u *jsonschema.Schema) {
	oPermits, oAdd := additional(o.AdditionalProperties)
	uPermits, uAdd := additional(u.AdditionalProperties)
	d.enter("required")
	for _, name := range sortedKeys(o.Properties) {
		if u.Properties[name] == nil {
			continue
		}
		or, ur := slices.Contains(o.Required, name), slices.Contains(u.Required, name)
		switch {
		case or && !ur:
			d.addAt(name, jsRequiredRemoved)
		case !or && ur:
			d.addAt(name, pick(u.Properties[name].Default != nil, jsRequiredWithDefaultAdded, jsRequiredAdded))
		}
	}
	d.leave()
	patternOf := func(s *jsonschema.Schema, permits bool, add *jsonschema.Schema, name string) *jsonschema.Schema {
		for re, ps := range s.PatternProperties {
			if re.MatchString(name) {
				return ps
			}
		}
		return partial(permits, add, s.UnevaluatedProperties)
	}
	d.enter("properties")
	for _, name := range unionKeys(o.Properties, u.Properties) {
		op, up := o.Properties[name], u.Properties[name]
		d.enter(name)
		switch {
		case up == nil:
			if open(uPermits, uAdd, len(u.PatternProperties) > 0, u.UnevaluatedProperties) {
				d.add(jsPropRemovedOpen)
			} else if p := patternOf(u, uPermits, uAdd, name); p != nil {
				d.covered(op, p, jsPropRemovedCovered, jsPropRemovedNotCovered)
			} else {
				d.add(pick(isFalse(op), jsFalsePropRemovedClosed, jsPropRemovedClosed))
			}
		case op == nil:
			required := slices.Contains(u.Required, name)
			if open(oPermits, oAdd, len(o.PatternProperties) > 0, o.UnevaluatedProperties) {
				switch {
				case isEmpty(up):
					d.add(jsEmptyPropAddedOpen)
				case required:
					d.add(pick(up.Default != nil, jsReqPropDefaultAddedOpen, jsReqPropAddedOpen))
				default:
					d.add(jsOptPropAddedOpen)
				}
				break
			}
			if p := patternOf(o, oPermits, oAdd, name); p != nil {
				d.covered(p, up, jsPropAddedCovered, jsPropAddedNotCovered)
			}
			switch {
			case required:
				d.add(pick(up.Default != nil, jsReqPropDefaultAddedUnopen, jsReqPropAddedUnopen))
			default:
				d.add(jsOptPropAddedUnopen)
			}
		default:
			d.compare(op, up)
		}
		d.leave()
	}
	d.leave()
	d.enter("dependencies")
	oArr, oSch := dependencies(o)
	uArr, uSch := dependencies(u)
	for _, name := range unionKeys(oArr, uArr) {
		oa, oOK := oArr[name]
		ua, uOK := uArr[name]
		switch {
		case !uOK:
			d.addAt(name, jsDepArrayRemoved)
		case !oOK:
			d.addAt(name, jsDepArrayAdded)
		default:
			if c := setChange(oa, ua); c != "" {
				d.addAt(name, "DEPENDENCY_ARRAY_"+c)
			}
		}
	}
	for _, name := range unionKeys(oSch, uSch) {
		os, us := oSch[name], uSch[name]
		switch {
		case us == nil:
			d.addAt(name, jsDepSchemaRemoved)
		case os == nil:
			d.addAt(name, jsDepSchemaAdded)
		default:
			d.enter(name)
			d.compare(os, us)
			d.leave()
		}
	}
	d.leave()
	d.enter("additionalProperties")
	d.additional(oPermits, uPermits, oAdd, uAdd, jsAdditionalPropsAdded, jsAdditionalPropsRemoved, jsAdditionalPropsNarrowed, jsAdditionalPropsExtended)
	d.leave()
	d.unevaluated(o.UnevaluatedProperties, u.UnevaluatedProperties, "unevaluatedProperties", jsUnevalPropsAdded, jsUnevalPropsRemoved, jsUnevalPropsNarrowed, jsUnevalPropsExtended)
	d.bounds(o, u, "maxProperties", "minProperties")
}

// covered compares what a model's schema for unnamed members (p) says
// with a member's schema, in a comparison of its own.
func (d *jsonDiff) covered(o, u *jsonschema.Schema, yes, no string) {
	sub := d.sub()
	sub.compare(o, u)
	d.diffs = append(d.diffs, sub.diffs...)
	d.add(pick(sub.compatible(), yes, no))
}

func (d *jsonDiff) additional(oPermits, uPermits bool, oSchema, uSchema *jsonschema.Schema, added, removed, narrowed, extended string) {
	switch {
	case oPermits != uPermits:
		d.add(pick(uPermits, added, removed))
	case oSchema == nil && uSchema != nil:
		d.add(narrowed)
	case oSchema != nil && uSchema == nil:
		d.add(extended)
	default:
		d.compare(oSchema, uSchema)
	}
}

func (d *jsonDiff) unevaluated(o, u *jsonschema.Schema, keyword, added, removed, narrowed, extended string) {
	if o == nil && u == nil {
		return
	}
	d.enter(keyword)
	defer d.leave()
	switch {
	case o == nil:
		d.add(pick(isFalse(u), removed, narrowed))
	case u == nil:
		d.add(pick(isFalse(o), added, extended))
	case isFalse(o) && !isFalse(u):
		d.add(added)
	case !isFalse(o) && isFalse(u):
		d.add(removed)
	case isEmpty(o) && !isEmpty(u):
		d.add(narrowed)
	case !isEmpty(o) && isEmpty(u):
		d.add(extended)
	default:
		d.compare(o, u)
	}
}

// dependencies returns a schema's property dependencies (draft 4 to 7's
// dependencies, 2019-09's dependentRequired) and schema dependencies.
func dependencies(s *jsonschema.Schema) (map[string][]string, map[string]*jsonschema.Schema) {
	arrays, schemas := map[string][]string{}, map[string]*jsonschema.Schema{}
	for k, v := range s.Dependencies {
		switch v := v.(type) {
		case []string:
			arrays[k] = v
		case *jsonschema.Schema:
			schemas[k] = v
		}
	}
	for k, v := range s.DependentRequired {
		arrays[k] = v
	}
	for k, v := range s.DependentSchemas {
		schemas[k] = v
	}
	return arrays, schemas
}

func sortedKeys[V any](m map[string]V) []string {
	return unionKeys(m, map[string]V{})
}

// itemsOf returns an array schema's items in Everit's terms: the schema
// of every item, the schemas of the first items (a tuple), and
// additionalItems.
func itemsOf(s *jsonschema.Schema) (all *jsonschema.Schema, tuple []*jsonschema.Schema, add any) {
	switch v := s.Items.(type) {
	case *jsonschema.Schema:
		all = v
	case []*jsonschema.Schema:
		tuple = v
	}
	add = s.AdditionalItems
	if s.PrefixItems != nil {
		tuple, add = s.PrefixItems, s.Items2020
		if s.Items2020 == nil {
			add = nil
		}
	} else if s.Items2020 != nil {
		all = s.Items2020
	}
	return all, tuple, add
}

func (d *jsonDiff) array(o, u *jsonschema.Schema) {
	oAll, oTuple, oAddV := itemsOf(o)
	uAll, uTuple, uAddV := itemsOf(u)
	oPermits, oAdd := additional(oAddV)
	uPermits, uAdd := additional(uAddV)
	d.enter("items")
	d.compare(oAll, uAll)
	d.leave()
	n := min(len(oTuple), len(uTuple))
	for i := range n {
		d.enter("items/" + itoa(i))
		d.compare(oTuple[i], uTuple[i])
		d.leave()
	}
	for i := n; i < len(oTuple); i++ {
		d.enter("items/" + itoa(i))
		if open(uPermits, uAdd, false, u.UnevaluatedItems) {
			d.add(jsItemRemovedOpen)
		} else if p := partial(uPermits, uAdd, u.UnevaluatedItems); p != nil {
			d.covered(oTuple[i], p, jsItemRemovedCovered, jsItemRemovedNotCovered)
		} else {
			d.add(pick(isFalse(oTuple[i]), jsFalseItemRemovedClosed, jsItemRemovedClosed))
		}
		d.leave()
	}
	for i := n; i < len(uTuple); i++ {
		d.enter("items/" + itoa(i))
		if open(oPermits, oAdd, false, o.UnevaluatedItems) {
			d.add(pick(isEmpty(uTuple[i]), jsEmptyItemAddedOpen, jsItemAddedOpen))
		} else if p := partial(oPermits, oAdd, o.UnevaluatedItems); p != nil {
			d.covered(p, uTuple[i], jsItemAddedCovered, jsItemAddedNotCovered)
		} else {
			d.add(jsItemAddedClosed)
		}
		d.leave()
	}
	d.enter("additionalItems")
	d.additional(oPermits, uPermits, oAdd, uAdd, jsAdditionalItemsAdded, jsAdditionalItemsRemoved, jsAdditionalItemsNarrowed, jsAdditionalItemsExtended)
	d.leave()
	d.unevaluated(o.UnevaluatedItems, u.UnevaluatedItems, "unevaluatedItems", jsUnevaluatedItemsAdded, jsUnevaluatedItemsRemoved, jsUnevaluatedItemsNarrowed, jsUnevaluatedItemsExtended)
	d.bounds(o, u, "maxItems", "minItems")
	if o.UniqueItems != u.UniqueItems {
		d.addAt("uniqueItems", pick(o.UniqueItems, jsUniqueItemsRemoved, jsUniqueItemsAdded))
	}
	d.bounds(o, u, "maxContains", "minContains")
}
