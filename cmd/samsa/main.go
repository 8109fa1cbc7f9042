// Command samsa runs a samsa broker: a Kafka-wire-compatible broker that
// keeps its cluster metadata in etcd.
//
//	samsa serve [--config server.properties] [--override key=value]... [--etcd-endpoints URLs] [--log-level info]
//	samsa serve --help-config
//	samsa healthcheck [--bootstrap-server host:port] [--timeout 5s]
//	samsa topic|produce|consume|group|cluster|registry ... (the CLI: internal/cli)
//	samsa version
//
// serve reads Kafka's broker properties from the file, then from the
// environment the way the apache/kafka image does (KAFKA_NODE_ID=1 sets
// node.id), then from the overrides; it runs until SIGTERM or SIGINT and
// then shuts down cleanly. A property of Apache Kafka's that samsa does not
// implement is accepted, and named in one warning line at start;
// --help-config lists the properties samsa acts on and those it accepts
// and ignores. Start-up errors print "samsa: <error>" and exit
// with status 2. healthcheck exits 0 when a broker answers ApiVersions (a
// container's health check; the image has no shell).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/samsa-io/samsa/broker"
	"github.com/samsa-io/samsa/internal/cli"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/logstore"
)

// version is set at link time: -ldflags "-X main.version=v0.1.0".
var version = "dev"

func main() {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr, sig))
}

const usage = `usage:
  samsa serve [--config server.properties] [--override key=value]... [--etcd-endpoints URLs] [--log-level LEVEL]
  samsa serve --help-config
  samsa healthcheck [--bootstrap-server host:port] [--timeout 5s]
  samsa version
` + cli.Usage + `

serve takes Kafka's broker property names and defaults. Properties come from
the file, then from KAFKA_* environment variables (KAFKA_ADVERTISED_LISTENERS
sets advertised.listeners, as in the apache/kafka image), then from --override.
Kafka's properties that samsa does not implement are accepted and named in a
warning at start; --help-config lists them, and the ones samsa acts on.
`

// run is main without the process: it returns the exit status.
func run(args, environ []string, stdout, stderr io.Writer, sig <-chan os.Signal) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		opts, err := parseServe(args[1:], environ, stdout, stderr)
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if err != nil {
			printErr(stderr, err)
			return 2
		}
		return serve(opts, stderr, sig)
	case "healthcheck":
		return healthcheck(args[1:], stdout, stderr)
	case "topic", "produce", "consume", "group", "cluster", "link", "registry":
		// A client: the first signal ends it (consume follows until then).
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-sig:
				cancel()
			case <-ctx.Done():
			}
		}()
		return cli.Run(ctx, args, cli.IO{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr})
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "samsa %s (%s %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "samsa: unknown command %q\n%s", args[0], usage)
	return 2
}

// printErr prints an error as "samsa: <error>", one line per joined error.
func printErr(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "samsa: %s\n", line)
	}
}

type serveOptions struct {
	props    *config.Props
	logLevel slog.Level
}

// overrideFlag collects repeated --override key=value flags.
type overrideFlag []string

func (o *overrideFlag) String() string { return strings.Join(*o, " ") }
func (o *overrideFlag) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("expected key=value, got %q", v)
	}
	*o = append(*o, v)
	return nil
}

// parseServe parses the arguments of "samsa serve" and loads the
// properties. A single positional argument is taken as the properties
// file, as kafka-server-start.sh takes it.
func parseServe(args, environ []string, stdout, stderr io.Writer) (serveOptions, error) {
	fs := flag.NewFlagSet("samsa serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		file      = fs.String("config", "", "Kafka `server.properties` file to read")
		endpoints = fs.String("etcd-endpoints", "", "comma-separated etcd client `URLs` (sets etcd.endpoints; empty runs an embedded etcd)")
		level     = fs.String("log-level", "info", "log `level`: debug, info, warn or error")
		help      = fs.Bool("help-config", false, "list the broker properties samsa acts on, and Kafka's that it accepts and ignores, then exit")
		overrides overrideFlag
	)
	fs.Var(&overrides, "override", "set a property, `key=value` (repeatable; highest precedence)")
	if err := fs.Parse(args); err != nil {
		return serveOptions{}, err
	}
	if *help {
		if err := config.WriteHelp(stdout); err != nil {
			return serveOptions{}, err
		}
		return serveOptions{}, flag.ErrHelp
	}
	rest := fs.Args()
	if len(rest) == 1 && *file == "" {
		*file = rest[0]
		rest = nil
	}
	if len(rest) > 0 {
		return serveOptions{}, fmt.Errorf("unexpected arguments %q", rest)
	}
	var opts serveOptions
	if err := opts.logLevel.UnmarshalText([]byte(*level)); err != nil {
		return serveOptions{}, fmt.Errorf("--log-level %q: expected debug, info, warn or error", *level)
	}
	if *endpoints != "" {
		overrides = append(overrides, "etcd.endpoints="+*endpoints)
	}
	props, err := config.Load(*file, overrides, environ)
	if err != nil {
		return serveOptions{}, err
	}
	opts.props = props
	return opts, nil
}

// serve runs a broker until a signal arrives, then closes it.
func serve(opts serveOptions, stderr io.Writer, sig <-chan os.Signal) int {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: opts.logLevel}))
	cfg := broker.Config{Props: opts.props, Logger: log}
	if file := opts.props.Settings().FaultFile; file != "" {
		ffs := logstore.NewFaultFS(nil)
		cfg.LogFS = ffs
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go watchFaultFile(ctx, file, ffs, log)
	}
	b, err := broker.New(cfg)
	if err != nil {
		printErr(stderr, err)
		return 2
	}
	if err := b.Start(); err != nil {
		printErr(stderr, err)
		return 2
	}
	log.Info("samsa serving", "version", version, "node.id", opts.props.NodeID(), "addr", b.Addr(), "log.dirs", strings.Join(opts.props.LogDirs(), ","))

	s := <-sig
	log.Info("shutting down", "signal", s.String())
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		if err != nil {
			log.Error("shutdown", "err", err)
			return 1
		}
		log.Info("stopped")
		return 0
	case s := <-sig:
		log.Error("second signal during shutdown; exiting without waiting", "signal", s.String())
		return 1
	}
}
