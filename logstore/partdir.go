package logstore

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// A partition's directory, topic-N under one of the broker's log
// directories (log.dirs), holds beside the segments two small files that
// logstore owns and writes atomically (file fsync, rename, directory
// fsync):
//
//	partition.metadata            "version: 0\ntopic_id: <22 base64url chars>\n"
//	                              (Kafka's, KIP-516): the topic the log belongs to
//	high-watermark-checkpoint     "<offset>\n": the high watermark last saved
const (
	partitionMetadataFile = "partition.metadata"
	hwCheckpointFile      = "high-watermark-checkpoint"
)

// PartitionDirName is the directory name of partition p of a topic.
func PartitionDirName(topic string, p int32) string { return topic + "-" + strconv.Itoa(int(p)) }

// ParsePartitionDirName splits a directory name made by PartitionDirName;
// ok is false for any other name.
func ParsePartitionDirName(name string) (topic string, p int32, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || n < 0 {
		return "", 0, false
	}
	return name[:i], int32(n), true
}

// ReadPartitionMetadata returns the topic id a partition directory's
// partition.metadata names; ok is false without a readable one.
func ReadPartitionMetadata(dir string) (id [16]byte, ok bool) {
	return readPartitionMetadata(OS, dir)
}

func readPartitionMetadata(fs FS, dir string) (id [16]byte, ok bool) {
	b, err := readFile(fs, filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		return id, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		v, found := strings.CutPrefix(line, "topic_id: ")
		if !found {
			continue
		}
		v = strings.TrimSpace(v)
		n, err := base64.RawURLEncoding.Decode(id[:], []byte(v))
		return id, err == nil && n == 16 && len(v) == 22
	}
	return id, false
}

// WritePartitionMetadata writes partition.metadata naming topic id into
// dir, atomically.
func WritePartitionMetadata(dir string, id [16]byte) error {
	return writePartitionMetadata(OS, dir, id)
}

func writePartitionMetadata(fs FS, dir string, id [16]byte) error {
	return writeFileAtomic(fs, filepath.Join(dir, partitionMetadataFile), partitionMetadata(id))
}

// partitionMetadata is the content of partition.metadata for topic id.
func partitionMetadata(id [16]byte) []byte {
	return []byte("version: 0\ntopic_id: " + base64.RawURLEncoding.EncodeToString(id[:]) + "\n")
}

// PartitionDir is one partition directory found under the log directories.
type PartitionDir struct {
	Path      string
	Topic     string
	Partition int32
	TopicID   [16]byte // zero when the directory has no partition.metadata
}

// ListPartitionDirs returns the partition directories under every one of
// dirs: those named topic-N. A directory that cannot be read is skipped.
func ListPartitionDirs(dirs []string) []PartitionDir { return listPartitionDirs(OS, dirs) }

func listPartitionDirs(fs FS, dirs []string) []PartitionDir {
	var out []PartitionDir
	for _, d := range dirs {
		ents, err := fs.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			topic, p, ok := ParsePartitionDirName(e.Name())
			if !ok {
				continue
			}
			path := filepath.Join(d, e.Name())
			id, _ := readPartitionMetadata(fs, path)
			out = append(out, PartitionDir{Path: path, Topic: topic, Partition: p, TopicID: id})
		}
	}
	return out
}

// A Placer opens partition logs in a broker's log directories (JBOD, as
// Kafka's LogManager): a partition where its directory already is, a new
// one in the directory holding the fewest partitions (the first on a tie).
// A new partition's directory is chosen and created under one lock, so
// that logs opened at once see each other's choices: sixteen new
// partitions opened together over two empty directories alternate, where
// each choosing before any had created its directory put all sixteen in
// the first. A cordoned directory (KIP-1066, SetCordoned) takes no new
// partition unless every directory is cordoned, when the first takes it,
// as Kafka's LogManager falls back; the partitions already in it stay.
// The zero value is ready for use; a broker has one.
type Placer struct {
	mu       sync.Mutex // held while a new partition's directory is chosen and created
	cordoned []string   // guarded by mu
}

// SetCordoned makes dirs the cordoned directories, from the next new
// partition on.
func (pl *Placer) SetCordoned(dirs []string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.cordoned = slices.Clone(dirs)
}

// Cordoned are the cordoned directories.
func (pl *Placer) Cordoned() []string {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return slices.Clone(pl.cordoned)
}

