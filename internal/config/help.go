package config

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteHelp writes the table of `samsa serve --help-config`: the broker
// properties samsa acts on, then every property it accepts and ignores
// (its own definitions marked Ignored, and each property of Apache Kafka's
// that samsa does not define), each with its type, default and a line of
// documentation. Per-listener forms (listener.name.<listener>.<property>)
// of the ignored properties are accepted too.
func WriteHelp(w io.Writer) error {
	type row struct{ name, typ, def, doc string }
	var acting, ignored []row
	for _, d := range brokerDefs {
		r := row{d.Name, d.Type.String(), defaultString(d.Default, false), strings.TrimSuffix(d.Doc, ignoredNote)}
		if d.Ignored {
			ignored = append(ignored, r)
		} else {
			acting = append(acting, r)
		}
	}
	for _, k := range kafkaDefs {
		if _, ok := brokerIndex[k.Name]; ok {
			continue
		}
		doc := k.Doc
		if k.Valid != "" {
			doc = "Valid: " + k.Valid + ". " + doc
		}
		ignored = append(ignored, row{k.Name, k.Type.String(), defaultString(k.Default, k.Required), doc})
	}
	byName := func(rs []row) { sort.Slice(rs, func(i, j int) bool { return rs[i].name < rs[j].name }) }
	byName(acting)
	byName(ignored)

	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	section := func(title string, rs []row) {
		fmt.Fprintf(tw, "%s\n\n", title)
		fmt.Fprintf(tw, "NAME\tTYPE\tDEFAULT\tDESCRIPTION\n")
		for _, r := range rs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.name, r.typ, r.def, r.doc)
		}
		fmt.Fprintln(tw)
	}
	section(fmt.Sprintf("Broker properties samsa acts on (%d):", len(acting)), acting)
	section(fmt.Sprintf("Accepted and ignored (%d; Apache Kafka %s's properties samsa does not implement, and samsa's own marked so; "+
		"a warning at start names each one set, and listener.name.<listener>.<property> forms are accepted too):", len(ignored), KafkaVersion), ignored)
	return tw.Flush()
}

func defaultString(d *string, required bool) string {
	switch {
	case required:
		return "(required)"
	case d == nil:
		return "null"
	case *d == "":
		return `""`
	}
	return *d
}
