package testutil

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
)

// Mode is what a Link lets through.
type Mode int32

const (
	// Pass moves bytes both ways.
	Pass Mode = iota
	// Blackhole moves no byte in either direction, as if every packet
	// were dropped: connections stay open, writes pile up, a new
	// connection hangs in its dial, and a close reaches the other side
	// only once the link passes again. Bytes held meanwhile are then
	// delivered, as TCP retransmits them.
	Blackhole
	// Reset closes every connection and refuses new ones.
	Reset
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Blackhole:
		return "blackhole"
	case Reset:
		return "reset"
	}
	return fmt.Sprintf("Mode(%d)", int32(m))
}

// Link is one controllable network path. Each connection through it is a
// pair of net.Conns joined by two pumps that copy bytes only while the
// link is in Pass. A Link is used either as a dialer (Dial) or behind a
// Proxy.
type Link struct {
	mu     sync.Mutex
	mode   Mode               // guarded by mu
	healed chan struct{}      // guarded by mu; closed when mode leaves Blackhole
	pairs  map[*pair]struct{} // guarded by mu
	closed bool               // guarded by mu
	wg     sync.WaitGroup     // the pumps
}

// NewLink returns a Link in Pass.
func NewLink() *Link {
	h := make(chan struct{})
	close(h)
	return &Link{healed: h, pairs: map[*pair]struct{}{}}
}

// pair is one connection through a link: a is the side that connected,
// b the side connected to (nil until dialled).
type pair struct {
	a    net.Conn
	done chan struct{} // closed by close

	mu     sync.Mutex
	b      net.Conn // guarded by mu
	closed bool     // guarded by mu
}

// setB sets the far side, unless the pair is closed.
func (p *pair) setB(b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.b = b
	return true
}

func (p *pair) far() net.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b
}

func (p *pair) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	close(p.done)
	p.a.Close()
	if p.b != nil {
		p.b.Close()
	}
}

// Set changes the link's mode; Reset closes every open connection.
func (l *Link) Set(m Mode) {
	l.mu.Lock()
	var drop []*pair
	if m == Blackhole && l.mode != Blackhole {
		l.healed = make(chan struct{})
	}
	if m != Blackhole && l.mode == Blackhole {
		close(l.healed)
	}
	l.mode = m
	if m == Reset {
		for p := range l.pairs {
			drop = append(drop, p)
		}
	}
	l.mu.Unlock()
	for _, p := range drop {
		p.close()
	}
}

// Mode is the link's current mode.
func (l *Link) Mode() Mode {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mode
}

// Close closes every connection, refuses new ones and waits for the pumps.
func (l *Link) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.Set(Reset)
	l.wg.Wait()
}

// open registers a connection a whose far side is not dialled yet; nil
// when the link refuses it.
func (l *Link) open(a net.Conn) *pair {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.mode == Reset {
		return nil
	}
	p := &pair{a: a, done: make(chan struct{})}
	l.pairs[p] = struct{}{}
	return p
}

// join sets p's far side and starts its pumps, unless the pair was closed
// meanwhile.
func (l *Link) join(p *pair, b net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.pairs[p]; !ok || l.closed || l.mode == Reset || !p.setB(b) {
		b.Close()
		return false
	}
	l.wg.Add(2)
	go l.pump(p, b, p.a)
	go l.pump(p, p.a, b)
	return true
}

func (l *Link) forget(p *pair) {
	p.close()
	l.mu.Lock()
	delete(l.pairs, p)
	l.mu.Unlock()
}

// await blocks while the link is blackholed; it reports whether p may
// move bytes (false once p is closed or the link reset).
func (l *Link) await(p *pair) bool {
	for {
		l.mu.Lock()
		m, h := l.mode, l.healed
		l.mu.Unlock()
		switch m {
		case Pass:
			select {
			case <-p.done:
				return false
			default:
				return true
			}
		case Reset:
			return false
		}
		select {
		case <-h:
		case <-p.done:
			return false
		}
	}
}

// pump copies src to dst while the link passes. An error or EOF on src
// closes the pair, once the link passes (a FIN is a packet too).
func (l *Link) pump(p *pair, dst, src net.Conn) {
	defer l.wg.Done()
	defer l.forget(p)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !l.await(p) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				l.await(p)
				return
			}
		}
		if err != nil {
			l.await(p)
			return
		}
	}
}

// refused is the error of a dial the link refuses.
func refused(network, addr string) error {
	return &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED, Addr: stringAddr{network, addr}}
}

type stringAddr struct{ net, addr string }

func (a stringAddr) Network() string { return a.net }
func (a stringAddr) String() string  { return a.addr }

// Dial connects to addr through the link; it has the signature of
// net.Dialer.DialContext (broker.Config.Dial). A blackholed link holds the
// dial until it passes again or ctx ends; a reset one refuses it.
func (l *Link) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	near, far := net.Pipe()
	p := l.open(far)
	if p == nil {
		near.Close()
		far.Close()
		return nil, refused(network, addr)
	}
	fail := func(err error) (net.Conn, error) {
		l.forget(p)
		near.Close()
		return nil, err
	}
	// The SYN is lost while blackholed.
	if !l.awaitCtx(ctx, p) {
		if err := ctx.Err(); err != nil {
			return fail(&net.OpError{Op: "dial", Net: network, Addr: stringAddr{network, addr}, Err: err})
		}
		return fail(refused(network, addr))
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return fail(err)
	}
	if !l.join(p, c) {
		return fail(refused(network, addr))
	}
	return near, nil
}

// awaitCtx is await that also gives up when ctx ends.
func (l *Link) awaitCtx(ctx context.Context, p *pair) bool {
	stop := context.AfterFunc(ctx, p.close)
	defer stop()
	return l.await(p)
}

// Proxy listens on a random loopback port and forwards each connection to
// the address upstream returns at that moment (so the upstream may move,
// as an etcd restarted on new ports does), through a Link.
type Proxy struct {
	*Link
	ln       net.Listener
	upstream func() string
	wg       sync.WaitGroup
}

// StartProxy starts a proxy; it is closed when the test ends.
func StartProxy(tb testing.TB, upstream func() string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testutil: proxy: %v", err)
	}
	p := &Proxy{Link: NewLink(), ln: ln, upstream: upstream}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting and closes every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Link.Close()
	p.wg.Wait()
}

// DropUpstream closes the upstream side of every connection, as the
// server's end of a restart does; the clients see the close when the link
// passes.
func (p *Proxy) DropUpstream() {
	p.mu.Lock()
	var ups []net.Conn
	for pr := range p.pairs {
		if b := pr.far(); b != nil {
			ups = append(ups, b)
		}
	}
	p.mu.Unlock()
	for _, c := range ups {
		c.Close()
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		pr := p.open(c)
		if pr == nil {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			// The connection is accepted (the kernel does that) but
			// nothing reaches the upstream while blackholed.
			if !p.await(pr) {
				p.forget(pr)
				return
			}
			up, err := net.Dial("tcp", p.upstream())
			if err != nil {
				p.forget(pr)
				return
			}
			if !p.join(pr, up) {
				p.forget(pr)
			}
		}()
	}
}
