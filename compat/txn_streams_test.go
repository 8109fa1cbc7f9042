package compat

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testutil"
)

var wcWords = []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"}

// wcLines are lines from..to-1 of the word count's input, and their counts
// are added to want.
func wcLines(topic string, from, to int, want map[string]int64) []*kgo.Record {
	var rs []*kgo.Record
	for i := from; i < to; i++ {
		var ws []string
		for j := 0; j <= i%5; j++ {
			w := wcWords[(i*3+j*5)%len(wcWords)]
			want[w]++
			ws = append(ws, w)
		}
		rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint("line-", i)), Value: []byte(strings.Join(ws, " "))})
	}
	return rs
}

// streamsInstance is one JVM running compat/java's exactly_once_v2 word
// count until it is killed.
type streamsInstance struct {
	cmd     *exec.Cmd
	running chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	out     strings.Builder
}

// jvmFlags are extra -D flags (-Dsamsa.group.protocol=streams).
func startStreams(t *testing.T, addr, prefix, stateDir string, jvmFlags ...string) *streamsInstance {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "compat", "java", "kafka4", "target")
	cp := filepath.Join(dir, "classes") + ":" + filepath.Join(dir, "lib", "*")
	args := append([]string{"-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dsamsa.state.dir=" + stateDir}, jvmFlags...)
	cmd := exec.Command("java", append(args, "-cp", cp, "samsa.compat.Main", addr, prefix, "kafka4:wc-eos")...)
	cmd.Dir = t.TempDir()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	s := &streamsInstance{cmd: cmd, running: make(chan struct{}), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			s.mu.Lock()
			s.out.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if sc.Text() == "RUNNING" {
				once.Do(func() { close(s.running) })
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(s.kill)
	return s
}

func (s *streamsInstance) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return kafkaref.Tail([]byte(s.out.String()), 30)
}

// kill ends the JVM with SIGKILL, as a crash does.
func (s *streamsInstance) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

func (s *streamsInstance) awaitRunning(t *testing.T) {
	t.Helper()
	select {
	case <-s.running:
	case <-s.done:
		t.Fatalf("the streams instance exited:\n%s", s.output())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the streams instance did not reach RUNNING:\n%s", s.output())
	}
}

// Kafka Streams word count with processing.guarantee=exactly_once_v2, its
// instance killed (SIGKILL) in the middle of the input and restarted: at
// read_committed, each word's counts are 1, 2, ... n exactly, every
// increment once and none repeated, n its true count.
func TestStreamsExactlyOnce(t *testing.T) {
	t.Parallel()
	n := testutil.StartBroker(t, map[string]string{
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
		"group.initial.rebalance.delay.ms":                            "0",
	})
	adm := newAdmin(t, n.Addr())
	const prefix = "wceos"
	in, out := prefix+"-eos-in", prefix+"-eos-out"
	createTopic(t, adm, in, 3, nil)
	createTopic(t, adm, out, 3, nil)
	cl := newKgo(t, n.Addr())
	want := map[string]int64{}
	produceAll(t, cl, wcLines(in, 0, 400, want)...)

	state := t.TempDir()
	a := startStreams(t, n.Addr(), prefix, state)
	a.awaitRunning(t)
	// Let it get part of the way, then crash it.
	wc := newWordCountReader(t, n.Addr(), out)
	wc.awaitSome(t)
	produceAll(t, cl, wcLines(in, 400, 800, want)...)
	a.kill()

	b := startStreams(t, n.Addr(), prefix, state)
	b.awaitRunning(t)
	wc.awaitExact(t, want, 3*time.Minute, b.output)
}

func lastCounts(counts map[string][]int64) map[string]int64 {
	out := map[string]int64{}
	for w, cs := range counts {
		if len(cs) > 0 {
			out[w] = cs[len(cs)-1]
		}
	}
	return out
}
