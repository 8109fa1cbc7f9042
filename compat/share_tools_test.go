package compat

// kafka-share-groups.sh (Apache Kafka 4.4's ShareGroupCommand) against a
// share group: list, describe its offsets and members, reset its offsets,
// delete it.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/testutil"
)

func TestShareGroupsTool(t *testing.T) {
	t.Parallel()
	addr, cl := shareBroker(t, nil)
	adm := newAdmin(t, addr)
	const topic, group, total = "share-tool", "st", 20
	createTopic(t, adm, topic, 1, nil)
	l := newShareLedger()
	m := startShareMember(t, addr, group, topic, "tm", "accept", l)
	awaitShareInit(t, cl, group, topic)
	produceShare(t, cl, topic, total, 10)
	awaitShareStart(t, cl, group, topic, total, 60*time.Second)
	tool := kafkaToolIn(t, testCtx(t, 4*time.Minute), addr, t.TempDir())
	const cmd = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
	run := func(args ...string) string {
		t.Helper()
		out, err := tool("", cmd, args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kafka-share-groups.sh %v:\n%s", args, out)
		return out
	}
	if out := run("--list"); !strings.Contains(out, group) {
		t.Errorf("--list does not show %s", group)
	}
	fields := func(out, first string) []string {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == first {
				return f
			}
		}
		return nil
	}
	// GROUP TOPIC PARTITION START-OFFSET LAG
	if f := fields(run("--describe", "--group", group), group); len(f) < 5 || f[1] != topic || f[2] != "0" || f[3] != "20" || f[4] != "0" {
		t.Errorf("--describe: %v, want %s %s 0 20 0", f, group, topic)
	}
	if f := fields(run("--describe", "--group", group, "--members"), group); len(f) < 2 || !strings.Contains(strings.Join(f, " "), "tm") {
		t.Errorf("--describe --members: %v, want the member tm", f)
	}
	m.leave()
	testutil.Eventually(t, 60*time.Second, func() error {
		if d := describeShare(t, cl, group); len(d.Members) != 0 {
			return fmt.Errorf("%d members", len(d.Members))
		}
		return nil
	})
	run("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	if start, err := shareStartOffset(t, cl, group, topic); err != nil || start != 0 {
		t.Errorf("after --reset-offsets --to-earliest: start offset %d (%v), want 0", start, err)
	}
	run("--delete", "--group", group)
	if out := run("--list"); strings.Contains(out, group) {
		t.Errorf("--list still shows %s after --delete", group)
	}
}
