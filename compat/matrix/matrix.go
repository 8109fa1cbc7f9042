package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// The scenarios, in the table's column order.
var scenarios = []string{"create", "produce", "group", "group848", "admin", "errors", "pipeline", "pipeline1071", "txn", secSASLSSL, secMTLS, secSASLPlain, scRegistry}

// Result is one cell of the table.
type Result struct {
	Client   string `json:"client"`
	Scenario string `json:"scenario"`
	OK       bool   `json:"ok"`
	Error    string `json:"error"`
	Ms       int64  `json:"ms"`
}

// row is one client of the table and the scenarios it has the API for.
type row struct {
	name      string
	scenarios []string
}

// job runs one or more rows' scenarios (one JVM may serve two rows) and
// returns their results; a scenario of its rows it returns no result for
// fails.
type job struct {
	rows []row
	run  func(ctx context.Context, e *env) []Result
}

// env is what a job needs to know about the run.
type env struct {
	root      string    // the module root
	bootstrap string    // host:port of the broker
	prefix    string    // the job's topic and group name prefix
	tmp       string    // a directory of the job's own
	reference bool      // the broker is Apache Kafka
	sec       *security // the secured listeners; nil when the harness did not start the broker
	registry  string    // the schema registry's URL; "" when the brokers serve none

	libsOnce sync.Once
	libs     string // Apache Kafka's jars, for the CLI tools and Connect
	libsErr  error
}

// Table is a finished run: its rows and cells.
type Table struct {
	Broker string
	Rows   []row
	Cells  map[string]map[string]Result // client → scenario → result
	Took   time.Duration
}

// run executes jobs, at most parallel at a time, against bootstrap.
func runJobs(ctx context.Context, jobs []job, parallel int, mk func(i int) *env, progress io.Writer) *Table {
	t := &Table{Cells: map[string]map[string]Result{}}
	start := time.Now()
	var mu sync.Mutex
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	// Every row's cells exist before the first job starts: the jobs read
	// t.Cells (under mu) while later ones are still being launched.
	for _, j := range jobs {
		t.Rows = append(t.Rows, j.rows...)
		for _, r := range j.rows {
			t.Cells[r.name] = map[string]Result{}
		}
	}
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			e := mk(i)
			js := time.Now()
			var res []Result
			if e.sec != nil {
				if err := e.sec.prepare(ctx, e, j.rows); err != nil {
					res = failAll(j.rows, "setting up the security scenarios' topics: %v", err)
				}
			}
			if res == nil {
				res = safeRun(ctx, j, e)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range res {
				if _, ok := t.Cells[r.Client]; ok && slices.Contains(scenarios, r.Scenario) {
					t.Cells[r.Client][r.Scenario] = r
				}
			}
			for _, r := range j.rows {
				for _, s := range r.scenarios {
					if _, ok := t.Cells[r.name][s]; !ok {
						t.Cells[r.name][s] = Result{Client: r.name, Scenario: s, Error: "no result (the client did not get to it)"}
					}
				}
				if progress != nil {
					fmt.Fprintf(progress, "matrix: %-36s %s in %v:", r.name, summary(t.Cells[r.name]), time.Since(js).Round(time.Second))
					for _, s := range r.scenarios {
						fmt.Fprintf(progress, " %s %.1fs", s, float64(t.Cells[r.name][s].Ms)/1000)
					}
					fmt.Fprintln(progress)
				}
			}
		}()
	}
	wg.Wait()
	t.Took = time.Since(start)
	return t
}

// safeRun runs j, turning a panic into failed cells.
func safeRun(ctx context.Context, j job, e *env) (res []Result) {
	defer func() {
		if p := recover(); p != nil {
			res = nil
			for _, r := range j.rows {
				for _, s := range r.scenarios {
					res = append(res, Result{Client: r.name, Scenario: s, Error: fmt.Sprintf("harness panic: %v", p)})
				}
			}
		}
	}()
	return j.run(ctx, e)
}

func summary(cells map[string]Result) string {
	pass, fail := 0, 0
	for _, r := range cells {
		if r.OK {
			pass++
		} else {
			fail++
		}
	}
	return fmt.Sprintf("%d passed, %d failed", pass, fail)
}

