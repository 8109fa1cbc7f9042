package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// brokerProps are set on both brokers: the errors scenario needs
// auto-creation off, and groups need not wait for more members.
var brokerProps = map[string]string{
	"auto.create.topics.enable":        "false",
	"group.initial.rebalance.delay.ms": "0",
}

func main() {
	if err := mainErr(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		var fe failedError
		if !errors.As(err, &fe) {
			fmt.Fprintln(os.Stderr, "matrix:", err)
		}
		os.Exit(1)
	}
}

type failedError int

func (f failedError) Error() string { return strconv.Itoa(int(f)) + " cells failed" }

func mainErr(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	reference := fs.Bool("reference", false, "run against Apache Kafka 4.x (from Maven) instead of samsa")
	readme := fs.Bool("readme", false, "rewrite the README's compatibility section with the table")
	clients := fs.String("clients", "", "run only the clients whose name matches this `regexp`")
	samsaBin := fs.String("samsa", "", "the samsa `binary` to run (default: go build ./cmd/samsa)")
	bootstrap := fs.String("bootstrap", "", "use a running broker at `host:port` instead of starting one")
	parallel := fs.Int("parallel", 3, "clients run at once")
	serve := fs.Bool("serve", false, "only start the broker, print its address, and wait for SIGINT")
	fetch := fs.Bool("fetch-kafka", false, "only resolve Apache Kafka's jars and its LocalTieredStorage (make java-deps) and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		return err
	}
	if *fetch {
		libs, err := kafkaref.Libs(ctx, root)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "matrix: Apache Kafka %s jars in %s\n", kafkaref.Version(libs), libs)
		// LocalTieredStorage, for the compat tests' tiered reference broker.
		tiered, err := kafkaref.TieredLibs(ctx, root)
		if err == nil {
			fmt.Fprintf(stdout, "matrix: Apache Kafka's LocalTieredStorage in %s\n", tiered)
		}
		return err
	}
	var re *regexp.Regexp
	if *clients != "" {
		if re, err = regexp.Compile(*clients); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp("", "samsa-matrix-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	jobs := selectJobs(allJobs(root), re)
	name, addr := "", *bootstrap
	var sec *security
	if addr == "" {
		if sec, err = newSecurity(filepath.Join(tmp, "security")); err != nil {
			return err
		}
	}
	var listeners map[string]string
	registry := ""
	switch {
	case addr != "":
		name = "the broker at " + addr
		fmt.Fprintln(stderr, "matrix: without the security scenarios (a broker the harness did not start)")
		jobs = withoutRegistry(withoutSecurity(jobs))
	case *reference:
		jobs = withoutRegistry(jobs)
		libs, err := kafkaref.Libs(ctx, root)
		if err != nil {
			return err
		}
		nodes, err := kafkaref.StartCluster(ctx, libs, matrixBrokers, kafkaref.Options{Dir: filepath.Join(tmp, "kafka"), HeapMB: 512,
			Props: sec.withBrokerProps(brokerProps), Listeners: slices.Sorted(maps.Values(secListeners))})
		if err != nil {
			return err
		}
		for _, b := range nodes {
			defer b.Stop(30 * time.Second)
		}
		name, addr, listeners = "Apache Kafka "+kafkaref.Version(libs), nodes[0].Addr, nodes[0].Listeners
	default:
		s, err := startSamsa(ctx, root, *samsaBin, filepath.Join(tmp, "samsa"), sec)
		if err != nil {
			return err
		}
		defer s.stop()
		name, addr, listeners, registry = "samsa "+s.version, s.addr, s.listeners, s.registry
	}
	if sec != nil {
		if err := sec.setup(ctx, addr, byScenario(listeners)); err != nil {
			return fmt.Errorf("security set-up: %w", err)
		}
	}
	fmt.Fprintf(stderr, "matrix: %s at %s\n", name, addr)
	if *serve {
		fmt.Fprintln(stdout, addr)
		<-ctx.Done()
		return nil
	}

	t := runJobs(ctx, jobs, *parallel, newEnv(root, addr, registry, tmp, *reference, sec, jobs), stderr)
	t.Broker = name
	pass, fail := t.Counts()
	fmt.Fprintf(stdout, "\nCompatibility against %s (%v):\n\n%s\n%d passed, %d failed\n", name, t.Took.Round(time.Second), t.Markdown(), pass, fail)
	if *readme {
		if re != nil || *bootstrap != "" {
			return errors.New("-readme records full runs only (no -clients, no -bootstrap)")
		}
		target := "make compat"
		if *reference {
			target = "make compat-reference"
		}
		body := fmt.Sprintf("Against %s, `%s`, %s:\n\n%s", name, target, time.Now().UTC().Format("2006-01-02"), t.Markdown())
		if err := rewriteReadme(filepath.Join(root, "README.md"), *reference, body); err != nil {
			return err
		}
	}
	if fail > 0 {
		return failedError(fail)
	}
	return nil
}

// matrixBrokers is how many brokers the matrix runs samsa with: a cluster,
// so that transactions, groups and the internal topics' replication cross
// the secured inter-broker listener (security.brokerProps).
const matrixBrokers = 3

// samsaProc is a cluster of samsa brokers run as child processes, each a
// broker and a voter of the controller quorum (controller.quorum.voters).
type samsaProc struct {
	nodes     []*samsaNode
	addr      string            // node 1's PLAINTEXT listener
	listeners map[string]string // node 1's secured listeners: name → address
	registry  string            // node 2's schema registry URL
	version   string
}

type samsaNode struct {
	cmd    *exec.Cmd
	addr   string
	exited chan struct{}
	log    *tailBuffer
}

// startSamsa runs `samsa serve` for matrixBrokers nodes on free loopback
// ports with data in dir, building the binary first unless bin names one,
// and returns once every node lists every broker.
func startSamsa(ctx context.Context, root, bin, dir string, sec *security) (*samsaProc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if bin == "" {
		bin = filepath.Join(dir, "samsa")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/samsa")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build ./cmd/samsa: %w\n%s", err, out)
		}
	}
	names := slices.Sorted(maps.Values(secListeners))
	per := 3 + len(names) // PLAINTEXT, CONTROLLER, the registry, the secured ones
	ports, err := kafkaref.FreePorts(per * matrixBrokers)
	if err != nil {
		return nil, err
	}
	addr := func(node, i int) string { return "127.0.0.1:" + strconv.Itoa(ports[node*per+i]) }
	var voters []string
	for n := range matrixBrokers {
		voters = append(voters, strconv.Itoa(n+1)+"@"+addr(n, 1))
	}
	// The clients use node 2's registry: its writes go to the writer
	// (the _schemas partition's leader) wherever that is.
	p := &samsaProc{addr: addr(0, 0), listeners: map[string]string{}, registry: "http://" + addr(1, 2), version: "(dev)"}
	if out, err := exec.CommandContext(ctx, bin, "version").Output(); err == nil {
		if f := strings.Fields(string(out)); len(f) > 1 {
			p.version = f[1] // "samsa VERSION (goX os/arch)"
		}
	}
	protocols := "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
	for _, n := range names {
		protocols += "," + n + ":" + n
	}
	props := sec.withBrokerProps(brokerProps)
	for n := range matrixBrokers {
		listeners := "PLAINTEXT://" + addr(n, 0) + ",CONTROLLER://" + addr(n, 1)
		for i, name := range names {
			listeners += "," + name + "://" + addr(n, 3+i)
			if n == 0 {
				p.listeners[name] = addr(n, 3+i)
			}
		}
		args := []string{"serve",
			"--override", "node.id=" + strconv.Itoa(n+1),
			"--override", "process.roles=broker,controller",
			"--override", "controller.quorum.voters=" + strings.Join(voters, ","),
			"--override", "controller.listener.names=CONTROLLER",
			"--override", "listener.security.protocol.map=" + protocols,
			"--override", "listeners=" + listeners,
			"--override", "log.dirs=" + filepath.Join(dir, "node"+strconv.Itoa(n+1), "data"),
			"--override", "samsa.schema.registry.listener=" + addr(n, 2),
		}
		for _, k := range sortedKeys(props) {
			args = append(args, "--override", k+"="+props[k])
		}
		nd := &samsaNode{addr: addr(n, 0), exited: make(chan struct{}), log: &tailBuffer{}}
		nd.cmd = exec.Command(bin, args...)
		nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
		nd.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := nd.cmd.Start(); err != nil {
			p.stop()
			return nil, err
		}
		go func() { _ = nd.cmd.Wait(); close(nd.exited) }()
		p.nodes = append(p.nodes, nd)
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, nd := range p.nodes {
		for {
			err := probe(ctx, nd.addr, matrixBrokers)
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				p.stop()
				return nil, fmt.Errorf("samsa did not answer at %s: %v\n%s", nd.addr, err, nd.log.Tail(20))
			}
			select {
			case <-nd.exited:
				p.stop()
				return nil, fmt.Errorf("samsa at %s exited: %s", nd.addr, nd.log.Tail(20))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return p, nil
}

// stop stops every node (SIGTERM, then SIGKILL after 30 s).
func (p *samsaProc) stop() {
	for _, nd := range p.nodes {
		_ = nd.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, nd := range p.nodes {
		select {
		case <-nd.exited:
		case <-time.After(30 * time.Second):
			_ = nd.cmd.Process.Kill()
			<-nd.exited
		}
	}
}

// probe wants a Metadata answer listing brokers brokers.
func probe(ctx context.Context, addr string, brokers int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	if len(m.Brokers) < brokers {
		return fmt.Errorf("%d of %d brokers in metadata", len(m.Brokers), brokers)
	}
	return nil
}
