// Package cli is samsa's command-line client: topic, produce, consume,
// group, cluster, link and registry (a Schema Registry's REST API,
// through franz-go's sr), in the spirit of rpk and kcat. It is a Kafka client
// (franz-go's kgo and kadm, through internal/admin) and talks to any
// Kafka-compatible cluster; it imports nothing of the broker. Every command
// takes --bootstrap-server host:port[,...] (default 127.0.0.1:9092) and
// prints a table, or JSON with --format json.
package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/admin"
)

// Commands are the command names Run serves.
var Commands = []string{"topic", "produce", "consume", "group", "cluster", "link", "registry"}

// Usage describes the commands.
const Usage = `  samsa topic list|create|describe|alter|delete ...
  samsa produce TOPIC [--key-separator SEP] [--header k=v]... [--file PATH] [--partition N]
  samsa consume TOPIC [--offset start|end|N|@millis] [--group G] [--num N] [--format FMT]
  samsa group list|describe|seek|delete ...
  samsa cluster info|health|balance [--dry-run] [--topics t1,t2]
  samsa link create NAME --source-bootstrap-servers H:P[,...] --topics REGEX[,...] [--groups REGEX[,...]]
        [--sync-configs] [--sync-acls --acl-filters JSON|@FILE] [--source-config k=v]...
  samsa link list|describe NAME|pause NAME|resume NAME|delete NAME
  samsa link promote|failover NAME [--topics REGEX[,...]]
  samsa registry subjects|versions|get|register|check|compatibility|delete ... [--registry-url URL]
  (each takes --bootstrap-server host:port[,...], default 127.0.0.1:9092, --format table|json,
   and for a secured listener --sasl-mechanism M --sasl-username U --sasl-password P, --tls, --tls-ca FILE)`

// IO is where a command reads and writes.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Run runs one command (args[0] is its name) until it is done or ctx
// ends, and returns its exit status: 0, 1 when it failed, 2 for a usage
// error.
func Run(ctx context.Context, args []string, std IO) int {
	if len(args) == 0 {
		fmt.Fprintln(std.Stderr, Usage)
		return 2
	}
	var err error
	switch args[0] {
	case "topic":
		err = runTopic(ctx, args[1:], std)
	case "produce":
		err = runProduce(ctx, args[1:], std)
	case "consume":
		err = runConsume(ctx, args[1:], std)
	case "group":
		err = runGroup(ctx, args[1:], std)
	case "cluster":
		err = runCluster(ctx, args[1:], std)
	case "link":
		err = runLink(ctx, args[1:], std)
	case "registry":
		err = runRegistry(ctx, args[1:], std)
	default:
		err = usageErr("unknown command %q", args[0])
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(std.Stderr, "samsa: %v\n", err)
		return 2
	}
	fmt.Fprintf(std.Stderr, "samsa: %v\n", err)
	return 1
}

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usageErr(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// common are the flags of every command.
type common struct {
	bootstrap string
	format    string
	timeout   time.Duration

	// How to reach a SASL or TLS listener.
	saslMechanism, saslUser, saslPassword string
	tls                                   bool
	tlsCA, tlsServerName                  string
}

func newFlags(name string, std IO, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet("samsa "+name, flag.ContinueOnError)
	fs.SetOutput(std.Stderr)
	fs.StringVar(&c.bootstrap, "bootstrap-server", "127.0.0.1:9092", "the cluster's `host:port[,...]`")
	fs.StringVar(&c.format, "format", "table", "output `format`: table or json")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "how long a request may take")
	fs.StringVar(&c.saslMechanism, "sasl-mechanism", "", "authenticate with SASL `mechanism` PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	fs.StringVar(&c.saslUser, "sasl-username", "", "the SASL `user`")
	fs.StringVar(&c.saslPassword, "sasl-password", "", "the SASL `password` (default: $SAMSA_SASL_PASSWORD)")
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS (implied by --tls-ca)")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM `file` of the CA certificates to trust (default: the system's)")
	fs.StringVar(&c.tlsServerName, "tls-server-name", "", "the `name` the broker's certificate must carry (default: the host dialed)")
	return fs
}

