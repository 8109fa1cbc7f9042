package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// The coordinator of a transaction is killed after it wrote PrepareCommit
// and before any marker got out (its connections to the partition leaders
// are cut): the broker that takes over its __transaction_state partition
// loads it, finds the transaction prepared, writes the markers and
// completes the commit, and read_committed readers get the records.
func TestTxnCoordinatorFailoverCompletesCommit(t *testing.T) {
	c := testutil.StartFaultCluster(t, 3, nil)
	cl := newClusterKgo(t, c, kgo.TransactionalID("failover-txn"), kgo.TransactionTimeout(time.Minute))
	adm := kadm.NewClient(cl)
	const topic = "txn-failover"
	createReplicatedTopic(t, c, topic, 1, 3, nil)
	ctx := testCtx(t, 3*time.Minute)
	commitOne(t, cl, topic, 0, "first") // creates __transaction_state and the id

	var coord int32 = -1
	testutil.Eventually(t, 30*time.Second, func() error {
		r := adm.FindTxnCoordinators(ctx, "failover-txn")["failover-txn"]
		if r.Err != nil {
			return r.Err
		}
		coord = r.NodeID
		return nil
	})
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// No marker leaves the coordinator from now on (to itself neither).
	for _, n := range c.Nodes {
		c.PeerLink(coord, n.NodeID()).Set(testutil.Blackhole)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	d, err := adm.DescribeTransactions(ctx, "failover-txn")
	if err != nil {
		t.Fatal(err)
	}
	if st := d["failover-txn"].State; st != "PrepareCommit" {
		t.Fatalf("state with the markers held back: %s, want PrepareCommit", st)
	}
	c.Node(coord).Kill()

	testutil.Eventually(t, 90*time.Second, func() error {
		// A fresh client each time: kgo keeps a coordinator it found until
		// that coordinator answers NOT_COORDINATOR, which a dead one never
		// does.
		fresh, err := kgo.NewClient(kgo.SeedBrokers(c.LiveAddr()))
		if err != nil {
			return err
		}
		defer fresh.Close()
		d, err := kadm.NewClient(fresh).DescribeTransactions(ctx, "failover-txn")
		if err != nil {
			return err
		}
		tx := d["failover-txn"]
		if tx.Err != nil {
			return tx.Err
		}
		if tx.Coordinator == coord || tx.State != "CompleteCommit" {
			return fmt.Errorf("coordinator %d, state %s", tx.Coordinator, tx.State)
		}
		return nil
	})
	commitOne(t, cl, topic, 0, "end")
	got := readCommitted(t, c.LiveAddr(), topic, "end")
	if fmt.Sprint(got) != "[first v0 v1 v2 v3 v4]" {
		t.Fatalf("read_committed after the failover: %q", got)
	}
}
