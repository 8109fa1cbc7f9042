package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 1000; i++ {
		s = append(s, time.Duration(i))
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500}, {0.99, 990}, {0.999, 999}, {1, 1000}, {0, 1}} {
		if got := percentile(s, c.q); got != c.want {
			t.Errorf("percentile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

func TestProduceOptsRefuseBadFlags(t *testing.T) {
	for _, c := range []struct{ acks, linger string }{{"2", "default"}, {"all", "5"}, {"1", "-1ms"}} {
		if _, err := produceOpts(c.acks, c.linger); err == nil {
			t.Errorf("produceOpts(%q, %q): no error", c.acks, c.linger)
		}
	}
	for _, c := range []struct{ acks, linger string }{{"all", "default"}, {"1", "5ms"}, {"0", "0s"}} {
		if _, err := produceOpts(c.acks, c.linger); err != nil {
			t.Errorf("produceOpts(%q, %q): %v", c.acks, c.linger, err)
		}
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{nil, {"fetch"}, {"produce"}, {"fanin", "-records", "10"}, {"consume", "-topic", "t"}, {"produce", "-topic", "t", "-records", "1", "extra"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
		if !strings.Contains(errb.String(), "samsa-bench") && !strings.Contains(errb.String(), "flag") {
			t.Errorf("run(%q) printed no usage: %q", args, errb.String())
		}
	}
}

func TestFaninSeq(t *testing.T) {
	v := make([]byte, 100)
	v[7] = 41
	if i, err := faninSeq(v, 42); err != nil || i != 41 {
		t.Errorf("faninSeq = %d, %v; want 41", i, err)
	}
	for _, c := range []struct {
		v []byte
		n int
	}{{v, 41}, {v[:7], 42}, {nil, 1}, {[]byte{0xff, 0, 0, 0, 0, 0, 0, 0}, 1 << 30}} {
		if i, err := faninSeq(c.v, c.n); err == nil {
			t.Errorf("faninSeq(%x, %d) = %d, no error", c.v, c.n, i)
		}
	}
}

func TestFaninRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		size int
		rate float64
	}{{7, 1000}, {100, 0}} {
		// Checked before any dial: the broker address is never used.
		if _, err := fanin(t.Context(), "127.0.0.1:1", "t", 0, 10, c.size, c.rate, 0, 1); err == nil {
			t.Errorf("fanin with -size %d -rate %v: no error", c.size, c.rate)
		}
	}
}
