package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a record batch compression codec (attribute bits 0-2).
type Codec int8

// The codecs Kafka defines. Ids 5..7 are unknown (ErrUnsupportedCompression).
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// Known reports whether c is one of the five codecs Kafka defines.
func (c Codec) Known() bool { return c >= CodecNone && c <= CodecZstd }

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// Decompression output goes to pooled buffers. Buffers that grew past
// maxPooledBuf are dropped rather than kept alive by the pool.
const maxPooledBuf = 8 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func getBuf() *[]byte { b := bufPool.Get().(*[]byte); *b = (*b)[:0]; return b }

func putBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		bufPool.Put(b)
	}
}

// decompress decodes src (the records blob of a batch compressed with c)
// into a pooled buffer holding at most limit bytes; the caller returns it
// with putBuf. Corrupt input is ErrInvalidRecord, output past limit
// ErrDecompressedTooLarge.
func decompress(c Codec, src []byte, limit int) (*[]byte, error) {
	if len(src) == 0 {
		return nil, fmt.Errorf("%w: empty %s data", ErrInvalidRecord, c)
	}
	buf := getBuf()
	var err error
	switch c {
	case CodecGzip:
		err = gunzip(buf, src, limit)
	case CodecSnappy:
		err = unsnappy(buf, src, limit)
	case CodecLZ4:
		err = unlz4(buf, src, limit)
	case CodecZstd:
		err = unzstd(buf, src, limit)
	default:
		err = fmt.Errorf("%w: codec id %d", ErrUnsupportedCompression, int8(c))
	}
	if err != nil {
		putBuf(buf)
		if errors.Is(err, ErrDecompressedTooLarge) || errors.Is(err, ErrUnsupportedCompression) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s decompression: %v", ErrInvalidRecord, c, err)
	}
	return buf, nil
}

// readLimited reads r to EOF into *buf, failing once more than limit bytes
// come out. The buffer grows with the data actually produced, never from a
// size claimed by the input.
func readLimited(buf *[]byte, r io.Reader, limit int) error {
	b := *buf
	for {
		if len(b) == cap(b) {
			if len(b) > limit {
				*buf = b
				return ErrDecompressedTooLarge
			}
			grow := max(cap(b), 32<<10)
			// Allow at most one byte past the limit to detect overflow.
			grow = min(grow, limit+1-len(b))
			b = slices.Grow(b, grow)
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > limit {
			*buf = b
			return ErrDecompressedTooLarge
		}
		if err == io.EOF {
			*buf = b
			return nil
		}
		if err != nil {
			*buf = b
			return err
		}
	}
}

type gzipReader struct {
	src bytes.Reader
	zr  gzip.Reader
}

var gzipPool = sync.Pool{New: func() any { return new(gzipReader) }}

func gunzip(buf *[]byte, src []byte, limit int) error {
	g := gzipPool.Get().(*gzipReader)
	defer gzipPool.Put(g)
	g.src.Reset(src)
	if err := g.zr.Reset(&g.src); err != nil {
		return err
	}
	err := readLimited(buf, &g.zr, limit)
	g.src.Reset(nil)
	return err
}

type lz4Reader struct {
	src bytes.Reader
	zr  *lz4.Reader
}

var lz4Pool = sync.Pool{New: func() any { return &lz4Reader{zr: lz4.NewReader(nil)} }}

func unlz4(buf *[]byte, src []byte, limit int) error {
	l := lz4Pool.Get().(*lz4Reader)
	defer lz4Pool.Put(l)
	l.src.Reset(src)
	l.zr.Reset(&l.src)
	err := readLimited(buf, l.zr, limit)
	l.src.Reset(nil)
	l.zr.Reset(nil)
	return err
}

// zstd decoders are expensive to build: keep a pool of single-goroutine
// decoders (no background goroutines to leak when the pool drops one) and
// use DecodeAll, which decodes straight into the output without a window
// ring, so a frame's declared window costs no memory. The output is capped
// by the capacity of the destination (WithDecodeAllCapLimit), which starts
// at the declared content size or a guess from the input size and grows
// geometrically up to the limit, so memory follows the real output and
// never passes the limit. The decoder's max-memory option also caps the
// accepted window; it is never set below zstdMinWindow because producers
// declare windows of up to 8 MiB (zstd-jni level 19) whatever the batch size.
type zstdDec struct {
	d   *zstd.Decoder
	mem int // the decoder's current max-memory setting
}

const zstdMinWindow = 8 << 20

var zstdPool = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(DefaultMaxUncompressed), zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		return nil
	}
	return &zstdDec{d: d, mem: DefaultMaxUncompressed}
}}

