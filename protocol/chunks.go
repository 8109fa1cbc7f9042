package protocol

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Region is a piece of a message's records, of one of two kinds:
//
//   - a file range (File != nil): Length bytes of File from Offset, read
//     with positional reads (pread, or sendfile with an explicit offset),
//     never through the file's shared offset, so any number of goroutines
//     may send regions of one *os.File at the same time. WriteTo sends it
//     with sendfile(2) where it can;
//   - bytes (File == nil): Bytes[Offset:Offset+Length], for records that
//     are not in a local file (a remote segment's chunk cache). WriteTo
//     writes them as it writes in-memory bytes: they must stay unchanged
//     until the message is written.
type Region struct {
	File   *os.File
	Offset int64
	Length int64
	Bytes  []byte
}

// fileRegion is a file range of a Region: what a chunk keeps, so that a
// chunk is no larger for the Bytes a file range does not use.
type fileRegion struct {
	File   *os.File
	Offset int64
	Length int64
}

// Stats counts the file-range bytes that WriteTo sent, by path (bytes
// regions are in-memory bytes and counted in neither). It is safe
// for concurrent use; one Stats is typically shared by a whole broker.
type Stats struct {
	// SendfileBytes counts region bytes sent with sendfile(2): they never
	// entered user space.
	SendfileBytes atomic.Int64
	// CopiedFileBytes counts region bytes read into a user-space buffer and
	// written (TLS, non-socket writers, useSendfile=false, fallback).
	CopiedFileBytes atomic.Int64
}

// ErrShortRegion is returned (wrapped, together with io.ErrUnexpectedEOF)
// when a file region extends past the end of its file. Part of the message
// may already have been written: the connection must be closed.
var ErrShortRegion = errors.New("protocol: file region past end of file")

// ErrBadRegion is returned by WriteTo when a region with a negative offset
// or length, or a bytes region (nil file) whose range is not inside its
// Bytes, was added to the Chunks.
var ErrBadRegion = errors.New("protocol: invalid region")

// ErrRecordsTooLarge is returned by WriteTo when a partition's records were
// longer than a Kafka length field can say (2^31-1 bytes).
var ErrRecordsTooLarge = errors.New("protocol: records longer than 2^31-1 bytes")

// chunksCopyThreshold: Bytes copies slices shorter than this into the Chunks' own
// buffer (merging them with neighbouring bytes); longer ones are referenced.
const chunksCopyThreshold = 512

// chunkPiece is one piece of a message: either buf[start:end] of the owning
// Chunks (ref == nil, region.File == nil), a referenced caller slice
// (ref != nil) or a file range (region.File != nil). A bytes Region
// becomes one of the first two.
type chunkPiece struct {
	start, end int
	ref        []byte
	region     fileRegion
}

func (k *chunkPiece) isRegion() bool { return k.region.File != nil }

// Chunks is an encoded message held as a sequence of in-memory bytes and file
// ranges, to be written with WriteTo. The zero value is empty and ready to
// use; Reset makes a Chunks reusable without giving up its buffers. A Chunks
// is not safe for concurrent use.
type Chunks struct {
	buf    []byte       // owned in-memory bytes, referenced by chunks and the tail
	tail   int          // buf[tail:] is pending bytes not yet in chunks
	chunks []chunkPiece // completed chunks, in message order
	n      int64        // total length of chunks (the tail excluded)
	err    error        // sticky encoding error, reported by WriteTo

	iov     [][]byte // scratch for writev
	scratch []byte   // scratch for tagged-field bodies
}

// Bytes appends in-memory bytes. Slices shorter than 512 bytes are copied and
// merged with the preceding bytes; longer slices are retained by reference,
// so the caller must not modify b until the Chunks is written or Reset.
func (c *Chunks) Bytes(b []byte) {
	if len(b) < chunksCopyThreshold {
		c.buf = append(c.buf, b...)
		return
	}
	c.flushTail()
	c.chunks = append(c.chunks, chunkPiece{ref: b})
	c.n += int64(len(b))
}

// Region appends a region: a file range, or bytes as Bytes appends them.
// A region of length 0 adds nothing. A region with a negative offset or
// length, or a bytes region whose range is not inside its Bytes, makes
// WriteTo fail with ErrBadRegion (the message cannot be encoded correctly).
func (c *Chunks) Region(r Region) {
	if r.Offset < 0 || r.Length < 0 || (r.File == nil && r.Offset+r.Length > int64(len(r.Bytes))) {
		c.setErr(fmt.Errorf("%w: file %v offset %d length %d bytes %d", ErrBadRegion, r.File != nil, r.Offset, r.Length, len(r.Bytes)))
		return
	}
	if r.Length == 0 {
		return
	}
	if r.File == nil {
		c.Bytes(r.Bytes[r.Offset : r.Offset+r.Length])
		return
	}
	c.flushTail()
	c.chunks = append(c.chunks, chunkPiece{region: fileRegion{File: r.File, Offset: r.Offset, Length: r.Length}})
	c.n += r.Length
}

