package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// tempFile creates a file holding data in its own temp dir.
func cwTempFile(tb testing.TB, data []byte) *os.File {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// tcpPair returns both ends of a loopback TCP connection.
func cwTCPPair(tb testing.TB) (client, server *net.TCPConn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		cc.Close()
		tb.Fatal(r.err)
	}
	tb.Cleanup(func() { cc.Close(); r.c.Close() })
	return cc.(*net.TCPConn), r.c.(*net.TCPConn)
}

// readAll reads r to EOF in a goroutine, chunk bytes per Read (0: 64 KiB),
// yielding between reads when slow.
func cwReadAll(r io.Reader, chunk int, slow bool) <-chan []byte {
	ch := make(chan []byte, 1)
	if chunk == 0 {
		chunk = 64 << 10
	}
	go func() {
		var out bytes.Buffer
		buf := make([]byte, chunk)
		for {
			n, err := r.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				ch <- out.Bytes()
				return
			}
			if slow {
				runtime.Gosched()
			}
		}
	}()
	return ch
}

func cwRecv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

// mixedChunks builds a message of small and large byte slices and regions
// of f (whose content is data), returning the expected bytes and the number
// of region bytes.
func cwMixed(rng *rand.Rand, c *Chunks, f *os.File, data []byte, parts int) (want []byte, regionBytes int64) {
	for range parts {
		switch rng.IntN(4) {
		case 0, 1:
			off := rng.IntN(len(data))
			n := rng.IntN(len(data) - off + 1)
			c.Region(Region{File: f, Offset: int64(off), Length: int64(n)})
			want = append(want, data[off:off+n]...)
			regionBytes += int64(n)
		case 2:
			b := frRandBytes(rng, rng.IntN(100))
			c.Bytes(b)
			want = append(want, b...)
		case 3:
			b := frRandBytes(rng, rng.IntN(5000))
			c.Bytes(b)
			want = append(want, b...)
		}
	}
	return want, regionBytes
}

func TestChunksBytesMergeAndRetain(t *testing.T) {
	var c Chunks
	c.Bytes([]byte("ab"))
	c.Bytes([]byte("cd"))
	big := bytes.Repeat([]byte{'x'}, chunksCopyThreshold)
	c.Bytes(big)
	c.Bytes([]byte("ef"))
	if c.Len() != int64(6+len(big)) {
		t.Fatalf("Len = %d", c.Len())
	}
	c.flushTail()
	if len(c.chunks) != 3 {
		t.Fatalf("small slices were not merged: %d chunks", len(c.chunks))
	}
	// Small slices are copied: changing them afterwards changes nothing.
	small := []byte("gh")
	c.Bytes(small)
	small[0] = 'Z'
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf, false, nil); err != nil {
		t.Fatal(err)
	}
	want := "abcd" + string(big) + "efgh"
	if buf.String() != want {
		t.Fatalf("got %q", buf.String())
	}
	c.Reset()
	if c.Len() != 0 || len(c.chunks) != 0 {
		t.Fatalf("Reset left %d bytes, %d chunks", c.Len(), len(c.chunks))
	}
	buf.Reset()
	if n, err := c.WriteTo(&buf, true, nil); n != 0 || err != nil || buf.Len() != 0 {
		t.Fatalf("empty WriteTo = %d, %v", n, err)
	}
}

func TestChunksPutInt32At(t *testing.T) {
	f := cwTempFile(t, []byte("0123456789"))
	var c Chunks
	c.Bytes([]byte{0, 0, 0, 0, 1})
	c.Region(Region{File: f, Offset: 2, Length: 3})
	c.Bytes([]byte{9, 9, 9, 9, 9})
	big := make([]byte, 600)
	c.Bytes(big)
	if err := c.PutInt32At(0, 0x01020304); err != nil {
		t.Fatal(err)
	}
	if err := c.PutInt32At(9, -2); err != nil { // in the second byte chunk
		t.Fatal(err)
	}
	for _, bad := range []int64{2, 5, 7, 12, 13, 600, c.Len(), -1} {
		if err := c.PutInt32At(bad, 1); err == nil {
			t.Fatalf("PutInt32At(%d) succeeded", bad)
		}
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf, false, nil); err != nil {
		t.Fatal(err)
	}
	want := append([]byte{1, 2, 3, 4, 1, '2', '3', '4', 9, 0xff, 0xff, 0xff, 0xfe}, big...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("got % x", buf.Bytes()[:16])
	}
	for _, b := range big {
		if b != 0 {
			t.Fatal("a referenced caller slice was modified")
		}
	}
}

