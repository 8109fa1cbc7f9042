//go:build !linux

package protocol

import "io"

// sendfileTo reports that this platform has no zero-copy path: WriteTo
// copies.
func (c *Chunks) sendfileTo(io.Writer, *Stats) (int64, bool, error) {
	return 0, false, nil
}
