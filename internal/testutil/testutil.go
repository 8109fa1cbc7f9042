// Package testutil starts samsa brokers in-process for tests: each on a
// random loopback port with its own temporary directories and, unless told
// otherwise, its own embedded etcd. Every integration test uses it; none
// hard-codes a port.
package testutil

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/samsa-io/samsa/broker"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/poll"
)

// Node is one broker started by StartBroker.
type Node struct {
	*broker.Broker
	Dir       string            // the broker's log dir
	Overrides map[string]string // the properties it runs with
	tb        testing.TB
	running   bool
	dial      func(ctx context.Context, network, addr string) (net.Conn, error) // broker.Config.Dial
	configure func(*broker.Config)                                              // applied before each start
	cluster   *Cluster                                                          // set by StartCluster: Restart waits until every broker sees this one
	killed    bool                                                              // by Kill, since the last start
}

// StartBroker starts a broker with the given property overrides on top of
// test defaults (node.id 1, a random port, log.dirs in t.TempDir()). The
// broker is closed when the test ends.
func StartBroker(tb testing.TB, overrides map[string]string) *Node {
	tb.Helper()
	return startBroker(tb, overrides, nil)
}

// startBroker is StartBroker with the broker's replication dialer.
func startBroker(tb testing.TB, overrides map[string]string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Node {
	tb.Helper()
	return startBrokerWith(tb, overrides, dial, nil)
}

// startBrokerWith is startBroker with configure applied to the broker's
// Config before every start.
func startBrokerWith(tb testing.TB, overrides map[string]string, dial func(ctx context.Context, network, addr string) (net.Conn, error), configure func(*broker.Config)) *Node {
	tb.Helper()
	n := &Node{Dir: tb.TempDir(), tb: tb, dial: dial, configure: configure, Overrides: map[string]string{
		"node.id":   "1",
		"listeners": "PLAINTEXT://127.0.0.1:0",
	}}
	for k, v := range overrides {
		n.Overrides[k] = v
	}
	n.Overrides["log.dirs"] = n.Dir
	if d, ok := overrides["log.dirs"]; ok {
		n.Dir = d
		n.Overrides["log.dirs"] = d
	}
	n.start()
	tb.Cleanup(func() {
		if n.running {
			n.Stop()
		}
	})
	return n
}

func (n *Node) start() {
	n.tb.Helper()
	props, err := config.New(n.Overrides)
	if err != nil {
		n.tb.Fatalf("testutil: config: %v", err)
	}
	level := slog.LevelWarn
	if os.Getenv("SAMSA_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg := broker.Config{Props: props, Logger: logger.With("node", n.Overrides["node.id"]), Dial: n.dial}
	if n.configure != nil {
		n.configure(&cfg)
	}
	b, err := broker.New(cfg)
	if err != nil {
		n.tb.Fatalf("testutil: broker.New: %v", err)
	}
	if err := b.Start(); err != nil {
		n.tb.Fatalf("testutil: broker.Start: %v", err)
	}
	n.Broker = b
	n.running, n.killed = true, false
	// Keep the ports across restarts, so clients find the broker again.
	n.Overrides["listeners"] = boundListeners(n.Overrides["listeners"], b.Addrs())
}

// boundListeners is a listeners property with each port replaced by the
// one its listener bound (addrs, in the property's order).
func boundListeners(listeners string, addrs []string) string {
	ls := strings.Split(listeners, ",")
	for i, l := range ls {
		if i >= len(addrs) {
			break
		}
		_, port, _ := net.SplitHostPort(addrs[i])
		if c := strings.LastIndexByte(l, ':'); c > 0 && port != "" {
			ls[i] = strings.TrimSpace(l[:c+1]) + port
		}
	}
	return strings.Join(ls, ",")
}

// Stop shuts the broker down cleanly.
func (n *Node) Stop() {
	n.tb.Helper()
	if err := n.Broker.Close(); err != nil {
		n.tb.Errorf("testutil: close: %v", err)
	}
	n.running = false
}

// Restart stops the broker cleanly (if running) and starts it again on the
// same directories and port.
func (n *Node) Restart() {
	n.tb.Helper()
	if n.running {
		n.Stop()
	}
	// The old ports may take a moment to be free again.
	poll.Eventually(n.tb, 10*time.Second, func() error {
		for _, addr := range n.Addrs() {
			_, port, _ := net.SplitHostPort(addr)
			l, err := net.Listen("tcp", "127.0.0.1:"+port)
			if err != nil {
				return fmt.Errorf("testutil: port %s still busy: %w", port, err)
			}
			l.Close()
		}
		return nil
	})
	killed := n.killed
	n.start()
	if n.cluster != nil {
		n.cluster.waitRegistrations()
		if killed {
			n.waitAccepted()
		}
	}
}

// waitAccepted waits until the controller has accepted the node's new
// registration. After a kill the old registration lives until its lease
// expires, so every broker already "sees" the node; the new one comes
// later, and the controller then takes the node out of every ISR and ELR
// (KIP-966) before accepting it. A test that went on at once would find
// the node in the ISR it is about to leave.
func (n *Node) waitAccepted() {
	n.tb.Helper()
	poll.Eventually(n.tb, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ok, err := n.Broker.RegistrationAccepted(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("testutil: %s: the controller has not accepted its registration yet", n)
		}
		return nil
	})
}

// Eventually polls cond until it returns nil or the timeout passes
// (poll.Eventually, for packages that cannot import testutil).
func Eventually(tb testing.TB, timeout time.Duration, cond func() error) {
	tb.Helper()
	poll.Eventually(tb, timeout, cond)
}

// PartitionDir is the directory of a partition's log under the node's log dir.
func (n *Node) PartitionDir(topic string, partition int) string {
	return n.Dir + string(os.PathSeparator) + topic + "-" + strconv.Itoa(partition)
}

// String names the node in failures.
func (n *Node) String() string { return fmt.Sprintf("node %s at %s", n.Overrides["node.id"], n.Addr()) }

// SameJSON reports whether two texts are the same JSON value.
func SameJSON(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}
