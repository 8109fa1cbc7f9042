package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/samsa-io/samsa/logstore"
)

// samsa.test.fault.file: the fault suite (internal/chaos) makes a running
// `samsa serve` fail its log directories' file operations by writing a
// file that the process reads every faultPoll.
const faultPoll = 100 * time.Millisecond

var faultOps = map[string]logstore.FaultOp{
	"write": logstore.OpWrite, "fsync": logstore.OpSync, "fsyncdir": logstore.OpSyncDir, "syncfs": logstore.OpSyncFS,
	"rename": logstore.OpRename, "create": logstore.OpCreate, "remove": logstore.OpRemove,
	"truncate": logstore.OpTruncate, "read": logstore.OpRead,
}

// parseFaults reads the fault file's lines: `ops [sticky] [eio|enospc]
// [path=SUBSTRING]`, ops comma-separated; blank lines and # comments are
// skipped.
func parseFaults(b []byte) ([]logstore.Fault, error) {
	var out []logstore.Fault
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var ft logstore.Fault
		for _, name := range strings.Split(f[0], ",") {
			op, ok := faultOps[name]
			if !ok {
				return nil, fmt.Errorf("fault %q: unknown operation %q", line, name)
			}
			ft.Ops |= op
		}
		for _, w := range f[1:] {
			switch {
			case w == "sticky":
				ft.Sticky = true
			case w == "eio":
				ft.Err = syscall.EIO
			case w == "enospc":
				ft.Err = syscall.ENOSPC
			case strings.HasPrefix(w, "path="):
				ft.Path = strings.TrimPrefix(w, "path=")
			default:
				return nil, fmt.Errorf("fault %q: unknown word %q", line, w)
			}
		}
		out = append(out, ft)
	}
	return out, nil
}

// watchFaultFile applies the faults of file to fs whenever its contents
// change, until ctx ends.
func watchFaultFile(ctx context.Context, file string, fs *logstore.FaultFS, log *slog.Logger) {
	var last []byte
	applied := false
	t := time.NewTicker(faultPoll)
	defer t.Stop()
	for {
		b, err := os.ReadFile(file)
		if err != nil {
			b = nil
		}
		if !applied || !bytes.Equal(b, last) {
			faults, err := parseFaults(b)
			if err != nil {
				log.Error("samsa.test.fault.file not applied", "file", file, "err", err)
			} else {
				fs.Clear()
				for _, f := range faults {
					fs.Inject(f)
				}
				if applied || len(faults) > 0 {
					log.Warn("samsa.test.fault.file: log file system faults set", "file", file, "faults", len(faults))
				}
			}
			last, applied = b, true
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
