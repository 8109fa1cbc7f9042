package logstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

const epochCheckpointName = "leader-epoch-checkpoint"

// epochEntry says: epoch's first offset in this log is start.
type epochEntry struct {
	epoch int32
	start int64
}

// epochCache is the leader-epoch cache of KIP-101: (epoch, start offset)
// pairs with both fields strictly ascending, persisted in Kafka's
// leader-epoch-checkpoint text format ("0\n<count>\n<epoch> <offset>\n...").
type epochCache struct {
	fs   FS
	path string

	mu      sync.RWMutex
	entries []epochEntry // guarded by mu
	// dirty: the checkpoint may not be durable (written by persistLazy,
	// deferred, or a write failed); unwritten: the file may not hold the
	// entries (deferWrite, or a write failed). Guarded by the append lock.
	dirty, unwritten bool
}

// loadEpochCache reads the checkpoint; a missing file is an empty cache,
// a malformed one is reported (the caller starts empty and logs it).
func loadEpochCache(fs FS, dir string) (*epochCache, error) {
	c := &epochCache{fs: fs, path: filepath.Join(dir, epochCheckpointName)}
	b, err := readFile(fs, c.path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	entries, err := parseEpochCheckpoint(b)
	if err != nil {
		return c, fmt.Errorf("%s: %w", c.path, err)
	}
	c.entries = entries
	return c, nil
}

func parseEpochCheckpoint(b []byte) ([]epochEntry, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	v, ok := line()
	if !ok || v != "0" {
		return nil, fmt.Errorf("bad version %q", v)
	}
	c, ok := line()
	n, err := strconv.Atoi(c)
	if !ok || err != nil || n < 0 || n > len(b) {
		return nil, fmt.Errorf("bad count %q", c)
	}
	entries := make([]epochEntry, 0, n)
	for i := 0; i < n; i++ {
		l, ok := line()
		if !ok {
			return nil, fmt.Errorf("expected %d entries, got %d", n, i)
		}
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("bad entry %q", l)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return nil, fmt.Errorf("bad entry %q", l)
		}
		if k := len(entries); k > 0 && (int32(e) <= entries[k-1].epoch || o < entries[k-1].start) {
			return nil, fmt.Errorf("entry %q not ascending", l)
		}
		entries = append(entries, epochEntry{epoch: int32(e), start: o})
	}
	return entries, nil
}

// persist writes the checkpoint atomically and durably. Caller holds the
// append lock.
func (c *epochCache) persist() error { return c.save(true) }

// save writes the checkpoint with its content fsynced before the rename,
// and the directory fsynced after it when syncDir is set (a clean
// shutdown fsyncs the directory once for all its files). Until one
// succeeds the cache stays dirty: a failed write is made again at the
// next flush or clean shutdown. Caller holds the append lock.
func (c *epochCache) save(syncDir bool) error {
	c.dirty, c.unwritten = true, true
	err := renameSynced(c.fs, c.path, c.encode())
	if err != nil {
		return err
	}
	c.unwritten = false
	return c.synced(syncDir)
}

// synced clears dirty once the checkpoint's content is durable, and its
// directory entry when syncDir is set (else the caller fsyncs the
// directory). Caller holds the append lock.
func (c *epochCache) synced(syncDir bool) error {
	if syncDir {
		if err := c.fs.SyncDir(filepath.Dir(c.path)); err != nil {
			return err
		}
	}
	c.dirty = false
	return nil
}

// persistLazy writes the checkpoint as persist does but without fsync, as
// Kafka writes it when an epoch starts (KAFKA-15046): a new leader or a
// follower meeting a new epoch writes thousands of them in a failover, and
// an fsync each made that take seconds. The next flush makes it durable
// (syncIfDirty) before the recovery point passes the batches it covers;
// what a power failure loses past the recovery point, recovery rebuilds
// from the batches it scans. Caller holds the append lock.
func (c *epochCache) persistLazy() error {
	c.dirty, c.unwritten = true, true
	if err := replaceFile(c.fs, c.path, c.encode()); err != nil {
		return err
	}
	c.unwritten = false
	return nil
}

