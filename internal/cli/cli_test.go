package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/admin"
	"github.com/samsa-io/samsa/internal/cli"
	"github.com/samsa-io/samsa/internal/testutil"
)

// samsa runs one CLI command against addr with stdin, and returns its
// exit status, stdout and stderr.
func samsa(t *testing.T, addr, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args = append(args, "--bootstrap-server", addr)
	code := cli.Run(ctx, args, cli.IO{Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr})
	return code, stdout.String(), stderr.String()
}

// ok is samsa that fails the test unless the command exits 0.
func ok(t *testing.T, addr, stdin string, args ...string) string {
	t.Helper()
	code, out, errOut := samsa(t, addr, stdin, args...)
	if code != 0 {
		t.Fatalf("samsa %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// row reports whether out has a line of these fields, separated by spaces.
func row(out string, fields ...string) bool {
	var quoted []string
	for _, f := range fields {
		quoted = append(quoted, regexp.QuoteMeta(f))
	}
	return regexp.MustCompile(`(?m)^` + strings.Join(quoted, `\s+`) + `\s*$`).MatchString(out)
}

func TestTopicCommands(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	addr := n.Addr()
	out := ok(t, addr, "", "topic", "create", "orders", "--partitions", "3", "-c", "retention.ms=60000")
	if !row(out, "orders", "OK") {
		t.Fatalf("topic create:\n%s", out)
	}
	code, out, errOut := samsa(t, addr, "", "topic", "create", "orders")
	if code != 1 || !strings.Contains(out, "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("creating it again: exit %d\n%s\n%s", code, out, errOut)
	}
	out = ok(t, addr, "", "topic", "list")
	if !row(out, "NAME", "PARTITIONS", "REPLICAS", "RECORDS", "SIZE") || !row(out, "orders", "3", "1", "0", "0B") {
		t.Fatalf("topic list:\n%s", out)
	}
	var d admin.Topic
	if err := json.Unmarshal([]byte(ok(t, addr, "", "topic", "describe", "orders", "--format", "json")), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Partitions) != 3 || d.Partitions[2].Leader != 1 || d.Partitions[2].EndOffset != 0 {
		t.Fatalf("describe: partitions %+v", d.Partitions)
	}
	if v, src := configOf(d, "retention.ms"); v != "60000" || src != "topic" {
		t.Fatalf("describe: retention.ms = %q from %q", v, src)
	}
	ok(t, addr, "", "topic", "alter", "orders", "--set", "retention.ms=120000", "--partitions", "4")
	out = ok(t, addr, "", "topic", "describe", "orders")
	if !row(out, "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "START", "END", "SIZE") || !row(out, "3", "1", "0", "1", "1", "0", "0", "0B") {
		t.Fatalf("describe after alter: no partition 3:\n%s", out)
	}
	if !row(out, "retention.ms", "120000", "topic") {
		t.Fatalf("describe after alter: retention.ms:\n%s", out)
	}
	ok(t, addr, "", "topic", "alter", "orders", "--delete-config", "retention.ms")
	if out := ok(t, addr, "", "topic", "describe", "orders"); !row(out, "retention.ms", "604800000", "default") {
		t.Fatalf("describe after --delete-config:\n%s", out)
	}
	if out := ok(t, addr, "", "topic", "delete", "orders"); !row(out, "orders", "deleted") {
		t.Fatalf("topic delete:\n%s", out)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if out := ok(t, addr, "", "topic", "list"); strings.Contains(out, "orders") {
			return fmt.Errorf("still listed:\n%s", out)
		}
		return nil
	})
	if code, _, errOut := samsa(t, addr, "", "topic", "describe", "orders"); code != 1 || !strings.Contains(errOut, "unknown topic") {
		t.Fatalf("describing a deleted topic: exit %d, %s", code, errOut)
	}
}

func configOf(d admin.Topic, name string) (value, source string) {
	for _, c := range d.Configs {
		if c.Name == name {
			return c.Value, c.Source
		}
	}
	return "", ""
}

func TestProduceConsume(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	addr := n.Addr()
	ok(t, addr, "", "topic", "create", "events", "-p", "2")
	out := ok(t, addr, "k1:v1\nk2:v2\nk3:v3\n", "produce", "events", "--key-separator", ":", "-H", "source=test", "--partition", "1")
	if !strings.Contains(out, "produced 3 records to events") || !row(out, "events", "1", "0", "2") {
		t.Fatalf("produce:\n%s", out)
	}
	var ev admin.Topic
	if err := json.Unmarshal([]byte(ok(t, addr, "", "topic", "describe", "events", "--format", "json")), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Partitions[1].Size < int64(len("k1v1k2v2k3v3")) || ev.Partitions[0].Size != 0 {
		t.Fatalf("sizes after producing to partition 1: %d and %d bytes", ev.Partitions[0].Size, ev.Partitions[1].Size)
	}
	before := time.Now().UnixMilli()
	ok(t, addr, "plain\n", "produce", "events", "--partition", "1")

	out = ok(t, addr, "", "consume", "events", "--num", "4", "--format", `%p/%o %k=%s [%h]\n`)
	want := "1/0 k1=v1 [source=test]\n1/1 k2=v2 [source=test]\n1/2 k3=v3 [source=test]\n1/3 =plain []\n"
	if out != want {
		t.Fatalf("consume with a format:\n%s\nwant:\n%s", out, want)
	}
	if out := ok(t, addr, "", "consume", "events", "--offset", "2", "--partition", "1", "-n", "1"); out != "v3\n" {
		t.Fatalf("consume --offset 2: %q", out)
	}
	if out := ok(t, addr, "", "consume", "events", "--offset", fmt.Sprintf("@%d", before), "--partition", "1", "-n", "1"); out != "plain\n" {
		t.Fatalf("consume --offset @%d: %q", before, out)
	}
	// --exit stops at the end without a count.
	if out := ok(t, addr, "", "consume", "events", "-e"); out != "v1\nv2\nv3\nplain\n" {
		t.Fatalf("consume -e: %q", out)
	}
	out = ok(t, addr, "", "consume", "events", "--num", "1", "--format", "json")
	var rec struct {
		Partition int32
		Offset    int64
		Key       *string
		Value     *string
		Headers   []struct{ Key, Value string }
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatalf("consume --format json: %v\n%s", err, out)
	}
	if rec.Key == nil || *rec.Key != "k1" || *rec.Value != "v1" || len(rec.Headers) != 1 || rec.Headers[0].Value != "test" {
		t.Fatalf("consume --format json: %s", out)
	}

	// A group consumes two records and lags by two.
	if out := ok(t, addr, "", "consume", "events", "--group", "readers", "--num", "2"); out != "v1\nv2\n" {
		t.Fatalf("consume --group: %q", out)
	}
	out = ok(t, addr, "", "group", "describe", "readers")
	if !row(out, "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "CLIENT-ID") ||
		!row(out, "events", "1", "2", "4", "2", "-", "-") || !strings.Contains(out, "TOTAL-LAG    2") {
		t.Fatalf("group describe:\n%s", out)
	}
	if out := ok(t, addr, "", "group", "list"); !row(out, "readers", "Empty", "consumer", "1") {
		t.Fatalf("group list:\n%s", out)
	}
	if out := ok(t, addr, "", "group", "seek", "readers", "--to", "start"); !row(out, "events", "1", "0") || !row(out, "events", "0", "0") {
		t.Fatalf("group seek --to start:\n%s", out)
	}
	var g admin.Group
	if err := json.Unmarshal([]byte(ok(t, addr, "", "group", "describe", "readers", "--format", "json")), &g); err != nil {
		t.Fatal(err)
	}
	if g.TotalLag != 4 {
		t.Fatalf("after seek to start: total lag %d, want 4: %+v", g.TotalLag, g.Offsets)
	}
	ok(t, addr, "", "group", "seek", "readers", "--to", "3", "--topic", "events")
	if out := ok(t, addr, "", "consume", "events", "--group", "readers", "--num", "1"); out != "plain\n" {
		t.Fatalf("consume after seek to 3: %q", out)
	}
	if out := ok(t, addr, "", "group", "delete", "readers"); !row(out, "readers", "deleted") {
		t.Fatalf("group delete:\n%s", out)
	}
	if code, _, errOut := samsa(t, addr, "", "group", "describe", "readers"); code != 1 || !strings.Contains(errOut, "unknown group") {
		t.Fatalf("describing a deleted group: exit %d: %s", code, errOut)
	}
}

// TestProduceFile produces a file with a progress bar and reads it back.
func TestProduceFile(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	path := filepath.Join(t.TempDir(), "records.txt")
	var sb strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&sb, "key-%d\tvalue-%d\n", i, i)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, n.Addr(), "", "topic", "create", "bulk", "-p", "3")
	code, out, errOut := samsa(t, n.Addr(), "", "produce", "bulk", "--file", path, "-K", "\t", "--format", "json")
	if code != 0 {
		t.Fatalf("produce --file: exit %d: %s", code, errOut)
	}
	var res struct{ Records int64 }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Records != 5000 {
		t.Fatalf("produce --file: %v %s", err, out)
	}
	if !strings.Contains(errOut, "] 100% ") {
		t.Fatalf("no finished progress bar on stderr: %q", errOut)
	}
	got := ok(t, n.Addr(), "", "consume", "bulk", "-e", "--format", `%k\n`)
	if lines := strings.Count(got, "\n"); lines != 5000 || !strings.Contains(got, "key-4999\n") {
		t.Fatalf("read back %d keys", lines)
	}
}

func TestClusterCommands(t *testing.T) {
	c := testutil.StartCluster(t, 2, map[string]string{"broker.rack": "rack-a"})
	addr := strings.Join(c.Addrs(), ",")
	var info admin.Cluster
	testutil.Eventually(t, 20*time.Second, func() error {
		out := ok(t, addr, "", "cluster", "info", "--format", "json")
		if err := json.Unmarshal([]byte(out), &info); err != nil {
			return err
		}
		if len(info.Brokers) != 2 || info.Controller < 1 {
			return fmt.Errorf("cluster info: %s", out)
		}
		return nil
	})
	for _, b := range info.Brokers {
		if b.Rack != "rack-a" || !b.Reachable || b.Controller != (b.ID == info.Controller) {
			t.Fatalf("broker %+v (controller %d)", b, info.Controller)
		}
	}
	out := ok(t, addr, "", "cluster", "info")
	if !row(out, "BROKER", "HOST", "PORT", "RACK", "LEADERS", "REPLICAS", "REACHABLE") || !strings.Contains(out, "CLUSTER     "+info.ID) {
		t.Fatalf("cluster info:\n%s", out)
	}
	out = ok(t, addr, "", "cluster", "health")
	if !row(out, "HEALTHY", "true") || !row(out, "BROKERS", "1,2") {
		t.Fatalf("cluster health:\n%s", out)
	}
	// One broker stopped: its partitions lose a replica from the ISR.
	ok(t, addr, "", "topic", "create", "replicated", "-p", "1", "-r", "2")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testutil.Eventually(t, 30*time.Second, func() error {
		return cl.ProduceSync(context.Background(), &kgo.Record{Topic: "replicated", Value: []byte("x")}).FirstErr()
	})
	c.Node(2).Stop()
	testutil.Eventually(t, 60*time.Second, func() error {
		code, out, errOut := samsa(t, c.Node(1).Addr(), "", "cluster", "health")
		if code != 1 || !row(out, "HEALTHY", "false") || !strings.Contains(errOut, "cluster unhealthy") {
			return fmt.Errorf("exit %d\n%s%s", code, out, errOut)
		}
		return nil
	})
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"topic"},
		{"topic", "frobnicate"},
		{"topic", "describe"},
		{"topic", "list", "--format", "yaml"},
		{"consume"},
		{"consume", "t", "--offset", "sideways"},
		{"group", "seek", "g", "--to", "nowhere"},
		{"produce", "t", "--acks", "2"},
		{"nonsense"},
		{"link"},
		{"link", "create"},
		{"link", "create", "l"},
		{"link", "describe"},
		{"link", "list", "--format", "yaml"},
	} {
		code, _, errOut := samsa(t, "127.0.0.1:1", "", args...)
		if code != 2 || !strings.HasPrefix(errOut, "samsa: ") {
			t.Errorf("samsa %s: exit %d, stderr %q; want 2 and a samsa: line", strings.Join(args, " "), code, errOut)
		}
	}
}

