package compat

import (
	"context"
	"testing"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// runKafkaTool runs one of Apache Kafka 4.4's command-line tools (its main
// class, from the jars make java-deps resolves) in dir ("" for the test's
// working directory), and fails the test unless it exits 0; it returns
// what the tool printed.
func runKafkaTool(t testing.TB, ctx context.Context, dir, class string, args ...string) string {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	libs, err := kafkaref.Libs(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	cmd := kafkaref.Java(ctx, libs, []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}, class, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", class, args, err, kafkaref.Tail(out, 20))
	}
	return string(out)
}
