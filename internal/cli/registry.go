package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"
)

// samsa registry: a Confluent-compatible Schema Registry (samsa's, or
// Confluent's) through its REST API.
//
//	samsa registry subjects [--deleted]
//	samsa registry versions SUBJECT
//	samsa registry get SUBJECT [VERSION|latest] | get --id ID
//	samsa registry register SUBJECT --file PATH [--type AVRO|PROTOBUF|JSON] [--normalize]
//	samsa registry check SUBJECT --file PATH [--type T] [--version N|latest]
//	samsa registry compatibility get|set [LEVEL] [--subject S]
//	samsa registry delete SUBJECT [VERSION] [--permanent]
//
// --registry-url names the registry (default http://127.0.0.1:8081);
// --sasl-username and --sasl-password are its basic credentials (samsa's
// registry checks them against the cluster's SASL users); --tls-ca
// trusts an HTTPS registry's CA. check exits 1 when the schema is not
// compatible.

func runRegistry(ctx context.Context, args []string, std IO) error {
	name, args, err := sub(args, "registry", "subjects", "versions", "get", "register", "check", "compatibility", "delete")
	if err != nil {
		return err
	}
	var c common
	fs := newFlags("registry "+name, std, &c)
	url := fs.String("registry-url", "http://127.0.0.1:8081", "the schema registry's `URL`")
	deleted := fs.Bool("deleted", false, "subjects: list soft-deleted subjects too")
	id := fs.Int("id", 0, "get: the schema of this `id`")
	file := fs.String("file", "", "register, check: the schema's `file` (- for stdin)")
	typ := fs.String("type", "", "register, check: the schema `type`: AVRO (default), PROTOBUF or JSON")
	normalize := fs.Bool("normalize", false, "register: normalize the schema")
	version := fs.String("version", "latest", "check: the `version` to check against (latest, all, or a number)")
	subject := fs.String("subject", "", "compatibility: the `subject` (default: the global level)")
	permanent := fs.Bool("permanent", false, "delete: delete permanently (after a soft delete)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if c.format != "table" && c.format != "json" {
		return usageErr("--format %q: expected table or json", c.format)
	}
	cl, err := c.registryClient(*url)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	rc := registryCmd{cl: cl, std: std, format: c.format}
	switch name {
	case "subjects":
		if *deleted {
			ctx = sr.WithParams(ctx, sr.ShowDeleted)
		}
		return rc.subjects(ctx)
	case "versions":
		if len(pos) != 1 {
			return usageErr("samsa registry versions: expected SUBJECT")
		}
		return rc.versions(ctx, pos[0])
	case "get":
		return rc.get(ctx, pos, *id)
	case "register", "check":
		if len(pos) != 1 || *file == "" {
			return usageErr("samsa registry %s: expected SUBJECT and --file", name)
		}
		s, err := readSchema(*file, *typ, std)
		if err != nil {
			return err
		}
		if name == "check" {
			return rc.check(ctx, pos[0], *version, s)
		}
		if *normalize {
			ctx = sr.WithParams(ctx, sr.Normalize)
		}
		return rc.register(ctx, pos[0], s)
	case "compatibility":
		return rc.compatibility(ctx, pos, *subject)
	}
	return rc.delete(ctx, pos, *permanent)
}

// registryClient is the franz-go registry client of the flags.
func (c *common) registryClient(url string) (*sr.Client, error) {
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	httpcl := &http.Client{Timeout: c.timeout}
	if tlsCfg != nil {
		httpcl.Transport = &http.Transport{TLSClientConfig: tlsCfg}
	}
	opts := []sr.ClientOpt{sr.URLs(url), sr.HTTPClient(httpcl), sr.UserAgent("samsa-cli")}
	if c.saslUser != "" {
		opts = append(opts, sr.BasicAuth(c.saslUser, c.password()))
	}
	return sr.NewClient(opts...)
}

// readSchema reads a schema from a file, or stdin for "-".
func readSchema(path, typ string, std IO) (sr.Schema, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(std.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return sr.Schema{}, err
	}
	s := sr.Schema{Schema: string(b)}
	switch strings.ToUpper(typ) {
	case "", "AVRO":
	case "PROTOBUF":
		s.Type = sr.TypeProtobuf
	case "JSON":
		s.Type = sr.TypeJSON
	default:
		return s, usageErr("--type %q: expected AVRO, PROTOBUF or JSON", typ)
	}
	return s, nil
}

// registryCmd runs one registry subcommand.
type registryCmd struct {
	cl     *sr.Client
	std    IO
	format string
}

func (rc registryCmd) subjects(ctx context.Context) error {
	subjects, err := rc.cl.Subjects(ctx)
	if err != nil {
		return err
	}
	return list(rc.std.Stdout, rc.format, subjects, []string{"SUBJECT"}, func(s string) []string { return []string{s} })
}

