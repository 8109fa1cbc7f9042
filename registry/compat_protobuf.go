package registry

import (
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Protobuf compatibility, as Confluent's ProtobufSchema diffs two schemas
// (io.confluent.kafka.schemaregistry.protobuf.diff): the types of the
// schema's own file are compared by name, their fields by number, their
// enum constants by number; each difference has a type, and those not in
// protoCompatible make the schemas incompatible. The reader's schema is
// the update, the writer's the original.

// protoSchema is a compiled Protobuf schema: its file, and the references
// its imports resolved to (by import path).
type protoSchema struct {
	file protoreflect.FileDescriptor
	refs map[string]Reference
}

// Protobuf difference types, as Confluent names them.
const (
	pbPackageChanged            = "PACKAGE_CHANGED"
	pbMessageAdded              = "MESSAGE_ADDED"
	pbMessageRemoved            = "MESSAGE_REMOVED"
	pbMessageMoved              = "MESSAGE_MOVED"
	pbEnumAdded                 = "ENUM_ADDED"
	pbEnumRemoved               = "ENUM_REMOVED"
	pbEnumConstAdded            = "ENUM_CONST_ADDED"
	pbEnumConstChanged          = "ENUM_CONST_CHANGED"
	pbEnumConstRemoved          = "ENUM_CONST_REMOVED"
	pbFieldAdded                = "FIELD_ADDED"
	pbFieldRemoved              = "FIELD_REMOVED"
	pbFieldNameChanged          = "FIELD_NAME_CHANGED"
	pbFieldKindChanged          = "FIELD_KIND_CHANGED"
	pbFieldScalarKindChanged    = "FIELD_SCALAR_KIND_CHANGED"
	pbFieldNamedTypeChanged     = "FIELD_NAMED_TYPE_CHANGED"
	pbFieldNumericLabelChanged  = "FIELD_NUMERIC_LABEL_CHANGED"
	pbFieldStringLabelChanged   = "FIELD_STRING_OR_BYTES_LABEL_CHANGED"
	pbRequiredFieldAdded        = "REQUIRED_FIELD_ADDED"
	pbRequiredFieldRemoved      = "REQUIRED_FIELD_REMOVED"
	pbOneofAdded                = "ONEOF_ADDED"
	pbOneofRemoved              = "ONEOF_REMOVED"
	pbOneofFieldAdded           = "ONEOF_FIELD_ADDED"
	pbOneofFieldRemoved         = "ONEOF_FIELD_REMOVED"
	pbOneofFieldMovedToTopLevel = "ONEOF_FIELD_MOVED_TO_TOP_LEVEL"
	pbMultipleFieldsMovedToOne  = "MULTIPLE_FIELDS_MOVED_TO_ONEOF"
	pbFieldMovedToExistingOneof = "FIELD_MOVED_TO_EXISTING_ONEOF"
)

// protoCompatible are the differences a reader copes with.
var protoCompatible = map[string]bool{
	pbMessageAdded: true, pbMessageMoved: true, pbEnumAdded: true, pbEnumRemoved: true,
	pbEnumConstAdded: true, pbEnumConstChanged: true, pbEnumConstRemoved: true,
	pbFieldAdded: true, pbFieldRemoved: true, pbFieldNameChanged: true,
	pbFieldStringLabelChanged: true, pbOneofAdded: true, pbOneofRemoved: true,
	pbOneofFieldAdded: true, pbOneofFieldMovedToTopLevel: true,
}

// protoDescriptions are Confluent's words for the incompatible
// differences: the first %s is the reader, the second the writer, and
// {path} the difference's path.
var protoDescriptions = map[string]string{
	pbPackageChanged:            "The package at '{path}' in the %s schema does not match the package in the %s schema",
	pbMessageRemoved:            "The %s schema is missing a MESSAGE type at path '{path}' in the %s schema",
	pbFieldKindChanged:          "The type of a field at path '{path}' in the %s schema does not match the %s schema",
	pbFieldScalarKindChanged:    "The kind of a SCALAR field at path '{path}' in the %s schema does not match its kind in the %s schema",
	pbFieldNamedTypeChanged:     "The type of a MESSAGE field at path '{path}' in the %s schema does not match its type in the %s schema",
	pbFieldNumericLabelChanged:  "The label for a NUMERIC field at path '{path}' in the %s schema does not match its label in the %s schema",
	pbRequiredFieldAdded:        "A required field  at path '{path}' in the %s schema is missing in the %s schema",
	pbRequiredFieldRemoved:      "The %s schema is missing a required field at path: '{path}' in the %s schema",
	pbOneofFieldRemoved:         "The %s schema is missing a oneof field at path '{path}' in the %s schema",
	pbOneofFieldMovedToTopLevel: "The oneof field at path '{path}' in the %s schema was moved out of its oneof to a top-level field in the %s schema",
	pbMultipleFieldsMovedToOne:  "Multiple fields in the oneof at path '{path}' in the %s schema are outside a oneof in the %s schema",
	pbFieldMovedToExistingOneof: "A field in the oneof at path '{path}' in the %s schema is outside an existing oneof in the %s schema",
}

// schemaDiff is one difference found: its type and its path.
type schemaDiff struct {
	typ, path string
}

// protoIssues returns the incompatible differences from original (the
// writer's schema) to update (the reader's), as Confluent words them.
func protoIssues(original, update *protoSchema, readerName, writerName string) []string {
	d := &protoDiff{orig: original, upd: update, inScope: map[protoreflect.FullName]bool{}}
	if original.file.Package() != update.file.Package() {
		d.add(pbPackageChanged)
	}
	d.types(original.file.Messages(), update.file.Messages(), original.file.Enums(), update.file.Enums())
	var out []string
	for _, df := range d.diffs {
		if protoCompatible[df.typ] {
			continue
		}
		desc := strings.ReplaceAll(describe(protoDescriptions[df.typ], readerName, writerName), "{path}", df.path)
		out = append(out, `{errorType:"`+df.typ+`", description:"`+desc+`"}`)
	}
	return out
}

// protoDiff is one comparison: the path being compared and the
// differences found.
type protoDiff struct {
	orig, upd *protoSchema
	path      []string
	diffs     []schemaDiff
	inScope   map[protoreflect.FullName]bool // original messages being compared, against cycles
}

func (d *protoDiff) add(typ string) {
	d.diffs = append(d.diffs, schemaDiff{typ, "#/" + strings.Join(d.path, "/")})
}

func (d *protoDiff) enter(name string) { d.path = append(d.path, name) }
func (d *protoDiff) leave()            { d.path = d.path[:len(d.path)-1] }

// compatible reports whether every difference found is one a reader
// copes with.
func (d *protoDiff) compatible() bool {
	return !slices.ContainsFunc(d.diffs, func(df schemaDiff) bool { return !protoCompatible[df.typ] })
}

// types compares the messages and enums declared at one level.
func (d *protoDiff) types(om, um protoreflect.MessageDescriptors, oe, ue protoreflect.EnumDescriptors) {
	byName := func(ms protoreflect.MessageDescriptors) map[string]protoreflect.MessageDescriptor {
		out := map[string]protoreflect.MessageDescriptor{}
		for i := range ms.Len() {
			out[string(ms.Get(i).Name())] = ms.Get(i)
		}
		return out
	}
	origs, upds := byName(om), byName(um)
	for _, name := range unionKeys(origs, upds) {
		o, u := origs[name], upds[name]
		d.enter(name)
		switch {
		case u == nil:
			if !o.IsMapEntry() {
				d.add(pbMessageRemoved)
			}
		case o == nil:
			if !u.IsMapEntry() {
				d.add(pbMessageAdded)
			}
		default:
			d.message(o, u)
			if o.Index() != u.Index() {
				d.add(pbMessageMoved)
			}
		}
		d.leave()
	}
	enumsByName := func(es protoreflect.EnumDescriptors) map[string]protoreflect.EnumDescriptor {
		out := map[string]protoreflect.EnumDescriptor{}
		for i := range es.Len() {
			out[string(es.Get(i).Name())] = es.Get(i)
		}
		return out
	}
	oEnums, uEnums := enumsByName(oe), enumsByName(ue)
	for _, name := range unionKeys(oEnums, uEnums) {
		o, u := oEnums[name], uEnums[name]
		d.enter(name)
		switch {
		case u == nil:
			d.add(pbEnumRemoved)
		case o == nil:
			d.add(pbEnumAdded)
		default:
			d.enum(o, u)
		}
		d.leave()
	}
}

func (d *protoDiff) enum(o, u protoreflect.EnumDescriptor) {
	byNumber := func(e protoreflect.EnumDescriptor) map[int]string {
		out := map[int]string{}
		for i := range e.Values().Len() {
			v := e.Values().Get(i)
			out[int(v.Number())] = string(v.Name())
		}
		return out
	}
	origs, upds := byNumber(o), byNumber(u)
	for _, n := range unionKeys(origs, upds) {
		on, oOK := origs[n]
		un, uOK := upds[n]
		d.enter(strconv.Itoa(n))
		switch {
		case !uOK:
			d.add(pbEnumConstRemoved)
		case !oOK:
			d.add(pbEnumConstAdded)
		case on != un:
			d.add(pbEnumConstChanged)
		}
		d.leave()
	}
}

// messageFields indexes a message's fields by number, and the real oneof
// (not proto3 optional's) each belongs to.
type messageFields struct {
	byNumber map[int]protoreflect.FieldDescriptor
	oneofOf  map[int]string
	oneofs   map[string]protoreflect.OneofDescriptor
}

func fieldsOf(m protoreflect.MessageDescriptor) messageFields {
	mf := messageFields{byNumber: map[int]protoreflect.FieldDescriptor{}, oneofOf: map[int]string{},
		oneofs: map[string]protoreflect.OneofDescriptor{}}
	for i := range m.Fields().Len() {
		f := m.Fields().Get(i)
		mf.byNumber[int(f.Number())] = f
		if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
			mf.oneofOf[int(f.Number())] = string(o.Name())
			mf.oneofs[string(o.Name())] = o
		}
	}
	return mf
}