// TestChunksWriteToPaths sends the same mixed message over loopback TCP
// with and without sendfile, and to a bytes.Buffer, checking the bytes and
// the per-path counters.
func TestChunksWriteToPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := frRandBytes(rng, 3<<20)
	f := cwTempFile(t, data)
	for _, useSendfile := range []bool{true, false} {
		for i := range 5 {
			var c Chunks
			want, regionBytes := cwMixed(rng, &c, f, data, 1+rng.IntN(20))
			cli, srv := cwTCPPair(t)
			got := cwReadAll(srv, 0, false)
			var st Stats
			n, err := c.WriteTo(cli, useSendfile, &st)
			if err != nil {
				t.Fatalf("sendfile=%v #%d: %v", useSendfile, i, err)
			}
			cli.CloseWrite()
			if b := cwRecv(t, got); !bytes.Equal(b, want) {
				t.Fatalf("sendfile=%v #%d: peer got %d bytes, want %d\n%s", useSendfile, i, len(b), len(want), frFirstDiff(b, want))
			}
			if n != int64(len(want)) || c.Len() != n {
				t.Fatalf("WriteTo returned %d, Len %d, want %d", n, c.Len(), len(want))
			}
			sf, cp := st.SendfileBytes.Load(), st.CopiedFileBytes.Load()
			if useSendfile && (sf != regionBytes || cp != 0) {
				t.Fatalf("sendfile path: SendfileBytes %d CopiedFileBytes %d, want %d and 0", sf, cp, regionBytes)
			}
			if !useSendfile && (cp != regionBytes || sf != 0) {
				t.Fatalf("copy path: SendfileBytes %d CopiedFileBytes %d, want 0 and %d", sf, cp, regionBytes)
			}
			// The shared file offset is never used or moved.
			if pos, err := f.Seek(0, io.SeekCurrent); err != nil || pos != 0 {
				t.Fatalf("file offset moved to %d (%v)", pos, err)
			}
			// A writer without an fd always copies.
			var buf bytes.Buffer
			var st2 Stats
			if _, err := c.WriteTo(&buf, true, &st2); err != nil || !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("bytes.Buffer: %v, equal %v", err, bytes.Equal(buf.Bytes(), want))
			}
			if st2.CopiedFileBytes.Load() != regionBytes || st2.SendfileBytes.Load() != 0 {
				t.Fatalf("bytes.Buffer counters %d/%d", st2.SendfileBytes.Load(), st2.CopiedFileBytes.Load())
			}
		}
	}
}

// TestChunksWriteToLargeSlowReader sends 3 MiB of in-memory bytes and a
// 64 MiB region through small socket buffers to a reader taking 16 KiB at a
// time, so that sendmsg and sendfile meet EAGAIN and partial writes many
// times.
func TestChunksWriteToLargeSlowReader(t *testing.T) {
	const size = 64 << 20
	data := cwPattern(size + 100)
	big := data[:3<<20]
	f := cwTempFile(t, data)
	for _, useSendfile := range []bool{true, false} {
		cli, srv := cwTCPPair(t)
		if err := cli.SetWriteBuffer(16 << 10); err != nil {
			t.Fatal(err)
		}
		if err := srv.SetReadBuffer(16 << 10); err != nil {
			t.Fatal(err)
		}
		var c Chunks
		c.Bytes([]byte("header"))
		c.Bytes(big) // large in-memory bytes before a region: partial sendmsg
		c.Region(Region{File: f, Offset: 77, Length: size})
		c.Bytes([]byte("trailer"))
		type digest struct {
			n   int64
			sum []byte
		}
		got := make(chan digest, 1)
		go func() { // a slow reader: 16 KiB per read, yielding in between
			h := sha256.New()
			buf := make([]byte, 16<<10)
			var d digest
			for {
				n, err := srv.Read(buf)
				h.Write(buf[:n])
				d.n += int64(n)
				if err != nil {
					d.sum = h.Sum(nil)
					got <- d
					return
				}
				runtime.Gosched()
			}
		}()
		var st Stats
		n, err := c.WriteTo(cli, useSendfile, &st)
		if err != nil {
			t.Fatal(err)
		}
		cli.CloseWrite()
		d := cwRecv(t, got)
		h := sha256.New()
		h.Write([]byte("header"))
		h.Write(big)
		h.Write(data[77 : 77+size])
		h.Write([]byte("trailer"))
		want := int64(len("header") + len(big) + size + len("trailer"))
		if n != want || d.n != want || !bytes.Equal(d.sum, h.Sum(nil)) {
			t.Fatalf("sendfile=%v: wrote %d, peer got %d bytes, want %d (content equal %v)", useSendfile, n, d.n, want, bytes.Equal(d.sum, h.Sum(nil)))
		}
		if useSendfile && (st.SendfileBytes.Load() != size || st.CopiedFileBytes.Load() != 0) {
			t.Fatalf("counters %d/%d", st.SendfileBytes.Load(), st.CopiedFileBytes.Load())
		}
		if !useSendfile && (st.CopiedFileBytes.Load() != size || st.SendfileBytes.Load() != 0) {
			t.Fatalf("counters %d/%d", st.SendfileBytes.Load(), st.CopiedFileBytes.Load())
		}
	}
}

