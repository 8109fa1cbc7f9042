package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestMatrix runs every client's scenarios against an in-process samsa
// cluster of matrixBrokers brokers whose inter-broker listener is
// SASL_PLAINTEXT (make test installs the clients first: make test-deps)
// and fails listing the failed cells.
func TestMatrix(t *testing.T) {
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	sec, err := newSecurity(filepath.Join(t.TempDir(), "security"))
	if err != nil {
		t.Fatal(err)
	}
	props := sec.withBrokerProps(brokerProps)
	props["listeners"] = "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
	props["samsa.schema.registry.listener"] = "127.0.0.1:0"
	c := testutil.StartCluster(t, matrixBrokers, props)
	n := c.Nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	addrs := n.Addrs()
	if err := sec.setup(ctx, addrs[0], byScenario(map[string]string{"SASL_SSL": addrs[1], "SSL": addrs[2], "SASL_PLAINTEXT": addrs[3]})); err != nil {
		t.Fatal(err)
	}
	jobs := allJobs(root)
	if re := os.Getenv("SAMSA_MATRIX_CLIENTS"); re != "" {
		jobs = selectJobs(jobs, regexp.MustCompile(re))
	}
	var progress strings.Builder
	// Two clients at a time, not make compat's three: under go test -race,
	// beside the other packages' tests on two cores, the clients' own
	// heartbeat threads starved (one kafka-python group run stalled for
	// 60 s with a member never assigned).
	tab := runJobs(ctx, jobs, 2, newEnv(root, n.Addr(), "http://"+c.Nodes[1].RegistryAddr(), t.TempDir(), false, sec, jobs), &progress)
	pass, fail := tab.Counts()
	t.Logf("against samsa in %v: %d passed, %d failed\n%s\n%s", tab.Took.Round(time.Second), pass, fail, progress.String(), tab.Markdown())
	for _, f := range tab.Failed() {
		t.Error(f)
	}
}

// The matrix names each Python client by the version pinned in
// compat/python/requirements.txt, extras and all.
func TestRequirementsVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requirements.txt")
	body := "# comment\nconfluent-kafka[avro,schemaregistry]==2.16.1\nkafka-python==3.0.12 ; python_version>'3'\nLz4 == 4.4.5\nunpinned>=1\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	got := requirements(path)
	want := map[string]string{"confluent-kafka": "2.16.1", "kafka-python": "3.0.12", "lz4": "4.4.5"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requirements: %v, want %v", got, want)
	}
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"confluent-kafka", "kafka-python"} {
		if requirements(filepath.Join(root, "compat", "python", "requirements.txt"))[name] == "" {
			t.Errorf("compat/python/requirements.txt pins no version of %s", name)
		}
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
		"| client | create | produce | group | group848 | admin | errors | pipeline | pipeline1071 | txn | sasl_ssl | mtls | sasl_plain |",
		"| a 1.0 | pass | – | – | – | – | FAIL [1] | – | – | – | – | – | – |",
		"| b | – | – | – | – | – | – | pass | – | – | – | – | – |",
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

func TestCLIRecords(t *testing.T) {
	out := "Partition:2\tOffset:0\t" + cliLine(7) + "\n" +
		"Processed a total of 1 messages\n"
	recs, err := cliRecords(out)
	if err != nil || len(recs) != 1 || recs[0] != [3]int{2, 0, 7} {
		t.Fatalf("cliRecords = %v, %v; want [[2 0 7]]", recs, err)
	}
	bad := "Partition:0\tOffset:3\ti:7,bin:00ff07\tkey-7\tdeadbeef\n"
	if _, err := cliRecords(bad); err == nil {
		t.Error("a record that differs from what was sent passed")
	}
}

func TestCLIGroupDescribe(t *testing.T) {
	out := `
GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID
g               t               0          30              30              0               -               -               -
g               t               1          0               4               4               -               -               -
g               other           2          5               5               0               -               -               -
`
	if lags := cliLags(out, "t"); len(lags) != 2 || lags[0] != 0 || lags[1] != 4 {
		t.Errorf("cliLags = %v, want map[0:0 1:4]", lags)
	}
	if offs := cliOffsets(out, "t"); len(offs) != 2 || offs[0] != 30 || offs[1] != 0 {
		t.Errorf("cliOffsets = %v, want map[0:30 1:0]", offs)
	}
}

func TestRecords(t *testing.T) {
	c := newReadCheck(2)
	if err := c.add(0, 0, recKey(5), recValue(5), recHeaders(5)); err != nil {
		t.Fatal(err)
	}
	if err := c.add(0, 1, recKey(3), recValue(3), recHeaders(3)); err == nil {
		t.Error("record 3 after 5 in one partition passed")
	}
	v := recValue(9)
	v[0] ^= 1
	if _, err := checkRecord("x", recKey(9), v, recHeaders(9)); err == nil {
		t.Error("a changed value passed")
	}
	if got := props(map[string]string{"b": `C:\x`, "a": "1"}); got != "a=1\nb=C:\\\\x\n" {
		t.Errorf("props = %q", got)
	}
}

// TestRunJobs runs jobs that finish at once, all in parallel, so that under
// -race a job reading the table while later jobs are launched is caught; and
// checks that a scenario a job returns nothing for fails, and a panic fails
// its job's cells.
func TestRunJobs(t *testing.T) {
	var jobs []job
	for i := range 8 {
		name := fmt.Sprintf("client %d", i)
		jobs = append(jobs, job{
			rows: []row{{name, []string{"create", "produce"}}},
			run: func(context.Context, *env) []Result {
				if i == 7 {
					panic("boom")
				}
				return []Result{{Client: name, Scenario: "create", OK: true}}
			},
		})
	}
	var progress strings.Builder
	tab := runJobs(context.Background(), jobs, len(jobs), func(int) *env { return &env{} }, &progress)
	if len(tab.Rows) != 8 {
		t.Fatalf("%d rows, want 8", len(tab.Rows))
	}
	if p, f := tab.Counts(); p != 7 || f != 9 {
		t.Errorf("counts %d passed %d failed, want 7 and 9:\n%s", p, f, tab.Markdown())
	}
	if r := tab.Cells["client 0"]["produce"]; r.OK || !strings.Contains(r.Error, "no result") {
		t.Errorf("a scenario with no result: %+v", r)
	}
	if r := tab.Cells["client 7"]["create"]; r.OK || !strings.Contains(r.Error, "harness panic: boom") {
		t.Errorf("a panicking job's cell: %+v", r)
	}
}
