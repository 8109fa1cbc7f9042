package main

import (
	"fmt"
	"os"
	"os/exec"
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