// syncIfDirty makes a checkpoint that may not be durable (written lazily,
// or a write failed) durable, fsyncing the directory too when syncDir is
// set: one written already is fsynced where it is. Caller holds the
// append lock.
func (c *epochCache) syncIfDirty(syncDir bool) error {
	if !c.dirty {
		return nil
	}
	if c.unwritten {
		return c.save(syncDir)
	}
	if err := syncFile(c.fs, c.path); err != nil {
		return err
	}
	return c.synced(syncDir)
}

// deferWrite notes a change of the entries that the next flush, roll or
// clean close writes and makes durable (syncIfDirty, writeIfUnwritten),
// with nothing written now: see AssignEpoch and TruncateTo. Caller holds
// the append lock.
func (c *epochCache) deferWrite() { c.dirty, c.unwritten = true, true }

// writeIfUnwritten writes, without fsync, a checkpoint not written since
// its entries changed (see writeCleanStateLocked). Caller holds the
// append lock.
func (c *epochCache) writeIfUnwritten() error {
	if !c.unwritten {
		return nil
	}
	return c.persistLazy()
}

func (c *epochCache) encode() []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(c.entries))
	for _, e := range c.entries {
		fmt.Fprintf(&b, "%d %d\n", e.epoch, e.start)
	}
	return b.Bytes()
}

// assign records that epoch starts at start, as Kafka's
// LeaderEpochFileCache.assign: entries with an epoch >= epoch or a start
// offset >= start are replaced. It reports whether the cache changed.
func (c *epochCache) assign(epoch int32, start int64) bool {
	if epoch < 0 || start < 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if last.epoch == epoch && last.start <= start {
			return false
		}
	}
	i := len(c.entries)
	for i > 0 && (c.entries[i-1].epoch >= epoch || c.entries[i-1].start >= start) {
		i--
	}
	c.entries = append(c.entries[:i], epochEntry{epoch: epoch, start: start})
	return true
}

// latest returns the newest epoch, -1 when none.
func (c *epochCache) latest() int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n := len(c.entries); n > 0 {
		return c.entries[n-1].epoch
	}
	return -1
}

// endOffsetFor answers OffsetForLeaderEpoch as Kafka's
// LeaderEpochFileCache.endOffsetFor does.
func (c *epochCache) endOffsetFor(epoch int32, logEnd int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.entries)
	switch {
	case epoch < 0 || n == 0:
		return -1, -1
	case c.entries[n-1].epoch == epoch:
		return epoch, logEnd
	}
	// higher: first entry with epoch > requested.
	hi := 0
	for hi < n && c.entries[hi].epoch <= epoch {
		hi++
	}
	if hi == n {
		return -1, -1 // requested epoch is newer than any we know
	}
	if hi == 0 {
		return epoch, c.entries[0].start // older than the oldest we know
	}
	return c.entries[hi-1].epoch, c.entries[hi].start
}

// truncateFromEnd drops entries starting at or after end (the log was cut
// there). It reports whether the cache changed.
func (c *epochCache) truncateFromEnd(end int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := len(c.entries)
	for i > 0 && c.entries[i-1].start >= end {
		i--
	}
	changed := i != len(c.entries)
	c.entries = c.entries[:i]
	return changed
}

// truncateFromStart forgets epochs that ended before the new log start,
// keeping the one covering start with its start moved up to start.
func (c *epochCache) truncateFromStart(start int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0 // entries[:i] start at or below start
	for i < len(c.entries) && c.entries[i].start <= start {
		i++
	}
	if i == 0 {
		return false
	}
	keep := c.entries[i-1]
	if i == 1 && keep.start == start {
		return false
	}
	keep.start = start
	rest := append([]epochEntry{keep}, c.entries[i:]...)
	c.entries = rest
	return true
}

// clear forgets every epoch.
func (c *epochCache) clear() {
	c.mu.Lock()
	c.entries = nil
	c.mu.Unlock()
}

// snapshot returns a copy of the entries (tests, String).
func (c *epochCache) snapshot() []epochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]epochEntry(nil), c.entries...)
}
