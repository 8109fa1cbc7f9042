package tiered

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/samsa-io/samsa/logstore"
)

// The files of a rolled segment that an upload copies, by their suffix in
// the object key. The segment and its offset and time indexes must exist;
// the others are copied when they do.
var segmentFiles = []struct {
	ext      string
	required bool
	atNext   bool // named by the next segment's base (the producer snapshot as of the segment's end)
}{
	{ext: "log", required: true},
	{ext: "index", required: true},
	{ext: "timeindex", required: true},
	{ext: "txnindex"},
	{ext: "snapshot", atNext: true},
}

// epochsFile is the partition's leader-epoch checkpoint, copied with each
// segment (the entries that lead up to its end).
const epochsFile = "leader-epoch-checkpoint"

// Partition names a partition in object keys: topic, topic id and index,
// so that a topic deleted and created again keeps its objects apart.
type Partition struct {
	Topic     string
	TopicID   string
	Partition int32
}

func (p Partition) prefix() string {
	return fmt.Sprintf("%s%d/", p.topicPrefix(), p.Partition)
}

// topicPrefix is the key prefix of every partition of the topic.
func (p Partition) topicPrefix() string { return fmt.Sprintf("%s-%s/", p.Topic, p.TopicID) }

// RemoteSegment is one copied segment as the remote log metadata records
// it (Kafka's RemoteLogSegmentMetadata). A new leader's local segments
// need not start where the old leader's ended: a segment copied past the
// end of the one before serves its offsets from StartOffset on, the
// batches below it being the earlier segment's.
type RemoteSegment struct {
	ID           string           `json:"id"`            // unique per upload: a segment copied twice has two
	BaseOffset   int64            `json:"base_offset"`   // the local segment's base: its files' names and index
	StartOffset  int64            `json:"start_offset"`  // the first offset it serves (>= BaseOffset)
	EndOffset    int64            `json:"end_offset"`    // the next segment's base: every offset is below it
	MaxTimestamp int64            `json:"max_timestamp"` // largest batch timestamp (retention.ms)
	LeaderEpoch  int32            `json:"leader_epoch"`  // the epoch of the leader that copied it
	Sizes        map[string]int64 `json:"sizes"`         // bytes of each file copied, by suffix

	// PlannedAt is when its copy was planned (Unix ms; 0 in segments
	// copied before it was kept): after the local segment's last write,
	// the clock of delete.retention.ms for its tombstones (compact.go).
	PlannedAt int64 `json:"planned_at,omitempty"`

	localSize int64 // the local segment's bytes, as planned (not recorded)
}

// Key is the object key of the segment's file with suffix ext ("log",
// "index", "timeindex", "txnindex", "snapshot", "epochs", "manifest").
func (r RemoteSegment) Key(p Partition, ext string) string {
	return fmt.Sprintf("%s%020d-%s.%s", p.prefix(), r.BaseOffset, r.ID, ext)
}

// ManifestKey is the object key of the manifest, written last: a segment
// whose manifest is missing was not copied whole.
func (r RemoteSegment) ManifestKey(p Partition) string { return r.Key(p, "manifest") }

// LogSize is the bytes of the segment's record batches.
func (r RemoteSegment) LogSize() int64 { return r.Sizes["log"] }

func newSegmentID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// NewRemoteSegment plans the copy of the rolled segment sr, serving its
// offsets from start on, by the leader of epoch: a fresh id, nothing
// copied yet.
func NewRemoteSegment(sr logstore.SegmentRange, start int64, epoch int32) RemoteSegment {
	return RemoteSegment{ID: newSegmentID(), BaseOffset: sr.Base, StartOffset: max(start, sr.Base), EndOffset: sr.Next,
		MaxTimestamp: sr.MaxTimestamp, LeaderEpoch: epoch, PlannedAt: time.Now().UnixMilli(), localSize: sr.Size}
}

