package testutil

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/broker"
	"github.com/samsa-io/samsa/controller"
)

// Cluster is one embedded etcd and several brokers sharing it, each with
// its own directories and random loopback port.
type Cluster struct {
	Etcd  *controller.Embedded
	Nodes []*Node // Nodes[i] has node.id i+1
	tb    testing.TB
}

// ClusterDefaults are the properties StartCluster gives every broker
// before the caller's overrides: a dead broker's registration expires in 2s
// (broker.session.timeout.ms), so failovers happen within seconds.
var ClusterDefaults = map[string]string{
	"broker.session.timeout.ms": "2000",
}

// StartCluster starts an embedded etcd on random loopback ports and n
// brokers (node.id 1..n) on it, with ClusterDefaults and then overrides
// applied to each. Everything is stopped when the test ends, brokers
// first.
func StartCluster(tb testing.TB, n int, overrides map[string]string) *Cluster {
	tb.Helper()
	return StartClusterWith(tb, n, overrides, nil)
}

// StartClusterWith is StartCluster with configure applied to each
// broker's Config before every start (node.id id): its test seams
// (broker.Config.LogFS, Dial), or per-broker properties.
func StartClusterWith(tb testing.TB, n int, overrides map[string]string, configure func(id int32, cfg *broker.Config)) *Cluster {
	tb.Helper()
	refuseClusterInCheck(tb, n)
	return startCluster(tb, n, overrides, configure)
}

// StartClusterInCheck is StartCluster for a test that make check runs
// too (under -short): one that needs several brokers to exist but waits
// for no failover, session expiry or replica catch-up, so that it takes
// about as long as starting them (a second). Every other cluster test
// stays out of make check (refuseClusterInCheck).
func StartClusterInCheck(tb testing.TB, n int, overrides map[string]string) *Cluster {
	tb.Helper()
	return startCluster(tb, n, overrides, nil)
}

func startCluster(tb testing.TB, n int, overrides map[string]string, configure func(id int32, cfg *broker.Config)) *Cluster {
	tb.Helper()
	level := slog.LevelError
	if os.Getenv("SAMSA_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	e, err := controller.StartEmbedded(controller.EmbeddedConfig{
		Dir:    tb.TempDir(),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		tb.Fatalf("testutil: embedded etcd: %v", err)
	}
	tb.Cleanup(func() {
		if err := e.Close(); err != nil {
			tb.Errorf("testutil: closing etcd: %v", err)
		}
	})
	c := &Cluster{Etcd: e, tb: tb}
	for i := 1; i <= n; i++ {
		o := maps.Clone(ClusterDefaults)
		maps.Copy(o, overrides)
		o["node.id"] = strconv.Itoa(i)
		o["etcd.endpoints"] = strings.Join(e.Endpoints(), ",")
		var conf func(*broker.Config)
		if configure != nil {
			id := int32(i)
			conf = func(cfg *broker.Config) { configure(id, cfg) }
		}
		c.Nodes = append(c.Nodes, startBrokerWith(tb, o, nil, conf))
	}
	for _, nd := range c.Nodes {
		nd.cluster = c
	}
	c.waitRegistrations()
	return c
}

// waitRegistrations returns once every running broker sees every running
// broker's registration. Each broker learns of the others' registrations
// through an etcd watch; on a loaded machine that can lag a start, and a
// topic created meanwhile would find too few brokers for its replicas.
func (c *Cluster) waitRegistrations() {
	c.tb.Helper()
	Eventually(c.tb, 60*time.Second, func() error {
		for _, nd := range c.Running() {
			bs, err := nd.Broker.LiveBrokers(context.Background())
			if err != nil {
				return err
			}
			seen := make(map[int32]bool, len(bs))
			for _, b := range bs {
				seen[b.ID] = true
			}
			for _, other := range c.Running() {
				if id := other.Broker.NodeID(); !seen[id] {
					return fmt.Errorf("%s does not see broker %d yet", nd, id)
				}
			}
		}
		return nil
	})
}

// Node returns the broker with node.id id, or fails the test.
func (c *Cluster) Node(id int32) *Node {
	c.tb.Helper()
	if id < 1 || int(id) > len(c.Nodes) {
		c.tb.Fatalf("testutil: no node %d in a cluster of %d", id, len(c.Nodes))
	}
	return c.Nodes[id-1]
}

// Addrs are the listener addresses of every node, running or not (a
// client's seed list).
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// Running are the nodes currently running.
func (c *Cluster) Running() []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n.running {
			out = append(out, n)
		}
	}
	return out
}

// Kill stops the broker as a crash would (broker.Kill): no clean log
// shutdown, no lease revoke, so its registration lives on until
// broker.session.timeout.ms. Restart brings it back.
func (n *Node) Kill() {
	n.tb.Helper()
	if !n.running {
		return
	}
	if err := n.Broker.Kill(); err != nil {
		n.tb.Logf("testutil: kill %s: %v", n, err)
	}
	n.running, n.killed = false, true
}

// Running reports whether the node is running.
func (n *Node) Running() bool { return n.running }

// LiveAddr is the address of a running node ("" when none runs).
func (c *Cluster) LiveAddr() string {
	for _, n := range c.Nodes {
		if n.running {
			return n.Addr()
		}
	}
	return ""
}

// IsRunning reports whether node id runs.
func (c *Cluster) IsRunning(id int32) bool {
	return id >= 1 && int(id) <= len(c.Nodes) && c.Nodes[id-1].running
}

// refuseClusterInCheck fails a test that starts a cluster of brokers under
// -short: make check runs with -short and leaves such tests to make test
// by name (the Makefile's CHECK_SKIP), so that it stays fast; this failure
// says which test to add there. A test as quick as its brokers' start
// uses StartClusterInCheck instead.
func refuseClusterInCheck(tb testing.TB, n int) {
	tb.Helper()
	if testing.Short() && n > 1 {
		tb.Fatalf("testutil: %s starts a cluster of %d brokers under -short: make check runs with -short and leaves such tests to make test; add %s to CHECK_SKIP in the Makefile", tb.Name(), n, strings.SplitN(tb.Name(), "/", 2)[0])
	}
}
