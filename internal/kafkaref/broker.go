package kafkaref

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Options configures Start.
type Options struct {
	// Dir holds the node's server.properties and its log dir (Dir/data);
	// required. The caller removes it.
	Dir string
	// HeapMB is the JVM heap (-Xms and -Xmx); 1024 when zero.
	HeapMB int
	// Props are extra server properties; they override the defaults Start
	// writes (except that Broker.Addr still names the listener Start chose).
	Props map[string]string
	// Stderr receives the broker's stdout and stderr (log4j2 at WARN); when
	// nil they go to Dir/kafka.log.
	Stderr io.Writer
	// Listeners are more listeners, each named by its security protocol
	// (SSL, SASL_PLAINTEXT, SASL_SSL), on free loopback ports; their
	// addresses are in Broker.Listeners. Their settings (keys, SASL
	// mechanisms, JAAS) go in Props.
	Listeners []string
	// CPUs, when set, runs the JVM under taskset(1) with this CPU list
	// ("0", "0-1"): a benchmark pins the broker to a core of its own, and
	// the JVM then sizes its GC and compiler threads to it.
	CPUs string
	// ClassPath are more directories whose jars the broker's JVM loads
	// after libs' (TieredLibs' for LocalTieredStorage).
	ClassPath []string
	// Started, when set, is called with the PLAINTEXT address right after
	// the broker's JVM has been started, before Start waits for it to
	// answer (a benchmark times start-up from there).
	Started func(addr string)
}

// JVMOpts are the GC settings of Kafka's own start scripts
// (kafka-server-start.sh, kafka-run-class.sh), without the heap.
var JVMOpts = []string{
	"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
	"-Djava.awt.headless=true",
}

// Broker is one running Apache Kafka node.
type Broker struct {
	Addr       string            // 127.0.0.1:port of the PLAINTEXT listener
	Controller string            // 127.0.0.1:port of the CONTROLLER listener
	Listeners  map[string]string // Options.Listeners' names → 127.0.0.1:port
	Dir        string            // Options.Dir
	LogPath    string            // Dir/kafka.log, or "" when Options.Stderr took the output
	ClusterID  string

	cmd     *exec.Cmd
	logFile *os.File
	exited  chan struct{}
	waitErr error
}

