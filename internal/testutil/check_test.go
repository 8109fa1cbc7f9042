package testutil

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

// fatalRecorder is a testing.TB whose Fatalf records instead of stopping.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

// Under -short (make check) a cluster of brokers is refused with the name
// to add to the Makefile's CHECK_SKIP; one broker is not a cluster.
func TestClusterRefusedUnderShort(t *testing.T) {
	was := flag.Lookup("test.short").Value.String()
	t.Cleanup(func() { flag.Set("test.short", was) })
	for _, short := range []bool{false, true} {
		if err := flag.Set("test.short", fmt.Sprint(short)); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 3} {
			r := &fatalRecorder{TB: t}
			refuseClusterInCheck(r, n)
			refused := r.msg != ""
			if refused != (short && n > 1) {
				t.Errorf("short=%v, %d brokers: refused=%v (%q)", short, n, refused, r.msg)
			}
			if refused && !strings.Contains(r.msg, "add TestClusterRefusedUnderShort to CHECK_SKIP") {
				t.Errorf("message %q does not name the test to skip", r.msg)
			}
		}
	}
}
