package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// jobTimeout bounds one external client program.
const jobTimeout = 5 * time.Minute

// failAll is the result of a job that could not run at all.
func failAll(rows []row, format string, args ...any) []Result {
	msg := fmt.Sprintf(format, args...)
	var out []Result
	for _, r := range rows {
		for _, s := range r.scenarios {
			out = append(out, Result{Client: r.name, Scenario: s, Error: msg})
		}
	}
	return out
}

// runProgram runs cmd (told where the security settings and the registry
// are), which prints one JSON Result per line, and returns the
// results; when the program ends without a result for a cell, that cell's
// error carries the program's exit status and the tail of its stderr.
func runProgram(ctx context.Context, e *env, rows []row, cmd *exec.Cmd) []Result {
	var stderr tailBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return failAll(rows, "%v", err)
	}
	cmd.Env = os.Environ()
	if e.sec != nil {
		cmd.Env = append(cmd.Env, secEnvVar+"="+e.sec.dir)
	}
	if e.registry != "" {
		cmd.Env = append(cmd.Env, regEnvVar+"="+e.registry)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return failAll(rows, "cannot start %s: %v", filepath.Base(cmd.Path), err)
	}
	var res []Result
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			stderr.Write(append(line, '\n'))
			continue
		}
		var r Result
		if err := json.Unmarshal(line, &r); err != nil {
			stderr.Write(append(line, '\n'))
			continue
		}
		res = append(res, r)
	}
	werr := cmd.Wait()
	have := map[string]bool{}
	for _, r := range res {
		have[r.Client+"/"+r.Scenario] = true
	}
	for _, rw := range rows {
		for _, s := range rw.scenarios {
			if !have[rw.name+"/"+s] {
				status := "exited"
				if werr != nil {
					status = werr.Error()
				}
				if ctx.Err() != nil {
					status += " (" + ctx.Err().Error() + ")"
				}
				res = append(res, Result{Client: rw.name, Scenario: s,
					Error: fmt.Sprintf("no result: %s %s; stderr: %s", filepath.Base(cmd.Path), status, stderr.Tail(6))})
			}
		}
	}
	return res
}

// tailBuffer keeps the last 64 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 64<<10 {
		t.buf = t.buf[len(t.buf)-64<<10:]
	}
	return len(p), nil
}

// Tail returns the last n non-empty lines, joined by " | ".
func (t *tailBuffer) Tail(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(string(t.buf), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 0 {
		return "(empty)"
	}
	return strings.Join(lines, " | ")
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// cellArgs renders rows as the client:scenario arguments of a program.
func cellArgs(rows []row) []string {
	var a []string
	for _, r := range rows {
		for _, s := range r.scenarios {
			a = append(a, r.name+":"+s)
		}
	}
	return a
}

// javaVersion reads the version of artifact from the jar in dir
// (artifact-VERSION.jar); "" when there is none.
func javaVersion(dir, artifact string) string {
	m, _ := filepath.Glob(filepath.Join(dir, artifact+"-*.jar"))
	for _, p := range m {
		v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), artifact+"-"), ".jar")
		if v != "" && v[0] >= '0' && v[0] <= '9' {
			return v
		}
	}
	return ""
}

// javaJob runs compat/java/<module>'s Main in one JVM for all of rows.
func javaJob(root, module string, rows []row) job {
	return job{rows: rows, run: func(ctx context.Context, e *env) []Result {
		dir := filepath.Join(e.root, "compat", "java", module, "target")
		if _, err := os.Stat(filepath.Join(dir, "classes", "samsa", "compat", "Main.class")); err != nil {
			return failAll(rows, "compat/java/%s is not built (make java-deps): %v", module, err)
		}
		ctx, cancel := context.WithTimeout(ctx, jobTimeout)
		defer cancel()
		cp := filepath.Join(dir, "classes") + string(os.PathListSeparator) + filepath.Join(dir, "lib", "*")
		args := append([]string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp,
			"samsa.compat.Main", e.bootstrap, e.prefix}, cellArgs(rows)...)
		cmd := exec.CommandContext(ctx, "java", args...)
		cmd.Dir = e.tmp
		return runProgram(ctx, e, rows, cmd)
	}}
}

// pythonJob runs compat/python/clients.py in the .venv for rows.
func pythonJob(rows []row) job {
	return job{rows: rows, run: func(ctx context.Context, e *env) []Result {
		py := filepath.Join(e.root, ".venv", "bin", "python")
		if _, err := os.Stat(py); err != nil {
			return failAll(rows, "no virtualenv (make python-deps): %v", err)
		}
		ctx, cancel := context.WithTimeout(ctx, jobTimeout)
		defer cancel()
		args := append([]string{"-u", filepath.Join(e.root, "compat", "python", "clients.py"), e.bootstrap, e.prefix}, cellArgs(rows)...)
		cmd := exec.CommandContext(ctx, py, args...)
		cmd.Dir = e.tmp
		return runProgram(ctx, e, rows, cmd)
	}}
}

// nodeJob runs compat/node/clients.js for rows.
func nodeJob(rows []row) job {
	return job{rows: rows, run: func(ctx context.Context, e *env) []Result {
		dir := filepath.Join(e.root, "compat", "node")
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "kafkajs")); err != nil {
			return failAll(rows, "kafkajs is not installed (make node-deps): %v", err)
		}
		ctx, cancel := context.WithTimeout(ctx, jobTimeout)
		defer cancel()
		args := append([]string{filepath.Join(dir, "clients.js"), e.bootstrap, e.prefix}, cellArgs(rows)...)
		cmd := exec.CommandContext(ctx, "node", args...)
		cmd.Dir = e.tmp
		return runProgram(ctx, e, rows, cmd)
	}}
}

// kafkaLibs resolves Apache Kafka's jars once per env.
func (e *env) kafkaLibs(ctx context.Context) (string, error) {
	e.libsOnce.Do(func() { e.libs, e.libsErr = kafkaref.Libs(ctx, e.root) })
	return e.libs, e.libsErr
}