// cwPattern returns n bytes in which every 4 KiB block starts with its own
// index, so that any misplaced block shows; it is built with bulk copies
// because byte-by-byte generation is slow under the race detector.
func cwPattern(n int) []byte {
	block := frRandBytes(rand.New(rand.NewPCG(5, 6)), 4<<10)
	b := make([]byte, n)
	for off, i := 0, 0; off < n; off, i = off+len(block), i+1 {
		k := copy(b[off:], block)
		if k >= 8 {
			binary.BigEndian.PutUint64(b[off:], uint64(i))
		}
	}
	return b
}

// TestChunksWriteToPipe: sendfile into a pipe (64 KiB of buffer, pollable)
// and into a regular file also work and count as sendfile.
func TestChunksWriteToPipeAndFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	data := frRandBytes(rng, 1<<20)
	f := cwTempFile(t, data)
	var c Chunks
	want, regionBytes := cwMixed(rng, &c, f, data, 30)

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	got := cwReadAll(pr, 1000, true)
	var st Stats
	if _, err := c.WriteTo(pw, true, &st); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if b := cwRecv(t, got); !bytes.Equal(b, want) {
		t.Fatalf("pipe: got %d bytes, want %d", len(b), len(want))
	}
	if st.SendfileBytes.Load() != regionBytes {
		t.Fatalf("pipe: SendfileBytes %d, want %d", st.SendfileBytes.Load(), regionBytes)
	}

	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := c.WriteTo(out, true, nil); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out.Name()); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("file: %v, got %d bytes, want %d", err, len(b), len(want))
	}
}

// TestChunksWriteToUnixSocket: sendmsg and sendfile work on a Unix stream
// socket too.
func TestChunksWriteToUnixSocket(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	data := frRandBytes(rng, 1<<20)
	f := cwTempFile(t, data)
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	cli, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	srv := cwRecv(t, accepted)
	if srv == nil {
		t.Fatal("accept failed")
	}
	defer srv.Close()
	var c Chunks
	want, regionBytes := cwMixed(rng, &c, f, data, 30)
	got := cwReadAll(srv, 3000, true)
	var st Stats
	if _, err := c.WriteTo(cli, true, &st); err != nil {
		t.Fatal(err)
	}
	cli.(*net.UnixConn).CloseWrite()
	if b := cwRecv(t, got); !bytes.Equal(b, want) {
		t.Fatalf("got %d bytes, want %d", len(b), len(want))
	}
	if st.SendfileBytes.Load() != regionBytes || st.CopiedFileBytes.Load() != 0 {
		t.Fatalf("counters %d/%d, want %d/0", st.SendfileBytes.Load(), st.CopiedFileBytes.Load(), regionBytes)
	}
}

