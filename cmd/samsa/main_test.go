package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestMain lets a test run this binary's main in a child process, and
// otherwise fails the tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	if os.Getenv("SAMSA_TEST_RUN_MAIN") == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

func TestParseServe(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(file, []byte("num.partitions=3\nlog.retention.hours=24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		env   []string
		check func(*config.Props) bool
	}{
		{"defaults", nil, nil, func(p *config.Props) bool { return p.Int32("num.partitions") == 1 && p.NodeID() == 1 }},
		{"config file", []string{"--config", file}, nil, func(p *config.Props) bool { return p.Int32("num.partitions") == 3 }},
		{"config file with =", []string{"--config=" + file}, nil, func(p *config.Props) bool { return p.Int32("num.partitions") == 3 }},
		{"positional file", []string{file}, nil, func(p *config.Props) bool { return p.Int32("num.partitions") == 3 }},
		{"override beats env beats file", []string{"-config", file, "--override", "num.partitions=7"}, []string{"KAFKA_NUM_PARTITIONS=5", "KAFKA_LOG_RETENTION_HOURS=2"},
			func(p *config.Props) bool { return p.Int32("num.partitions") == 7 && p.RetentionMs() == 2*3600*1000 }},
		{"env", nil, []string{"KAFKA_NODE_ID=4", "KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://kafka:9092"}, func(p *config.Props) bool {
			adv, err := p.AdvertisedListeners()
			return p.NodeID() == 4 && err == nil && adv[0].Host == "kafka"
		}},
		{"etcd endpoints flag", []string{"--etcd-endpoints", "http://127.0.0.1:2379,http://127.0.0.1:2381"}, nil, func(p *config.Props) bool {
			return len(p.EtcdEndpoints()) == 2
		}},
		{"repeated overrides", []string{"--override", "node.id=9", "--override", "log.dirs=/x,/y"}, nil, func(p *config.Props) bool {
			return p.NodeID() == 9 && len(p.LogDirs()) == 2
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := parseServe(tt.args, tt.env, io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(opts.props) {
				t.Fatalf("unexpected properties: %v", opts.props.Explicit())
			}
		})
	}
}

func TestParseServeErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"unknown override key", []string{"--override", "foo.bar=1"}, nil, []string{`unknown property "foo.bar"`}},
		{"unknown env key", nil, []string{"KAFKA_FOO_BAR=1"}, []string{`unknown property "foo.bar"`, "KAFKA_FOO_BAR"}},
		{"malformed value", []string{"--override", "num.partitions=many"}, nil, []string{`"many"`, `"num.partitions"`}},
		{"override without =", []string{"--override", "num.partitions"}, nil, []string{"key=value"}},
		{"missing file", []string{"--config", "/nonexistent/server.properties"}, nil, []string{"/nonexistent/server.properties"}},
		{"unknown flag", []string{"--bogus"}, nil, []string{"bogus"}},
		{"bad log level", []string{"--log-level", "loud"}, nil, []string{"--log-level"}},
		{"extra arguments", []string{"a.properties", "b.properties"}, nil, []string{"unexpected arguments"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseServe(tt.args, tt.env, io.Discard, io.Discard)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := parseServe([]string{"-h"}, nil, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

func TestRun(t *testing.T) {
	tests := []struct {
		args       []string
		code       int
		out, err   string
		notInError string
	}{
		{args: []string{"version"}, code: 0, out: "samsa dev"},
		{args: []string{"help"}, code: 0, out: "samsa serve"},
		{args: nil, code: 2, err: "usage:"},
		{args: []string{"frobnicate"}, code: 2, err: `samsa: unknown command "frobnicate"`},
		{args: []string{"serve", "--override", "foo.bar=1"}, code: 2, err: `samsa: config: unknown property "foo.bar" (--override)`},
		{args: []string{"serve", "--override", "foo.bar=1", "--override", "num.partitions=x"}, code: 2, err: "\nsamsa: config: invalid value \"x\" for property \"num.partitions\""},
		// Below Kafka 4.4's minimum, which refuses to start with it too.
		{args: []string{"serve", "--override", "log.segment.bytes=1048575"}, code: 2, err: `samsa: config: invalid value "1048575" for property "log.segment.bytes" (--override): Value must be at least 1048576`},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(tt.args, nil, &stdout, &stderr, make(chan os.Signal))
		if code != tt.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tt.args, code, tt.code, stderr.String())
		}
		if !strings.Contains(stdout.String(), tt.out) || !strings.Contains(stderr.String(), tt.err) {
			t.Errorf("%q: stdout %q stderr %q; want %q and %q", tt.args, stdout.String(), stderr.String(), tt.out, tt.err)
		}
	}
}

// syncBuffer collects a child's log lines for several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) add(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(line + "\n")
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var addrRE = regexp.MustCompile(`msg="samsa serving".* addr=(\S+)`)

// readLog collects a broker's log lines from r until r ends (then eof is
// closed), and sends the address of its "samsa serving" line on addr.
func readLog(r io.Reader) (log *syncBuffer, addr <-chan string, eof <-chan struct{}) {
	log = new(syncBuffer)
	addrCh := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			log.add(sc.Text())
			if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addrCh <- m[1]:
				default: // a second listener: the first address serves
				}
			}
		}
	}()
	return log, addrCh, done
}

