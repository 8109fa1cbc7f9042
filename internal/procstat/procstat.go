// Package procstat reads a process's CPU time and memory figures from
// Linux's /proc: utime+stime of /proc/<pid>/stat (fields 14 and 15, in
// clock ticks of 1/100 s) and the "VmXXX:  N kB" lines of /proc/<pid>/status.
// bench and samsa-bench measure brokers with it.
package procstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat; Linux fixes it
// at 100 for user space on every architecture we run on.
const userHZ = 100

// CPUTime returns the user+system CPU time consumed so far by all threads of
// the process.
func CPUTime(pid int) (time.Duration, error) {
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
		return 0, errors.New("procstat: malformed /proc stat: no ')'")
	}
	fs := strings.Fields(string(b[i+1:]))
	// fs[0] is field 3 (state); utime is field 14, stime field 15.
	if len(fs) < 13 {
		return 0, fmt.Errorf("procstat: malformed /proc stat: %d fields after comm", len(fs))
	}
	ut, err := strconv.ParseUint(fs[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("procstat: utime: %w", err)
	}
	st, err := strconv.ParseUint(fs[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("procstat: stime: %w", err)
	}
	return time.Duration(ut+st) * (time.Second / userHZ), nil
}

// Mem reads a "VmXXX:  N kB" field of /proc/<pid>/status, in bytes.
func Mem(pid int, field string) (int64, error) {
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
			return 0, fmt.Errorf("procstat: unexpected %s line %q", field, line)
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
	return 0, fmt.Errorf("procstat: no %s in /proc/%d/status", field, pid)
}
