// Command pprofsamsa is `samsa serve` for profiling, used by `go run ./bench
// -profile DIR`: the same broker (broker.New with the properties given as
// --override key=value) in a process that records a CPU profile from start
// to SIGTERM and then writes, into -out, cpu.pprof, allocs.pprof (every
// allocation since start), heap.pprof and mutex.pprof.
//
//	pprofsamsa -out DIR [--override key=value]...
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/samsa-io/samsa/broker"
	"github.com/samsa-io/samsa/internal/config"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var overrides multi
	out := flag.String("out", "", "directory for the profiles")
	flag.Var(&overrides, "override", "broker property key=value (repeatable)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: pprofsamsa -out DIR [--override key=value]...")
		os.Exit(2)
	}
	if err := run(*out, overrides); err != nil {
		fmt.Fprintln(os.Stderr, "pprofsamsa:", err)
		os.Exit(1)
	}
}

func run(out string, overrides []string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	runtime.SetMutexProfileFraction(10)
	cpu, err := os.Create(filepath.Join(out, "cpu.pprof"))
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		return err
	}
	props, err := config.Load("", overrides, nil)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := broker.New(broker.Config{Props: props, Logger: log})
	if err != nil {
		return err
	}
	if err := b.Start(); err != nil {
		return err
	}
	<-sig
	pprof.StopCPUProfile()
	if err := cpu.Close(); err != nil {
		return err
	}
	for _, p := range []string{"allocs", "heap", "mutex"} {
		f, err := os.Create(filepath.Join(out, p+".pprof"))
		if err != nil {
			return err
		}
		if err := pprof.Lookup(p).WriteTo(f, 0); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return b.Close()
}
