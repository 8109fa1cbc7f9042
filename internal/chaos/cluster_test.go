package chaos

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/s3test"
)

const (
	etcdHelperEnv = "SAMSA_CHAOS_ETCD"        // the data dir; set, the test binary is the etcd helper
	etcdMemberEnv = "SAMSA_CHAOS_ETCD_MEMBER" // which of the etcdMembers the helper is: 1..etcdMembers
	etcdMembers   = 3
	etcdPort      = 2379 // member i listens on etcdPort + 10*(i-1)
	brokerPort    = 9092
)

// etcdAddr is member i's address, for peers and clients alike.
func etcdAddr(i int) string { return fmt.Sprintf("%s:%d", etcdIP, etcdPort+10*(i-1)) }

// runEtcdHelper serves one member of an embedded etcd cluster of
// etcdMembers on etcdIP until SIGTERM.
func runEtcdHelper() int {
	self, err := strconv.Atoi(os.Getenv(etcdMemberEnv))
	if err != nil || self < 1 || self > etcdMembers {
		fmt.Fprintln(os.Stderr, "chaos etcd helper: bad", etcdMemberEnv)
		return 1
	}
	n, err := strconv.Atoi(os.Getenv(runEnv))
	if err != nil || n < 1 || n > maxRuns {
		fmt.Fprintln(os.Stderr, "chaos etcd helper: bad", runEnv)
		return 1
	}
	setRun(n)
	var members []controller.Member
	for i := 1; i <= etcdMembers; i++ {
		members = append(members, controller.Member{Name: fmt.Sprintf("etcd%d", i), Addr: etcdAddr(i)})
	}
	e, err := controller.StartEmbedded(controller.EmbeddedConfig{
		Dir: os.Getenv(etcdHelperEnv), Members: members, Name: members[self-1].Name, Listen: etcdAddr(self),
		StartTimeout: 2 * time.Minute,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos etcd helper:", err)
		return 1
	}
	fmt.Println("etcd ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	if err := e.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos etcd helper:", err)
		return 1
	}
	return 0
}

// logLine is one line a process printed, with when the suite read it.
type logLine struct {
	at   time.Time
	text string
}

// proc is one process of the cluster (a broker or the etcd helper) in its
// namespace; it can be killed, paused and started again.
type proc struct {
	name string
	ns   string
	argv []string
	env  []string
	dir  string // the working directory; the test's when empty

	mu    sync.Mutex
	cmd   *exec.Cmd // guarded by mu; nil while stopped
	done  chan struct{}
	lines []logLine // guarded by mu
}

func (p *proc) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", p.ns}, p.argv...)...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Dir = p.dir
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("chaos: start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			if len(p.lines) < 1_000_000 {
				p.lines = append(p.lines, logLine{time.Now(), sc.Text()})
			}
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		_ = cmd.Wait()
		_ = pw.Close()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
}

// signal sends sig to the process if it runs.
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// pid is the process's id, 0 while stopped.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// kill kills the process with SIGKILL (or stops it with SIGTERM) and
// waits for it to exit.
func (p *proc) stop(sig syscall.Signal) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// printed reports whether the process printed a line containing text
// since then.
func (p *proc) printed(text string, since time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.lines) - 1; i >= 0 && !p.lines[i].at.Before(since); i-- {
		if strings.Contains(p.lines[i].text, text) {
			return true
		}
	}
	return false
}

// count is how many lines the process printed that contain text.
func (p *proc) count(text string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.lines {
		if strings.Contains(l.text, text) {
			n++
		}
	}
	return n
}