func unzstd(buf *[]byte, src []byte, limit int) error {
	z, _ := zstdPool.Get().(*zstdDec)
	if z == nil {
		return errors.New("zstd decoder unavailable")
	}
	defer zstdPool.Put(z)
	if mem := max(limit, zstdMinWindow); z.mem != mem {
		if err := z.d.ResetWithOptions(nil, zstd.WithDecoderMaxMemory(uint64(mem)), zstd.WithDecodeAllCapLimit(true)); err != nil {
			return err
		}
		z.mem = mem
	}
	size := min(limit, max(4*len(src), 64<<10))
	var fh zstd.Header
	if fh.Decode(src) == nil && fh.HasFCS {
		if fh.FrameContentSize > uint64(limit) {
			return ErrDecompressedTooLarge
		}
		size = max(size, int(fh.FrameContentSize))
	}
	for {
		b := *buf
		if cap(b) < size {
			b = make([]byte, 0, size)
			*buf = b
		}
		out, err := z.d.DecodeAll(src, b[:0:size])
		switch {
		case err == nil:
			*buf = out
			return nil
		case errors.Is(err, zstd.ErrDecoderSizeExceeded):
			if size >= limit {
				return ErrDecompressedTooLarge
			}
			size = min(limit, size*4)
		case errors.Is(err, zstd.ErrWindowSizeExceeded):
			return ErrDecompressedTooLarge
		case size < limit:
			// A frame without a content size that outgrows the buffer
			// fails with a generic error ("output bigger than max block
			// size"), not ErrDecoderSizeExceeded: grow and try again; the
			// attempt at the limit gives the verdict.
			size = min(limit, size*4)
		default:
			return err
		}
	}
}

// xerialMagic starts a snappy stream framed the way the Java client
// (xerial snappy-java) writes it: magic, version 1, compatible version 1,
// then blocks each preceded by a 4-byte big endian length.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderLen = 16
	xerialBlockSize = 32 << 10 // the Java writer's block size
)

// unsnappy accepts a raw snappy block (librdkafka, franz-go) or the xerial
// framing (Java, sarama).
func unsnappy(buf *[]byte, src []byte, limit int) error {
	if len(src) >= len(xerialMagic) && bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		return unxerial(buf, src, limit)
	}
	return snappyBlock(buf, src, limit)
}

func snappyBlock(buf *[]byte, src []byte, limit int) error {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return err
	}
	if n > limit-len(*buf) {
		return ErrDecompressedTooLarge
	}
	start := len(*buf)
	b := slices.Grow(*buf, n) // amortised growth across xerial blocks
	out, err := snappy.Decode(b[start:start+n], src)
	if err != nil {
		return err
	}
	if len(out) != n {
		return errors.New("snappy: decoded length mismatch")
	}
	*buf = b[:start+n]
	return nil
}

func unxerial(buf *[]byte, src []byte, limit int) error {
	if len(src) < xerialHeaderLen {
		return errors.New("snappy: truncated xerial header")
	}
	p := src[xerialHeaderLen:]
	for len(p) > 0 {
		if len(p) < 4 {
			return errors.New("snappy: truncated xerial block length")
		}
		n := binary.BigEndian.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p)) {
			return errors.New("snappy: xerial block past the end")
		}
		if err := snappyBlock(buf, p[:n], limit); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// compress appends src compressed with c to dst.
func compress(dst []byte, c Codec, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		w := bytes.NewBuffer(dst)
		zw := gzipWriterPool.Get().(*gzip.Writer)
		defer gzipWriterPool.Put(zw)
		zw.Reset(w)
		if _, err := zw.Write(src); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		return w.Bytes(), nil
	case CodecSnappy:
		dst = append(dst, xerialMagic...)
		dst = binary.BigEndian.AppendUint32(dst, 1) // version
		dst = binary.BigEndian.AppendUint32(dst, 1) // minimum compatible version
		for len(src) > 0 {
			chunk := src[:min(len(src), xerialBlockSize)]
			src = src[len(chunk):]
			lenAt := len(dst)
			dst = append(dst, 0, 0, 0, 0)
			dst = snappyAppend(dst, chunk)
			binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
		}
		return dst, nil
	case CodecLZ4:
		w := bytes.NewBuffer(dst)
		zw := lz4WriterPool.Get().(*lz4.Writer)
		defer lz4WriterPool.Put(zw)
		zw.Reset(w)
		if _, err := zw.Write(src); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
		zw.Reset(nil)
		return w.Bytes(), nil
	case CodecZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("%w: codec id %d", ErrUnsupportedCompression, int8(c))
}

// snappyAppend appends the raw snappy block of src to dst.
func snappyAppend(dst, src []byte) []byte {
	n := snappy.MaxEncodedLen(len(src))
	if n < 0 {
		n = len(src) + len(src)/6 + 32
	}
	start := len(dst)
	if cap(dst)-start < n {
		nd := make([]byte, start, start+n)
		copy(nd, dst)
		dst = nd
	}
	out := snappy.Encode(dst[start:start+n], src)
	return dst[:start+len(out)]
}

var gzipWriterPool = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// The Java client writes 64 KiB lz4 blocks; a smaller block also keeps the
// pooled writers small.
var lz4WriterPool = sync.Pool{New: func() any {
	w := lz4.NewWriter(nil)
	_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb))
	return w
}}

// One zstd encoder serves all callers: EncodeAll is safe for concurrent use.
var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20), zstd.WithZeroFrames(true))
})

// Decompress is decompress for other packages (the client-metrics
// payloads of KIP-714 are compressed as record batches are): a copy of
// the output, at most limit bytes.
func Decompress(c Codec, src []byte, limit int) ([]byte, error) {
	buf, err := decompress(c, src, limit)
	if err != nil {
		return nil, err
	}
	defer putBuf(buf)
	return slices.Clone(*buf), nil
}
