package logstore

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Partitions spread over several log directories (JBOD) as Kafka's
// LogManager places them: a new one in the directory holding the fewest,
// an existing one where it is; a directory of an older topic of the same
// name goes first.
func TestOpenPartitionAcrossLogDirs(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	id := [16]byte{1, 2, 3}
	var pl Placer
	var logs []*Log
	for p := range int32(4) {
		l, err := pl.OpenPartition(dirs, "t", p, id, DefaultConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	per := map[string]int{}
	for _, l := range logs {
		per[filepath.Dir(l.Dir())]++
	}
	if per[dirs[0]] != 2 || per[dirs[1]] != 2 {
		t.Fatalf("partitions per directory %v, want 2 and 2", per)
	}
	for _, l := range logs {
		if got, ok := ReadPartitionMetadata(l.Dir()); !ok || got != id {
			t.Fatalf("%s: partition.metadata %x %v", l.Dir(), got, ok)
		}
		l.Close()
	}
	// Reopened where it is, not moved.
	l, err := pl.OpenPartition([]string{dirs[1], dirs[0]}, "t", 0, id, DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Dir() != logs[0].Dir() {
		t.Fatalf("reopened in %s, was in %s", l.Dir(), logs[0].Dir())
	}
	l.Close()
	// A topic of the same name with another id starts empty.
	old := logs[1].Dir()
	if err := os.WriteFile(filepath.Join(old, "marker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = pl.OpenPartition(dirs, "t", 1, [16]byte{9}, DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := os.Stat(filepath.Join(old, "marker")); !os.IsNotExist(err) {
		t.Fatalf("the old topic's directory was kept: %v", err)
	}
	found := ListPartitionDirs(dirs)
	if len(found) != 4 {
		t.Fatalf("ListPartitionDirs found %d, want 4: %+v", len(found), found)
	}
}

// New partitions opened at once (a broker opens the logs of a new topic
// several at a time) alternate over the log directories as those opened
// one after another do: each open sees the directories the others chose.
// Without the Placer's lock every round put most of them in the first.
func TestOpenPartitionsAtOnceAlternate(t *testing.T) {
	for round := range 10 {
		dirs := []string{t.TempDir(), t.TempDir()}
		var pl Placer
		const n = 16
		logs := make([]*Log, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for p := range int32(n) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				logs[p], errs[p] = pl.OpenPartition(dirs, "t", p, [16]byte{1}, DefaultConfig(), nil)
			}()
		}
		close(start)
		wg.Wait()
		per := map[string]int{}
		for p, l := range logs {
			if errs[p] != nil {
				t.Fatal(errs[p])
			}
			per[filepath.Dir(l.Dir())]++
			l.Close()
		}
		if per[dirs[0]] != n/2 || per[dirs[1]] != n/2 {
			t.Fatalf("round %d: %d partitions opened at once went %d and %d, want %d and %d",
				round, n, per[dirs[0]], per[dirs[1]], n/2, n/2)
		}
	}
}

func TestHighWatermarkCheckpoint(t *testing.T) {
	l := coreOpen(t, t.TempDir(), coreConfig())
	coreAppend(t, l, 10, 1, 10)
	if hw := l.SavedHighWatermark(); hw != 0 {
		t.Fatalf("saved hw %d with none saved, want the log start 0", hw)
	}
	if err := l.SaveHighWatermark(7); err != nil {
		t.Fatal(err)
	}
	if hw := l.SavedHighWatermark(); hw != 7 {
		t.Fatalf("saved hw %d, want 7", hw)
	}
	if err := l.SaveHighWatermark(99); err != nil {
		t.Fatal(err)
	}
	if hw := l.SavedHighWatermark(); hw != 10 {
		t.Fatalf("saved hw %d past the log end, want it capped at 10", hw)
	}
	if _, err := os.Stat(filepath.Join(l.Dir(), hwCheckpointFile+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
}

// A new partition's log opens without an fsync (creating 10,000 of them
// waited for three each): partition.metadata is written at once and made
// durable at the next flush, and a clean close syncs it too.
func TestNewPartitionOpensWithoutFsync(t *testing.T) {
	fs := NewFaultFS(nil)
	cfg := DefaultConfig()
	cfg.FS = fs
	dirs := []string{t.TempDir()}
	id := [16]byte{7}
	var pl Placer
	fs.Inject(Fault{Ops: OpSync | OpSyncDir, Sticky: true})
	l, err := pl.OpenPartition(dirs, "t", 0, id, cfg, nil)
	if err != nil {
		t.Fatalf("OpenPartition of a new partition with fsync failing: %v", err)
	}
	if got, ok := ReadPartitionMetadata(l.Dir()); !ok || got != id {
		t.Fatalf("partition.metadata %x %v", got, ok)
	}
	// The flush makes it durable: with its fsync failing, the flush fails.
	fs.Clear()
	fs.Inject(Fault{Ops: OpSync, Path: partitionMetadataFile})
	if err := l.Flush(); err == nil {
		t.Fatal("Flush did not fsync partition.metadata")
	}
	l.Abandon()

	fs.Clear()
	l, err = pl.OpenPartition(dirs, "t", 1, id, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	fs.Inject(Fault{Ops: OpSync, Path: partitionMetadataFile})
	l.Close()
	if fs.Injected() != 2 {
		t.Fatalf("%d fsyncs of partition.metadata failed, want the flush's and the close's", fs.Injected())
	}
	// A partition reopened after a clean close fsyncs the removal of its
	// clean-shutdown marker before anything is written.
	fs.Clear()
	l, err = pl.OpenPartition(dirs, "t", 2, id, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fs.Inject(Fault{Ops: OpSyncDir, Path: PartitionDirName("t", 2)})
	if _, err := pl.OpenPartition(dirs, "t", 2, id, cfg, nil); err == nil {
		t.Fatal("reopening a cleanly closed log did not fsync its directory")
	}
}

// A cordoned directory (KIP-1066) takes no new partition while another
// is open, keeps the partitions it has (reopened there), takes new ones
// again once uncordoned, and takes them when every directory is
// cordoned (the first one, as Kafka's LogManager falls back).
func TestCordonedLogDirTakesNoNewPartition(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	var pl Placer
	open := func(p int32) string {
		t.Helper()
		l, err := pl.OpenPartition(dirs, "t", p, [16]byte{1}, DefaultConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return filepath.Dir(l.Dir())
	}
	if got := open(0); got != dirs[0] {
		t.Fatalf("partition 0 in %s, want %s", got, dirs[0])
	}
	pl.SetCordoned(dirs[:1])
	for p := range int32(3) {
		want := dirs[1]
		if p == 0 {
			want = dirs[0] // already there: stays
		}
		if got := open(p); got != want {
			t.Fatalf("partition %d with %s cordoned in %s, want %s", p, dirs[0], got, want)
		}
	}
	pl.SetCordoned(nil)
	if got := open(3); got != dirs[0] {
		t.Fatalf("partition 3 after uncordoning in %s, want %s (the emptier)", got, dirs[0])
	}
	pl.SetCordoned(dirs)
	if got := open(4); got != dirs[0] {
		t.Fatalf("partition 4 with every directory cordoned in %s, want the first, %s", got, dirs[0])
	}
}
