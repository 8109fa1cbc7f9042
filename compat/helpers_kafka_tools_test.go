package compat

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// runKafkaTool runs one of Apache Kafka 4.4's command-line tools (its main
// class, from the jars make java-deps resolves) in dir ("" for the test's
// working directory), and fails the test unless it exits 0; it returns
// what the tool printed.
func runKafkaTool(t testing.TB, ctx context.Context, dir, class string, args ...string) string {
	t.Helper()
	cmd := kafkaJava(ctx, kafkaLibs(t, ctx), class, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", class, args, err, kafkaref.Tail(out, 20))
	}
	return string(out)
}

// kafkaLibs is the directory of Apache Kafka 4.4's jars; the test fails
// if they cannot be resolved.
func kafkaLibs(t testing.TB, ctx context.Context) string {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	libs, err := kafkaref.Libs(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	return libs
}

// kafkaJava is the command that runs one of Kafka's tools or console
// clients by its main class, on a small heap that starts fast.
func kafkaJava(ctx context.Context, libs, class string, args ...string) *exec.Cmd {
	return kafkaref.Java(ctx, libs, []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}, class, args...)
}

// kafkaToolIn returns a runner of Apache Kafka 4.4's tools and console
// clients (by main class, with --bootstrap-server addr) in dir: it returns
// the combined output, and an error carrying the exit status and the
// output's tail.
func kafkaToolIn(t *testing.T, ctx context.Context, addr, dir string) func(stdin, class string, args ...string) (string, error) {
	t.Helper()
	libs := kafkaLibs(t, ctx)
	return func(stdin, class string, args ...string) (string, error) {
		cmd := kafkaJava(ctx, libs, class, append([]string{"--bootstrap-server", addr}, args...)...)
		cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("%s %v: %w\n%s", class, args, err, kafkaref.Tail(out, 20))
		}
		return string(out), nil
	}
}
