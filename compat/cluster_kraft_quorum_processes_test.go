package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/testutil"
)

// startKRaftProcCluster starts n `samsa serve` processes configured as a
// combined Kafka cluster is (process.roles=broker,controller,
// controller.quorum.voters, a CONTROLLER listener) and nothing else: no
// etcd.endpoints, no etcd of the test's. They are launched together, as
// a compose file starts them, since each waits for a majority.
func startKRaftProcCluster(t *testing.T, n int) *procCluster {
	t.Helper()
	c := &procCluster{t: t, bin: buildSamsa(t), extra: []string{"broker.session.timeout.ms=2000"}}
	var voters []string
	for i := 1; i <= n; i++ {
		dir := t.TempDir()
		p := &proc{id: int32(i), addr: freePort(t), ctrl: freePort(t), dir: dir, logPath: filepath.Join(dir, "samsa.log")}
		c.nodes = append(c.nodes, p)
		voters = append(voters, fmt.Sprintf("%d@%s", i, p.ctrl))
	}
	c.voters = strings.Join(voters, ",")
	for _, p := range c.nodes {
		c.etcd = append(c.etcd, "http://"+p.ctrl)
	}
	t.Cleanup(func() {
		for _, p := range c.nodes {
			c.kill(p.id)
			if t.Failed() {
				if b, err := os.ReadFile(p.logPath); err == nil {
					t.Logf("node %d log:\n%s", p.id, lastLines(string(b), 60))
				}
			}
		}
	})
	offs := make([]int64, n)
	for i, p := range c.nodes {
		offs[i] = c.launch(p.id)
	}
	for i, p := range c.nodes {
		c.wait(p.id, offs[i])
	}
	return c
}

// Three samsa processes given only a KRaft configuration form one etcd
// cluster, one member per node named after its node id, reached on the
// controller listeners, and elect one controller; a topic of three
// replicas takes acks=all writes while its leader is SIGKILLed and
// restarted, and the restarted node's etcd member rejoins on its data.
func TestKRaftQuorumProcesses(t *testing.T) {
	c := startKRaftProcCluster(t, 3)
	ctx := testCtx(t, 120*time.Second)

	cli, err := clientv3.New(clientv3.Config{Endpoints: c.etcd, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	members := func() []string {
		t.Helper()
		ml, err := cli.MemberList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range ml.Members {
			names = append(names, m.Name+"="+strings.Join(m.PeerURLs, ","))
		}
		return names
	}
	var want []string
	for _, p := range c.nodes {
		want = append(want, controller.MemberName(p.id)+"=http://"+p.ctrl)
	}
	if got := members(); !sameSet(got, want) {
		t.Fatalf("etcd members %v, want %v", got, want)
	}

	store, err := controller.Open(ctx, controller.Config{Endpoints: c.etcd, NodeID: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	clusterID, err := store.ClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		id, err := store.Controller(ctx)
		if err != nil {
			return err
		}
		if id < 1 || id > 3 {
			return fmt.Errorf("controller %d", id)
		}
		return nil
	})
	ids, err := store.Brokers(ctx)
	if err != nil || len(ids) != 3 {
		t.Fatalf("registered brokers %v, %v", ids, err)
	}

	failoverUnderLoad(t, c, "kraft-failover", c.kill, c.start)

	// The restarted member is the same member, with the same data.
	if got := members(); !sameSet(got, want) {
		t.Errorf("etcd members after the restart %v, want %v", got, want)
	}
	for _, p := range c.nodes {
		s, err := controller.Open(ctx, controller.Config{Endpoints: []string{"http://" + p.ctrl}, NodeID: 98})
		if err != nil {
			t.Fatal(err)
		}
		id, err := s.ClusterID(ctx)
		s.Close()
		if err != nil || id != clusterID {
			t.Errorf("node %d's member: cluster id %q (%v), want %q", p.id, id, err, clusterID)
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
