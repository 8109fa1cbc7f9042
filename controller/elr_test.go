package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
)

// KIP-966's motivating sequence, RF 3 and min.insync.replicas 2: the
// replicas leave the ISR one by one, the last leader shuts down
// uncleanly (it may have lost its unflushed tail) and returns first; it
// is not elected while the ELR names a replica that has every committed
// record, which leads once it returns.
func TestELRSequence(t *testing.T) {
	replicas := []int32{1, 2, 3}
	rules := elrRules{minISR: 2}
	step := func(st PartitionState, live map[int32]bool, r elrRules) PartitionState {
		t.Helper()
		next, _ := decideState(st, replicas, live, nil, false, false, r)
		return next
	}
	want := func(st PartitionState, leader int32, isr, elr, lke []int32) {
		t.Helper()
		if st.Leader != leader || !slices.Equal(st.ISR, isr) || !slices.Equal(st.ELR, elr) || !slices.Equal(st.LastKnownELR, lke) {
			t.Fatalf("state %+v, want leader %d ISR %v ELR %v last known %v", st, leader, isr, elr, lke)
		}
	}
	st := PartitionState{Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2, 3}, Version: 1}
	st = step(st, map[int32]bool{1: true, 2: true}, rules)
	want(st, 1, []int32{1, 2}, nil, nil) // at min ISR: no ELR
	st = step(st, map[int32]bool{1: true}, rules)
	want(st, 1, []int32{1}, []int32{2}, nil)
	st = step(st, map[int32]bool{}, rules)
	want(st, -1, []int32{}, []int32{1, 2}, []int32{1})
	if st.LeaderEpoch != 1 {
		t.Fatalf("leader epoch %d after going offline, want 1", st.LeaderEpoch)
	}
	// Broker 1 returns after an unclean shutdown: it leaves the ELR, and
	// is not elected (the ELR still has broker 2).
	// (reconcile counts it as down until then).
	st = step(st, map[int32]bool{}, elrRules{minISR: 2, unclean: map[int32]bool{1: true}})
	want(st, -1, []int32{}, []int32{2}, []int32{1})
	st = step(st, map[int32]bool{1: true}, rules) // accepted, live: still not eligible
	want(st, -1, []int32{}, []int32{2}, []int32{1})
	st = step(st, map[int32]bool{1: true, 2: true}, rules)
	want(st, 2, []int32{2}, nil, nil)
	if st.LeaderEpoch != 2 {
		t.Fatalf("leader epoch %d, want 2", st.LeaderEpoch)
	}
	// Without KIP-966 broker 1, the last ISR member, would have led again.
	old := PartitionState{Leader: -1, LeaderEpoch: 1, ISR: []int32{1}, Version: 1}
	if next, _ := decideState(old, replicas, map[int32]bool{1: true}, nil, false, false, elrRules{}); next.Leader != 1 {
		t.Fatalf("without ELR: leader %d, want 1", next.Leader)
	}
}

// A single replica that shut down uncleanly leads again once it is back:
// neither ISR nor ELR has anything better (its last known leadership).
func TestELRLastKnownLeader(t *testing.T) {
	replicas := []int32{1}
	rules := elrRules{minISR: 1}
	st := PartitionState{Leader: 1, ISR: []int32{1}, Version: 1}
	st, _ = decideState(st, replicas, map[int32]bool{}, nil, false, false, rules)
	if st.Leader != -1 || len(st.ISR) != 0 || !slices.Equal(st.ELR, []int32{1}) || !slices.Equal(st.LastKnownELR, []int32{1}) {
		t.Fatalf("offline: %+v", st)
	}
	st, _ = decideState(st, replicas, map[int32]bool{}, nil, false, false, elrRules{minISR: 1, unclean: map[int32]bool{1: true}})
	if st.Leader != -1 || len(st.ELR) != 0 || !slices.Equal(st.LastKnownELR, []int32{1}) {
		t.Fatalf("unclean shutdown handled: %+v", st)
	}
	st, changed := decideState(st, replicas, map[int32]bool{1: true}, nil, false, false, rules)
	if !changed || st.Leader != 1 || !slices.Equal(st.ISR, []int32{1}) || len(st.LastKnownELR) != 0 {
		t.Fatalf("back: %+v (changed %v)", st, changed)
	}
	// An unclean election clears the ELR.
	st = PartitionState{Leader: -1, LeaderEpoch: 3, ELR: []int32{2}, Version: 1}
	st, _ = decideState(st, []int32{1, 2}, map[int32]bool{1: true}, nil, true, false, elrRules{minISR: 2})
	if st.Leader != 1 || !slices.Equal(st.ISR, []int32{1}) || len(st.ELR) != 0 {
		t.Fatalf("unclean election: %+v", st)
	}
}