// message compares two versions of a message: its oneofs, its fields by
// number, then its nested types.
func (d *protoDiff) message(o, u protoreflect.MessageDescriptor) {
	if !d.inScope[o.FullName()] {
		d.inScope[o.FullName()] = true
		d.fields(fieldsOf(o), fieldsOf(u), u)
		delete(d.inScope, o.FullName())
	}
	d.types(o.Messages(), u.Messages(), o.Enums(), u.Enums())
}

func (d *protoDiff) fields(of, uf messageFields, u protoreflect.MessageDescriptor) {
	// A oneof removed with none of its fields kept anywhere is deleted
	// whole, which a reader copes with.
	deleted := map[string]bool{}
	for name, oo := range of.oneofs {
		if _, ok := uf.oneofs[name]; ok {
			continue
		}
		kept := false
		for i := range oo.Fields().Len() {
			if _, ok := uf.byNumber[int(oo.Fields().Get(i).Number())]; ok {
				kept = true
			}
		}
		if !kept {
			deleted[name] = true
		}
	}
	// Fields that were independent and now share a oneof.
	for i := range u.Oneofs().Len() {
		oo := u.Oneofs().Get(i)
		if oo.IsSynthetic() {
			continue
		}
		d.enter(string(oo.Name()))
		groups, movedIn := map[string]bool{}, 0
		for j := range oo.Fields().Len() {
			n := int(oo.Fields().Get(j).Number())
			if name, ok := of.oneofOf[n]; ok {
				groups["oneof:"+name] = true
			} else if _, ok := of.byNumber[n]; ok {
				groups["field:"+strconv.Itoa(n)] = true
				movedIn++
			}
		}
		if len(groups) > 1 {
			if movedIn > 1 {
				d.add(pbMultipleFieldsMovedToOne)
			} else {
				d.add(pbFieldMovedToExistingOneof)
			}
		}
		d.leave()
	}
	for _, name := range unionKeys(of.oneofs, uf.oneofs) {
		d.enter(name)
		if _, ok := uf.oneofs[name]; !ok {
			d.add(pbOneofRemoved)
		} else if _, ok := of.oneofs[name]; !ok {
			d.add(pbOneofAdded)
		}
		d.leave()
	}
	atOneof := func(oneof string, n int, f func()) {
		if oneof != "" {
			d.enter(oneof)
			defer d.leave()
		}
		d.enter(strconv.Itoa(n))
		defer d.leave()
		f()
	}
	for _, n := range unionKeys(of.byNumber, uf.byNumber) {
		o, u := of.byNumber[n], uf.byNumber[n]
		oOneof, uOneof := of.oneofOf[n], uf.oneofOf[n]
		switch {
		case u == nil && oOneof != "":
			if !deleted[oOneof] {
				atOneof(oOneof, n, func() { d.add(pbOneofFieldRemoved) })
			}
		case u == nil:
			atOneof("", n, func() { d.add(pick(o.Cardinality() == protoreflect.Required, pbRequiredFieldRemoved, pbFieldRemoved)) })
		case o == nil && uOneof != "":
			atOneof(uOneof, n, func() { d.add(pbOneofFieldAdded) })
		case o == nil:
			atOneof("", n, func() { d.add(pick(u.Cardinality() == protoreflect.Required, pbRequiredFieldAdded, pbFieldAdded)) })
		default:
			if oOneof != "" && uOneof == "" {
				atOneof("", n, func() { d.add(pbOneofFieldMovedToTopLevel) })
			}
			atOneof(uOneof, n, func() { d.field(o, u) })
		}
	}
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// field compares two versions of a field.
func (d *protoDiff) field(o, u protoreflect.FieldDescriptor) {
	if o.Name() != u.Name() {
		d.add(pbFieldNameChanged)
	}
	d.labelsAndTypes(protoLabel(o), protoLabel(u), o, u)
}

// protoLabel is a field's label as Confluent's parser (Square's Wire)
// reads it from the source: none for a proto3 field without one, a map,
// or a oneof's member.
func protoLabel(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return ""
	case f.Cardinality() == protoreflect.Repeated:
		return "REPEATED"
	case f.Cardinality() == protoreflect.Required:
		return "REQUIRED"
	case f.ContainingOneof() != nil && !f.ContainingOneof().IsSynthetic():
		return ""
	case f.ParentFile().Syntax() == protoreflect.Proto2, f.HasOptionalKeyword():
		return "OPTIONAL"
	}
	return ""
}

