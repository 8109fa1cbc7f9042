package registry

import (
	"testing"
)

// An order referencing two records: Address twice, and Point, which
// Address references in turn (in another namespace), once more itself.
const (
	resolvedPoint   = `{"type":"record","name":"Point","namespace":"com.acme.geo","fields":[{"name":"lat","type":"double"},{"name":"lon","type":"double"}]}`
	resolvedAddress = `{"namespace":"com.acme","name":"Address","type":"record","fields":[{"name":"street","type":{"type":"string"}},{"name":"geo","type":"com.acme.geo.Point"}]}`
	resolvedOrder   = `{"type":"record","name":"Order","namespace":"com.acme","fields":[{"name":"ship","type":"Address"},{"name":"bill","type":["null","com.acme.Address"],"default":null},{"name":"pickup","type":"com.acme.geo.Point"}]}`
	// resolvedWant is the order as Java Avro's Schema.toString() prints it
	// parsed with its references: each record defined at its first use,
	// a namespace only where it differs from the enclosing one, later
	// uses by name relative to the enclosing namespace.
	resolvedWant = `{"type":"record","name":"Order","namespace":"com.acme","fields":[` +
		`{"name":"ship","type":{"type":"record","name":"Address","fields":[{"name":"street","type":"string"},` +
		`{"name":"geo","type":{"type":"record","name":"Point","namespace":"com.acme.geo","fields":[{"name":"lat","type":"double"},{"name":"lon","type":"double"}]}}]}},` +
		`{"name":"bill","type":["null","Address"],"default":null},` +
		`{"name":"pickup","type":"com.acme.geo.Point"}]}`
)

func TestResolvedAvro(t *testing.T) {
	deps := []resolvedRef{
		{Reference: Reference{Name: "com.acme.geo.Point"}, typ: typeAvro, schema: resolvedPoint},
		{Reference: Reference{Name: "com.acme.Address"}, typ: typeAvro, schema: resolvedAddress},
		{Reference: Reference{Name: "Color"}, typ: typeAvro, schema: `{"type":"enum","name":"Color","symbols":["RED"]}`},
	}
	for _, c := range []struct{ name, schema, want string }{
		{"two records", resolvedOrder, resolvedWant},
		// A type of the null namespace used inside com.acme: Avro finds it
		// by its bare name and writes "namespace":"" where it defines it.
		{"null namespace", `{"type":"record","name":"Car","namespace":"com.acme","fields":[{"name":"c","type":"Color"},{"name":"d","type":{"type":"array","items":"Color"}}]}`,
			`{"type":"record","name":"Car","namespace":"com.acme","fields":[{"name":"c","type":{"type":"enum","name":"Color","namespace":"","symbols":["RED"]}},{"name":"d","type":{"type":"array","items":"Color"}}]}`},
		// No references: Avro's own rendering of the schema.
		{"plain", `{"name":"U","type":"record","fields":[{"type":"int","name":"a"}]}`, `{"type":"record","name":"U","fields":[{"name":"a","type":"int"}]}`},
	} {
		got, err := resolvedAvro(c.schema, deps)
		if err != nil || got != c.want {
			t.Errorf("%s: %v\n got %s\nwant %s", c.name, err, got, c.want)
		}
	}
}

func TestResolvedFormat(t *testing.T) {
	tr := newTestRegistry(t)
	refs := `{"name":"com.acme.Address","subject":"address","version":1},{"name":"com.acme.geo.Point","subject":"point","version":1}`
	order := typed(typeAvro, resolvedOrder, refs)
	tr.script(t, []step{
		{"POST", "/subjects/point/versions", body(resolvedPoint), 200, registered(1)},
		{"POST", "/subjects/address/versions", typed(typeAvro, resolvedAddress, `{"name":"com.acme.geo.Point","subject":"point","version":1}`), 200, registered(2)},
		{"POST", "/subjects/order/versions", order, 200, registered(3)},
		{"GET", "/schemas/ids/3?format=resolved", "", 200, `~"schema":` + string(marshal(resolvedWant)) + `}`},
		{"GET", "/schemas/ids/3/schema?format=RESOLVED", "", 200, resolvedWant},
		{"GET", "/subjects/order/versions/1?format=resolved", "", 200, `~"schema":` + string(marshal(resolvedWant)) + `}`},
		{"GET", "/schemas/ids/3?format=default", "", 200, `~"schema":` + string(marshal(resolvedOrder)) + `}`},
		// Confluent's /versions/{v}/schema takes no format.
		{"GET", "/subjects/order/versions/1/schema?format=resolved", "", 200, resolvedOrder},
	})
}