// UploadSegment copies the rolled segment r names from the partition
// directory dir to store: the segment, its offset, time and transaction
// indexes, the producer snapshot as of its end, and the leader-epoch
// checkpoint, then a manifest naming them. Every file is opened before
// the first byte is sent, so retention deleting the segment meanwhile
// does not tear the copy. It returns r with the sizes copied: the
// metadata to record. Until it is recorded, the objects belong to no
// segment.
func UploadSegment(ctx context.Context, store ObjectStore, p Partition, dir string, r RemoteSegment) (RemoteSegment, error) {
	base, next := r.BaseOffset, r.EndOffset
	if next <= base || r.StartOffset < base || r.StartOffset >= next {
		return RemoteSegment{}, fmt.Errorf("tiered: segment %d of %s serving [%d, %d)", base, dir, r.StartOffset, next)
	}
	r.Sizes = map[string]int64{}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	var exts []string
	open := func(name, ext string, required bool) error {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) && !required {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tiered: segment %d: %w", base, err)
		}
		files, exts = append(files, f), append(exts, ext)
		return nil
	}
	for _, sf := range segmentFiles {
		at := base
		if sf.atNext {
			at = next
		}
		if err := open(fmt.Sprintf("%020d.%s", at, sf.ext), sf.ext, sf.required); err != nil {
			return RemoteSegment{}, err
		}
	}
	if err := open(epochsFile, "epochs", false); err != nil {
		return RemoteSegment{}, err
	}
	if err := sameFiles(files); err != nil {
		return RemoteSegment{}, fmt.Errorf("tiered: segment %d: %w", base, err)
	}
	for i, f := range files {
		st, err := f.Stat()
		if err != nil {
			return RemoteSegment{}, fmt.Errorf("tiered: segment %d: %w", base, err)
		}
		if err := store.Put(ctx, r.Key(p, exts[i]), f, st.Size()); err != nil {
			return RemoteSegment{}, err
		}
		r.Sizes[exts[i]] = st.Size()
	}
	manifest, err := json.Marshal(r)
	if err != nil {
		return RemoteSegment{}, err
	}
	if err := store.Put(ctx, r.ManifestKey(p), strings.NewReader(string(manifest)), int64(len(manifest))); err != nil {
		return RemoteSegment{}, err
	}
	return r, nil
}

// sameFiles fails when a file opened is no longer the one at its path: the
// log cleaner replaced a segment (its .log, then its indexes) while the
// upload opened them one by one, and the files opened may not match.
// The next pass copies the segment again.
func sameFiles(files []*os.File) error {
	for _, f := range files {
		opened, err := f.Stat()
		if err != nil {
			return err
		}
		now, err := os.Stat(f.Name())
		if err != nil || !os.SameFile(opened, now) {
			return fmt.Errorf("%s was replaced while the upload opened it (compaction)", f.Name())
		}
	}
	return nil
}

// DeleteSegment removes every object of r (those a half-done upload may
// have left too), the manifest first: a segment without its manifest is
// known incomplete.
func DeleteSegment(ctx context.Context, store ObjectStore, p Partition, r RemoteSegment) error {
	exts := []string{"manifest"}
	for _, sf := range segmentFiles {
		exts = append(exts, sf.ext)
	}
	for _, ext := range append(exts, "epochs") {
		if err := store.Delete(ctx, r.Key(p, ext)); err != nil {
			return err
		}
	}
	return nil
}

// CopyCandidates returns the rolled segments of l that end at or below
// upTo (the last stable offset: nothing uncommitted or undecided leaves
// the broker) and hold offsets at or after from (where the copy stands),
// in offset order, as planned copies by the leader of epoch.
func CopyCandidates(l *logstore.Log, upTo, from int64, epoch int32) []RemoteSegment {
	var out []RemoteSegment
	for _, sr := range l.RolledSegments(upTo) {
		if sr.Next <= from {
			continue
		}
		out = append(out, NewRemoteSegment(sr, from, epoch))
	}
	return out
}
