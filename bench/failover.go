package main

// The failover comparison (bench -failover): three brokers, samsa (three
// `samsa serve` processes on one etcd) and Apache Kafka (three KRaft nodes
// in combined mode, 512 MiB heap each), default broker settings, a topic
// of 6 partitions with 3 replicas and min.insync.replicas 2; one producer
// per partition writes acks=all continuously; the broker leading
// partition 0 is killed with SIGKILL. Reported: the time until every
// partition the dead broker led has a new leader in Metadata, and the
// longest gap between two acknowledgements of a partition across the
// kill (what a producer waits). The client is franz-go with its defaults
// except MetadataMinAge 100 ms, the Java client's retry.backoff.ms: with
// franz-go's own 5 s minimum every figure would read 5 s.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/procstat"
)

// failoverCluster is three brokers the failover case can kill.
type failoverCluster struct {
	addrs     []string
	httpAddrs []string // samsa's: metrics and /debug/pprof/
	kill      func(id int32)
	stop      func()
	// pids are the running brokers' processes.
	pids func() []int
	// restart stops every broker (SIGTERM) and starts them again on their
	// data, returning when the processes were started.
	restart func() (time.Time, error)
	// bounce stops broker i (0-based) with SIGTERM, returning how long
	// its clean shutdown took (to the process's exit) and the CPU time it
	// spent on it, and starts it again on its data.
	bounce func(i int) (stopped, error)
	// logs are the samsa brokers' log files, by position; nil for Kafka.
	logs []string
}

// stopped is one clean shutdown as bounce measured it.
type stopped struct {
	took time.Duration // SIGTERM to the process's exit
	cpu  time.Duration // the process's CPU time over the same span; -1 when unknown
}

type failoverResult struct {
	name     string
	elected  time.Duration // kill to every moved partition led by a live broker
	worstGap time.Duration // longest gap between acks of one partition across the kill
	err      error
}

func runFailover(ctx context.Context, cfg config, samsaBin string, withSamsa, withKafka bool) []failoverResult {
	var out []failoverResult
	if withSamsa {
		c, err := startSamsaCluster(ctx, samsaBin, filepath.Join(cfg.tmp, "failover-samsa"), "")
		r := failoverResult{name: "samsa", err: err}
		if err == nil {
			r.elected, r.worstGap, r.err = measureFailover(ctx, c)
			c.stop()
		}
		out = append(out, r)
	}
	if withKafka {
		c, err := startKafkaCluster(ctx, cfg.tools.libs, filepath.Join(cfg.tmp, "failover-kafka"))
		r := failoverResult{name: "kafka", err: err}
		if err == nil {
			r.elected, r.worstGap, r.err = measureFailover(ctx, c)
			c.stop()
		}
		out = append(out, r)
	}
	return out
}

// startKafkaCluster runs three Apache Kafka KRaft nodes in combined mode,
// 512 MiB heap each.
func startKafkaCluster(ctx context.Context, libs, dir string) (*failoverCluster, error) {
	o := kafkaref.Options{Dir: dir, HeapMB: 512}
	nodes, err := kafkaref.StartCluster(ctx, libs, 3, o)
	if err != nil {
		return nil, err
	}
	c := &failoverCluster{kill: func(id int32) { nodes[id-1].Kill() }, stop: func() {
		for _, n := range nodes {
			_ = n.Stop(30 * time.Second)
		}
	}}
	c.pids = func() []int {
		var out []int
		for _, n := range nodes {
			select {
			case <-n.Exited():
			default:
				out = append(out, n.Pid())
			}
		}
		return out
	}
	c.restart = func() (time.Time, error) {
		s0 := time.Now()
		c.stop()
		progress("  stopped (SIGTERM to exit) in %.1fs", time.Since(s0).Seconds())
		t0 := time.Now()
		for _, n := range nodes {
			if err := n.Relaunch(libs, o); err != nil {
				return t0, err
			}
		}
		return t0, nil
	}
	c.bounce = func(i int) (stopped, error) {
		t0 := time.Now()
		if err := nodes[i].Stop(10 * time.Minute); err != nil {
			return stopped{}, err
		}
		s := stopped{took: time.Since(t0), cpu: -1}
		return s, nodes[i].Relaunch(libs, o)
	}
	for _, n := range nodes {
		c.addrs = append(c.addrs, n.Addr)
	}
	return c, nil
}

