package controller

// The KRaft controller quorum as an etcd cluster. A Kafka configuration
// names its controllers in controller.quorum.voters (id@host:port) and
// gives each a controller listener; samsa runs an etcd member in each
// controller's process, named after the node id, and serves the member on
// that one port: a connection opening with HTTP/2's preface is a gRPC
// client (brokers, etcd clients) and goes to the member's client port,
// anything else is a peer's raft traffic (HTTP/1.1) and goes to its peer
// port. Both of those listen on loopback only. So the voters' addresses
// are, unchanged, both the etcd cluster's peer URLs and its client
// endpoints, and a compose file written for Kafka's three combined nodes
// needs no other port.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Member is one member of an embedded etcd cluster: its name and the
// host:port it is reached on (peers and clients alike).
type Member struct {
	Name string
	Addr string
}

// MemberName is the etcd member name of a controller node.
func MemberName(nodeID int32) string { return "node-" + strconv.Itoa(int(nodeID)) }

// startMember starts this process's member of the cluster cfg.Members and
// waits until a majority of them are up.
func startMember(cfg EmbeddedConfig) (*Embedded, error) {
	var self *Member
	var initial []string
	for i, m := range cfg.Members {
		if m.Name == "" || strings.ContainsAny(m.Name, "=,") {
			return nil, fmt.Errorf("controller: embedded etcd: bad member name %q", m.Name)
		}
		if _, _, err := net.SplitHostPort(m.Addr); err != nil {
			return nil, fmt.Errorf("controller: embedded etcd: member %s: %w", m.Name, err)
		}
		if m.Name == cfg.Name {
			self = &cfg.Members[i]
		}
		initial = append(initial, m.Name+"=http://"+m.Addr)
	}
	if self == nil {
		return nil, fmt.Errorf("controller: embedded etcd: %q is not one of the members", cfg.Name)
	}
	if cfg.Listen == "" {
		return nil, errors.New("controller: embedded etcd: Listen required with Members")
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("controller: embedded etcd: controller listener: %w", err)
	}
	ec, quiet, err := embedConfig(cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	mux := newPortMux(ln, ec.ListenClientUrls[0].Host, ec.ListenPeerUrls[0].Host)
	adv := url.URL{Scheme: "http", Host: self.Addr}
	ec.Name = cfg.Name
	ec.AdvertisePeerUrls = []url.URL{adv}
	ec.AdvertiseClientUrls = []url.URL{adv}
	ec.InitialCluster = strings.Join(initial, ",")
	ec.InitialClusterToken = "samsa-quorum"
	// etcd's defaults: members talk over a network, and a broker's
	// liveness (its lease) does not hang on the election timeout.
	ec.TickMs = 100
	ec.ElectionMs = 1000
	// Until a majority is up, the member cannot serve: say so, and whom it
	// waits for.
	need := len(cfg.Members)/2 + 1
	log := cfg.Logger.With("member", cfg.Name, "listener", ln.Addr().String())
	log.Info("controller quorum: starting the etcd member; it serves once a majority is up",
		"members", ec.InitialCluster, "majority", need, "timeout", cfg.StartTimeout)
	e, err := runEtcd(ec, quiet, cfg, func(waited time.Duration) {
		log.Warn("controller quorum: waiting for a majority of the voters", "majority", need,
			"members", ec.InitialCluster, "waited", waited.Round(time.Second), "timeout", cfg.StartTimeout)
	})
	if err != nil {
		mux.close()
		if strings.Contains(err.Error(), "not ready after") {
			return nil, fmt.Errorf("%w: fewer than %d of the voters %s answered (controller.quorum.voters)", err, need, ec.InitialCluster)
		}
		return nil, err
	}
	e.mux = mux
	log.Info("controller quorum: etcd member ready")
	return e, nil
}

// http2Preface starts every HTTP/2 connection (gRPC's); HTTP/1.1 requests
// (etcd's raft and member traffic) start with a method.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// portMux serves one listener for etcd's client and peer ports, choosing
// by the first bytes a connection sends.
type portMux struct {
	ln           net.Listener
	client, peer string // loopback host:port of etcd's listeners
	wg           sync.WaitGroup
	mu           sync.Mutex
	conns        map[net.Conn]struct{}
	closed       bool
}

func newPortMux(ln net.Listener, client, peer string) *portMux {
	m := &portMux{ln: ln, client: client, peer: peer, conns: map[net.Conn]struct{}{}}
	m.wg.Add(1)
	go m.accept()
	return m
}

func (m *portMux) accept() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if !m.track(c) {
			c.Close()
			return
		}
		m.wg.Add(1)
		go m.serve(c)
	}
}

// track registers c for close; false once the mux is closed.
func (m *portMux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.conns[c] = struct{}{}
	return true
}

func (m *portMux) untrack(cs ...net.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range cs {
		delete(m.conns, c)
		c.Close()
	}
}

// serve routes one connection: the first three bytes (PRI, or an HTTP
// method) decide, read within 10 s.
func (m *portMux) serve(c net.Conn) {
	defer m.wg.Done()
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	head, err := br.Peek(3)
	if err != nil {
		m.untrack(c)
		return
	}
	c.SetReadDeadline(time.Time{})
	to := m.peer
	if string(head) == http2Preface[:3] {
		to = m.client
	}
	b, err := net.DialTimeout("tcp", to, 5*time.Second)
	if err != nil || !m.track(b) {
		if b != nil {
			b.Close()
		}
		m.untrack(c)
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(b, br); done <- struct{}{} }()
	go func() { io.Copy(c, b); done <- struct{}{} }()
	// Either side ending ends both: closing them ends the other copy.
	<-done
	m.untrack(c, b)
	<-done
}

// close stops accepting, closes every connection and waits for the
// goroutines.
func (m *portMux) close() {
	m.ln.Close()
	m.mu.Lock()
	m.closed = true
	for c := range m.conns {
		c.Close()
	}
	m.mu.Unlock()
	m.wg.Wait()
}
