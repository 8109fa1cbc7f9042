package compat

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testutil"
)

// connectWorker is one Kafka Connect distributed worker (a JVM).
type connectWorker struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	log  bytes.Buffer
}

func (w *connectWorker) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log.Len() > 1<<20 {
		w.log.Reset()
	}
	return w.log.Write(b)
}

func (w *connectWorker) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return kafkaref.Tail(w.log.Bytes(), 40)
}

func (w *connectWorker) kill() {
	w.cmd.Process.Kill()
	<-w.done
}

func startConnectWorker(t *testing.T, propsFile string) *connectWorker {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, "compat", "java", "connect", "target", "lib")
	w := &connectWorker{done: make(chan struct{})}
	w.cmd = exec.Command("java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", filepath.Join(lib, "*"),
		"org.apache.kafka.connect.cli.ConnectDistributed", propsFile)
	w.cmd.Dir = t.TempDir()
	w.cmd.Stdout, w.cmd.Stderr = w, w
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		w.cmd.Wait()
	}()
	t.Cleanup(w.kill)
	return w
}

// txnState describes, for a failure message, what holds a read_committed
// reader of topic back: the high watermark against the last stable offset
// of each partition, the producers with open transactions on it, and every
// transaction the coordinators know.
func txnState(t *testing.T, addr, topic string) string {
	adm := kadm.NewClient(newKgo(t, addr))
	ctx := testCtx(t, 5*time.Second)
	var b strings.Builder
	hw, err := adm.ListEndOffsets(ctx, topic)
	lso, err2 := adm.ListCommittedOffsets(ctx, topic)
	fmt.Fprintf(&b, "end offsets %v (%v), last stable offsets %v (%v)\n", hw, err, lso, err2)
	prods, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	fmt.Fprintf(&b, "producers on %s (%v):", topic, err)
	prods.EachProducer(func(p kadm.DescribedProducer) {
		fmt.Fprintf(&b, " [id %d epoch %d txn start %d]", p.ProducerID, p.ProducerEpoch, p.CurrentTxnStartOffset)
	})
	txns, err := adm.ListTransactions(ctx, nil, nil)
	fmt.Fprintf(&b, "\ntransactions (%v):", err)
	described, err := adm.DescribeTransactions(ctx, txns.TransactionalIDs()...)
	for _, d := range described.Sorted() {
		fmt.Fprintf(&b, " [%s %s id %d epoch %d topics %v]", d.TxnID, d.State, d.ProducerID, d.ProducerEpoch, d.Topics)
	}
	if err != nil {
		fmt.Fprintf(&b, " (describe: %v)", err)
	}
	return b.String()
}

// connectorStatus is the worker's REST answer for the connector's status
// and its tasks' (with the trace of a failed task), for a failure message:
// the worker logs nothing, having no SLF4J binding.
func connectorStatus(rest, name string) string {
	resp, err := http.Get(rest + "/connectors/" + name + "/status")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	if err != nil {
		return err.Error()
	}
	return resp.Status + " " + string(body)
}

// Kafka Connect in distributed mode, its config, offset and status topics
// on samsa, with exactly.once.source.support=enabled: a FileStream source
// copies a file's lines into a topic in transactions; the worker is killed
// (SIGKILL) mid-run and restarted, more lines are appended, and a
// read_committed reader finds every line exactly once.
func TestConnectExactlyOnceSource(t *testing.T) {
	t.Parallel()
	n := testutil.StartBroker(t, map[string]string{
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
		"group.initial.rebalance.delay.ms":                            "0",
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	var lines []string
	write := func(from, to int) {
		f, err := os.OpenFile(in, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		for i := from; i < to; i++ {
			l := fmt.Sprintf("line-%05d", i)
			lines = append(lines, l)
			fmt.Fprintln(f, l)
		}
		f.Close()
	}
	write(0, 2000)
	ports, err := kafkaref.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	rest := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	worker := filepath.Join(dir, "worker.properties")
	var wp strings.Builder
	for k, v := range map[string]string{
		"bootstrap.servers":                       n.Addr(),
		"group.id":                                "eos-connect",
		"config.storage.topic":                    "eos-connect-configs",
		"offset.storage.topic":                    "eos-connect-offsets",
		"status.storage.topic":                    "eos-connect-status",
		"config.storage.replication.factor":       "1",
		"offset.storage.replication.factor":       "1",
		"status.storage.replication.factor":       "1",
		"key.converter":                           "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":                         "org.apache.kafka.connect.storage.StringConverter",
		"exactly.once.source.support":             "enabled",
		"offset.flush.interval.ms":                "500",
		"listeners":                               rest,
		"session.timeout.ms":                      "6000",
		"heartbeat.interval.ms":                   "1000",
		"scheduled.rebalance.max.delay.ms":        "0",
		"worker.sync.timeout.ms":                  "3000",
		"producer.transaction.timeout.ms":         "10000",
		"consumer.isolation.level":                "read_committed",
		"task.shutdown.graceful.timeout.ms":       "1000",
		"offset.storage.partitions":               "1",
		"status.storage.partitions":               "1",
		"connector.client.config.override.policy": "All",
	} {
		fmt.Fprintf(&wp, "%s=%s\n", k, v)
	}
	if err := os.WriteFile(worker, []byte(wp.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const topic = "eos-connect-lines"
	createTopic(t, newAdmin(t, n.Addr()), topic, 1, nil)

	w := startConnectWorker(t, worker)
	connector := fmt.Sprintf(`{"name":"eos-source","config":{"connector.class":"org.apache.kafka.connect.file.FileStreamSourceConnector",
		"tasks.max":"1","file":%q,"topic":%q,"exactly.once.support":"required","transaction.boundary":"poll","batch.size":"50"}}`, in, topic)
	testutil.Eventually(t, 2*time.Minute, func() error {
		resp, err := http.Post(rest+"/connectors", "application/json", strings.NewReader(connector))
		if err != nil {
			return fmt.Errorf("%w\n%s", err, w.tail())
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
			return fmt.Errorf("POST /connectors: %s\n%s", resp.Status, w.tail())
		}
		return nil
	})
	reader := newKgo(t, n.Addr(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	read := func() {
		for _, r := range reader.PollFetches(testCtx(t, time.Second)).Records() {
			seen[string(r.Value)]++
		}
	}
	testutil.Eventually(t, 2*time.Minute, func() error {
		read()
		if len(seen) == 0 {
			return fmt.Errorf("no line committed yet\n%s", w.tail())
		}
		return nil
	})
	w.kill()
	write(2000, 3000)
	w = startConnectWorker(t, worker)
	testutil.Eventually(t, 3*time.Minute, func() error {
		read()
		if len(seen) < len(lines) {
			return fmt.Errorf("%d of %d lines read\n%s\nconnector status: %s\n%s", len(seen), len(lines), txnState(t, n.Addr(), topic), connectorStatus(rest, "eos-source"), w.tail())
		}
		return nil
	})
	read()
	for _, l := range lines {
		if seen[l] != 1 {
			t.Errorf("%s read %d times", l, seen[l])
		}
	}
	if len(seen) != len(lines) {
		t.Errorf("%d distinct values read, want %d", len(seen), len(lines))
	}
}