func TestStateJSONWithELR(t *testing.T) {
	st := PartitionState{Leader: -1, LeaderEpoch: 4, ISR: nil, ELR: []int32{2, 3}, LastKnownELR: []int32{1}, ControllerEpoch: 2}
	b, err := encodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Leader != -1 || got.LeaderEpoch != 4 || len(got.ISR) != 0 || !slices.Equal(got.ELR, st.ELR) || !slices.Equal(got.LastKnownELR, st.LastKnownELR) {
		t.Fatalf("round trip of %s: %+v", b, got)
	}
}

// Through etcd and the controller: a broker that registers again after
// an unclean shutdown (previous epoch -1) is taken out of the ELR and
// not elected; one that says it shut down cleanly is.
func TestUncleanShutdownLeavesELR(t *testing.T) {
	e := startEtcd(t)
	ttl := func(c *Config) { c.SessionTTL = time.Second }
	s1 := openStore(t, e, 1, ttl)
	s2 := openStore(t, e, 2, ttl)
	s3 := openStore(t, e, 3, ttl)
	for i, s := range []*Store{s1, s2, s3} {
		register(t, s, int32(i+1))
	}
	mustCreate(t, s3, "elr", [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s3.RunController(ctx, ControllerConfig{Resync: 50 * time.Millisecond})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	state := func() PartitionState { return mustTopic(t, s3, "elr").Partitions[0] }
	awaitState := func(what string, ok func(PartitionState) bool) {
		t.Helper()
		poll.Eventually(t, 20*time.Second, func() error {
			st := state()
			return errorIf(!ok(st), "%s: state %+v", what, st)
		})
	}
	epoch2 := s2.BrokerEpoch()
	// Broker 3's replica goes offline; then broker 2 dies, then 1.
	if err := s3.SetOfflineReplicas(testCtx(t), []TopicPartition{{"elr", 0}}); err != nil {
		t.Fatal(err)
	}
	awaitState("3 offline", func(st PartitionState) bool { return slices.Equal(st.ISR, []int32{1, 2}) })
	s2.abandon()
	awaitState("2 dead", func(st PartitionState) bool {
		return slices.Equal(st.ISR, []int32{1}) && slices.Equal(st.ELR, []int32{2})
	})
	s1.abandon()
	awaitState("1 dead", func(st PartitionState) bool {
		return st.Leader == -1 && len(st.ISR) == 0 && slices.Equal(st.ELR, []int32{1, 2}) && slices.Equal(st.LastKnownELR, []int32{1})
	})
	// Broker 1 comes back after an unclean shutdown: out of the ELR, not
	// elected.
	s1b := openStore(t, e, 1, ttl)
	if err := s1b.RegisterBroker(testCtx(t), BrokerInfo{ID: 1, Host: "localhost", Port: 9092, PreviousEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	awaitState("1 back uncleanly", func(st PartitionState) bool { return st.Leader == -1 && slices.Equal(st.ELR, []int32{2}) })
	accepted := func(id int32, want int64) {
		t.Helper()
		poll.Eventually(t, 20*time.Second, func() error {
			acc, err := s3.AcceptedEpochs(testCtx(t))
			if err != nil {
				return err
			}
			return errorIf(acc[id] != want, "accepted epoch of %d: %d, want %d", id, acc[id], want)
		})
	}
	accepted(1, s1b.BrokerEpoch())
	if st := state(); st.Leader != -1 {
		t.Fatalf("broker 1 elected after an unclean shutdown while broker 2 is in the ELR: %+v", st)
	}
	// Broker 2 comes back clean: it leads, from the ELR.
	s2b := openStore(t, e, 2, ttl)
	if err := s2b.RegisterBroker(testCtx(t), BrokerInfo{ID: 2, Host: "localhost", Port: 9093, PreviousEpoch: epoch2}); err != nil {
		t.Fatal(err)
	}
	awaitState("2 back cleanly", func(st PartitionState) bool {
		return st.Leader == 2 && slices.Equal(st.ISR, []int32{2}) && len(st.ELR) == 0 && len(st.LastKnownELR) == 0
	})
	accepted(2, s2b.BrokerEpoch())
}
