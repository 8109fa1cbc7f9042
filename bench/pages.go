package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// On a virtual machine whose balloon reports free pages to the host (free
// page reporting), a page freed for more than a moment is handed back, and
// the next write into it faults in the host: on this machine, writing 1 GB
// into the page cache cost 0.5 CPU-s/GB right after a 5 GB directory was
// deleted and 2.6 CPU-s/GB 20 s later, charged to whichever process writes.
// A broker measured after another broker's data was deleted would so write
// into warm pages, the first one into cold ones. The produce cases therefore
// start each broker on the same footing: free pages are held back from
// reporting for the run where the kernel lets it (page_reporting's
// min_free_ms), and each broker starts right after a scratch file of what
// it will write was written and deleted (warmPages).

const reportingMinFree = "/sys/module/page_reporting/parameters/min_free_ms"

// holdFreePages keeps freed pages from being reported for 100 s, when this
// kernel has the knob and we may set it, and returns what restores it and a
// line for the report.
func holdFreePages() (restore func(), note string) {
	old, err := os.ReadFile(reportingMinFree)
	if err != nil {
		return func() {}, ""
	}
	if err := os.WriteFile(reportingMinFree, []byte("100000"), 0o644); err != nil {
		return func() {}, fmt.Sprintf("free page reporting: %s could not be set (%v): produce CPU figures may include the host's page faults", reportingMinFree, err)
	}
	return func() { _ = os.WriteFile(reportingMinFree, old, 0o644) },
		fmt.Sprintf("free page reporting: freed pages held 100 s (%s, %s before) and warmed before each pinned broker", reportingMinFree, strings.TrimSpace(string(old)))
}

// warmPages writes and deletes a scratch file of n bytes in dir, so that
// the next n bytes written into the page cache land in pages the host backs.
func warmPages(dir string, n int64) error {
	f, err := os.CreateTemp(dir, "warm-pages-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1<<20)
	for off := int64(0); off < n; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf, off); err != nil {
			return fmt.Errorf("warm pages %s: %w", filepath.Base(f.Name()), err)
		}
	}
	return nil
}

// pinnedWrites is about what a pinned broker writes: the warm-up, the two
// produce cases and the compressed ones, with room for indexes and logs.
func (p scalePlan) pinnedWrites() int64 {
	n := p.pinnedBytes/8 + 256<<20
	if p.sections["pinned"] {
		n += 2 * p.pinnedBytes
	}
	if p.sections["compressed"] {
		n += 2 * p.compressBytes
	}
	return n
}
