package compat

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestSchemaRegistryWriterKilled: three brokers serve the registry while
// clients register through all of them; the broker leading _schemas-0
// (the one writer) is killed in the middle. No id is issued for two
// schemas, and every registration a client saw acknowledged is read back
// from every broker, the killed one too once it is restarted.
func TestSchemaRegistryWriterKilled(t *testing.T) {
	// _schemas made by the operator with three replicas: a registry
	// that makes it takes as many as there are live brokers then (as
	// Confluent's does), one for the first broker of a cluster starting.
	c := testutil.StartCluster(t, 3, nil)
	ctx := testCtx(t, 3*time.Minute)
	adm := newAdmin(t, c.Node(1).Addr())
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"cleanup.policy": strp("compact"), "min.insync.replicas": strp("2")}, "_schemas"); err != nil {
		t.Fatal(err)
	}
	cls := map[int32]*sr.Client{}
	for _, n := range c.Nodes {
		n.Overrides["samsa.schema.registry.listener"] = "127.0.0.1:0"
		n.Restart()
		cls[n.Broker.NodeID()] = registryClient(t, n)
	}
	waitWriter(t, cls[1])
	var leader int32
	testutil.Eventually(t, 30*time.Second, func() error {
		td, err := newAdmin(t, c.Node(1).Addr()).ListTopics(ctx, "_schemas")
		if err != nil {
			return err
		}
		p := td["_schemas"].Partitions[0]
		if len(p.ISR) != 3 {
			return fmt.Errorf("_schemas partition 0: %+v", p)
		}
		leader = p.Leader
		return nil
	})

	// Each worker registers schemas of its own, each under a subject of
	// its own, through the brokers in turn, retrying a registration
	// (idempotent: the same schema under the same subject gets its id
	// again) until a broker acknowledges it.
	type reg struct{ subject, schema string }
	var (
		mu    sync.Mutex
		acked = map[reg]int{}
		kill  = make(chan struct{})
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	const workers, perWorker = 3, 40
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := []int32{1, 2, 3}
			for i := range perWorker {
				r := reg{fmt.Sprintf("w%d-%d-value", w, i), fmt.Sprintf(`{"type":"fixed","name":"f%d_%d","size":%d}`, w, i, i+1)}
				for try := 0; ; try++ {
					select {
					case <-stop:
						return
					default:
					}
					cl := cls[ids[(i+try+w)%3]]
					rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					s, err := cl.CreateSchema(rctx, r.subject, sr.Schema{Schema: r.schema})
					cancel()
					if err == nil {
						mu.Lock()
						acked[r] = s.ID
						n := len(acked)
						mu.Unlock()
						if n == workers*perWorker/3 {
							close(kill)
						}
						break
					}
				}
			}
		}()
	}
	select {
	case <-kill:
	case <-ctx.Done():
		t.Fatal("no registrations before the kill")
	}
	c.Node(leader).Kill()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		close(stop)
		<-done
		t.Fatalf("registrations stalled after the writer (broker %d) was killed: %d acknowledged", leader, len(acked))
	}
	if len(acked) != workers*perWorker {
		t.Fatalf("%d registrations acknowledged, want %d", len(acked), workers*perWorker)
	}
	byID := map[int]reg{}
	for r, id := range acked {
		if other, ok := byID[id]; ok {
			t.Fatalf("id %d issued for %v and %v", id, other, r)
		}
		byID[id] = r
	}

	check := func(n *testutil.Node) {
		t.Helper()
		cl := registryClient(t, n)
		testutil.Eventually(t, 60*time.Second, func() error {
			for r, id := range acked {
				s, err := cl.SchemaByVersion(ctx, r.subject, -1)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", n, r.subject, err)
				}
				if s.ID != id || s.Schema.Schema != r.schema {
					return fmt.Errorf("%s: %s is id %d %s, acknowledged as id %d %s", n, r.subject, s.ID, s.Schema.Schema, id, r.schema)
				}
			}
			return nil
		})
	}
	for _, n := range c.Running() {
		check(n)
	}
	c.Node(leader).Restart()
	check(c.Node(leader))
}