// Failed lists the failed cells as "client/scenario: error".
func (t *Table) Failed() []string {
	var out []string
	for _, r := range t.Rows {
		for _, s := range r.scenarios {
			if c := t.Cells[r.name][s]; !c.OK {
				out = append(out, fmt.Sprintf("%s / %s: %s", r.name, s, c.Error))
			}
		}
	}
	return out
}

// Counts returns the numbers of passed and failed cells.
func (t *Table) Counts() (pass, fail int) {
	for _, r := range t.Rows {
		for _, s := range r.scenarios {
			if t.Cells[r.name][s].OK {
				pass++
			} else {
				fail++
			}
		}
	}
	return pass, fail
}

// Markdown renders the table with one column per scenario ("pass", "FAIL
// [n]", "–" where the client lacks the API) and the numbered errors below.
func (t *Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| client | " + strings.Join(scenarios, " | ") + " |\n")
	b.WriteString("|---|" + strings.Repeat("---|", len(scenarios)) + "\n")
	var notes []string
	for _, r := range t.Rows {
		b.WriteString("| " + r.name + " |")
		for _, s := range scenarios {
			c, ok := t.Cells[r.name][s]
			switch {
			case !slices.Contains(r.scenarios, s) || !ok:
				b.WriteString(" – |")
			case c.OK:
				b.WriteString(" pass |")
			default:
				notes = append(notes, fmt.Sprintf("%s / %s: %s", r.name, s, oneLine(c.Error)))
				fmt.Fprintf(&b, " FAIL [%d] |", len(notes))
			}
		}
		b.WriteString("\n")
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for i, n := range notes {
			fmt.Fprintf(&b, "%d. %s\n", i+1, n)
		}
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// markers delimit the README section a run writes: one for samsa, one for
// the reference run.
func markers(reference bool) (begin, end string) {
	name := "compat-matrix"
	if reference {
		name = "compat-matrix-reference"
	}
	return "<!-- " + name + ":begin (generated by go run ./compat/matrix -readme; do not edit) -->", "<!-- " + name + ":end -->"
}

// rewriteReadme replaces the text between the markers of the README at path
// with body.
func rewriteReadme(path string, reference bool, body string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin, end := markers(reference)
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %q … %q section", path, begin, end)
	}
	s = s[:i+len(begin)] + "\n" + body + s[j:]
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// prefixFor makes a topic-name prefix out of a row name.
func prefixFor(name string) string {
	return strings.Trim(strings.ToLower(unsafeName.ReplaceAllString(name, "-")), "-")
}

// selectJobs keeps the jobs with a row whose name matches re.
func selectJobs(jobs []job, re *regexp.Regexp) []job {
	if re == nil {
		return jobs
	}
	var out []job
	for _, j := range jobs {
		for _, r := range j.rows {
			if re.MatchString(r.name) {
				out = append(out, j)
				break
			}
		}
	}
	return out
}

// withoutScenarios drops the scenarios drop from jobs' rows.
func withoutScenarios(jobs []job, drop ...string) []job {
	out := make([]job, len(jobs))
	for i, j := range jobs {
		out[i] = j
		out[i].rows = nil
		for _, r := range j.rows {
			r.scenarios = slices.DeleteFunc(slices.Clone(r.scenarios), func(s string) bool { return slices.Contains(drop, s) })
			out[i].rows = append(out[i].rows, r)
		}
	}
	return out
}

// newEnv makes the environment of job i.
func newEnv(root, bootstrap, registry, tmp string, reference bool, sec *security, jobs []job) func(i int) *env {
	// A run id keeps names apart on a broker that outlives runs (-bootstrap).
	var id [2]byte
	_, _ = rand.Read(id[:])
	run := hex.EncodeToString(id[:])
	return func(i int) *env {
		dir := filepath.Join(tmp, fmt.Sprintf("job%d", i))
		_ = os.MkdirAll(dir, 0o755)
		return &env{root: root, bootstrap: bootstrap, prefix: prefixFor(jobs[i].rows[0].name) + "-" + run, tmp: dir, reference: reference, sec: sec, registry: registry}
	}
}

// sortedKeys is for stable error messages.
func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}
