package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// findCoordinator asks the cluster which broker coordinates group.
func findCoordinator(t testing.TB, c cluster, group string) int32 {
	t.Helper()
	cl := newClusterKgo(t, c)
	var id int32
	testutil.Eventually(t, 60*time.Second, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		req.CoordinatorKeys = []string{group}
		resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		code, node := resp.ErrorCode, resp.NodeID
		if len(resp.Coordinators) > 0 {
			code, node = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		if err := kerr.ErrorForCode(code); err != nil {
			return err
		}
		if !c.IsRunning(node) {
			return fmt.Errorf("coordinator %d is down", node)
		}
		id = node
		return nil
	})
	return id
}

// A consumer group keeps consuming and committing across the loss of its
// coordinator: __consumer_offsets is replicated, the leadership of the
// group's partition of it moves to a survivor, which loads the group and
// its commits from the log; the member carries on, every record is read
// and the commits reach the end of every partition.
func TestClusterGroupSurvivesCoordinatorLoss(t *testing.T) {
	c := testutil.StartCluster(t, 3, map[string]string{
		"group.initial.rebalance.delay.ms": "0",
		"group.min.session.timeout.ms":     "500",
		"offsets.topic.num.partitions":     "3",
	})
	const topic, group = "work", "survivors"
	createReplicatedTopic(t, c, topic, 3, 3, map[string]*string{"min.insync.replicas": strp("2")})
	prod := newClusterKgo(t, c, kgo.RecordRetries(1000), kgo.RetryTimeout(60*time.Second))
	produceKeyed(t, prod, topic, 0, 300)

	l := newLedger()
	m := startMember(t, c.Addrs()[0], group, topic, "m1", l, kgo.SeedBrokers(c.Addrs()...),
		kgo.SessionTimeout(10*time.Second), kgo.RetryTimeout(60*time.Second))
	defer m.leave()
	waitRead(t, l, 300, "before the coordinator's loss")

	coord := findCoordinator(t, c, group)
	c.Node(coord).Kill()
	produceKeyed(t, prod, topic, 300, 300)
	waitRead(t, l, 600, "after the coordinator's loss")
	if now := findCoordinator(t, c, group); now == coord {
		t.Fatalf("coordinator still %d", now)
	}

	adm := kadm.NewClient(newClusterKgo(t, c))
	testutil.Eventually(t, 60*time.Second, func() error {
		ctx := testCtx(t, 10*time.Second)
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		var errs []error
		ends.Each(func(e kadm.ListedOffset) {
			o, ok := offs.Lookup(topic, e.Partition)
			if !ok || o.At != e.Offset {
				errs = append(errs, fmt.Errorf("partition %d: committed %v, end %d", e.Partition, o.At, e.Offset))
			}
		})
		if len(errs) > 0 {
			return errs[0]
		}
		return nil
	})
}