// startSamsaCluster runs an etcd in this process and three samsa
// processes on it, with default settings, logging at level (warn when "").
func startSamsaCluster(ctx context.Context, bin, dir, level string) (*failoverCluster, error) {
	if level == "" {
		level = "warn"
	}
	e, err := controller.StartEmbedded(controller.EmbeddedConfig{Dir: filepath.Join(dir, "etcd"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	ports, err := kafkaref.FreePorts(6)
	if err != nil {
		e.Close()
		return nil, err
	}
	c := &failoverCluster{}
	cmds := make([]*exec.Cmd, 3)
	var mu sync.Mutex
	c.kill = func(id int32) {
		mu.Lock()
		defer mu.Unlock()
		if cmd := cmds[id-1]; cmd != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			cmds[id-1] = nil
		}
	}
	stopBrokers := func() {
		mu.Lock()
		defer mu.Unlock()
		for id, cmd := range cmds {
			if cmd != nil {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				_ = cmd.Wait()
				cmds[id] = nil
			}
		}
	}
	c.stop = func() {
		stopBrokers()
		e.Close()
	}
	c.pids = func() []int {
		mu.Lock()
		defer mu.Unlock()
		var out []int
		for _, cmd := range cmds {
			if cmd != nil {
				out = append(out, cmd.Process.Pid)
			}
		}
		return out
	}
	launch := func(i int) error {
		data := filepath.Join(dir, "node"+strconv.Itoa(i+1))
		if err := os.MkdirAll(data, 0o755); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, bin, "serve", "--log-level", level,
			"--override", "node.id="+strconv.Itoa(i+1),
			"--override", "listeners=PLAINTEXT://"+c.addrs[i],
			"--override", "log.dirs="+data,
			"--override", "etcd.endpoints="+strings.Join(e.Endpoints(), ","),
			// Profiles on the side (go tool pprof http://.../debug/pprof/profile).
			"--override", "samsa.http.listener="+c.httpAddrs[i],
			"--override", "samsa.http.pprof=true")
		logf, err := os.OpenFile(filepath.Join(data, "samsa.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		err = cmd.Start()
		logf.Close()
		if err != nil {
			return err
		}
		mu.Lock()
		cmds[i] = cmd
		mu.Unlock()
		return nil
	}
	c.restart = func() (time.Time, error) {
		s0 := time.Now()
		stopBrokers()
		progress("  stopped (SIGTERM to exit) in %.1fs", time.Since(s0).Seconds())
		t0 := time.Now()
		for i := range 3 {
			if err := launch(i); err != nil {
				return t0, err
			}
		}
		return t0, nil
	}
	c.bounce = func(i int) (stopped, error) {
		mu.Lock()
		cmd := cmds[i]
		cmds[i] = nil
		mu.Unlock()
		t0 := time.Now()
		s := stopped{cpu: -1}
		if cmd != nil {
			before, err := procstat.CPUTime(cmd.Process.Pid)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			if st := cmd.ProcessState; err == nil && st != nil {
				s.cpu = st.UserTime() + st.SystemTime() - before
			}
		}
		s.took = time.Since(t0)
		return s, launch(i)
	}
	for i := range 3 {
		c.logs = append(c.logs, filepath.Join(dir, "node"+strconv.Itoa(i+1), "samsa.log"))
		c.addrs = append(c.addrs, "127.0.0.1:"+strconv.Itoa(ports[i]))
		c.httpAddrs = append(c.httpAddrs, "127.0.0.1:"+strconv.Itoa(ports[3+i]))
	}
	progress("samsa cluster at %v, profiles at http://%v/debug/pprof/", c.addrs, c.httpAddrs)
	for i := range 3 {
		if err := launch(i); err != nil {
			c.stop()
			return nil, err
		}
	}
	if err := waitBrokers(ctx, c.addrs, 3); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func waitBrokers(ctx context.Context, addrs []string, n int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
		if err == nil {
			bs, err2 := kadm.NewClient(cl).ListBrokers(ctx)
			cl.Close()
			if err2 == nil && len(bs) >= n {
				return nil
			}
			err = err2
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("brokers not up: %v", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func measureFailover(ctx context.Context, c *failoverCluster) (elected, worstGap time.Duration, err error) {
	const topic, partitions = "bench-failover", 6
	admCl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...))
	if err != nil {
		return 0, 0, err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil {
		return 0, 0, err
	}
	leaders := func() (map[int32]int32, error) {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return nil, err
		}
		out := map[int32]int32{}
		for _, p := range md.Topics[topic].Partitions {
			if len(p.ISR) < 3 {
				return nil, fmt.Errorf("partition %d: isr %v", p.Partition, p.ISR)
			}
			out[p.Partition] = p.Leader
		}
		if len(out) != partitions {
			return nil, fmt.Errorf("%d partitions", len(out))
		}
		return out, nil
	}
	var before map[int32]int32
	for start := time.Now(); ; {
		if before, err = leaders(); err == nil {
			break
		}
		if time.Since(start) > time.Minute {
			return 0, 0, err
		}
		time.Sleep(100 * time.Millisecond)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	acks := map[int32][]time.Time{}
	var wg sync.WaitGroup
	for p := range int32(partitions) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerLinger(0), kgo.MetadataMinAge(100*time.Millisecond), kgo.RecordRetries(1<<30))
			if err != nil {
				return
			}
			defer cl.Close()
			for pctx.Err() == nil {
				if cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("x")}).FirstErr() == nil {
					mu.Lock()
					acks[p] = append(acks[p], time.Now())
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(3 * time.Second) // steady state
	victim := before[0]
	killed := time.Now()
	c.kill(victim)
	var moved []int32
	for p, l := range before {
		if l == victim {
			moved = append(moved, p)
		}
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		done := err == nil
		if done {
			for _, p := range moved {
				if l := md.Topics[topic].Partitions[p].Leader; l == victim || l < 0 {
					done = false
				}
			}
		}
		if done {
			elected = time.Since(killed)
			break
		}
		if time.Since(killed) > 2*time.Minute {
			return 0, 0, fmt.Errorf("partitions of broker %d not led after 2 min", victim)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(5 * time.Second) // writes resume everywhere
	cancel()
	wg.Wait()
	for _, ts := range acks {
		for i := 1; i < len(ts); i++ {
			if ts[i].After(killed) && ts[i-1].Before(killed.Add(time.Second)) {
				worstGap = max(worstGap, ts[i].Sub(ts[i-1]))
			}
		}
	}
	for p := range int32(partitions) {
		if !slices.ContainsFunc(acks[p], func(t time.Time) bool { return t.After(killed.Add(elected)) }) {
			return elected, worstGap, fmt.Errorf("partition %d took no write after the failover", p)
		}
	}
	return elected, worstGap, nil
}

func printFailover(w io.Writer, rs []failoverResult) {
	fmt.Fprintln(w, "failover: 3 brokers, 6 partitions RF3 min.insync.replicas 2, acks=all, the leader of partition 0 killed with SIGKILL")
	fmt.Fprintf(w, "%-8s %22s %30s\n", "broker", "new leaders elected", "longest producer wait (ack gap)")
	for _, r := range rs {
		if r.err != nil {
			fmt.Fprintf(w, "%-8s error: %v\n", r.name, r.err)
			continue
		}
		fmt.Fprintf(w, "%-8s %22v %30v\n", r.name, r.elected.Round(time.Millisecond), r.worstGap.Round(time.Millisecond))
	}
}
