package compat

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// procMember is a group member in a process of its own: compat/java's
// GroupMember in a JVM (the Java 4.4 client make java-deps builds), or
// compat/python's group_member.py (librdkafka).
type procMember struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when the process has exited
	once  sync.Once
}

func startJavaMember(t *testing.T, addr, group, topic, name, protocol string, l *grpLedger, props ...string) *procMember {
	t.Helper()
	return startProcMember(t, name, l, javaMemberCmd(t, "GroupMember", append([]string{addr, group, topic, name, protocol}, props...)...))
}

// javaMemberCmd runs compat/java's class samsa.compat.<class> (a group or
// share member, built by make java-deps) with args, in a small JVM.
func javaMemberCmd(t *testing.T, class string, args ...string) *exec.Cmd {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "compat", "java", "kafka4", "target")
	if _, err := os.Stat(filepath.Join(dir, "classes", "samsa", "compat", class+".class")); err != nil {
		t.Fatalf("compat/java is not built (make java-deps): %v", err)
	}
	cp := filepath.Join(dir, "classes") + string(os.PathListSeparator) + filepath.Join(dir, "lib", "*")
	return exec.Command("java", append([]string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp,
		"samsa.compat." + class}, args...)...)
}

// startPythonMember is compat/python/group_member.py (librdkafka) as a
// group member.
func startPythonMember(t *testing.T, addr, group, topic, name, protocol string, l *grpLedger) *procMember {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "compat", "python", "group_member.py")
	return startProcMember(t, name, l, exec.Command(venvPython(t, root), "-u", script, addr, group, topic, name, protocol))
}

// startProcMember runs cmd, a group member program that prints
// "R partition offset" for each record it reads and "C partition offset"
// for each commit, leaves on a "leave" line on stdin, and records its
// lines in l.
func startProcMember(t *testing.T, name string, l *grpLedger, cmd *exec.Cmd) *procMember {
	t.Helper()
	return startProcLines(t, name, cmd, func(f []string) {
		if len(f) != 3 || (f[0] != "R" && f[0] != "C") {
			return
		}
		p, _ := strconv.Atoi(f[1])
		o, _ := strconv.ParseInt(f[2], 10, 64)
		l.mu.Lock()
		defer l.mu.Unlock()
		if f[0] == "R" {
			k := tpo{int32(p), o}
			l.reads[k] = append(l.reads[k], name)
			return
		}
		if l.committed[name] == nil {
			l.committed[name] = map[int32]int64{}
		}
		l.committed[name][int32(p)] = max(l.committed[name][int32(p)], o)
	})
}

// startProcLines runs cmd, a member program that leaves on a "leave" line
// on stdin, and gives line the fields of each line it prints.
func startProcLines(t *testing.T, name string, cmd *exec.Cmd, line func([]string)) *procMember {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &testWriter{t: t, prefix: name + ": "}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &procMember{name: name, cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line(strings.Fields(sc.Text()))
		}
		_ = cmd.Wait()
	}()
	return m
}

// leave asks the member to close its consumer (a clean leave) and waits.
func (m *procMember) leave() {
	m.once.Do(func() {
		fmt.Fprintln(m.stdin, "leave")
		select {
		case <-m.done:
		case <-time.After(60 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.done
		}
	})
}

// crash kills the JVM: no leave, no more heartbeats.
func (m *procMember) crash() {
	m.once.Do(func() {
		_ = m.cmd.Process.Kill()
		<-m.done
	})
}

func (m *procMember) close() { m.crash() }

// testWriter logs a process's stderr lines through t.
type testWriter struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		w.t.Log(w.prefix + line)
	}
	return len(b), nil
}

// classicGroupStable is a groupScenario stable check for a classic group.
func classicGroupStable(t *testing.T, adm *kadm.Client, group string, n int) func() error {
	return func() error {
		dg, err := adm.DescribeGroups(testCtx(t, 10*time.Second), group)
		if err != nil {
			return err
		}
		g := dg[group]
		if g.State != "Stable" || len(g.Members) != n {
			return fmt.Errorf("group %s with %d members", g.State, len(g.Members))
		}
		return nil
	}
}
