package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestMatrix runs every client's scenarios against an in-process samsa
// (make test installs the clients first: make test-deps) and fails listing
// the failed cells.
func TestMatrix(t *testing.T) {
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	n := testutil.StartBroker(t, brokerProps)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	jobs := allJobs(root)
	var progress strings.Builder
	tab := runJobs(ctx, jobs, 3, newEnv(root, n.Addr(), t.TempDir(), false, jobs), &progress)
	pass, fail := tab.Counts()
	t.Logf("against samsa in %v: %d passed, %d failed\n%s\n%s", tab.Took.Round(time.Second), pass, fail, progress.String(), tab.Markdown())
	for _, f := range tab.Failed() {
		t.Error(f)
	}
}

func TestTableMarkdown(t *testing.T) {
	tab := &Table{
		Rows: []row{{"a 1.0", []string{"create", "errors"}}, {"b", []string{"pipeline"}}},
		Cells: map[string]map[string]Result{
			"a 1.0": {"create": {OK: true}, "errors": {Error: "boom\nline two"}},
			"b":     {"pipeline": {OK: true}},
		},
	}
	got := tab.Markdown()
	for _, want := range []string{
		"| client | create | produce | group | admin | errors | pipeline |",
		"| a 1.0 | pass | – | – | – | FAIL [1] | – |",
		"| b | – | – | – | – | – | pass |",
		"1. a 1.0 / errors: boom line two",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("markdown lacks %q:\n%s", want, got)
		}
	}
	if p, f := tab.Counts(); p != 2 || f != 1 {
		t.Errorf("counts %d passed %d failed, want 2 and 1", p, f)
	}
}

func TestRewriteReadme(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	begin, end := markers(false)
	orig := "# x\n\n## Compatibility\n\n" + begin + "\nold table\n" + end + "\n\n## Next\n"
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewriteReadme(path, false, "new table\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := "# x\n\n## Compatibility\n\n" + begin + "\nnew table\n" + end + "\n\n## Next\n"
	if string(b) != want {
		t.Errorf("rewritten README:\n%s\nwant:\n%s", b, want)
	}
	if err := rewriteReadme(path, true, "x"); err == nil {
		t.Error("rewriting a section the README lacks succeeded")
	}
}

func TestPrefixFor(t *testing.T) {
	for in, want := range map[string]string{
		"confluent-kafka 2.16.1 (librdkafka)": "confluent-kafka-2-16-1-librdkafka",
		"Java kafka-clients 4.4.0":            "java-kafka-clients-4-4-0",
	} {
		if got := prefixFor(in); got != want {
			t.Errorf("prefixFor(%q) = %q, want %q", in, got, want)
		}
	}
}
