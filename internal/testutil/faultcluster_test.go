package testutil

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// A broker cut off from etcd past its session timeout loses its
// registration; healed, it registers again. etcd restarted on its data
// directory keeps every broker registered under the same endpoints.
func TestFaultClusterEtcdCutAndRestart(t *testing.T) {
	c := StartFaultCluster(t, 3, map[string]string{"broker.session.timeout.ms": "3000"})
	c.WaitRegistered(30 * time.Second)

	c.CutEtcd(2, Blackhole)
	Eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ids, err := c.Registered(ctx)
		if err != nil {
			return err
		}
		if slices.Contains(ids, 2) {
			return fmt.Errorf("node 2 still registered: %v", ids)
		}
		return nil
	})
	c.Heal(2)
	c.WaitRegistered(30 * time.Second)

	c.RestartEtcd()
	c.WaitRegistered(30 * time.Second)
}
