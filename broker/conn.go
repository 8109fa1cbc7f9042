package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/protocol"
)

// request is one decoded request on a connection.
type request struct {
	hdr       protocol.Header
	body      kmsg.Request
	conn      net.Conn
	connID    uint64        // the connection's number: connections are numbered from 1 as accepted
	listener  string        // name of the listener the connection came in on
	principal string        // the connection's principal, "User:name"
	tokenAuth bool          // authenticated with a delegation token
	times     *reqTimes     // the request's times, for the metrics; dispatch sets start
	size      int           // the request's frame size
	throttle  time.Duration // quota throttle: the connection reads nothing more for this long
	parked    time.Duration // how long the handler waited (long poll, acks=all, rebalance), not working
	started   time.Time     // when the handler started, for request_percentage
	timed     bool          // its time is recorded against request_percentage
	software  *clientSoftware
}

// clientSoftware is the client software a connection's ApiVersions v3+
// named (KIP-511), for the client-metrics match selectors.
type clientSoftware struct{ name, version string }

// errCloseConn asks the connection loop to close without a response, as
// Kafka does for requests it refuses to parse or serve.
var errCloseConn = errors.New("broker: closing connection")

// smallFrame is the largest request a connection reads into its own
// buffer; larger ones borrow from the broker's frame pool.
const smallFrame = 64 << 10

// serveConn serves one connection: one request at a time, so responses leave
// in request order.
func (b *Broker) serveConn(ctx context.Context, c net.Conn, listener string, sec *listenerSecurity) {
	defer b.forgetConn(c)
	defer c.Close()
	lm := b.metrics.forListener(listener)
	lm.created.Inc()
	lm.count.Inc()
	defer func() { lm.count.Dec(); lm.close.Inc() }()
	b.tuneConn(c)
	sc, principal, err := b.secureConn(ctx, c, sec.tls, listener)
	if err != nil {
		return
	}
	c = sc
	cs := &connState{c: c, id: b.connSeq.Add(1), listener: listener, principal: principal, sasl: sec.saslConn(), idle: b.settings.ConnectionsMaxIdle}
	// A share session ends with the connection that opened it (Kafka's
	// ShareSessionCache listens for disconnects the same way).
	defer b.share.ConnClosed(cs.id)
	defer b.telemetry.ConnClosed(cs.id)
	for {
		if err := b.serveOne(ctx, cs); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
				b.log.Info("closing connection", "remote", c.RemoteAddr().String(), "err", err)
			}
			return
		}
	}
}

// tuneConn sets the socket buffers of an accepted connection to
// socket.send.buffer.bytes and socket.receive.buffer.bytes (SO_SNDBUF,
// SO_RCVBUF), as Kafka's acceptor does; -1 keeps the OS default.
func (b *Broker) tuneConn(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	if n := b.settings.SocketSendBufferBytes; n != -1 {
		if err := tc.SetWriteBuffer(int(n)); err != nil {
			b.log.Debug("socket.send.buffer.bytes", "err", err)
		}
	}
	if n := b.settings.SocketReceiveBufferBytes; n != -1 {
		if err := tc.SetReadBuffer(int(n)); err != nil {
			b.log.Debug("socket.receive.buffer.bytes", "err", err)
		}
	}
}

// connState is what a connection keeps between requests.
type connState struct {
	c         net.Conn
	id        uint64 // request.connID
	listener  string
	principal string
	tokenAuth bool      // the principal authenticated with a delegation token
	sasl      *saslConn // nil unless the listener is SASL_PLAINTEXT or SASL_SSL
	idle      time.Duration
	software  clientSoftware
	small     []byte // buffer for requests up to smallFrame
	out       []byte // buffer for encoded responses
}