// TestChunksWriteToShortFile: a region that extends past the end of its
// file fails on both paths (and over a pipe) instead of hanging or sending
// garbage.
func TestChunksWriteToShortFile(t *testing.T) {
	f := cwTempFile(t, bytes.Repeat([]byte{7}, 500))
	for name, r := range map[string]Region{
		"tail past EOF":   {File: f, Offset: 100, Length: 1000},
		"start past EOF":  {File: f, Offset: 600, Length: 10},
		"start at EOF":    {File: f, Offset: 500, Length: 1},
		"huge past EOF":   {File: f, Offset: 0, Length: 10 << 20},
		"one byte beyond": {File: f, Offset: 0, Length: 501},
	} {
		for _, useSendfile := range []bool{true, false} {
			var c Chunks
			c.Bytes([]byte("hdr"))
			c.Region(r)
			c.Bytes([]byte("after"))
			cli, srv := cwTCPPair(t)
			if err := cli.SetWriteDeadline(time.Now().Add(20 * time.Second)); err != nil {
				t.Fatal(err)
			}
			got := cwReadAll(srv, 0, false)
			_, err := c.WriteTo(cli, useSendfile, nil)
			if !errors.Is(err, ErrShortRegion) || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%s sendfile=%v: err = %v, want ErrShortRegion", name, useSendfile, err)
			}
			cli.Close()
			b := cwRecv(t, got)
			if bytes.Contains(b, []byte("after")) {
				t.Fatalf("%s sendfile=%v: bytes after the short region were sent", name, useSendfile)
			}
		}
	}
}

// TestChunksWriteToDeadline: a peer that never reads makes WriteTo return
// the conn's deadline error, on both paths.
func TestChunksWriteToDeadline(t *testing.T) {
	f := cwTempFile(t, make([]byte, 32<<20))
	for _, useSendfile := range []bool{true, false} {
		cli, _ := cwTCPPair(t)
		var c Chunks
		c.Region(Region{File: f, Length: 32 << 20})
		if err := cli.SetWriteDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		n, err := c.WriteTo(cli, useSendfile, nil)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("sendfile=%v: err = %v after %d bytes, want deadline exceeded", useSendfile, err, n)
		}
	}
}

// TestChunksWriteToClosedFile: a region whose file was closed is an error,
// not a panic or a write of another file's bytes.
func TestChunksWriteToClosedFile(t *testing.T) {
	f := cwTempFile(t, []byte("hello world"))
	var c Chunks
	c.Region(Region{File: f, Length: 5})
	f.Close()
	for _, useSendfile := range []bool{true, false} {
		cli, srv := cwTCPPair(t)
		got := cwReadAll(srv, 0, false)
		if _, err := c.WriteTo(cli, useSendfile, nil); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("sendfile=%v: err = %v, want os.ErrClosed", useSendfile, err)
		}
		cli.Close()
		if b := cwRecv(t, got); len(b) != 0 {
			t.Fatalf("sent %q", b)
		}
	}
}

// TestChunksConcurrentSharedFile: many goroutines send different regions of
// one *os.File at once; each peer receives exactly its region.
func TestChunksConcurrentSharedFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	data := frRandBytes(rng, 4<<20)
	f := cwTempFile(t, data)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	var st Stats
	var total int64
	for i := range 8 {
		useSendfile := i%2 == 0
		off := int64(rng.IntN(len(data) / 2))
		n := int64(rng.IntN(len(data)/2) + 1)
		if useSendfile {
			total += n
		}
		cli, srv := cwTCPPair(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := cwReadAll(srv, 8<<10, true)
			var c Chunks
			c.Region(Region{File: f, Offset: off, Length: n})
			if _, err := c.WriteTo(cli, useSendfile, &st); err != nil {
				errs <- err
				return
			}
			cli.CloseWrite()
			if b := <-got; !bytes.Equal(b, data[off:off+n]) {
				errs <- errors.New("peer got wrong bytes")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st.SendfileBytes.Load() != total {
		t.Fatalf("SendfileBytes %d, want %d", st.SendfileBytes.Load(), total)
	}
}

// benchmarkWriteTo sends a small header plus one region of size bytes per
// op over loopback TCP to a reader that discards.
func cwBenchmark(b *testing.B, useSendfile bool) {
	for _, size := range []int{64 << 10, 1 << 20, 16 << 20} {
		b.Run(cwByteSize(size), func(b *testing.B) {
			f := cwTempFile(b, make([]byte, size))
			cli, srv := cwTCPPair(b)
			done := make(chan struct{})
			go func() {
				defer close(done)
				io.Copy(io.Discard, srv)
			}()
			var c Chunks
			var st Stats
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				c.Reset()
				c.Bytes(make([]byte, 64))
				c.Region(Region{File: f, Length: int64(size)})
				if _, err := c.WriteTo(cli, useSendfile, &st); err != nil {
					b.Fatal(err)
				}
			}
			cli.CloseWrite()
			<-done
		})
	}
}

func cwByteSize(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

func BenchmarkWriteToSendfile(b *testing.B) { cwBenchmark(b, true) }
func BenchmarkWriteToCopy(b *testing.B)     { cwBenchmark(b, false) }
