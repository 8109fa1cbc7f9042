package main

import (
	"errors"
	"syscall"
	"testing"

	"github.com/samsa-io/samsa/logstore"
)

func TestParseFaults(t *testing.T) {
	fs, err := parseFaults([]byte("# a full disk\nwrite,fsync sticky enospc path=.log\n\nrename\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 {
		t.Fatalf("%d faults, want 2: %+v", len(fs), fs)
	}
	if f := fs[0]; f.Ops != logstore.OpWrite|logstore.OpSync || !f.Sticky || !errors.Is(f.Err, syscall.ENOSPC) || f.Path != ".log" {
		t.Errorf("first fault %+v", f)
	}
	if f := fs[1]; f.Ops != logstore.OpRename || f.Sticky || f.Err != nil || f.Path != "" {
		t.Errorf("second fault %+v", f)
	}
	for _, bad := range []string{"scribble", "write loudly"} {
		if _, err := parseFaults([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
