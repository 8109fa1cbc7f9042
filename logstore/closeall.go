package logstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
)

// CloseAll closes logs cleanly, as Close closes each, making what they
// write durable with one syncfs(2) per directory holding them (FS.SyncFS)
// instead of an fsync per file: a broker of 10,000 partitions made
// about six fsyncs and as many file creations for each. Each log writes
// what a clean close writes, without fsync, and closes; SyncFS makes the
// whole file system durable, data written since the last flush included;
// then each log gets its marker, not fsynced, as Close writes it:
// everything it vouches for is durable before it exists. A log whose
// write or SyncFS failed gets no marker, and its next Open recovers.
// Where SyncFS is unsupported, the logs of that directory are closed one
// by one with Close. It works on parallel logs at a time.
func CloseAll(logs []*Log, parallel int) error {
	var errs []error
	for _, g := range byParent(logs) {
		errs = append(errs, g.close(parallel))
	}
	return errors.Join(errs...)
}

// PrepareCloseAll is PrepareClose for every one of logs, with one
// syncfs(2) per directory holding them instead of an fsync per file: each
// log writes what a clean close would, without fsync, then SyncFS makes
// it durable, so that the CloseAll that follows has only what changed
// since to write. The logs stay open, and their appends may go on. Where
// SyncFS is unsupported, PrepareClose runs for each log of the directory.
func PrepareCloseAll(logs []*Log, parallel int) error {
	var errs []error
	for _, g := range byParent(logs) {
		errs = append(errs, g.prepare(parallel))
	}
	return errors.Join(errs...)
}

// logGroup is the logs of one directory (a broker's log.dirs entry),
// which SyncFS makes durable together.
type logGroup struct {
	dir  string
	logs []*Log
}

func byParent(logs []*Log) []logGroup {
	var out []logGroup
	at := map[string]int{}
	for _, l := range logs {
		parent := filepath.Dir(filepath.Clean(l.dir))
		i, ok := at[parent]
		if !ok {
			i = len(out)
			at[parent] = i
			out = append(out, logGroup{dir: parent})
		}
		out[i].logs = append(out[i].logs, l)
	}
	return out
}

// syncFS is SyncFS on the group's file system, through the FS of its
// first log.
func (g logGroup) syncFS() error {
	l := g.logs[0]
	if err := l.fs.SyncFS(l.dir); err != nil {
		return fmt.Errorf("logstore: %s: %w", g.dir, err)
	}
	return nil
}

func (g logGroup) close(parallel int) error {
	// First, what is dirty now (the appends since the last flush) goes
	// out while nothing waits on it, and SyncFS says whether it can.
	if err := g.syncFS(); errors.Is(err, ErrSyncFSUnsupported) {
		return eachParallel(g.logs, parallel, (*Log).Close)
	} else if err != nil {
		// A write-back error in this file system: SyncFS reports it
		// once, so none of these logs is vouched for.
		_ = eachParallel(g.logs, parallel, (*Log).Abandon)
		return err
	}
	written := make([]bool, len(g.logs))
	err := eachIndex(len(g.logs), parallel, func(i int) error {
		l := g.logs[i]
		now, err := l.closeFiles(closeWritten)
		// A log that failed before is closed as it stands, unvouched.
		written[i] = now && err == nil && l.failure() == nil
		return err
	})
	if serr := g.syncFS(); serr != nil {
		for _, l := range g.logs {
			l.release()
		}
		return errors.Join(err, serr)
	}
	merr := eachIndex(len(g.logs), parallel, func(i int) error {
		l := g.logs[i]
		defer l.release()
		if !written[i] {
			return nil
		}
		return l.markCleanLocked() // closed: nothing else touches it
	})
	return errors.Join(err, merr)
}

func (g logGroup) prepare(parallel int) error {
	if err := g.syncFS(); errors.Is(err, ErrSyncFSUnsupported) {
		return eachParallel(g.logs, parallel, (*Log).PrepareClose)
	} else if err != nil {
		return err
	}
	err := eachParallel(g.logs, parallel, func(l *Log) error {
		if err := l.lockAppend(); err != nil {
			return err
		}
		defer l.appendMu.Unlock()
		l.wg.Wait()
		return l.writeCleanStateLocked(false)
	})
	return errors.Join(err, g.syncFS())
}

// eachParallel runs f for every log, parallel at a time, and joins their
// errors.
func eachParallel(logs []*Log, parallel int, f func(*Log) error) error {
	return eachIndex(len(logs), parallel, func(i int) error { return f(logs[i]) })
}

func eachIndex(n, parallel int, f func(i int) error) error {
	var (
		errMu sync.Mutex
		errs  []error
		wg    sync.WaitGroup
		slots = make(chan struct{}, max(parallel, 1))
	)
	for i := range n {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := f(i); err != nil {
				errMu.Lock()
				errs = append(errs, err)
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