// serveOne reads, serves and answers one request. An error closes the
// connection.
func (b *Broker) serveOne(ctx context.Context, cs *connState) error {
	c := cs.c
	if cs.idle > 0 {
		c.SetReadDeadline(time.Now().Add(cs.idle))
	}
	// Before SASL authentication a frame is at most
	// sasl.server.max.receive.size: nothing an unauthenticated peer
	// sends makes the broker allocate more.
	preAuth := cs.sasl != nil && !cs.sasl.done
	maxFrame := b.maxFrame
	if preAuth {
		maxFrame = b.settings.SaslServerMaxReceiveSize
	}
	n, err := protocol.ReadFrameSize(c, maxFrame)
	if err != nil {
		return err
	}
	// Large frames (produce requests) borrow a pooled buffer for as long
	// as the request is served: idle connections hold none, and busy ones
	// neither allocate nor clear a buffer per request.
	buf := cs.small
	if int(n) > smallFrame {
		buf = b.frames.get()
	}
	frame, err := protocol.ReadFrameBody(c, buf, n)
	if int(n) > smallFrame {
		defer func() { b.frames.put(frame) }()
	} else if err == nil {
		cs.small = frame[:0]
	}
	if err != nil {
		return err
	}
	if preAuth {
		return b.serveSASL(ctx, cs, frame)
	}
	t := reqTimes{read: time.Now()}
	hdr, body, err := protocol.ParseHeader(frame)
	if err != nil {
		return fmt.Errorf("bad request header: %w", err)
	}
	if cs.sasl != nil && !cs.sasl.expires.IsZero() { // KIP-368 (sasl.go)
		if reauth, err := b.saslSession(cs, hdr); err != nil || reauth {
			if err != nil {
				return err
			}
			return b.serveSASL(ctx, cs, frame)
		}
	}
	r := &request{hdr: hdr, conn: c, connID: cs.id, listener: cs.listener, principal: cs.principal, tokenAuth: cs.tokenAuth, times: &t, size: len(frame), software: &cs.software}
	resp, err := b.dispatch(ctx, r, body)
	t.end = time.Now()
	if err != nil {
		return fmt.Errorf("%s v%d: %w", kmsg.NameForKey(hdr.Key), hdr.Version, err)
	}
	err = b.writeResponse(ctx, cs, r.hdr, resp)
	t.sent = time.Now()
	b.metrics.observeRequest(hdr.Key, hdr.Version, r, resp, t)
	if err == nil && r.throttle > 0 {
		// KIP-219: the channel is muted for the throttle time, so that
		// a client ignoring throttle_time_ms is slowed too.
		mute := time.NewTimer(r.throttle)
		select {
		case <-ctx.Done():
		case <-mute.C:
		}
		mute.Stop()
	}
	return err
}

// writeResponse sends the response to a request (none for a nil resp).
func (b *Broker) writeResponse(ctx context.Context, cs *connState, hdr protocol.Header, resp kmsg.Response) error {
	c := cs.c
	var err error
	if cs.idle > 0 {
		// A client that stops reading loses its connection after the
		// idle time instead of pinning it (and its file regions).
		c.SetWriteDeadline(time.Now().Add(cs.idle))
	}
	switch fr, framed := resp.(*protocol.FramedResponse); {
	case framed:
		// Fetch: bytes and file regions, sent with sendfile.
		_, err = fr.WriteTo(c, b.useSendfile, &b.stats)
	case resp != nil:
		cs.out = protocol.AppendResponse(cs.out[:0], hdr, resp)
		_, err = c.Write(cs.out)
		if cap(cs.out) > smallFrame {
			cs.out = nil
		}
	}
	if err != nil && ctx.Err() == nil {
		b.log.Debug("write failed", "remote", c.RemoteAddr().String(), "err", err)
	}
	return err
}

// framePool lends buffers for large request frames.
type framePool struct{ p sync.Pool }

func (f *framePool) get() []byte {
	if b, ok := f.p.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return nil
}

// put returns a buffer once nothing refers to it any more. Buffers of the
// largest frames are let go rather than kept.
func (f *framePool) put(b []byte) {
	if b == nil || cap(b) > 16<<20 {
		return
	}
	b = b[:0]
	f.p.Put(&b)
}
