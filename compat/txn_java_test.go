package compat

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// runJavaScenario runs one scenario of compat/java's Main (module kafka4
// or kafka3, built by make java-deps) against addr and fails the test
// unless it passes.
func runJavaScenario(t *testing.T, module, addr, prefix, scenario string) {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "compat", "java", module, "target")
	cp := filepath.Join(dir, "classes") + ":" + filepath.Join(dir, "lib", "*")
	ctx := testCtx(t, 3*time.Minute)
	cmd := exec.CommandContext(ctx, "java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp,
		"samsa.compat.Main", addr, prefix, module+":"+scenario)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("java %s %s: %v\n%s", module, scenario, err, kafkaref.Tail(out, 30))
	}
	for _, line := range strings.Split(string(out), "\n") {
		var res struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &res) != nil {
			continue
		}
		if !res.OK {
			t.Fatalf("java %s %s: %s", module, scenario, res.Error)
		}
		return
	}
	t.Fatalf("java %s %s printed no result:\n%s", module, scenario, kafkaref.Tail(out, 30))
}

// The Java clients' transactions, 4.4 and 3.9: initTransactions, send,
// sendOffsetsToTransaction, commit, abort; a read_committed consumer sees
// no aborted record; a fenced producer gets ProducerFencedException
// (compat/java Main's txn scenario).
//
// The 4.4 client runs transactions version 2 (samsa finalizes
// transaction.version 2): each of its three ends bumps the epoch, and the
// fencing producer's InitProducerId a fourth time; the 3.9 client runs
// version 1, side by side, where only the InitProducerIds bump it.
func TestJavaTransactions(t *testing.T) {
	t.Parallel()
	n := txnBroker(t)
	adm := newAdmin(t, n.Addr())
	for _, tc := range []struct {
		module string
		epoch  int16
	}{{"kafka4", 4}, {"kafka3", 1}} {
		t.Run(tc.module, func(t *testing.T) {
			runJavaScenario(t, tc.module, n.Addr(), "jtx-"+tc.module, "txn")
			id := "jtx-" + tc.module + "-txn-id"
			d, err := adm.DescribeTransactions(testCtx(t, 10*time.Second), id)
			if err != nil {
				t.Fatal(err)
			}
			if got := d[id].ProducerEpoch; got != tc.epoch {
				t.Fatalf("%s's producer epoch %d after the scenario, want %d", id, got, tc.epoch)
			}
		})
	}
}