// parse parses flags wherever they stand among the positional arguments
// (samsa topic create t --partitions 3) and returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		rest := fs.Args()
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func (c *common) seeds() []string {
	var out []string
	for _, s := range strings.Split(c.bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (c *common) check() error {
	if c.format != "table" && c.format != "json" {
		return usageErr("--format %q: expected table or json", c.format)
	}
	return c.checkConn()
}

// checkConn checks the flags of the connection.
func (c *common) checkConn() error {
	if len(c.seeds()) == 0 {
		return usageErr("--bootstrap-server is empty")
	}
	switch c.saslMechanism {
	case "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return usageErr("--sasl-mechanism %q: expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.saslMechanism)
	}
	if c.saslMechanism != "" && c.saslUser == "" {
		return usageErr("--sasl-mechanism needs --sasl-username")
	}
	return nil
}

// security is the kgo options of --sasl-* and --tls*.
func (c *common) security() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	cfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	password := c.password()
	switch c.saslMechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: c.saslUser, Pass: password}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.saslUser, Pass: password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: c.saslUser, Pass: password}.AsSha512Mechanism()))
	}
	return opts, nil
}

// tlsConfig is the TLS of --tls and --tls-ca*, or nil without.
func (c *common) tlsConfig() (*tls.Config, error) {
	if !c.tls && c.tlsCA == "" {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: c.tlsServerName, MinVersion: tls.VersionTLS12}
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate", c.tlsCA)
		}
	}
	return cfg, nil
}

// password is --sasl-password, else $SAMSA_SASL_PASSWORD.
func (c *common) password() string {
	if c.saslPassword != "" {
		return c.saslPassword
	}
	return os.Getenv("SAMSA_SASL_PASSWORD")
}

// client connects to the cluster.
func (c *common) client(opts ...kgo.Opt) (*admin.Client, error) {
	sec, err := c.security()
	if err != nil {
		return nil, err
	}
	opts = append(append([]kgo.Opt{kgo.ClientID("samsa-cli"), kgo.RequestTimeoutOverhead(c.timeout)}, sec...), opts...)
	return admin.New(c.seeds(), opts...)
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table prints rows under a header, columns aligned.
// list prints items as JSON, or as a table with header and one row per
// item.
func list[T any](w io.Writer, format string, items []T, header []string, row func(T) []string) error {
	if format == "json" {
		return writeJSON(w, items)
	}
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		rows = append(rows, row(it))
	}
	return table(w, header, rows)
}

func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// ints prints a list of ids as 1,2,3.
func ints(s []int32) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

// keyValues collects repeated key=value flags.
type keyValues []string

func (kv *keyValues) String() string { return strings.Join(*kv, ",") }
func (kv *keyValues) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("expected key=value, got %q", v)
	}
	*kv = append(*kv, v)
	return nil
}

func (kv keyValues) pairs() [][2]string {
	var out [][2]string
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		out = append(out, [2]string{k, v})
	}
	return out
}

// strs collects a repeated flag.
type strs []string

func (s *strs) String() string     { return strings.Join(*s, ",") }
func (s *strs) Set(v string) error { *s = append(*s, v); return nil }

// sub splits "group describe g" into the subcommand and the rest.
func sub(args []string, cmd string, names ...string) (string, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", nil, usageErr("samsa %s: expected one of %s", cmd, strings.Join(names, ", "))
	}
	for _, n := range names {
		if args[0] == n {
			return n, args[1:], nil
		}
	}
	return "", nil, usageErr("samsa %s: unknown subcommand %q (expected one of %s)", cmd, args[0], strings.Join(names, ", "))
}

// describeEach describes each named thing and prints them: JSON (one
// object for one name, else a list), or one text block each.
func describeEach[T any](std IO, format string, names []string, get func(string) (T, error), print func(IO, T) error) error {
	var all []T
	for _, n := range names {
		v, err := get(n)
		if err != nil {
			return err
		}
		all = append(all, v)
	}
	if format == "json" {
		if len(all) == 1 {
			return writeJSON(std.Stdout, all[0])
		}
		return writeJSON(std.Stdout, all)
	}
	for i, v := range all {
		if i > 0 {
			fmt.Fprintln(std.Stdout)
		}
		if err := print(std, v); err != nil {
			return err
		}
	}
	return nil
}

// connect is client with ctx bounded by --timeout; done closes both.
func (c *common) connect(ctx context.Context) (cl *admin.Client, cctx context.Context, done func(), err error) {
	if cl, err = c.client(); err != nil {
		return nil, nil, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	return cl, cctx, func() { cancel(); cl.Close() }, nil
}
