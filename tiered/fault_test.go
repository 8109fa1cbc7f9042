package tiered

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/s3test"
)

// faultyManager is a manager of r copying to a fresh bucket through a
// fault proxy, with the bucket's store reached directly besides.
func faultyManager(t *testing.T, r func() Replica) (*Manager, *s3test.Fault, *S3) {
	t.Helper()
	meta, _ := metaStore(t)
	st := s3test.Start(t, "tiered")
	fault := st.Faulty(t)
	m := NewManager(ManagerConfig{NodeID: 1, Store: storeOf(t, fault.TieredProps()), Meta: meta,
		Replicas: func() []Replica { return []Replica{r()} }})
	return m, fault, storeOf(t, st.TieredProps())
}

// checkListing fails unless the bucket holds each segment of md's .log
// object whole, and no object no segment of md names.
func checkListing(t *testing.T, s ObjectStore, md Metadata, p Partition) {
	t.Helper()
	checkNoOrphans(t, s, md)
	objs, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for _, o := range objs {
		sizes[o.Key] = o.Size
	}
	for _, seg := range md.Segments {
		if key := seg.Key(p, "log"); sizes[key] != seg.LogSize() {
			t.Errorf("%s holds %d bytes, the metadata %d", key, sizes[key], seg.LogSize())
		}
	}
}

// TestManagerUploadCutHalfway: the store drops every PUT of a segment's
// .log half way through its body. The client retries, and the pass
// gives up: the segment is not recorded as copied, no local segment goes
// (local.retention.bytes 0), nothing of it is in the bucket, and the log
// takes appends and serves local reads meanwhile. Once the store takes
// whole uploads again, the next pass copies everything, and the bucket
// holds exactly what the metadata names, each .log whole.
func TestManagerUploadCutHalfway(t *testing.T) {
	t.Parallel()
	l, r := localRetentionLeader(t, [16]byte{1, 2, 3}, 40)
	m, fault, direct := faultyManager(t, func() Replica { return r })
	fault.SetFor(s3test.CutHalfway, func(req *http.Request) bool {
		return req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, ".log")
	})
	ctx := context.Background()
	m.pass(ctx)
	md, err := m.Metadata(ctx, r.TopicID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Segments) != 0 || len(md.Copying) != 1 || md.CopiedEnd() != 0 {
		t.Fatalf("after cut uploads: %+v", md)
	}
	if n := fault.Refused(); n < 2 {
		t.Errorf("%d uploads cut: the client did not retry", n)
	}
	if got := l.LocalStartOffset(); got != 0 {
		t.Fatalf("local start %d with nothing copied", got)
	}
	if objs, err := direct.List(ctx, ""); err != nil || len(objs) != 0 {
		t.Fatalf("bucket after cut uploads: %+v, %v", objs, err)
	}
	// The log takes appends and serves reads while the store is down.
	appendLog(t, l, 5)
	if b, err := l.ReadBytes(0, 1<<20, l.EndOffset()); err != nil || len(b) == 0 {
		t.Fatalf("local read while the store is down: %d bytes, %v", len(b), err)
	}

	fault.Set(s3test.Pass)
	md = passCopies(t, m, r, 0)
	if len(md.Copying) != 0 || len(md.Segments) < 2 {
		t.Fatalf("after the store recovered: %+v", md)
	}
	if l.LocalStartOffset() != md.CopiedEnd() {
		t.Errorf("local start %d, copied to %d", l.LocalStartOffset(), md.CopiedEnd())
	}
	checkListing(t, direct, md, r.objects())
}

// TestManagerThrottledStore: a store that passes a few KiB a second
// takes the uploads (no faster than its rate), and a remote read through
// it returns the bytes a local read does.
func TestManagerThrottledStore(t *testing.T) {
	t.Parallel()
	l := newTestLog(t, 4096)
	appendLog(t, l, 20)
	r := leaderReplica([16]byte{1, 2, 3}, l, 0, 20)
	m, fault, direct := faultyManager(t, func() Replica { return r })
	const rate = 16 << 10
	fault.SetRate(rate)
	fault.Set(s3test.Throttle)
	atRate := func(n int64) time.Duration { return time.Duration(n) * time.Second / rate }

	began := time.Now()
	md := passCopies(t, m, r, 0)
	took := time.Since(began)
	var size int64
	for _, seg := range md.Segments {
		for _, n := range seg.Sizes {
			size += n
		}
	}
	if took < atRate(size) {
		t.Errorf("%d bytes uploaded in %v, faster than %d B/s", size, took, rate)
	}
	checkListing(t, direct, md, r.objects())

	seg := md.Segments[0]
	want, err := l.ReadBytes(0, 1<<20, seg.EndOffset)
	if err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	res, err := m.Read(context.Background(), "t", r.TopicID, 0, 0, 1<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if got := resultBytes(t, res); !bytes.Equal(got, want) {
		t.Fatalf("remote read: %d bytes, want %d", len(got), len(want))
	}
	if took := time.Since(began); took < atRate(int64(len(want))) {
		t.Errorf("%d bytes read in %v, faster than %d B/s", len(want), took, rate)
	}
}
