package compat

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/testutil"
)

// procCluster is real `samsa serve` processes on one etcd that runs in the
// test, outside every broker.
type procCluster struct {
	t     *testing.T
	bin   string
	etcd  []string
	nodes []*proc  // nodes[i] has node.id i+1
	extra []string // key=value overrides after the defaults
	// voters, when set, is controller.quorum.voters: the nodes run no
	// etcd of the test's, but the KRaft quorum's (cluster_kraft_quorum_processes_test.go).
	voters string
}

type proc struct {
	id      int32
	addr    string
	ctrl    string // the controller listener's address, with voters
	dir     string
	logPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	stopped bool // SIGSTOPped
}

// buildSamsa builds bin/samsa's main package into a temporary directory.
func buildSamsa(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "samsa")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/samsa")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startProcCluster starts an embedded etcd in the test process and n
// samsa processes using it, with the given key=value overrides after the
// defaults (broker.session.timeout.ms=2000).
func startProcCluster(t *testing.T, n int, overrides ...string) *procCluster {
	t.Helper()
	bin := buildSamsa(t)
	e, err := controller.StartEmbedded(controller.EmbeddedConfig{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	c := &procCluster{t: t, bin: bin, etcd: e.Endpoints(), extra: overrides}
	for i := 1; i <= n; i++ {
		dir := t.TempDir()
		p := &proc{id: int32(i), addr: freePort(t), dir: dir, logPath: filepath.Join(dir, "samsa.log")}
		c.nodes = append(c.nodes, p)
	}
	t.Cleanup(func() {
		for _, p := range c.nodes {
			p.mu.Lock()
			if p.cmd != nil {
				_ = p.cmd.Process.Signal(syscall.SIGCONT)
				_ = p.cmd.Process.Kill()
				_ = p.cmd.Wait()
				p.cmd = nil
			}
			p.mu.Unlock()
			if t.Failed() {
				if b, err := os.ReadFile(p.logPath); err == nil {
					t.Logf("node %d log:\n%s", p.id, lastLines(string(b), 60))
				}
			}
		}
	})
	for _, p := range c.nodes {
		c.start(p.id)
	}
	return c
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// start runs node id and waits until it serves.
func (c *procCluster) start(id int32) {
	c.t.Helper()
	c.wait(id, c.launch(id))
}

// launch runs node id; it returns where its log starts, for wait.
func (c *procCluster) launch(id int32) int64 {
	c.t.Helper()
	p := c.nodes[id-1]
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close()
	off, _ := logf.Seek(0, 2)
	args := []string{"serve",
		"--override", "node.id=" + strconv.Itoa(int(id)),
		"--override", "listeners=PLAINTEXT://" + p.addr,
		"--override", "log.dirs=" + filepath.Join(p.dir, "data"),
		"--override", "etcd.endpoints=" + strings.Join(c.etcd, ","),
		"--override", "broker.session.timeout.ms=2000",
		"--log-level", "info"}
	if c.voters != "" {
		args = []string{"serve",
			"--override", "node.id=" + strconv.Itoa(int(id)),
			"--override", "process.roles=broker,controller",
			"--override", "controller.quorum.voters=" + c.voters,
			"--override", "controller.listener.names=CONTROLLER",
			"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"--override", "listeners=PLAINTEXT://" + p.addr + ",CONTROLLER://" + p.ctrl,
			"--override", "log.dirs=" + filepath.Join(p.dir, "data"),
			"--log-level", "info"}
	}
	for _, o := range c.extra {
		args = append(args, "--override", o)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	p.mu.Lock()
	p.cmd, p.stopped = cmd, false
	p.mu.Unlock()
	return off
}

// wait waits until node id, launched with its log at off, serves.
func (c *procCluster) wait(id int32, off int64) {
	c.t.Helper()
	p := c.nodes[id-1]
	testutil.Eventually(c.t, 90*time.Second, func() error {
		b, err := os.ReadFile(p.logPath)
		if err != nil {
			return err
		}
		if int64(len(b)) > off && strings.Contains(string(b[off:]), "samsa serving") {
			return nil
		}
		return fmt.Errorf("node %d not serving yet", id)
	})
}

// kill sends SIGKILL to node id and reaps it.
func (c *procCluster) kill(id int32) {
	p := c.nodes[id-1]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

// signal sends sig (SIGSTOP, SIGCONT) to node id.
func (c *procCluster) signal(id int32, sig syscall.Signal) {
	c.t.Helper()
	p := c.nodes[id-1]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		c.t.Fatalf("node %d not running", id)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		c.t.Fatal(err)
	}
	p.stopped = sig == syscall.SIGSTOP
}

func (c *procCluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, p := range c.nodes {
		out[i] = p.addr
	}
	return out
}

func (c *procCluster) IsRunning(id int32) bool {
	if id < 1 || int(id) > len(c.nodes) {
		return false
	}
	p := c.nodes[id-1]
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !p.stopped
}

func (c *procCluster) LiveAddr() string {
	for _, p := range c.nodes {
		if c.IsRunning(p.id) {
			return p.addr
		}
	}
	return ""
}

// Real samsa processes on an etcd outside them: the leader is killed with
// SIGKILL while a franz-go producer produces with acks=all; no acknowledged
// record is lost and the restarted broker rejoins the ISR.
func TestClusterProcessesSIGKILLLeader(t *testing.T) {
	c := startProcCluster(t, 3)
	failoverUnderLoad(t, c, "proc-failover", c.kill, c.start)
}

// The controller is paused (SIGSTOP) past its lease: another broker is
// elected (controller epoch +1) and moves the paused broker's partitions
// away. Resumed (SIGCONT), the old controller changes nothing the new one
// decided: its writes are fenced. Acknowledged records survive throughout.
func TestClusterProcessesPausedControllerIsFenced(t *testing.T) {
	c := startProcCluster(t, 3)
	const topic = "paused"
	const partitions = 3
	createReplicatedTopic(t, c, topic, partitions, 3, map[string]*string{"min.insync.replicas": strp("2")})

	ctx := testCtx(t, 120*time.Second)
	store, err := controller.Open(ctx, controller.Config{Endpoints: c.etcd, NodeID: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var old int32
	testutil.Eventually(t, 30*time.Second, func() error {
		old, err = store.Controller(ctx)
		return err
	})
	oldEpoch, err := store.ControllerEpoch(ctx)
	if err != nil {
		t.Fatal(err)
	}

	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.RecordRetries(1000), kgo.RetryTimeout(60*time.Second))
	ackedBy := map[int32][]ackedRecord{}
	produce := func(n int, tag string) {
		t.Helper()
		for i := range n {
			p := int32(i % partitions)
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(tag + itoa(i))}
			if err := cl.ProduceSync(testCtx(t, 60*time.Second), r).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			ackedBy[p] = append(ackedBy[p], ackedRecord{r.Offset, string(r.Value)})
		}
	}
	produce(60, "before")

	c.signal(old, syscall.SIGSTOP)
	var newCtl int32
	var newEpoch int32
	testutil.Eventually(t, 60*time.Second, func() error {
		id, err := store.Controller(ctx)
		if err != nil {
			return err
		}
		e, err := store.ControllerEpoch(ctx)
		if err != nil {
			return err
		}
		if id == old || e <= oldEpoch {
			return fmt.Errorf("controller %d epoch %d", id, e)
		}
		newCtl, newEpoch = id, e
		return nil
	})
	for p := range int32(partitions) {
		waitLeader(t, c, topic, p, old, 60*time.Second)
	}
	produce(60, "paused")
	decided, _, err := store.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}

	c.signal(old, syscall.SIGCONT)
	// The resumed broker registers again and catches up.
	for p := range int32(partitions) {
		waitISR(t, c, topic, p, 3, 60*time.Second)
	}
	produce(60, "resumed")

	if id, err := store.Controller(ctx); err != nil || id != newCtl {
		t.Fatalf("controller after resume: %d, %v; want %d", id, err, newCtl)
	}
	if e, err := store.ControllerEpoch(ctx); err != nil || e != newEpoch {
		t.Fatalf("controller epoch after resume: %d, %v; want %d", e, err, newEpoch)
	}
	now, _, err := store.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for p, st := range now[topic].Partitions {
		was := decided[topic].Partitions[p]
		if st.Leader != was.Leader || st.LeaderEpoch != was.LeaderEpoch {
			t.Errorf("partition %d: leader %d epoch %d after resume, the new controller had decided %d epoch %d",
				p, st.Leader, st.LeaderEpoch, was.Leader, was.LeaderEpoch)
		}
		if st.ControllerEpoch > newEpoch || st.ControllerEpoch == oldEpoch && st.Leader == old {
			t.Errorf("partition %d: state %+v written by a stale controller", p, st)
		}
	}
	for p, recs := range ackedBy {
		checkAcked(t, c, topic, p, recs)
	}
}
