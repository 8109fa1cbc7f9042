package broker

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/protocol"
)

// request is one decoded request on a connection.
type request struct {
	hdr      protocol.Header
	body     kmsg.Request
	conn     net.Conn
	listener string // name of the listener the connection came in on

	// raw, when a handler sets it, is sent instead of an encoded kmsg
	// response: Fetch uses it to send record bytes as file regions.
	raw *rawReply
}

// rawReply is a whole response frame (size, header, body) made of bytes and
// file regions; release is called once it is written.
type rawReply struct {
	frame   protocol.Chunks
	release func()
}

// errCloseConn asks the connection loop to close without a response, as
// Kafka does for requests it refuses to parse or serve.
var errCloseConn = errors.New("broker: closing connection")

// serveConn serves one connection: one request at a time, so responses leave
// in request order.
func (b *Broker) serveConn(ctx context.Context, c net.Conn, listener string) {
	defer b.forgetConn(c)
	defer c.Close()
	idle := time.Duration(b.props.Int64("connections.max.idle.ms")) * time.Millisecond
	var (
		buf []byte
		out []byte
	)
	for {
		if idle > 0 {
			c.SetReadDeadline(time.Now().Add(idle))
		}
		frame, err := protocol.ReadFrame(c, buf, b.maxFrame)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
				b.log.Info("closing connection", "remote", c.RemoteAddr().String(), "err", err)
			}
			return
		}
		if cap(frame) <= 1<<20 {
			buf = frame[:0] // keep small buffers; let big ones go
		} else {
			buf = nil
		}
		hdr, body, err := protocol.ParseHeader(frame)
		if err != nil {
			b.log.Info("closing connection: bad request header", "remote", c.RemoteAddr().String(), "err", err)
			return
		}
		r := &request{hdr: hdr, conn: c, listener: listener}
		resp, err := b.dispatch(ctx, r, body)
		if err != nil {
			b.log.Info("closing connection", "remote", c.RemoteAddr().String(),
				"api", kmsg.NameForKey(hdr.Key), "version", hdr.Version, "err", err)
			return
		}
		if idle > 0 {
			// A client that stops reading loses its connection after the
			// idle time instead of pinning it (and its file regions).
			c.SetWriteDeadline(time.Now().Add(idle))
		}
		if r.raw != nil {
			err = b.writeRaw(c, r.raw)
		} else if resp != nil {
			out = protocol.AppendResponse(out[:0], r.hdr, resp)
			_, err = c.Write(out)
			if cap(out) > 1<<20 {
				out = nil
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				b.log.Debug("write failed", "remote", c.RemoteAddr().String(), "err", err)
			}
			return
		}
	}
}

// writeRaw writes a response frame made of chunks.
func (b *Broker) writeRaw(c net.Conn, raw *rawReply) error {
	defer func() {
		if raw.release != nil {
			raw.release()
		}
	}()
	_, err := raw.frame.WriteTo(c, b.useSendfile, &b.stats)
	return err
}
