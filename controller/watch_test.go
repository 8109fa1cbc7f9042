package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/poll"
)

// counter counts onChange calls.
type counter struct{ n atomic.Int64 }

func (c *counter) inc()       { c.n.Add(1) }
func (c *counter) get() int64 { return c.n.Load() }

func waitMore(t *testing.T, c *counter, than int64, what string) int64 {
	t.Helper()
	var n int64
	poll.Eventually(t, 10*time.Second, func() error {
		n = c.get()
		return errorIf(n <= than, "no callback after %s", what)
	})
	return n
}

func TestWatchTopicsFires(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	other := openStore(t, e, 2)
	ctx := testCtx(t)

	_, rev, err := s.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A change between the snapshot and the start of the watch is seen.
	mustCreate(t, other, "early", [][]int32{{1}}, nil)

	var c counter
	s.WatchTopics(ctx, rev, c.inc)
	n := waitMore(t, &c, 0, "create before the watch")

	mustCreate(t, other, "t", [][]int32{{1, 2}}, nil)
	n = waitMore(t, &c, n, "create")

	if err := other.SetTopicConfig(ctx, "t", map[string]string{"a": "b"}); err != nil {
		t.Fatal(err)
	}
	n = waitMore(t, &c, n, "config change")

	st := mustTopic(t, other, "t").Partitions[0]
	st.ISR = []int32{1}
	if _, err := other.UpdatePartitionState(ctx, "t", 0, st); err != nil {
		t.Fatal(err)
	}
	n = waitMore(t, &c, n, "state change")

	if err := other.AddPartitions(ctx, "t", [][]int32{{2}}); err != nil {
		t.Fatal(err)
	}
	n = waitMore(t, &c, n, "add partitions")

	if err := other.DeleteTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	n = waitMore(t, &c, n, "delete")

	// Broker registrations are not topic changes.
	if err := other.RegisterBroker(ctx, BrokerInfo{ID: 2, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	// ...but a topic change after it is still seen, and only one callback
	// precedes it (the registration gave none).
	mustCreate(t, other, "t2", [][]int32{{1}}, nil)
	waitMore(t, &c, n, "create after registration")
}

func TestWatchBrokersFires(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	_, rev, err := s.BrokersRev(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var c counter
	s.WatchBrokers(ctx, rev, c.inc)
	b := openStore(t, e, 2)
	if err := b.RegisterBroker(ctx, BrokerInfo{ID: 2, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	n := waitMore(t, &c, 0, "registration")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitMore(t, &c, n, "deregistration")
}

// A watch from a compacted revision calls back (the caller re-reads) and
// goes on watching.
func TestWatchTopicsCompacted(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	_, rev, err := s.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "a", [][]int32{{1}}, nil)
	// Unrelated writes, then compact past rev.
	for i := 0; i < 5; i++ {
		if _, err := s.cli.Put(ctx, "/unrelated", "x"); err != nil {
			t.Fatal(err)
		}
	}
	r, err := s.cli.Get(ctx, "/unrelated")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.cli.Compact(ctx, r.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	var c counter
	s.WatchTopics(ctx, rev, c.inc)
	n := waitMore(t, &c, 0, "compaction")
	mustCreate(t, s, "b", [][]int32{{1}}, nil)
	waitMore(t, &c, n, "create after compaction")
}

// A watch ends with its context; callbacks stop.
func TestWatchStopsWithContext(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	wctx, cancel := context.WithCancel(ctx)
	var c counter
	s.WatchTopics(wctx, 0, c.inc)
	// The watch is from "now": make sure it is established before the
	// change by creating until a callback comes.
	poll.Eventually(t, 10*time.Second, func() error {
		mustCreate(t, s, "t"+time.Now().Format("150405.000000000"), [][]int32{{1}}, nil)
		return errorIf(c.get() == 0, "no callback")
	})
	cancel()
	poll.Eventually(t, 10*time.Second, func() error {
		return errorIf(s.watches.Load() != 0, "%d watches still running", s.watches.Load())
	})
	before := c.get()
	mustCreate(t, s, "after-cancel", [][]int32{{1}}, nil)
	for j := 0; j < 5; j++ {
		mustTopic(t, s, "after-cancel")
	}
	if got := c.get(); got != before {
		t.Errorf("callback after the watch ended: %d -> %d", before, got)
	}
}
