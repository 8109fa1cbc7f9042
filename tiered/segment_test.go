package tiered

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/poll"
	"github.com/samsa-io/samsa/internal/s3test"
	"github.com/samsa-io/samsa/logstore"
)

// testStore starts versitygw and returns the S3 store of its bucket,
// configured as a broker's server.properties would (Aiven's names).
func testStore(t *testing.T, keyPrefix string) *S3 {
	t.Helper()
	return storeOf(t, s3test.Start(t, "tiered").TieredProps("rsm.config.key.prefix", keyPrefix))
}

// storeOf is the S3 store a broker with the properties props (a Store's
// or a Fault's TieredProps) tiers to.
func storeOf(t *testing.T, props map[string]string) *S3 {
	t.Helper()
	p, err := config.New(props)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewS3(S3ConfigFrom(p))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestS3Store: put, ranged get, list and delete against versitygw, under
// the configured key prefix.
func TestS3Store(t *testing.T) {
	t.Parallel()
	s := testStore(t, "cluster-a/")
	ctx := context.Background()
	for _, k := range []string{"t-1/0/b", "t-1/0/a", "t-1/1/a"} {
		body := "object " + k
		if err := s.Put(ctx, k, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetRange(ctx, "t-1/0/a", 7, 100)
	if err != nil || string(got) != "t-1/0/a" {
		t.Fatalf("GetRange = %q, %v", got, err)
	}
	if _, err := s.GetRange(ctx, "t-1/0/none", 0, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetRange of a missing key: %v, want ErrNotFound", err)
	}
	list, err := s.List(ctx, "t-1/0/")
	if err != nil || len(list) != 2 || list[0] != (Object{"t-1/0/a", 14}) || list[1].Key != "t-1/0/b" {
		t.Fatalf("List = %v, %v", list, err)
	}
	if err := s.Delete(ctx, "t-1/0/a"); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(ctx, "t-1/"); len(list) != 2 || list[0].Key != "t-1/0/b" {
		t.Fatalf("List after delete = %v", list)
	}
}

// rolledLog is a real log of 40 batches of 300 bytes in 4 KiB segments,
// with at least three rolled segments offered for copying.
func rolledLog(t *testing.T) *logstore.Log {
	t.Helper()
	l, err := logstore.Open(t.TempDir(), logstore.Config{SegmentBytes: 4096, SegmentMs: 1 << 40, RetentionMs: -1, RetentionBytes: -1,
		IndexIntervalBytes: 256, MaxMessageBytes: 1 << 20, SegmentIndexBytes: 1 << 20, FlushMessages: 1 << 62, FlushMs: 1 << 62}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	now := time.Now()
	for i := range 40 {
		b, err := logstore.BuildBatch(0, logstore.CodecNone, []logstore.Record{{Timestamp: now.UnixMilli(), Value: bytes.Repeat([]byte{byte(i)}, 300)}}, -1, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, 0, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// A roll completes in the background (RolledSegments offers a segment
	// once it has): wait until the 40 batches' segments are offered.
	poll.Eventually(t, 30*time.Second, func() error {
		if n := len(l.RolledSegments(l.EndOffset())); n < 3 {
			return fmt.Errorf("%d rolled segments offered", n)
		}
		return nil
	})
	return l
}

// TestCopyCandidates plans only rolled segments that end at or below the
// last stable offset, from where the copy stands (mid-segment too).
func TestCopyCandidates(t *testing.T) {
	t.Parallel()
	l := rolledLog(t)
	all := l.RolledSegments(l.EndOffset())
	if len(all) < 3 {
		t.Fatalf("%d rolled segments, want at least 3", len(all))
	}
	// The last stable offset inside the second segment: only the first goes.
	got := CopyCandidates(l, all[1].Next-1, 0, 7)
	if len(got) != 1 || got[0].BaseOffset != 0 || got[0].StartOffset != 0 || got[0].EndOffset != all[0].Next || got[0].LeaderEpoch != 7 {
		t.Fatalf("CopyCandidates to %d: %+v", all[1].Next-1, got)
	}
	if got[0].MaxTimestamp <= 0 {
		t.Errorf("max timestamp %d", got[0].MaxTimestamp)
	}
	// From the middle of the second segment (another leader's boundary).
	mid := all[1].Base + 1
	rest := CopyCandidates(l, l.EndOffset(), mid, 7)
	if len(rest) != len(all)-1 || rest[0].BaseOffset != all[1].Base || rest[0].StartOffset != mid || rest[1].StartOffset != all[2].Base {
		t.Fatalf("CopyCandidates from %d: %+v", mid, rest)
	}
	if none := CopyCandidates(l, 0, 0, 7); len(none) != 0 {
		t.Fatalf("CopyCandidates to 0: %+v", none)
	}
}

// TestUploadSegment rolls segments in a real log, copies the first to
// versitygw, and reads every file back byte for byte with its manifest.
func TestUploadSegment(t *testing.T) {
	t.Parallel()
	s := testStore(t, "")
	l := rolledLog(t)
	dir := l.Dir()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	slices.Sort(logs)
	var next int64
	if _, err := fmt.Sscanf(filepath.Base(logs[1]), "%020d.log", &next); err != nil {
		t.Fatal(err)
	}

	p := Partition{Topic: "orders", TopicID: "AAAAAAAAAAAAAAAAAAAAAA", Partition: 3}
	ctx := context.Background()
	seg := logstore.SegmentRange{Base: 0, Next: next}
	r, err := UploadSegment(ctx, s, p, dir, NewRemoteSegment(seg, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{"log", "index", "timeindex", "epochs"} {
		key := r.Key(p, ext)
		if _, ok := r.Sizes[ext]; !ok {
			t.Fatalf("no %s copied: %v", ext, r.Sizes)
		}
		if !strings.HasPrefix(key, "orders-AAAAAAAAAAAAAAAAAAAAAA/3/00000000000000000000-"+r.ID+".") {
			t.Errorf("key %s", key)
		}
		name := map[string]string{"epochs": "leader-epoch-checkpoint"}[ext]
		if name == "" {
			name = "00000000000000000000." + ext
		}
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetRange(ctx, key, 0, int64(len(want))+1)
		if err != nil || !bytes.Equal(got, want) || r.Sizes[ext] != int64(len(want)) {
			t.Fatalf("%s: %d bytes back (%v), want %d", ext, len(got), err, len(want))
		}
	}
	m, err := s.GetRange(ctx, r.ManifestKey(p), 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var back RemoteSegment
	if err := json.Unmarshal(m, &back); err != nil || back.ID != r.ID || back.BaseOffset != 0 || back.EndOffset != next {
		t.Fatalf("manifest %s: %v", m, err)
	}
	// A second copy is another segment id, never overwriting the first.
	r2, err := UploadSegment(ctx, s, p, dir, NewRemoteSegment(seg, 0, 0))
	if err != nil || r2.ID == r.ID {
		t.Fatalf("second upload: id %q (first %q), %v", r2.ID, r.ID, err)
	}
	if _, err := UploadSegment(ctx, s, p, dir, NewRemoteSegment(logstore.SegmentRange{Base: 5, Next: 5}, 0, 0)); err == nil {
		t.Fatal("an empty range uploaded")
	}
	if _, err := UploadSegment(ctx, s, p, dir, NewRemoteSegment(logstore.SegmentRange{Base: 1, Next: next}, 0, 0)); err == nil {
		t.Fatal("a segment that does not exist uploaded")
	}
	// DeleteSegment leaves nothing of it.
	if err := DeleteSegment(ctx, s, p, r2); err != nil {
		t.Fatal(err)
	}
	objs, err := s.List(ctx, "orders-")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if strings.Contains(o.Key, r2.ID) {
			t.Errorf("%s left after DeleteSegment", o.Key)
		}
	}
}
