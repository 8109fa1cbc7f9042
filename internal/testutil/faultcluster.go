package testutil

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/samsa-io/samsa/controller"
)

// FaultCluster is a Cluster whose network can fail: each broker reaches
// etcd through a Proxy of its own, and its follower fetchers reach the
// other brokers through one Link per peer. Clients still talk to the
// brokers directly.
//
//	broker i ──etcd[i] proxy──► etcd        (CutEtcd)
//	broker i ──peer[i][j] link──► broker j  (CutPeers: i's fetches and its peers')
type FaultCluster struct {
	*Cluster
	etcdDir string
	etcd    []*Proxy  // by node index
	peer    [][]*Link // peer[i][j]: node i+1's connections to node j+1

	mu     sync.Mutex
	byAddr map[string]int // guarded by mu; node index by listener address
	etcdUp string         // guarded by mu; the current etcd client URL's host:port
}

// StartFaultCluster starts an embedded etcd and n brokers as StartCluster
// does, with every broker's etcd and replication traffic through links the
// test controls. When the test ends every link is healed before the
// brokers stop.
func StartFaultCluster(tb testing.TB, n int, overrides map[string]string) *FaultCluster {
	tb.Helper()
	refuseClusterInCheck(tb, n)
	c := &FaultCluster{Cluster: &Cluster{tb: tb}, etcdDir: tb.TempDir(), byAddr: map[string]int{}}
	c.startEtcd()
	tb.Cleanup(func() {
		if err := c.Etcd.Close(); err != nil {
			tb.Errorf("testutil: closing etcd: %v", err)
		}
	})
	c.peer = make([][]*Link, n)
	for i := range n {
		c.etcd = append(c.etcd, StartProxy(tb, c.etcdAddr))
		for range n {
			l := NewLink()
			c.peer[i] = append(c.peer[i], l)
			tb.Cleanup(l.Close)
		}
	}
	for i := range n {
		o := maps.Clone(ClusterDefaults)
		maps.Copy(o, overrides)
		o["node.id"] = strconv.Itoa(i + 1)
		o["etcd.endpoints"] = "http://" + c.etcd[i].Addr()
		node := startBroker(tb, o, c.dialer(i))
		c.Nodes = append(c.Nodes, node)
		c.mu.Lock()
		c.byAddr[node.Addr()] = i
		c.mu.Unlock()
	}
	// Cleanups run last first: this one, before the brokers stop.
	tb.Cleanup(c.HealAll)
	return c
}

func (c *FaultCluster) startEtcd() {
	c.tb.Helper()
	level := slog.LevelError
	if os.Getenv("SAMSA_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	e, err := controller.StartEmbedded(controller.EmbeddedConfig{
		Dir:    c.etcdDir,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		c.tb.Fatalf("testutil: embedded etcd: %v", err)
	}
	u := e.Endpoints()[0]
	c.mu.Lock()
	c.Etcd = e
	c.etcdUp = u[len("http://"):]
	c.mu.Unlock()
}

func (c *FaultCluster) etcdAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.etcdUp
}

// dialer is node index i's replication dialer: through peer[i][j] to node
// j+1, directly to any other address.
func (c *FaultCluster) dialer(i int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c.mu.Lock()
		j, ok := c.byAddr[addr]
		c.mu.Unlock()
		if !ok {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
		return c.peer[i][j].Dial(ctx, network, addr)
	}
}

// index is the node index of id, or fails the test.
func (c *FaultCluster) index(id int32) int {
	c.tb.Helper()
	if id < 1 || int(id) > len(c.Nodes) {
		c.tb.Fatalf("testutil: no node %d in a cluster of %d", id, len(c.Nodes))
	}
	return int(id) - 1
}

// PeerLink is the link of node from's connections to node to.
func (c *FaultCluster) PeerLink(from, to int32) *Link { return c.peer[c.index(from)][c.index(to)] }

// EtcdLink is the link of node id's connections to etcd.
func (c *FaultCluster) EtcdLink(id int32) *Link { return c.etcd[c.index(id)].Link }

// CutPeers sets every link between node id and its peers, both ways, to m
// (Blackhole or Reset; Pass heals).
func (c *FaultCluster) CutPeers(id int32, m Mode) {
	i := c.index(id)
	for j := range c.Nodes {
		if j != i {
			c.peer[i][j].Set(m)
			c.peer[j][i].Set(m)
		}
	}
}

// CutEtcd sets node id's link to etcd to m.
func (c *FaultCluster) CutEtcd(id int32, m Mode) { c.etcd[c.index(id)].Set(m) }

// Heal lets everything through again on node id's links.
func (c *FaultCluster) Heal(id int32) {
	c.CutPeers(id, Pass)
	c.CutEtcd(id, Pass)
}

// HealAll heals every link.
func (c *FaultCluster) HealAll() {
	for _, p := range c.etcd {
		p.Set(Pass)
	}
	for _, row := range c.peer {
		for _, l := range row {
			l.Set(Pass)
		}
	}
}

// RestartEtcd stops etcd and starts it again on the same data directory
// (and new ports, which the proxies hide). The brokers' connections are
// closed from etcd's side, as a restart closes them; a broker cut off from
// etcd sees that once healed.
func (c *FaultCluster) RestartEtcd() {
	c.tb.Helper()
	for _, p := range c.etcd {
		p.DropUpstream()
	}
	c.mu.Lock()
	e := c.Etcd
	c.etcdUp = "127.0.0.1:1" // nothing listens: dials fail until etcd is back
	c.mu.Unlock()
	if err := e.Close(); err != nil {
		c.tb.Logf("testutil: closing etcd for a restart: %v", err)
	}
	c.startEtcd()
}

// Registered lists the node ids registered in etcd, asked directly (not
// through any broker's proxy).
func (c *FaultCluster) Registered(ctx context.Context) ([]int32, error) {
	c.mu.Lock()
	ep := "http://" + c.etcdUp
	c.mu.Unlock()
	// An observer: its lease carries nothing, its id is no broker's.
	s, err := controller.Open(ctx, controller.Config{
		Endpoints: []string{ep}, NodeID: math.MaxInt32,
		Logger: slog.New(slog.DiscardHandler), DialTimeout: 2 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	bs, err := s.Brokers(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]int32, 0, len(bs))
	for _, b := range bs {
		ids = append(ids, b.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// WaitRegistered waits until every node is registered in etcd.
func (c *FaultCluster) WaitRegistered(timeout time.Duration) {
	c.tb.Helper()
	Eventually(c.tb, timeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ids, err := c.Registered(ctx)
		if err != nil {
			return err
		}
		if len(ids) != len(c.Nodes) {
			return fmt.Errorf("registered brokers %v, want %d", ids, len(c.Nodes))
		}
		return nil
	})
}