// Field kinds and scalar kinds, as Confluent groups them: scalars that
// read each other's encoding share a kind.
const (
	kindScalar = iota
	kindMap
	kindMessage
)

func fieldKind(f protoreflect.FieldDescriptor) int {
	switch {
	case f.IsMap():
		return kindMap
	case f.Kind() == protoreflect.MessageKind, f.Kind() == protoreflect.GroupKind:
		return kindMessage
	}
	return kindScalar
}

func scalarKind(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind,
		protoreflect.BoolKind, protoreflect.EnumKind:
		return "GENERAL_NUMBER"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "SIGNED_NUMBER"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "STRING_OR_BYTES"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "FIXED32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "FIXED64"
	case protoreflect.FloatKind:
		return "FLOAT"
	case protoreflect.DoubleKind:
		return "DOUBLE"
	}
	return k.String()
}

func (d *protoDiff) labelsAndTypes(ol, ul string, o, u protoreflect.FieldDescriptor) {
	ok, uk := fieldKind(o), fieldKind(u)
	switch {
	case ok != uk:
		d.add(pbFieldKindChanged)
	case ok == kindScalar:
		os, us := scalarKind(o.Kind()), scalarKind(u.Kind())
		switch {
		case os != us:
			d.add(pbFieldScalarKindChanged)
		case ol != "" && ul != "" && ol != ul && os == "STRING_OR_BYTES":
			d.add(pbFieldStringLabelChanged)
		case ol != "" && ul != "" && ol != ul:
			d.add(pbFieldNumericLabelChanged)
		}
	case ok == kindMap:
		d.labelsAndTypes("", "", o.MapKey(), u.MapKey())
		d.labelsAndTypes("", "", o.MapValue(), u.MapValue())
	default:
		d.messageTypes(o.Message(), u.Message())
	}
}

