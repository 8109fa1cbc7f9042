package poll

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

func TestEventuallyReturnsOnceMet(t *testing.T) {
	calls := 0
	Eventually(t, 5*time.Second, func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}
}

// recorder is a testing.TB that records Fatalf instead of stopping the
// test; Fatalf ends the calling goroutine as testing's does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestEventuallyFailsWithTheLastError(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		Eventually(r, 50*time.Millisecond, func() error {
			calls++
			return errors.New("attempt " + fmt.Sprint(calls))
		})
	}()
	<-done
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before the 50ms timeout", took)
	}
	want := fmt.Sprintf("condition not met after 50ms: attempt %d", calls)
	if r.msg != want {
		t.Fatalf("failed with %q, want %q", r.msg, want)
	}
}
