// Package archtest checks the direction of imports between the project's
// packages (DESIGN.md): cmd → broker → {groups, replication, controller} →
// {logstore, protocol}; logstore and protocol import no project package;
// the coordinator runtime (coordinator) imports none either, and the
// coordinators over it (groups, txn, share) import it; controller never
// sees Kafka types; nothing imports broker but the programs
// (cmd/, bench/) and tests.
package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/samsa-io/samsa/"

type pkg struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func TestImportDirection(t *testing.T) {
	// allowed lists, for each package, the project packages it may import.
	allowed := map[string][]string{
		"logstore":           {},
		"protocol":           {},
		"controller":         {"internal/elr"},
		"internal/config":    {},
		"internal/elr":       {},
		"internal/procstat":  {},
		"internal/poll":      {},
		"internal/testcerts": {},
		"security":           {},
		"replication":        {"logstore", "protocol", "internal/elr"},
		"coordinator":        {},
		"groups":             {"logstore", "protocol", "coordinator"},
		"txn":                {"logstore", "protocol", "coordinator"},
		"share":              {"coordinator", "protocol"},
		"broker":             {"logstore", "protocol", "controller", "replication", "groups", "txn", "share", "security", "internal/config", "internal/elr", "httpapi", "registry", "restproxy", "clientmetrics", "tiered", "link", "internal/admin"},
		"link":               {},
		"registry":           {"coordinator"},
		"restproxy":          {"internal/admin", "registry"},
		"httpapi":            {"internal/admin", "clientmetrics"},
		"clientmetrics":      {"logstore"},
		"internal/admin":     {},
		"internal/cli":       {"internal/admin"},
		"internal/testutil":  {"broker", "internal/config", "controller", "internal/poll"},
		"internal/workload":  {"internal/poll"},
		"internal/s3test":    {"internal/poll", "internal/config"},
		"tiered":             {"internal/config", "logstore"},
	}
	forbiddenExternal := map[string][]string{
		"controller": {"github.com/twmb/franz-go"},
	}
	pkgs := listPackages(t)
	if len(pkgs) < 4 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module)
		allow, ok := allowed[name]
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				dep := strings.TrimPrefix(imp, module)
				if dep == "broker" && !isCommand(name) && name != "internal/testutil" {
					t.Errorf("%s imports broker: only commands and the test harness may", name)
				}
				if ok && !contains(allow, dep) {
					t.Errorf("%s imports %s, outside its allowed set %v", name, dep, allow)
				}
			}
			for _, bad := range forbiddenExternal[name] {
				if strings.HasPrefix(imp, bad) {
					t.Errorf("%s imports %s", name, imp)
				}
			}
		}
	}
}

// isCommand reports whether a package is a program: the binaries under
// cmd/ and the benchmark harness under bench/.
func isCommand(name string) bool {
	return strings.HasPrefix(name, "cmd/") || name == "bench" || strings.HasPrefix(name, "bench/")
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
