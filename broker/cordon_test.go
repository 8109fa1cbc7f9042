package broker_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestDescribeLogDirsWhileCordonRegisters: a change of cordoned.log.dirs
// registers the broker again in etcd. While that write hangs (etcd
// unreachable), DescribeLogDirs, which reports the cordoned directories,
// is still answered at once, with the directories registered so far.
func TestDescribeLogDirsWhileCordonRegisters(t *testing.T) {
	dirs := t.TempDir() + "," + t.TempDir()
	c := testutil.StartFaultCluster(t, 1, map[string]string{"log.dirs": dirs})
	n := c.Node(1)
	first := n.LogDirs()[0]
	c.CutEtcd(1, testutil.Blackhole)
	ctx, cancel := context.WithCancel(context.Background())
	applied := make(chan error, 1)
	go func() { applied <- n.ApplyCordon(ctx, first) }()
	t.Cleanup(func() {
		cancel()
		if err := <-applied; err != nil {
			t.Errorf("ApplyCordon: %v", err)
		}
	})
	// The Placer has it: the registration is under way.
	testutil.Eventually(t, 10*time.Second, func() error {
		if got := n.PlacerCordoned(); !slices.Equal(got, []string{first}) {
			return fmt.Errorf("placer cordons %v", got)
		}
		return nil
	})
	conn, err := net.DialTimeout("tcp", n.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	resp, err := tryOn(conn, req)
	if err != nil {
		t.Fatalf("DescribeLogDirs while the registration hangs: %v", err)
	}
	for _, d := range resp.(*kmsg.DescribeLogDirsResponse).Dirs {
		if d.IsCordoned {
			t.Errorf("%s cordoned before the registration says so", d.Dir)
		}
	}
}