// Len returns the total number of bytes WriteTo writes.
func (c *Chunks) Len() int64 { return c.n + int64(len(c.buf)-c.tail) }

// Err returns the first encoding error recorded (a bad region, records too
// long), or nil. WriteTo returns it before writing anything.
func (c *Chunks) Err() error { return c.err }

// Reset empties c, keeping its buffers, and drops its references to files
// and caller slices.
func (c *Chunks) Reset() {
	clear(c.chunks)
	c.chunks = c.chunks[:0]
	c.buf = c.buf[:0]
	c.tail = 0
	c.n = 0
	c.err = nil
}

// PutInt32At overwrites the four bytes at message position pos with v, big
// endian. It is meant for a size prefix written as a placeholder and patched
// once the length is known: the four bytes must have been added by Bytes in
// one call shorter than 512 bytes (or by AppendFetchResponse).
func (c *Chunks) PutInt32At(pos int64, v int32) error {
	var at int64
	for i := 0; i <= len(c.chunks); i++ {
		var start, end int
		var size int64
		owned := true
		if i < len(c.chunks) {
			k := &c.chunks[i]
			switch {
			case k.isRegion():
				owned, size = false, k.region.Length
			case k.ref != nil:
				owned, size = false, int64(len(k.ref))
			default:
				start, end = k.start, k.end
				size = int64(end - start)
			}
		} else {
			start, end = c.tail, len(c.buf)
			size = int64(end - start)
		}
		if pos >= at && pos < at+size {
			if !owned || pos+4 > at+size {
				return fmt.Errorf("protocol: PutInt32At(%d): not inside owned in-memory bytes", pos)
			}
			o := start + int(pos-at)
			c.buf[o], c.buf[o+1], c.buf[o+2], c.buf[o+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
			return nil
		}
		at += size
	}
	return fmt.Errorf("protocol: PutInt32At(%d): past the end (%d bytes)", pos, at)
}

func (c *Chunks) setErr(err error) {
	if c.err == nil {
		c.err = err
	}
}

// flushTail turns the pending owned bytes into a chunk.
func (c *Chunks) flushTail() {
	if len(c.buf) > c.tail {
		c.chunks = append(c.chunks, chunkPiece{start: c.tail, end: len(c.buf)})
		c.n += int64(len(c.buf) - c.tail)
		c.tail = len(c.buf)
	}
}

// bytesOf returns the in-memory bytes of a non-region chunk.
func (c *Chunks) bytesOf(k *chunkPiece) []byte {
	if k.ref != nil {
		return k.ref
	}
	return c.buf[k.start:k.end]
}

// WriteTo writes the whole message to w and returns the number of bytes
// written; st (may be nil) counts the file-range bytes by path.
//
// If useSendfile is true and w exposes its file descriptor (syscall.Conn:
// *net.TCPConn, *net.UnixConn, *os.File), file ranges are sent with
// sendfile(2) from the file's page cache straight to the socket, and the
// in-memory bytes (bytes regions included) between two file ranges go out
// with one writev. Otherwise (TLS, buffered or wrapped writers, useSendfile
// false, platforms without sendfile) file ranges are read with pread into a
// pooled buffer, packed together with the in-memory
// bytes, and written. Write deadlines set on a net.Conn apply on both paths.
//
// w must not hold buffered data of its own that should precede the message
// (flush a bufio.Writer first). On error part of the message may have been
// written: the connection must be closed. A region past the end of its file
// fails with an error wrapping ErrShortRegion and io.ErrUnexpectedEOF.
func (c *Chunks) WriteTo(w io.Writer, useSendfile bool, st *Stats) (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.flushTail()
	if st == nil {
		st = new(Stats)
	}
	if useSendfile {
		if n, ok, err := c.sendfileTo(w, st); ok {
			return n, err
		}
	}
	return c.copyTo(w, st)
}

// writeIOV writes the in-memory chunks collected in c.iov with one writev
// where w supports it.
func (c *Chunks) writeIOV(w io.Writer) (int64, error) {
	if len(c.iov) == 0 {
		return 0, nil
	}
	var n int64
	var err error
	if len(c.iov) == 1 {
		var m int
		m, err = w.Write(c.iov[0])
		n = int64(m)
	} else {
		bufs := net.Buffers(c.iov)
		n, err = bufs.WriteTo(w)
	}
	clear(c.iov)
	c.iov = c.iov[:0]
	return n, err
}

const chunksCopyBufSize = 256 << 10

var chunksCopyBufPool = sync.Pool{New: func() any {
	b := make([]byte, chunksCopyBufSize)
	return &b
}}

// copyTo is the user-space path: everything is packed into a pooled buffer
// and written in chunksCopyBufSize pieces; in-memory chunks too large to be worth
// copying are written directly.
func (c *Chunks) copyTo(w io.Writer, st *Stats) (int64, error) {
	bp := chunksCopyBufPool.Get().(*[]byte)
	defer chunksCopyBufPool.Put(bp)
	buf := *bp
	var (
		fill        int   // buf[:fill] is pending
		pendingFile int64 // region bytes in buf[:fill]
		written     int64
	)
	flush := func() error {
		if fill == 0 {
			return nil
		}
		m, err := w.Write(buf[:fill])
		written += int64(m)
		if err == nil && m < fill {
			err = io.ErrShortWrite
		}
		if err == nil {
			st.CopiedFileBytes.Add(pendingFile)
		}
		fill, pendingFile = 0, 0
		return err
	}
	for i := range c.chunks {
		k := &c.chunks[i]
		if !k.isRegion() {
			b := c.bytesOf(k)
			if len(b) <= len(buf)-fill {
				fill += copy(buf[fill:], b)
				continue
			}
			if err := flush(); err != nil {
				return written, err
			}
			if len(b) < len(buf)/2 {
				fill += copy(buf, b)
				continue
			}
			m, err := w.Write(b)
			written += int64(m)
			if err == nil && m < len(b) {
				err = io.ErrShortWrite
			}
			if err != nil {
				return written, err
			}
			continue
		}
		r := k.region
		off, rem := r.Offset, r.Length
		for rem > 0 {
			if fill == len(buf) {
				if err := flush(); err != nil {
					return written, err
				}
			}
			want := int64(len(buf) - fill)
			if want > rem {
				want = rem
			}
			m, err := r.File.ReadAt(buf[fill:fill+int(want)], off)
			fill += m
			pendingFile += int64(m)
			off += int64(m)
			rem -= int64(m)
			if int64(m) < want {
				if err == nil || errors.Is(err, io.EOF) {
					err = errShortRegionAt(r, r.Length-rem)
				} else {
					err = fmt.Errorf("protocol: reading file region %s: %w", fileRegionString(r), err)
				}
				// Nothing after the short region can be correct; do not
				// flush what was read.
				return written, err
			}
		}
	}
	if err := flush(); err != nil {
		return written, err
	}
	return written, nil
}

// copyRegion copies one region to w through a pooled buffer.
func copyRegion(w io.Writer, r fileRegion, st *Stats) (int64, error) {
	bp := chunksCopyBufPool.Get().(*[]byte)
	defer chunksCopyBufPool.Put(bp)
	buf := *bp
	var written int64
	off, rem := r.Offset, r.Length
	for rem > 0 {
		want := min(rem, int64(len(buf)))
		m, err := r.File.ReadAt(buf[:want], off)
		if int64(m) < want {
			if err == nil || errors.Is(err, io.EOF) {
				return written, errShortRegionAt(r, r.Length-rem+int64(m))
			}
			return written, fmt.Errorf("protocol: reading file region %s: %w", fileRegionString(r), err)
		}
		n, err := w.Write(buf[:m])
		written += int64(n)
		st.CopiedFileBytes.Add(int64(n))
		if err == nil && n < m {
			err = io.ErrShortWrite
		}
		if err != nil {
			return written, err
		}
		off += int64(m)
		rem -= int64(m)
	}
	return written, nil
}

func errShortRegionAt(r fileRegion, got int64) error {
	return fmt.Errorf("%w: %s: only %d bytes: %w", ErrShortRegion, fileRegionString(r), got, io.ErrUnexpectedEOF)
}

func fileRegionString(r fileRegion) string {
	name := "<nil>"
	if r.File != nil {
		name = r.File.Name()
	}
	return fmt.Sprintf("%s[%d:+%d]", name, r.Offset, r.Length)
}

// appendRecordsLen appends the length prefix of a records field holding
// total bytes (never null).
func (c *Chunks) appendRecordsLen(total int64, flexible bool) {
	if total > math.MaxInt32-1 {
		c.setErr(fmt.Errorf("%w: %d", ErrRecordsTooLarge, total))
		total = 0
	}
	if flexible {
		c.buf = kbin.AppendUvarint(c.buf, uint32(total)+1)
	} else {
		c.buf = kbin.AppendInt32(c.buf, int32(total))
	}
}