// Start formats a fresh KRaft combined-mode node (broker and controller, node
// id 1) in o.Dir on free loopback ports, starts it, and waits until it
// answers Metadata listing itself, until ctx ends (two minutes at most when
// ctx has no deadline). On error nothing is left running.
func Start(ctx context.Context, libs string, o Options) (*Broker, error) {
	if o.Dir == "" {
		return nil, errors.New("kafkaref: Options.Dir is required")
	}
	if m, _ := filepath.Glob(filepath.Join(libs, brokerJarGlob)); len(m) == 0 {
		return nil, errNoLibs
	}
	if o.HeapMB <= 0 {
		o.HeapMB = 1024
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := FreePorts(2 + len(o.Listeners))
	if err != nil {
		return nil, err
	}
	b := &Broker{
		Addr:       "127.0.0.1:" + strconv.Itoa(ports[0]),
		Controller: "127.0.0.1:" + strconv.Itoa(ports[1]),
		Listeners:  map[string]string{},
		Dir:        o.Dir,
		exited:     make(chan struct{}),
	}
	for i, name := range o.Listeners {
		b.Listeners[name] = "127.0.0.1:" + strconv.Itoa(ports[2+i])
	}
	if b.ClusterID, err = ClusterID(); err != nil {
		return nil, err
	}
	propsPath := filepath.Join(o.Dir, "server.properties")
	props := renderProps(serverProps(b.Addr, b.Controller, filepath.Join(o.Dir, "data"), withListeners(b.Addr, b.Controller, o.Props, b.Listeners)))
	if err := os.WriteFile(propsPath, []byte(props), 0o644); err != nil {
		return nil, err
	}

	if err := format(ctx, libs, b.ClusterID, propsPath, "--standalone"); err != nil {
		return nil, err
	}
	if err := b.launch(libs, o, propsPath); err != nil {
		return nil, err
	}
	if err := b.waitReady(ctx); err != nil {
		_ = b.Stop(10 * time.Second)
		return nil, err
	}
	return b, nil
}

// format runs kafka-storage.sh format on a node's properties.
func format(ctx context.Context, libs, clusterID, propsPath string, extra ...string) error {
	fctx, fcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer fcancel()
	cmd := Java(fctx, libs, []string{"-Xmx256m"}, "kafka.tools.StorageTool",
		append([]string{"format", "-t", clusterID, "-c", propsPath}, extra...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kafkaref: kafka storage format: %w\n%s", err, Tail(out, 20))
	}
	return nil
}

// launch starts the formatted node's JVM.
func (b *Broker) launch(libs string, o Options, propsPath string) error {
	var err error
	args := nodeArgs(libs, o.HeapMB, propsPath, o.ClassPath...)
	cmd := exec.Command("java", args...)
	if o.CPUs != "" {
		// taskset execs java: the pid stays the JVM's.
		cmd = exec.Command("taskset", append([]string{"-c", o.CPUs, "java"}, args...)...)
	}
	_ = writeLog4j2(libs)
	cmd.Dir = o.Dir
	out := o.Stderr
	if out == nil {
		b.LogPath = filepath.Join(o.Dir, "kafka.log")
		if b.logFile, err = os.OpenFile(b.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return err
		}
		out = b.logFile
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so that a terminal's Ctrl-C reaches only the
	// caller, which stops the broker; SIGKILL if the caller dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		if b.logFile != nil {
			b.logFile.Close()
		}
		return fmt.Errorf("kafkaref: start kafka: %w", err)
	}
	b.cmd = cmd
	if o.Started != nil {
		o.Started(b.Addr)
	}
	go func() {
		b.waitErr = cmd.Wait()
		if b.logFile != nil {
			b.logFile.Close()
		}
		close(b.exited)
	}()
	return nil
}

// nodeArgs are the JVM's arguments for a node on propsPath.
func nodeArgs(libs string, heapMB int, propsPath string, classPath ...string) []string {
	heap := strconv.Itoa(heapMB) + "m"
	opts := append([]string{"-Xmx" + heap, "-Xms" + heap}, JVMOpts...)
	return javaArgs(libs, opts, "kafka.Kafka", []string{propsPath}, classPath...)
}

// LocalTieredStorageClass is Apache Kafka's RemoteStorageManager for its
// own tests, which keeps remote segments in a local directory (TieredLibs
// resolves its jar).
const LocalTieredStorageClass = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"

// TieredProps are the server properties of a single node with tiered
// storage on (KIP-405): LocalTieredStorage keeping the remote log under
// dir, Kafka's default TopicBasedRemoteLogMetadataManager with its
// internal topic on the one node, and a remote log manager that copies
// and deletes every 100 ms. Start it with TieredLibs' directory in
// Options.ClassPath.
func TieredProps(dir string) map[string]string {
	return map[string]string{
		"remote.log.storage.system.enable":      "true",
		"remote.log.storage.manager.class.name": LocalTieredStorageClass,
		// remote.log.storage.manager.impl.prefix is rsm.config. by default;
		// LocalTieredStorage keeps its files in <dir>/kafka-tiered-storage.
		"rsm.config.dir": dir,
		// The manager's clients reach the node through this listener.
		"remote.log.metadata.manager.listener.name":                "PLAINTEXT",
		"rlmm.config.remote.log.metadata.topic.replication.factor": "1",
		"rlmm.config.remote.log.metadata.topic.num.partitions":     "1",
		"remote.log.manager.task.interval.ms":                      "100",
	}
}

// serverProps returns the properties of a single combined-mode node, with
// extra applied over them.
func serverProps(addr, ctrl, logDir string, extra map[string]string) map[string]string {
	p := map[string]string{
		"process.roles":                                    "broker,controller",
		"node.id":                                          "1",
		"controller.quorum.bootstrap.servers":              ctrl,
		"listeners":                                        "PLAINTEXT://" + addr + ",CONTROLLER://" + ctrl,
		"advertised.listeners":                             "PLAINTEXT://" + addr,
		"controller.listener.names":                        "CONTROLLER",
		"inter.broker.listener.name":                       "PLAINTEXT",
		"listener.security.protocol.map":                   "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs":                                         logDir,
		"num.partitions":                                   "1",
		"offsets.topic.replication.factor":                 "1",
		"transaction.state.log.replication.factor":         "1",
		"transaction.state.log.min.isr":                    "1",
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
		"group.initial.rebalance.delay.ms":                 "0",
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// withListeners adds extra listeners (name → address, each name its own
// security protocol) to the listener properties serverProps writes, then
// applies props over them.
func withListeners(addr, ctrl string, props, listeners map[string]string) map[string]string {
	if len(listeners) == 0 {
		return props
	}
	names := slices.Sorted(maps.Keys(listeners))
	l, a, m := []string{"PLAINTEXT://" + addr, "CONTROLLER://" + ctrl}, []string{"PLAINTEXT://" + addr}, []string{"CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"}
	for _, n := range names {
		l = append(l, n+"://"+listeners[n])
		a = append(a, n+"://"+listeners[n])
		m = append(m, n+":"+n)
	}
	out := map[string]string{
		"listeners":                      strings.Join(l, ","),
		"advertised.listeners":           strings.Join(a, ","),
		"listener.security.protocol.map": strings.Join(m, ","),
	}
	maps.Copy(out, props)
	return out
}

// renderProps writes props in Java .properties syntax, sorted by key, with
// the characters that syntax treats specially escaped.
func renderProps(props map[string]string) string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	for _, k := range keys {
		sb.WriteString(escapeProp(k, true))
		sb.WriteByte('=')
		sb.WriteString(escapeProp(props[k], false))
		sb.WriteByte('\n')
	}
	return sb.String()
}

func escapeProp(s string, key bool) string {
	var sb strings.Builder
	for i, r := range s {
		switch {
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case key && (r == '=' || r == ':' || r == ' '):
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case (r == ' ' && i == 0) || ((r == '#' || r == '!') && i == 0):
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&sb, `\u%04x\u%04x`, r1, r2)
		case r < 0x20 || r > 0x7e:
			fmt.Fprintf(&sb, `\u%04x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// waitReady polls with Metadata until the node lists a broker.
func (b *Broker) waitReady(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	var lastErr error
	for {
		select {
		case <-b.exited:
			return fmt.Errorf("kafkaref: kafka exited before it answered Metadata (%v)%s", b.waitErr, b.tailNote())
		default:
		}
		if lastErr = probe(ctx, b.Addr); lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkaref: kafka did not answer Metadata (last error: %v): %w%s", lastErr, ctx.Err(), b.tailNote())
		case <-b.exited:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (b *Broker) tailNote() string {
	if b.LogPath == "" {
		return ""
	}
	out, err := os.ReadFile(b.LogPath)
	if err != nil {
		return ""
	}
	return "; log tail:\n" + Tail(out, 30)
}

// probe asks addr for Metadata and wants at least one broker in the answer.
func probe(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0),
		kgo.DialTimeout(time.Second), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	m, err := kadm.NewClient(cl).BrokerMetadata(pctx)
	if err != nil {
		return err
	}
	if len(m.Brokers) == 0 {
		return errors.New("metadata lists no brokers")
	}
	return nil
}

// Pid is the JVM's process id.
func (b *Broker) Pid() int { return b.cmd.Process.Pid }

// Exited is closed once the process has exited and been reaped.
func (b *Broker) Exited() <-chan struct{} { return b.exited }

// Err is the process's exit status once Exited is closed.
func (b *Broker) Err() error {
	select {
	case <-b.exited:
		return b.waitErr
	default:
		return nil
	}
}

// Stop sends SIGTERM to the broker's process group, waits up to grace for it
// to exit, then SIGKILLs it, and waits. It returns an error when the broker
// had to be killed (or did not die even then); nil for a clean stop or a
// broker that had already exited.
func (b *Broker) Stop(grace time.Duration) error {
	select {
	case <-b.exited:
		return nil
	default:
	}
	pgid := b.Pid()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-b.exited:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-b.exited:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("kafkaref: kafka (pid %d) did not exit after SIGKILL", pgid)
	}
	return fmt.Errorf("kafkaref: kafka did not stop within %v of SIGTERM and was killed", grace)
}

// FreePorts returns n distinct loopback TCP ports that were free a moment ago.
func FreePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
