package compat

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/testutil"
)

// A broker killed in a container: its kernel closes its connections, then
// its address goes with the container's network and drops packets instead
// of refusing them (Reset, then Blackhole, on its links, then the process
// killed). Its peers saw the connection they hold open to it closed and
// their probes fail after it: they fence its registration long before its
// lease of 60 s ends.
func TestClusterVanishedBrokerFencedBeforeLease(t *testing.T) {
	c := testutil.StartFaultCluster(t, 3, map[string]string{"broker.session.timeout.ms": "60000"})
	c.WaitRegistered(30 * time.Second)
	const victim = 2
	// A few probe rounds (250 ms each) so every peer holds a connection.
	registered := func() []int32 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ids, err := c.Registered(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if !slices.Contains(registered(), victim) {
			return fmt.Errorf("broker %d not registered", victim)
		}
		return nil
	})
	time.Sleep(time.Second) // an observation window: the peers' probes answered and held
	killed := time.Now()
	c.CutPeers(victim, testutil.Reset)
	c.CutPeers(victim, testutil.Blackhole)
	c.Node(victim).Kill()
	testutil.Eventually(t, 30*time.Second, func() error {
		if ids := registered(); slices.Contains(ids, victim) {
			return fmt.Errorf("broker %d still registered: %v", victim, ids)
		}
		return nil
	})
	t.Logf("broker %d fenced by its peers %v after it vanished (lease 60 s)", victim, time.Since(killed).Round(time.Millisecond))
}
