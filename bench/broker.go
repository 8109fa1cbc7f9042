package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// broker is one running broker process, samsa or Apache Kafka.
type broker struct {
	name     string
	addr     string
	tlsAddr  string // the SSL listener
	pid      int
	firstAck time.Duration // process start to the first acknowledged produce
	stop     func(grace time.Duration) error
	exited   <-chan struct{}
	logTail  func(n int) string
}

func (b *broker) running() bool {
	select {
	case <-b.exited:
		return false
	default:
		return true
	}
}

// firstAckTopic is produced to by the start-up probe (auto-created).
const firstAckTopic = "bench-first-ack"

// firstAck produces one record to addr as soon as the broker takes it,
// retrying every few milliseconds from the moment the process was started
// (t0), and returns the time from t0 to the acknowledgement. The client is
// kgo with its defaults (acks=all, idempotent) except short retry backoffs
// and the topic's auto-creation, so that the figure shows the broker's readiness, not the client's waits.
func firstAck(ctx context.Context, addr string, t0 time.Time) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(firstAckTopic),
		kgo.AllowAutoTopicCreation(), kgo.UnknownTopicRetries(-1),
		kgo.MetadataMinAge(10*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 5 * time.Millisecond }),
		kgo.DialTimeout(time.Second), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).FirstErr(); err != nil {
		return 0, fmt.Errorf("first produce: %w", err)
	}
	return time.Since(t0), nil
}

// startSamsa runs `samsa serve` with a fresh log dir under dir on free
// loopback ports (PLAINTEXT, and SSL with tls's key) and measures its start
// to first acknowledged produce. With profileOut set, bin is
// bench/pprofsamsa, which writes its profiles there; with cpus set, it runs
// under taskset(1) on those CPUs (GOMAXPROCS follows). overrides are more
// key=value settings.
func startSamsa(ctx context.Context, bin, dir, profileOut, cpus string, tls *tlsSetup, overrides ...string) (*broker, error) {
	ports, err := kafkaref.FreePorts(2)
	if err != nil {
		return nil, err
	}
	addr, tlsAddr := "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])
	logDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"serve", "--log-level", "warn"}
	if profileOut != "" {
		args = []string{"-out", profileOut}
	}
	// The first rebalance of a new group is not delayed, as kafkaref sets
	// for Kafka (ConsumerPerformance joins a fresh group every run).
	args = append(args,
		"--override", "listeners=PLAINTEXT://"+addr+",SSL://"+tlsAddr,
		"--override", "inter.broker.listener.name=PLAINTEXT",
		"--override", "log.dirs="+logDir,
		"--override", "group.initial.rebalance.delay.ms=0")
	args = append(args, tls.samsaArgs()...)
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	cmd := exec.Command(bin, args...)
	if cpus != "" {
		cmd = exec.Command("taskset", append([]string{"-c", cpus, bin}, args...)...) // taskset execs bin: same pid
	}
	cmd.Dir = dir
	t0 := time.Now()
	p, err := startProc("samsa", addr, filepath.Join(dir, "samsa.log"), cmd)
	if err != nil {
		return nil, err
	}
	b := &broker{name: "samsa", addr: addr, tlsAddr: tlsAddr, pid: p.pid(), stop: p.stop, exited: p.exited, logTail: p.logTail}
	b.firstAck, err = firstAck(ctx, addr, t0)
	if err != nil {
		_ = p.stop(10 * time.Second)
		return nil, fmt.Errorf("samsa: %w; log tail:\n%s", err, p.logTail(30))
	}
	return b, nil
}

// startKafka runs Apache Kafka (KRaft, one node, 1 GiB heap, an SSL listener
// with tls's key) with its log dir under dir and measures its JVM's start to
// first acknowledged produce; with cpus set, under taskset(1) on those CPUs.
func startKafka(ctx context.Context, libs, dir, cpus string, tls *tlsSetup) (*broker, error) {
	type ack struct {
		d   time.Duration
		err error
	}
	acked := make(chan ack, 1)
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	kb, err := kafkaref.Start(ctx, libs, kafkaref.Options{
		Dir:       dir,
		HeapMB:    1024,
		CPUs:      cpus,
		Props:     tls.props,
		Listeners: []string{"SSL"},
		Started: func(addr string) {
			t0 := time.Now()
			go func() {
				d, err := firstAck(actx, addr, t0)
				acked <- ack{d, err}
			}()
		},
	})
	if err != nil {
		return nil, err
	}
	b := &broker{name: "kafka", addr: kb.Addr, tlsAddr: kb.Listeners["SSL"], pid: kb.Pid(), stop: kb.Stop, exited: kb.Exited(),
		logTail: func(n int) string { return fileTail(kb.LogPath, n) }}
	a := <-acked
	if a.err != nil {
		_ = kb.Stop(10 * time.Second)
		return nil, fmt.Errorf("kafka: %w; log tail:\n%s", a.err, b.logTail(30))
	}
	b.firstAck = a.d
	return b, nil
}

func fileTail(path string, n int) string {
	out, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return kafkaref.Tail(out, n)
}

// buildTools compiles ./cmd/samsa (./bench/pprofsamsa when profiling) and
// ./cmd/samsa-bench of the module at root into dir.
func buildTools(ctx context.Context, root, dir string, profile bool) (samsa, samsaBench string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	broker := "./cmd/samsa"
	if profile {
		broker = "./bench/pprofsamsa"
	}
	for _, pkg := range []string{broker, "./cmd/samsa-bench"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, filepath.Base(pkg)), pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("go build %s: %w\n%s", pkg, err, kafkaref.Tail(out, 30))
		}
	}
	return filepath.Join(dir, filepath.Base(broker)), filepath.Join(dir, "samsa-bench"), nil
}
