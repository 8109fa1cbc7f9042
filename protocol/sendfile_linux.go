//go:build linux

package protocol

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxSendfileCall bounds one sendfile(2) call (Linux moves at most
// 0x7ffff000 bytes per call anyway).
const maxSendfileCall = 1 << 30

// sendfileTo is WriteTo's zero-copy path. ok is false when w does not expose
// a file descriptor; nothing was written then.
func (c *Chunks) sendfileTo(w io.Writer, st *Stats) (written int64, ok bool, err error) {
	sc, isConn := w.(syscall.Conn)
	if !isConn {
		return 0, false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil // the copy path reports the writer's own error
	}
	for i := range c.chunks {
		k := &c.chunks[i]
		if !k.isRegion() {
			c.iov = append(c.iov, c.bytesOf(k))
			continue
		}
		n, err := c.writeIOVMore(rc, w)
		written += n
		if err != nil {
			return written, true, err
		}
		n, err = sendRegion(rc, w, k.region, st)
		written += n
		if err != nil {
			return written, true, err
		}
	}
	n, err := c.writeIOV(w)
	written += n
	return written, true, err
}

// maxIOV is Linux's IOV_MAX: more buffers than this go through writeIOV.
const maxIOV = 1024

// writeIOVMore writes the in-memory chunks collected in c.iov, which a
// region follows, with sendmsg(MSG_MORE): the kernel holds a short header
// back to fill one TCP segment with the region's first bytes, instead of
// sending it alone (sockets are TCP_NODELAY). sendfile clears the hint after
// its last page, so nothing is held longer than the send itself. Writers that
// are not sockets (pipes, files) take the plain writeIOV.
func (c *Chunks) writeIOVMore(rc syscall.RawConn, w io.Writer) (int64, error) {
	if len(c.iov) == 0 {
		return 0, nil
	}
	if len(c.iov) > maxIOV {
		return c.writeIOV(w)
	}
	var (
		iov         = c.iov
		sent        int64
		sendErr     error
		unsupported bool
	)
	wErr := rc.Write(func(fd uintptr) bool {
		for len(iov) > 0 {
			n, err := unix.SendmsgBuffers(int(fd), iov, nil, nil, unix.MSG_MORE|unix.MSG_NOSIGNAL)
			if n > 0 {
				sent += int64(n)
				for n > 0 {
					if n < len(iov[0]) {
						iov[0] = iov[0][n:]
						break
					}
					n -= len(iov[0])
					iov = iov[1:]
				}
			}
			switch {
			case err == nil:
			case errors.Is(err, unix.EAGAIN):
				return false
			case errors.Is(err, unix.EINTR):
			case sent == 0 && (errors.Is(err, unix.ENOTSOCK) || errors.Is(err, unix.EOPNOTSUPP)):
				unsupported = true
				return true
			default:
				sendErr = os.NewSyscallError("sendmsg", err)
				return true
			}
		}
		return true
	})
	if unsupported {
		return c.writeIOV(w) // nothing was sent; c.iov is intact
	}
	clear(c.iov)
	c.iov = c.iov[:0]
	if sendErr == nil {
		sendErr = wErr
	}
	return sent, sendErr
}

// sendRegion sends r to the socket behind rc with sendfile, from r.Offset
// given explicitly (the file's own offset is neither used nor moved). It runs
// inside the file's RawConn.Control so that a concurrent Close of the file
// cannot recycle the descriptor mid-send, and inside the socket's
// RawConn.Write so that EAGAIN parks the goroutine in the poller (honouring
// the write deadline) instead of spinning. If the kernel refuses sendfile for
// this pair of descriptors before any byte moved, the region is copied.
func sendRegion(rc syscall.RawConn, w io.Writer, r fileRegion, st *Stats) (int64, error) {
	frc, err := r.File.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("protocol: file region %s: %w", fileRegionString(r), err)
	}
	var (
		sent        int64
		sendErr     error
		unsupported bool
	)
	ctlErr := frc.Control(func(ffd uintptr) {
		off := r.Offset
		wErr := rc.Write(func(sfd uintptr) bool {
			for sent < r.Length {
				want := min(r.Length-sent, maxSendfileCall)
				n, err := unix.Sendfile(int(sfd), int(ffd), &off, int(want))
				if n > 0 {
					sent += int64(n)
					st.SendfileBytes.Add(int64(n))
				}
				switch {
				case err == nil && n <= 0:
					sendErr = errShortRegionAt(r, sent)
					return true
				case err == nil:
				case errors.Is(err, unix.EAGAIN):
					return false // wait until the socket is writable
				case errors.Is(err, unix.EINTR):
				case sent == 0 && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)):
					unsupported = true
					return true
				default:
					sendErr = os.NewSyscallError("sendfile", err)
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = wErr
		}
	})
	if ctlErr != nil {
		// Control fails only when the file is closed (poll's
		// ErrFileClosing); report it as os.ErrClosed, as File.ReadAt does.
		return sent, fmt.Errorf("protocol: file region %s: %w (%v)", fileRegionString(r), os.ErrClosed, ctlErr)
	}
	if unsupported {
		return copyRegion(w, r, st)
	}
	return sent, sendErr
}