// around is the process's lines printed within d of at, at most n.
func (p *proc) around(at time.Time, d time.Duration, n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.lines {
		if l.at.After(at.Add(-d)) && l.at.Before(at.Add(d)) {
			out = append(out, l.at.Format("15:04:05.000")+" "+l.text)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// cluster is the etcd helper and the brokers, node i at nodes[i-1]; with
// -chaos.broker=kafka, Apache Kafka's nodes and no etcd (kafka_test.go).
type cluster struct {
	t      testing.TB
	etcd   []*proc // the members, member i at etcd[i-1]
	nodes  []*proc
	dirs   []string // log.dirs by node index
	faults []string // samsa.test.fault.file by node index
	bin    string
	addrs  []string
	etcdDr string

	kafka   bool   // the nodes run Kafka
	version string // Kafka's

	store      *s3test.Store // the object store the nodes tier to (tiered_test.go); nil with Kafka
	storeFault *s3test.Fault // its fault proxy on the bridge, the nodes' endpoint
}

// brokerProps are every broker's settings: the RF3, minISR2.
var brokerProps = map[string]string{
	"broker.session.timeout.ms":        "3000",
	"replica.lag.time.max.ms":          "5000",
	"min.insync.replicas":              "2",
	"default.replication.factor":       "3",
	"offsets.topic.replication.factor": "3",
	"auto.create.topics.enable":        "false",
}

// buildSamsa builds cmd/samsa into dir.
func buildSamsa(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "samsa")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/samsa-io/samsa/cmd/samsa")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chaos: go build cmd/samsa: %v\n%s", err, out)
	}
	return bin
}

// startCluster sets up the namespaces and starts etcd and n brokers, or
// n Kafka nodes.
func startCluster(t testing.TB, n int) *cluster {
	t.Helper()
	requireRoot(t)
	claimRun(t)
	dir := t.TempDir()
	c := &cluster{t: t, kafka: *brokerKind == "kafka"}
	var names, ips []string
	if !c.kafka {
		names, ips = []string{etcdNS}, []string{etcdIP}
	}
	for i := 1; i <= n; i++ {
		names, ips = append(names, nodeNS(i)), append(ips, nodeIP(i))
	}
	setupNetwork(t, names, ips)
	for i := 1; i <= n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if i == tmpfsNode {
			mountTmpfs(t, d)
		}
		c.dirs = append(c.dirs, d)
		c.addrs = append(c.addrs, fmt.Sprintf("%s:%d", nodeIP(i), brokerPort))
	}
	if c.kafka {
		c.startKafka(t, dir)
		return c
	}
	c.bin, c.etcdDr = buildSamsa(t, dir), filepath.Join(dir, "etcd")
	c.startStore()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var endpoints []string
	for i := 1; i <= etcdMembers; i++ {
		p := &proc{name: fmt.Sprintf("etcd %d", i), ns: etcdNS, argv: []string{self},
			env: []string{etcdHelperEnv + "=" + filepath.Join(c.etcdDr, strconv.Itoa(i)), etcdMemberEnv + "=" + strconv.Itoa(i),
				runEnv + "=" + strconv.Itoa(runN)}}
		c.etcd = append(c.etcd, p)
		p.start(t)
		t.Cleanup(func() { p.stop(syscall.SIGTERM) })
		endpoints = append(endpoints, "http://"+etcdAddr(i))
	}
	for i := 1; i <= n; i++ {
		ff := filepath.Join(dir, fmt.Sprintf("node%d.faults", i))
		c.faults = append(c.faults, ff)
		argv := []string{c.bin, "serve", "--log-level", "info",
			"--override", "samsa.test.fault.file=" + ff,
			"--override", "node.id=" + strconv.Itoa(i),
			"--override", fmt.Sprintf("listeners=PLAINTEXT://%s:%d", nodeIP(i), brokerPort),
			"--override", "etcd.endpoints=" + strings.Join(endpoints, ","),
			"--override", "log.dirs=" + c.dirs[i-1]}
		for k, v := range brokerProps {
			argv = append(argv, "--override", k+"="+v)
		}
		for k, v := range c.tieredProps() {
			argv = append(argv, "--override", k+"="+v)
		}
		p := &proc{name: fmt.Sprintf("node %d", i), ns: nodeNS(i), argv: argv}
		c.nodes = append(c.nodes, p)
		p.start(t)
		t.Cleanup(func() { p.stop(syscall.SIGKILL) })
	}
	return c
}

// node is node id's process.
func (c *cluster) node(id int32) *proc { return c.nodes[id-1] }

// logsAround prints every process's lines within 2 s of at.
func (c *cluster) logsAround(at time.Time) string {
	var b strings.Builder
	for _, p := range append(slices.Clone(c.etcd), c.nodes...) {
		lines := p.around(at, 2*time.Second, 15)
		fmt.Fprintf(&b, "  --- %s, %d lines around %s:\n", p.name, len(lines), at.Format("15:04:05.000"))
		for _, l := range lines {
			b.WriteString("    " + l + "\n")
		}
	}
	return b.String()
}