// cluster balance: a topic whose replicas all sit on two of three brokers,
// with one preferred leader, is planned (--dry-run changes nothing), then
// moved and re-led so that each broker holds as many replicas and leads as
// many partitions as the others; the records are still there.
func TestClusterBalance(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	addr := c.Node(1).Addr()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "skewed", -1, -1
	for p := range int32(6) {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, []int32{1, 2}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		for p := range int32(6) {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "skewed", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				return err
			}
		}
		return nil
	})

	out := ok(t, addr, "", "cluster", "balance", "--dry-run")
	if !regexp.MustCompile(`(?m)^3\s+0 -> 4\s+0 -> 2\s`).MatchString(out) {
		t.Fatalf("cluster balance --dry-run:\n%s", out)
	}
	a, err := admin.New(c.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// Any broker may answer, and one may learn of the topic a moment
	// after the others.
	var parts []admin.PartitionPlacement
	testutil.Eventually(t, 30*time.Second, func() (err error) {
		parts, _, err = a.Placement(context.Background(), "skewed")
		return err
	})
	for _, p := range parts {
		if slices.Contains(p.Replicas, 3) {
			t.Fatalf("--dry-run moved %s-%d to broker 3", p.Topic, p.Partition)
		}
	}

	out = ok(t, addr, "", "cluster", "balance", "--timeout", "2m")
	if !strings.Contains(out, "applied") {
		t.Fatalf("cluster balance:\n%s", out)
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		info, err := a.Cluster(context.Background())
		if err != nil {
			return err
		}
		for _, b := range info.Brokers {
			if b.Replicas != 4 || b.Leaders != 2 {
				return fmt.Errorf("broker %d: %d replicas, %d leaders; want 4 and 2", b.ID, b.Replicas, b.Leaders)
			}
		}
		return nil
	})
	out = ok(t, addr, "", "consume", "skewed", "--offset", "start", "--num", "6")
	if n := strings.Count(out, "v\n"); n != 6 {
		t.Errorf("after the balance, consume read %d of 6 records:\n%s", n, out)
	}
}
