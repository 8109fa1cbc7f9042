package controller

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// tcpProxy forwards loopback TCP connections to an upstream address that a
// test may change (etcd restarted on other ports), so that a store's
// endpoint stays fixed. Cut closes every forwarded connection and parks
// the new ones (accepted, not forwarded) until Heal, which forwards them to
// the current upstream: a client that reconnects during a cut just waits,
// instead of failing and backing off for longer than the cut lasted.
type tcpProxy struct {
	ln net.Listener
	wg sync.WaitGroup // accept loop and copy goroutines

	mu       sync.Mutex
	upstream string                // guarded by mu; host:port
	cut      bool                  // guarded by mu
	closed   bool                  // guarded by mu
	conns    map[net.Conn]struct{} // guarded by mu; both ends of every forwarded connection
	parked   []net.Conn            // guarded by mu; accepted during a cut
}

// newTCPProxy listens on a random loopback port and forwards to upstream
// (an etcd client URL or host:port). The test's cleanup closes it.
func newTCPProxy(t *testing.T, upstream string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, conns: map[net.Conn]struct{}{}}
	p.SetUpstream(upstream)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Endpoints is the proxy's address as etcd client URLs.
func (p *tcpProxy) Endpoints() []string { return []string{"http://" + p.ln.Addr().String()} }

// SetUpstream makes new (and parked) connections go to upstream.
func (p *tcpProxy) SetUpstream(upstream string) {
	p.mu.Lock()
	p.upstream = strings.TrimPrefix(upstream, "http://")
	p.mu.Unlock()
}

// Cut closes every forwarded connection and parks new ones until Heal.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Heal forwards the parked connections and every new one.
func (p *tcpProxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for _, c := range p.parked {
		p.wg.Add(1)
		go p.forward(c)
	}
	p.parked = nil
}

func (p *tcpProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	for _, c := range p.parked {
		c.Close()
	}
	p.parked = nil
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		switch {
		case p.closed:
			c.Close()
		case p.cut:
			p.parked = append(p.parked, c)
		default:
			p.wg.Add(1)
			go p.forward(c)
		}
		p.mu.Unlock()
	}
}

// forward dials the upstream for c and copies both ways until either side
// closes. Called with wg incremented.
func (p *tcpProxy) forward(c net.Conn) {
	defer p.wg.Done()
	p.mu.Lock()
	upstream := p.upstream
	p.mu.Unlock()
	u, err := net.DialTimeout("tcp", upstream, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		c.Close()
		u.Close()
		return
	case p.cut: // cut while dialling: wait for the heal
		p.parked = append(p.parked, c)
		p.mu.Unlock()
		u.Close()
		return
	}
	p.conns[c], p.conns[u] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var done sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		defer done.Done()
		_, _ = io.Copy(dst, src)
		// Either direction ending ends the connection, as a cut would.
		dst.Close()
		src.Close()
	}
	done.Add(2)
	go pipe(u, c)
	go pipe(c, u)
	done.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}
