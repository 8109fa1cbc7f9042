package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// brokerProc is samsa running as a child process, in its own process
// group so that stopping it reaches every process it started.
type brokerProc struct {
	name    string
	addr    string // host:port of the PLAINTEXT listener
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{} // closed when the process has been reaped
	waitErr error         // valid after exited is closed
}

// startProc starts cmd with stdout and stderr appended to logPath.
func startProc(name, addr, logPath string, cmd *exec.Cmd) (*brokerProc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Own process group (a terminal's Ctrl-C reaches only us; we stop the
	// broker ourselves), and SIGKILL if this process dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &brokerProc{name: name, addr: addr, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *brokerProc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM to the process group, waits up to grace for the exit,
// then SIGKILLs it. It reports whether the shutdown was clean.
func (p *brokerProc) stop(grace time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	pgid := p.pid()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, pgid)
	}
	return fmt.Errorf("%s did not stop within %v of SIGTERM and was killed", p.name, grace)
}

// logTail returns the last n lines of the broker's output.
func (p *brokerProc) logTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// memStat reads a "VmXXX:  N kB" field of /proc/<pid>/status, in bytes.
func memStat(pid int, field string) (int64, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, field+":") {
			continue
		}
		fs := strings.Fields(strings.TrimPrefix(line, field+":"))
		if len(fs) != 2 || fs[1] != "kB" {
			return 0, fmt.Errorf("unexpected %s line %q", field, line)
		}
		kb, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// userHZ is the unit of utime and stime in /proc/<pid>/stat; Linux fixes it
// at 100 for user space on every architecture we run on.
const userHZ = 100

// cpuTime returns the user+system CPU time consumed so far by all threads of
// the process.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU extracts utime+stime from the contents of /proc/<pid>/stat.
// The command name (field 2) may contain spaces and parentheses, so fields
// are counted from the last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat: no ')'")
	}
	fs := strings.Fields(string(b[i+1:]))
	// fs[0] is field 3 (state); utime is field 14, stime field 15.
	if len(fs) < 13 {
		return 0, fmt.Errorf("malformed /proc stat: %d fields after comm", len(fs))
	}
	ut, err := strconv.ParseUint(fs[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	st, err := strconv.ParseUint(fs[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return time.Duration(ut+st) * (time.Second / userHZ), nil
}
