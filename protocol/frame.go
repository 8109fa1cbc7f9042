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
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || n > max {
		return nil, fmt.Errorf("%w: %d (max %d)", ErrFrameTooLarge, n, max)
	}
	if int(n) <= cap(buf) {
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, noEOF(err)
	}
	// Grow with the data: allocate at most frameChunk beyond what has been read.
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