func (rc registryCmd) versions(ctx context.Context, subject string) error {
	schemas, err := rc.cl.Schemas(ctx, subject)
	if err != nil {
		return err
	}
	return list(rc.std.Stdout, rc.format, schemas, []string{"VERSION", "ID", "TYPE"}, func(s sr.SubjectSchema) []string {
		return []string{strconv.Itoa(s.Version), strconv.Itoa(s.ID), s.Type.String()}
	})
}

// parseVersion reads latest or a version number.
func parseVersion(v string) (int, error) {
	if v == "latest" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, usageErr("version %q: expected latest or a number from 1", v)
	}
	return n, nil
}

func (rc registryCmd) get(ctx context.Context, pos []string, id int) error {
	var s sr.SubjectSchema
	switch {
	case id > 0 && len(pos) == 0:
		schema, err := rc.cl.SchemaByID(ctx, id)
		if err != nil {
			return err
		}
		s = sr.SubjectSchema{ID: id, Schema: schema}
	case id == 0 && (len(pos) == 1 || len(pos) == 2):
		v := "latest"
		if len(pos) == 2 {
			v = pos[1]
		}
		n, err := parseVersion(v)
		if err != nil {
			return err
		}
		if s, err = rc.cl.SchemaByVersion(ctx, pos[0], n); err != nil {
			return err
		}
	default:
		return usageErr("samsa registry get: expected SUBJECT [VERSION], or --id ID")
	}
	if rc.format == "json" {
		return writeJSON(rc.std.Stdout, s)
	}
	fmt.Fprintf(rc.std.Stdout, "SUBJECT  %s\nVERSION  %d\nID       %d\nTYPE     %s\n\n%s\n", dash(s.Subject), s.Version, s.ID, s.Type, s.Schema.Schema)
	return nil
}

func (rc registryCmd) register(ctx context.Context, subject string, s sr.Schema) error {
	got, err := rc.cl.CreateSchema(ctx, subject, s)
	if err != nil {
		return err
	}
	if rc.format == "json" {
		return writeJSON(rc.std.Stdout, map[string]int{"id": got.ID, "version": got.Version})
	}
	return table(rc.std.Stdout, []string{"SUBJECT", "VERSION", "ID"}, [][]string{{subject, strconv.Itoa(got.Version), strconv.Itoa(got.ID)}})
}

// errIncompatible makes check exit with status 1.
var errIncompatible = errors.New("schema not compatible")

func (rc registryCmd) check(ctx context.Context, subject, version string, s sr.Schema) error {
	n := -2 // every version
	if version != "all" {
		var err error
		if n, err = parseVersion(version); err != nil {
			return err
		}
	}
	res, err := rc.cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), subject, n, s)
	if err != nil {
		return err
	}
	if rc.format == "json" {
		err = writeJSON(rc.std.Stdout, res)
	} else {
		fmt.Fprintf(rc.std.Stdout, "COMPATIBLE  %t\n", res.Is)
		for _, m := range res.Messages {
			fmt.Fprintln(rc.std.Stdout, m)
		}
	}
	if err == nil && !res.Is {
		return errIncompatible
	}
	return err
}

func (rc registryCmd) compatibility(ctx context.Context, pos []string, subject string) error {
	var subjects []string
	if subject != "" {
		subjects = []string{subject}
	}
	var res []sr.CompatibilityResult
	switch {
	case len(pos) == 1 && pos[0] == "get":
		res = rc.cl.Compatibility(ctx, subjects...)
	case len(pos) == 2 && pos[0] == "set":
		var level sr.CompatibilityLevel
		if err := level.UnmarshalText([]byte(strings.ToUpper(pos[1]))); err != nil {
			return usageErr("compatibility level %q: %v", pos[1], err)
		}
		res = rc.cl.SetCompatibility(ctx, sr.SetCompatibility{Level: level}, subjects...)
	default:
		return usageErr("samsa registry compatibility: expected get, or set LEVEL")
	}
	if err := res[0].Err; err != nil {
		return err
	}
	if rc.format == "json" {
		return writeJSON(rc.std.Stdout, res[0])
	}
	return table(rc.std.Stdout, []string{"SUBJECT", "LEVEL"}, [][]string{{dash(res[0].Subject), res[0].Level.String()}})
}

func (rc registryCmd) delete(ctx context.Context, pos []string, permanent bool) error {
	how := sr.SoftDelete
	if permanent {
		how = sr.HardDelete
	}
	var deleted []int
	switch len(pos) {
	case 1:
		var err error
		if deleted, err = rc.cl.DeleteSubject(ctx, pos[0], how); err != nil {
			return err
		}
	case 2:
		n, err := parseVersion(pos[1])
		if err != nil {
			return err
		}
		if err := rc.cl.DeleteSchema(ctx, pos[0], n, how); err != nil {
			return err
		}
		deleted = []int{n}
	default:
		return usageErr("samsa registry delete: expected SUBJECT [VERSION]")
	}
	return list(rc.std.Stdout, rc.format, deleted, []string{"DELETED VERSION"}, func(v int) []string { return []string{strconv.Itoa(v)} })
}