// startChild runs "samsa serve" in a child process and returns it with
// the address it serves on.
func startChild(t *testing.T, dataDir string) (*exec.Cmd, string, *syncBuffer, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve",
		"--override", "listeners=PLAINTEXT://127.0.0.1:0",
		"--override", "log.dirs="+dataDir)
	cmd.Env = append(os.Environ(), "SAMSA_TEST_RUN_MAIN=1")
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log, addrCh, eof := readLog(pr)
	// The child's stderr is read until the test closes the pipe (a test
	// that stopped the child waits for eof) or the cleanup does.
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		_ = pw.Close()
		<-eof
	})
	select {
	case addr := <-addrCh:
		return cmd, addr, log, eof
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		_ = pw.Close()
		<-eof
		t.Fatalf("broker did not start; its log:\n%s", log.String())
	}
	return nil, "", nil, nil
}

// SIGTERM shuts the broker down cleanly with status 0, and it starts again
// on the same directories.
func TestServeStopsOnSIGTERM(t *testing.T) {
	dataDir := t.TempDir()
	for round := 0; round < 2; round++ {
		cmd, addr, log, eof := startChild(t, dataDir)
		// Write to a topic, so the next start has a log to open.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation())
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sigterm", Value: []byte{byte(round)}}).FirstErr(); err != nil {
			t.Fatalf("round %d: produce: %v", round, err)
		}
		cl.Close()
		cancel()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Fatalf("round %d: exit: %v; log:\n%s", round, err, log.String())
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: no exit 60s after SIGTERM", round)
		}
		_ = cmd.Stderr.(*io.PipeWriter).Close()
		<-eof
		if !strings.Contains(log.String(), `msg=stopped`) {
			t.Fatalf("round %d: no clean stop in log:\n%s", round, log.String())
		}
		// After a clean stop the next start needs no recovery scan.
		if strings.Contains(log.String(), "recovered log after an unclean shutdown") {
			t.Fatalf("round %d: a log was recovered after a clean shutdown:\n%s", round, log.String())
		}
	}
}

// A broker that cannot start (its port is taken) exits with status 2 and
// "samsa: <error>".
func TestServeStartupError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var stdout, stderr bytes.Buffer
	code := run([]string{"serve", "--log-level", "error",
		"--override", "listeners=PLAINTEXT://" + l.Addr().String(),
		"--override", "log.dirs=" + t.TempDir()}, nil, &stdout, &stderr, make(chan os.Signal))
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr %q", code, stderr.String())
	}
	if !strings.HasPrefix(stderr.String(), "samsa: ") || !strings.Contains(stderr.String(), l.Addr().String()) {
		t.Fatalf("stderr %q", stderr.String())
	}
}

// SIGKILL loses nothing that was acknowledged: the records are in the page
// cache, and the next start recovers the log and serves every one of them.
func TestServeSIGKILLKeepsAcknowledged(t *testing.T) {
	dataDir := t.TempDir()
	cmd, addr, log, eof := startChild(t, dataDir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "killed", Key: []byte(strconv.Itoa(i)), Value: []byte("value-" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v; log:\n%s", err, log.String())
	}
	cl.Close()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	_ = cmd.Stderr.(*io.PipeWriter).Close()
	<-eof

	_, addr, log, _ = startChild(t, dataDir)
	if !strings.Contains(log.String(), "recovered log after an unclean shutdown") {
		t.Errorf("no recovery scan after SIGKILL; log:\n%s", log.String())
	}
	cl, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("killed"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after SIGKILL: read %d of %d acknowledged records; log:\n%s", len(seen), n, log.String())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != "value-"+string(r.Key) {
				t.Fatalf("record %s has value %q", r.Key, r.Value)
			}
			seen[string(r.Key)] = true
		})
	}
}

// TestCLICommandsAreWired: samsa topic ... reaches the CLI (internal/cli
// has the CLI's own tests).
func TestCLICommandsAreWired(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"topic", "create", "wired", "--bootstrap-server", n.Addr()}, nil, &stdout, &stderr, make(chan os.Signal)); code != 0 {
		t.Fatalf("samsa topic create: exit %d: %s", code, stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"cluster", "info", "--bootstrap-server", n.Addr()}, nil, &stdout, &stderr, make(chan os.Signal)); code != 0 || !strings.Contains(stdout.String(), "TOPICS      1") {
		t.Fatalf("samsa cluster info: exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
}
