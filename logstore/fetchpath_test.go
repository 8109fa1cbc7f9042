package logstore

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/protocol"
)

// The local fetch path, as broker/01_fetch.go drives it: Log.Read, a Fetch
// response framed around the read's regions, written to a TCP connection
// with sendfile, then released.

// fpLog returns a log of 2000 batches of 16 records of 1 KiB.
func fpLog(tb testing.TB) *Log {
	tb.Helper()
	l := coreOpen(tb, tb.TempDir(), DefaultConfig())
	batch := coreBatch(tb, 16, coreT0.UnixMilli(), 1024)
	for range 2000 {
		if _, err := l.Append(bytes.Clone(batch), 1, coreT0); err != nil {
			tb.Fatal(err)
		}
	}
	return l
}

// fpTCPPair returns a loopback TCP connection's client end, whose peer
// discards everything; the cleanup closes both and waits for the reader.
func fpTCPPair(tb testing.TB) *net.TCPConn {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	sc, err := ln.Accept()
	if err != nil {
		cc.Close()
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, sc)
	}()
	tb.Cleanup(func() { cc.Close(); <-done; sc.Close() })
	return cc.(*net.TCPConn)
}

// fpFetch serves one Fetch of up to 1 MiB from off over conn.
func fpFetch(tb testing.TB, l *Log, off int64, conn net.Conn, st *protocol.Stats) int64 {
	res, err := l.Read(off, 1<<20, -1, true)
	if err != nil {
		tb.Fatal(err)
	}
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.HighWatermark, rp.LastStableOffset = l.EndOffset(), l.EndOffset()
	rp.RecordBatches = []byte{}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	regions := [][][]Region{{res.Regions}}
	h := protocol.Header{Key: int16(kmsg.Fetch), Version: 12, CorrelationID: 7, Flexible: true}
	fr, err := protocol.NewFetchResponse(h, resp, regions, res.Release)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := fr.WriteTo(conn, true, st); err != nil {
		tb.Fatal(err)
	}
	return res.Size
}

// TestLocalFetchPathSendfile: a local read goes out with sendfile, every
// region byte of it, and the path's allocations stay what they were before
// regions could hold bytes (measured on main: fpAllocs).
func TestLocalFetchPathSendfile(t *testing.T) {
	l := fpLog(t)
	conn := fpTCPPair(t)
	var st protocol.Stats
	var sent int64
	off := int64(0)
	for range 20 {
		sent += fpFetch(t, l, off, conn, &st)
		off = (off + 7919) % (l.EndOffset() - 1000)
	}
	if sf, cp := st.SendfileBytes.Load(), st.CopiedFileBytes.Load(); sf != sent || cp != 0 {
		t.Fatalf("SendfileBytes %d, CopiedFileBytes %d; want %d and 0", sf, cp, sent)
	}
	allocs := testing.AllocsPerRun(50, func() {
		fpFetch(t, l, 16*1000, conn, &st)
	})
	if allocs != fpAllocs {
		t.Fatalf("local fetch path: %v allocations per fetch, want %v", allocs, fpAllocs)
	}
}

// fpAllocs is the local fetch path's allocation count per fetch.
const fpAllocs = 30

// BenchmarkLocalFetchPath serves 1 MiB fetches from a log over loopback TCP.
func BenchmarkLocalFetchPath(b *testing.B) {
	l := fpLog(b)
	conn := fpTCPPair(b)
	var st protocol.Stats
	var total int64
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		off := int64(i*7919) % (l.EndOffset() - 1000)
		total += fpFetch(b, l, off, conn, &st)
		i++
	}
	b.SetBytes(total / int64(max(i, 1)))
}

// TestSegmentSourceBytesRegions: a read made of bytes regions (a remote
// source's, through NewReadResult) and file ranges (the local log's) in
// one result is framed into a Fetch response as the same records, and its
// release runs once, however many copies release it.
func TestSegmentSourceBytesRegions(t *testing.T) {
	l := fpLog(t)
	local, err := l.Read(5000, 256<<10, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Release()
	want, err := l.ReadBytes(5000, 256<<10, -1)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(want)) != local.Size || len(local.Regions) != 1 || local.Regions[0].File == nil {
		t.Fatalf("local read: %d regions, %d bytes, want one file range of %d", len(local.Regions), local.Size, len(want))
	}
	// Remote: the first and last thirds as bytes (with junk around them
	// in their chunks), the middle still a file range.
	file := local.Regions[0]
	third := file.Length / 3
	chunk := append(append([]byte("junk"), want[:third]...), "junk"...)
	tail := bytes.Clone(want[2*third:])
	regions := []Region{
		{Bytes: chunk, Offset: 4, Length: third},
		{File: file.File, Offset: file.Offset + third, Length: third},
		{Bytes: tail, Length: int64(len(tail))},
	}
	released := 0
	res := NewReadResult(regions, local.NextOffset, func() { released++ })
	if res.Size != local.Size || res.NextOffset != local.NextOffset {
		t.Fatalf("NewReadResult: size %d next %d, want %d and %d", res.Size, res.NextOffset, local.Size, local.NextOffset)
	}

	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	rt.Partitions = append(rt.Partitions, kmsg.NewFetchResponseTopicPartition())
	resp.Topics = append(resp.Topics, rt)
	h := protocol.Header{Key: int16(kmsg.Fetch), Version: 12, CorrelationID: 7, Flexible: true}
	copied := res
	fr, err := protocol.NewFetchResponse(h, resp, [][][]Region{{res.Regions}}, res.Release)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := fr.WriteTo(&out, true, nil); err != nil {
		t.Fatal(err)
	}
	copied.Release()
	if released != 1 {
		t.Fatalf("release ran %d times, want once", released)
	}
	got := kmsg.NewPtrFetchResponse()
	got.SetVersion(12)
	if err := got.ReadFrom(out.Bytes()[4+4+1:]); err != nil { // size, correlation id, header tags
		t.Fatal(err)
	}
	if recs := got.Topics[0].Partitions[0].RecordBatches; !bytes.Equal(recs, want) {
		t.Fatalf("records: got %d bytes, want the log's %d", len(recs), len(want))
	}
}
