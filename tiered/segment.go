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
	return fmt.Sprintf("%s-%s/%d/", p.Topic, p.TopicID, p.Partition)
}

// RemoteSegment is what an upload recorded: the remote log metadata of one
// segment (Kafka's RemoteLogSegmentMetadata, less what later slices add).
type RemoteSegment struct {
	ID         string            `json:"id"`          // unique per upload: a segment copied twice has two
	BaseOffset int64             `json:"base_offset"` // first offset
	EndOffset  int64             `json:"end_offset"`  // the next segment's base: every offset is below it
	Sizes      map[string]int64  `json:"sizes"`       // bytes of each file copied, by suffix
	Keys       map[string]string `json:"keys"`        // object key of each file copied, by suffix
}

// ManifestKey is the object key of the manifest, written last: a segment
// whose manifest is missing was not copied whole.
func (r RemoteSegment) ManifestKey(p Partition) string { return r.keyOf(p, "manifest") }

func (r RemoteSegment) keyOf(p Partition, ext string) string {
	return fmt.Sprintf("%s%020d-%s.%s", p.prefix(), r.BaseOffset, r.ID, ext)
}

func newSegmentID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// UploadSegment copies the rolled segment of the partition directory dir
// whose base offset is base, and which ends where the next segment starts
// (next), to store: the segment, its offset, time and transaction
// indexes, the producer snapshot as of next, and the leader-epoch
// checkpoint, then a manifest naming them. Every file is opened before
// the first byte is sent, so retention deleting the segment meanwhile
// does not tear the copy. The returned RemoteSegment is the metadata to
// record; until it is recorded, the objects belong to no segment.
func UploadSegment(ctx context.Context, store ObjectStore, p Partition, dir string, base, next int64) (RemoteSegment, error) {
	if next <= base {
		return RemoteSegment{}, fmt.Errorf("tiered: segment %d of %s ends at %d", base, dir, next)
	}
	r := RemoteSegment{ID: newSegmentID(), BaseOffset: base, EndOffset: next, Sizes: map[string]int64{}, Keys: map[string]string{}}
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
	for i, f := range files {
		st, err := f.Stat()
		if err != nil {
			return RemoteSegment{}, fmt.Errorf("tiered: segment %d: %w", base, err)
		}
		key := r.keyOf(p, exts[i])
		if err := store.Put(ctx, key, f, st.Size()); err != nil {
			return RemoteSegment{}, err
		}
		r.Sizes[exts[i]], r.Keys[exts[i]] = st.Size(), key
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

// CopyRolled copies, in offset order, the rolled segments of l that start
// at or after from and end at or below hw (the high watermark: nothing
// uncommitted leaves the broker), and returns the metadata of those
// copied, also when it stops at an error (the segments before it are
// whole). The caller, the partition's leader, records them and passes the
// EndOffset of the last as the next from.
func CopyRolled(ctx context.Context, store ObjectStore, p Partition, l *logstore.Log, hw, from int64) ([]RemoteSegment, error) {
	var out []RemoteSegment
	for _, sr := range l.RolledSegments(hw) {
		if sr.Base < from {
			continue
		}
		r, err := UploadSegment(ctx, store, p, l.Dir(), sr.Base, sr.Next)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}