// OpenPartition opens, or creates, the log of partition p of a topic whose
// id is id, in one of the log directories dirs, where the Placer's doc
// says. A directory left by an older topic of the same name (another id in
// its partition.metadata, a topic deleted while this broker was down and
// created again) is removed first, so the new topic does not inherit its
// records. partition.metadata is written when missing or stale. All of it
// goes through cfg.FS.
func (pl *Placer) OpenPartition(dirs []string, topic string, p int32, id [16]byte, cfg Config, logger *slog.Logger) (*Log, error) {
	if len(dirs) == 0 {
		return nil, errors.New("logstore: no log directory")
	}
	fs := cfg.FS
	if fs == nil {
		fs = OS
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	name := PartitionDirName(topic, p)
	dir := ""
	for _, d := range dirs {
		path := filepath.Join(d, name)
		if _, err := fs.Stat(path); err != nil {
			continue
		}
		if old, ok := readPartitionMetadata(fs, path); ok && old != id {
			logger.Info("removing the log of a deleted topic of the same name", "dir", path)
			if err := fs.RemoveAll(path); err != nil {
				return nil, err
			}
			continue
		}
		if dir == "" {
			dir = path
		}
	}
	if dir == "" {
		var err error
		if dir, err = pl.place(fs, dirs, name); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrStorage, err)
		}
	}
	l, err := Open(dir, cfg, logger)
	if err != nil {
		return nil, err
	}
	if old, ok := readPartitionMetadata(fs, dir); !ok || old != id {
		// Written without fsync and made durable at the log's next
		// flush, roll or clean close, as Kafka records the topic id and
		// flushes the file in the background: creating 10,000 partitions
		// waited for two fsyncs each. Lost in a power failure, it is
		// written again at the next open.
		if err := replaceFile(fs, filepath.Join(dir, partitionMetadataFile), partitionMetadata(id)); err != nil {
			l.Close()
			return nil, fmt.Errorf("logstore: %s: writing %s: %w", dir, partitionMetadataFile, err)
		}
		l.metaPending = &id // the log is not shared yet
	}
	return l, nil
}

// place chooses the directory of a new partition's log, name, among dirs
// and creates it, under pl.mu: the next choice counts it.
func (pl *Placer) place(fs FS, dirs []string, name string) (string, error) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	open := slices.DeleteFunc(slices.Clone(dirs), func(d string) bool { return slices.Contains(pl.cordoned, d) })
	if len(open) == 0 {
		open = dirs[:1]
	}
	dir := filepath.Join(leastLoaded(fs, open), name)
	return dir, fs.MkdirAll(dir, 0o755)
}

// leastLoaded is the directory of dirs holding the fewest partition
// directories, the first of them on a tie. It counts directory entries
// only (no partition.metadata read): it runs for every partition created.
func leastLoaded(fs FS, dirs []string) string {
	if len(dirs) == 1 {
		return dirs[0]
	}
	best, bestN := dirs[0], -1
	for _, d := range dirs {
		ents, err := fs.ReadDir(d)
		if err != nil {
			continue
		}
		n := 0
		for _, e := range ents {
			if _, _, ok := ParsePartitionDirName(e.Name()); ok && e.IsDir() {
				n++
			}
		}
		if bestN < 0 || n < bestN {
			best, bestN = d, n
		}
	}
	return best
}

// SaveHighWatermark checkpoints the partition's high watermark in its
// directory, atomically but without fsync: a broker with 10,000 partitions
// checkpoints thousands of them per interval, and an fsync each held up
// its replica manager for seconds. A power failure may leave an older
// value (or none: the log start is used), never one past what a reader
// was shown, and the saved value is capped at the log end on reading.
func (l *Log) SaveHighWatermark(hw int64) error {
	return replaceFile(l.fs, filepath.Join(l.dir, hwCheckpointFile), []byte(strconv.FormatInt(hw, 10)+"\n"))
}

// SavedHighWatermark is the high watermark last checkpointed, within the
// log's bounds; the log start offset when none was saved or it does not
// parse.
func (l *Log) SavedHighWatermark() int64 {
	b, err := readFile(l.fs, filepath.Join(l.dir, hwCheckpointFile))
	if err != nil {
		return l.StartOffset()
	}
	hw, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return l.StartOffset()
	}
	return max(min(hw, l.EndOffset()), l.StartOffset())
}
