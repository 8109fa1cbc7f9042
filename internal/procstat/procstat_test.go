package procstat

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// Fields after comm: state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime ...; comm holds ") (" to check that
	// parsing starts at the last ')'.
	stat := "1234 (odd) (name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 1 2 3\n"
	got, err := parseStatCPU([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * time.Second; got != want {
		t.Fatalf("cpu = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 5 0"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q) accepted malformed input", bad)
		}
	}
}

func TestOwnProcessStats(t *testing.T) {
	pid := os.Getpid()
	rss, err := Mem(pid, "VmRSS")
	if err != nil || rss <= 0 {
		t.Fatalf("VmRSS = %d, %v", rss, err)
	}
	hwm, err := Mem(pid, "VmHWM")
	if err != nil || hwm < rss {
		t.Fatalf("VmHWM = %d (VmRSS %d), %v", hwm, rss, err)
	}
	if _, err := Mem(pid, "VmNoSuchField"); err == nil {
		t.Fatal("memStat accepted an absent field")
	}
	// Burn a little CPU and see the counter move (it ticks every 10ms).
	before, err := CPUTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 1000000 {
			x ^= i
		}
		after, err := CPUTime(pid)
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
	}
	t.Fatalf("process CPU time did not grow in 5s of spinning (x=%d)", x)
}