// localName is a type's name within its package.
func localName(m protoreflect.Descriptor) string {
	pkg := string(m.ParentFile().Package())
	return strings.TrimPrefix(strings.TrimPrefix(string(m.FullName()), pkg), ".")
}

// messageTypes compares the message types of two versions of a field:
// by name, and by content when they come from different references (those
// of the schema's own file are compared as its types).
func (d *protoDiff) messageTypes(o, u protoreflect.MessageDescriptor) {
	on, un := localName(o), localName(u)
	if on != un {
		d.add(pbFieldNamedTypeChanged)
		return
	}
	oRef, oOwn := d.orig.refOf(o)
	uRef, uOwn := d.upd.refOf(u)
	if (oOwn && uOwn) || (oRef != nil && uRef != nil && oRef.Subject == uRef.Subject && oRef.Version == uRef.Version) {
		return
	}
	sub := &protoDiff{orig: d.orig, upd: d.upd, path: strings.Split(on, "."), inScope: d.inScope}
	sub.message(o, u)
	d.diffs = append(d.diffs, sub.diffs...)
	if !sub.compatible() {
		d.add(pbFieldNamedTypeChanged)
	}
}

// refOf returns the reference a type comes from (nil for a well-known
// import), and whether it is the schema's own.
func (p *protoSchema) refOf(m protoreflect.Descriptor) (*Reference, bool) {
	path := m.ParentFile().Path()
	if path == p.file.Path() {
		return nil, true
	}
	if r, ok := p.refs[path]; ok {
		return &r, false
	}
	return nil, false
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys[K string | int, V any](a, b map[K]V) []K {
	keys := make([]K, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
