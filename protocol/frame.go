package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge is returned by ReadFrame for a size field over the limit
// or below zero; Kafka closes such a connection (InvalidReceiveException).
var ErrFrameTooLarge = errors.New("protocol: frame size out of range")

// frameChunk bounds how much ReadFrame allocates ahead of the bytes that have
// actually arrived, so a size field alone can never make the broker allocate
// a large buffer.
const frameChunk = 1 << 20

// ReadFrame reads one size-prefixed frame from r into buf (reused when it is
// large enough) and returns the frame's bytes. A size below zero or above max
// is ErrFrameTooLarge, without reading further.
func ReadFrame(r io.Reader, buf []byte, max int32) ([]byte, error) {
	n, err := ReadFrameSize(r, max)
	if err != nil {
		return nil, err
	}
	return ReadFrameBody(r, buf, n)
}

// ReadFrameSize reads a frame's 4-byte size and checks it against max. A
// connection waits here between requests, holding no buffer.
func ReadFrameSize(r io.Reader, max int32) (int32, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || n > max {
		return 0, fmt.Errorf("%w: %d (max %d)", ErrFrameTooLarge, n, max)
	}
	return n, nil
}

// ReadFrameBody reads the n bytes of a frame whose size ReadFrameSize
// returned, into buf when it is large enough. Otherwise the buffer grows
// with the bytes that arrive, at most frameChunk ahead of them, so the size
// field alone never makes it allocate.
func ReadFrameBody(r io.Reader, buf []byte, n int32) ([]byte, error) {
	if int(n) <= cap(buf) {
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, noEOF(err)
	}
	buf = buf[:0]
	for len(buf) < int(n) {
		want := min(int(n)-len(buf), frameChunk)
		if cap(buf)-len(buf) < want {
			nb := make([]byte, len(buf), min(int(n), 2*cap(buf)+want))
			copy(nb, buf)
			buf = nb
		}
		start := len(buf)
		buf = buf[:start+want]
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return nil, noEOF(err)
		}
	}
	return buf, nil
}

// noEOF turns an EOF in the middle of a frame into ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// AppendSize writes the 4-byte size prefix for a frame of n bytes.
func AppendSize(dst []byte, n int) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}
