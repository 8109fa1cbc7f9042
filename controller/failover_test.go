package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
)

func TestDecideState(t *testing.T) {
	live := func(ids ...int32) map[int32]bool {
		m := map[int32]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	st := func(leader, epoch int32, isr ...int32) PartitionState {
		return PartitionState{Leader: leader, LeaderEpoch: epoch, ISR: isr, Version: 7}
	}
	replicas := []int32{1, 2, 3}
	for _, tt := range []struct {
		name      string
		in        PartitionState
		live      map[int32]bool
		unclean   bool
		preferred bool
		want      PartitionState
		changed   bool
		draining  map[int32]bool
	}{
		{"all live", st(1, 0, 1, 2, 3), live(1, 2, 3), false, false, st(1, 0, 1, 2, 3), false, nil},
		{"dead follower leaves the ISR", st(1, 0, 1, 2, 3), live(1, 3), false, false, st(1, 0, 1, 3), true, nil},
		{"dead leader: next ISR member, epoch+1", st(1, 4, 1, 2, 3), live(2, 3), false, false, st(2, 5, 2, 3), true, nil},
		{"dead leader: only ISR members lead", st(1, 4, 1, 3), live(2, 3), false, false, st(3, 5, 3), true, nil},
		{"no live ISR member: offline, ISR kept", st(1, 4, 1), live(2, 3), false, false, st(-1, 5, 1), true, nil},
		{"already offline", st(-1, 5, 1), live(2, 3), false, false, st(-1, 5, 1), false, nil},
		{"unclean election takes a live replica", st(-1, 5, 1), live(2, 3), true, false, st(2, 6, 2), true, nil},
		{"ISR member returns to an offline partition", st(-1, 5, 1), live(1, 2), false, false, st(1, 6, 1), true, nil},
		{"preferred leader back in sync", st(2, 5, 2, 3, 1), live(1, 2, 3), false, true, st(1, 6, 2, 3, 1), true, nil},
		{"preferred leader not in sync", st(2, 5, 2, 3), live(1, 2, 3), false, true, st(2, 5, 2, 3), false, nil},
		{"draining leader: next ISR member leads, the drainer stays in the ISR", st(1, 4, 1, 2, 3), live(1, 2, 3), false, false, st(2, 5, 1, 2, 3), true, live(1)},
		{"draining leader, the others draining too", st(1, 4, 1, 2, 3), live(1, 2, 3), false, false, st(3, 5, 1, 2, 3), true, live(1, 2)},
		{"draining leader alone in the ISR keeps leading", st(1, 4, 1), live(1, 2, 3), false, false, st(1, 4, 1), false, live(1)},
		{"dead leader: a draining ISR member only as a last resort", st(1, 4, 1, 2, 3), live(2, 3), false, false, st(3, 5, 2, 3), true, live(2)},
		{"dead leader, only a draining ISR member left", st(1, 4, 1, 2), live(2, 3), false, false, st(2, 5, 2), true, live(2)},
		{"no preferred election to a draining broker", st(2, 5, 2, 3, 1), live(1, 2, 3), false, true, st(2, 5, 2, 3, 1), false, live(1)},
	} {
		got, changed := decideState(tt.in, replicas, tt.live, tt.draining, tt.unclean, tt.preferred, elrRules{})
		if changed != tt.changed || got.Leader != tt.want.Leader || got.LeaderEpoch != tt.want.LeaderEpoch || !slices.Equal(got.ISR, tt.want.ISR) {
			t.Errorf("%s: got %+v changed=%v, want %+v changed=%v", tt.name, got, changed, tt.want, tt.changed)
		}
	}
}

func TestAssignReplicasRackAware(t *testing.T) {
	brokers := []BrokerInfo{{ID: 1, Rack: "a"}, {ID: 2, Rack: "a"}, {ID: 3, Rack: "b"}, {ID: 4, Rack: "b"}}
	rack := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b"}
	a, err := AssignReplicas(brokers, 8, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	for p, rs := range a {
		if len(rs) != 2 || rs[0] == rs[1] {
			t.Fatalf("partition %d: replicas %v", p, rs)
		}
		if rack[rs[0]] == rack[rs[1]] {
			t.Errorf("partition %d: replicas %v in one rack", p, rs)
		}
		leaders[rs[0]]++
	}
	for id, n := range leaders {
		if n != 2 {
			t.Errorf("broker %d leads %d of 8 partitions, want 2", id, n)
		}
	}
	if _, err := AssignReplicas(brokers, 1, 5, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("rf 5 on 4 brokers: %v", err)
	}
	// Without racks every broker still leads its share.
	a, err = AssignReplicas([]BrokerInfo{{ID: 1}, {ID: 2}, {ID: 3}}, 6, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	leaders = map[int32]int{}
	for _, rs := range a {
		leaders[rs[0]]++
		if len(rs) != 3 || rs[0] == rs[1] || rs[1] == rs[2] || rs[0] == rs[2] {
			t.Fatalf("replicas %v", rs)
		}
	}
	if leaders[1] != 2 || leaders[2] != 2 || leaders[3] != 2 {
		t.Errorf("leaders %v", leaders)
	}
}

func register(t *testing.T, s *Store, id int32) {
	t.Helper()
	if err := s.RegisterBroker(testCtx(t), BrokerInfo{ID: id, Host: "127.0.0.1", Port: 9000 + id}); err != nil {
		t.Fatal(err)
	}
}

// A controller whose lease is gone (paused past its TTL) while another
// won the election cannot write a partition state: the write is
// conditioned on its election key.
func TestPausedControllerIsFenced(t *testing.T) {
	e := startEtcd(t)
	s1 := openStore(t, e, 1)
	s2 := openStore(t, e, 2)
	ctx := testCtx(t)
	mustCreate(t, s1, "fenced", [][]int32{{1, 2}}, nil)
	if _, err := s1.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	// The lease runs out as if s1 were paused: revoke it behind its back.
	s1.mu.Lock()
	lease := s1.sess.Lease()
	s1.mu.Unlock()
	if _, err := s2.cli.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	epoch, err := s2.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := mustTopic(t, s1, "fenced").Partitions[0]
	stale := st
	stale.Leader, stale.LeaderEpoch, stale.ISR = 1, st.LeaderEpoch+1, []int32{1}
	if _, err := s1.writeStateFenced(ctx, "fenced", 0, stale); !errors.Is(err, ErrNotController) {
		t.Fatalf("write by the paused controller: %v, want ErrNotController", err)
	}
	next := st
	next.Leader, next.LeaderEpoch, next.ISR, next.ControllerEpoch = 2, st.LeaderEpoch+1, []int32{2}, epoch
	if _, err := s2.writeStateFenced(ctx, "fenced", 0, next); err != nil {
		t.Fatalf("write by the new controller: %v", err)
	}
	if got := mustTopic(t, s1, "fenced").Partitions[0]; got.Leader != 2 || got.ControllerEpoch != epoch {
		t.Fatalf("state %+v, want the new controller's", got)
	}
}

// RunController moves leadership off a broker whose registration expired
// and gives it back (preferred replica) once it returns in sync.
func TestRunControllerFailsOver(t *testing.T) {
	e := startEtcd(t)
	ttl := func(c *Config) { c.SessionTTL = time.Second }
	s1 := openStore(t, e, 1, ttl)
	s2 := openStore(t, e, 2, ttl)
	register(t, s1, 1)
	register(t, s2, 2)
	mustCreate(t, s1, "moves", [][]int32{{2, 1}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s1.RunController(ctx, ControllerConfig{AutoRebalance: true, RebalanceInterval: 100 * time.Millisecond, Resync: 50 * time.Millisecond})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	s2.abandon() // broker 2 dies: its lease expires
	poll.Eventually(t, 20*time.Second, func() error {
		st := mustTopic(t, s1, "moves").Partitions[0]
		return errorIf(st.Leader != 1 || st.LeaderEpoch != 1 || !slices.Equal(st.ISR, []int32{1}), "state %+v", st)
	})
	// Broker 2 returns and its leader puts it back in the ISR; the
	// preferred replica leads again.
	s2b := openStore(t, e, 2, ttl)
	register(t, s2b, 2)
	st := mustTopic(t, s1, "moves").Partitions[0]
	st.ISR = []int32{1, 2}
	if _, err := s1.UpdatePartitionState(testCtx(t), "moves", 0, st); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 20*time.Second, func() error {
		st := mustTopic(t, s1, "moves").Partitions[0]
		if st.Leader != 2 || st.LeaderEpoch != 2 {
			return fmt.Errorf("state %+v", st)
		}
		return nil
	})
}

// A replica on a failed log directory counts as dead for its partition
// only: a leader there is replaced from the rest of the ISR, a follower
// there leaves the ISR, other partitions of the same broker keep it.
func TestOfflineReplicasAreDeadForTheirPartitions(t *testing.T) {
	brokers := []BrokerInfo{{ID: 1, OfflineReplicas: []TopicPartition{{"t", 0}}}, {ID: 2}, {ID: 3}}
	live := map[int32]bool{1: true, 2: true, 3: true}
	liveFor := liveReplicas(brokers, live)
	st := PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2, 3}, Version: 7}
	next, changed := decideState(st, []int32{1, 2, 3}, liveFor("t", 0), nil, false, false, elrRules{})
	if !changed || next.Leader != 2 || next.LeaderEpoch != 4 || !slices.Equal(next.ISR, []int32{2, 3}) {
		t.Fatalf("leader on an offline replica: %+v changed=%v; want leader 2, epoch 4, ISR [2 3]", next, changed)
	}
	st = PartitionState{Leader: 2, LeaderEpoch: 3, ISR: []int32{2, 1, 3}, Version: 7}
	next, changed = decideState(st, []int32{2, 1, 3}, liveFor("t", 0), nil, false, false, elrRules{})
	if !changed || next.Leader != 2 || !slices.Equal(next.ISR, []int32{2, 3}) {
		t.Fatalf("follower on an offline replica: %+v changed=%v; want ISR [2 3]", next, changed)
	}
	if _, changed := decideState(PartitionState{Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2}, Version: 7}, []int32{1, 2}, liveFor("t", 1), nil, false, false, elrRules{}); changed {
		t.Fatal("another partition of the broker changed")
	}
	if !live[1] {
		t.Fatal("liveReplicas changed the shared live set")
	}
}

func TestOfflineReplicasRoundTrip(t *testing.T) {
	in := BrokerInfo{ID: 4, Host: "h", Port: 9, OfflineReplicas: []TopicPartition{{"a-b", 12}, {"c", 0}}}
	n, err := in.normalized()
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeBroker(n)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeBroker(4, b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.OfflineReplicas, in.OfflineReplicas) {
		t.Fatalf("offline replicas %v, want %v", out.OfflineReplicas, in.OfflineReplicas)
	}
}

// A leader that registered anew after its partition's state was written
// (restarted, or its lease lost and taken again) does not go on leading
// from its previous incarnation's state: another live ISR member leads,
// with a new epoch, and the bounced broker leaves the ISR; alone in it, it
// leads again, with a new epoch.
func TestReelectBounced(t *testing.T) {
	live := map[int32]bool{1: true, 2: true, 3: true}
	st := PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, Version: 20}
	next := reelectBounced(st, []int32{1, 2, 3}, live)
	if next.Leader != 2 || next.LeaderEpoch != 5 || !slices.Equal(next.ISR, []int32{2, 3}) {
		t.Fatalf("bounced leader with an ISR: %+v, want leader 2, epoch 5, ISR [2 3]", next)
	}
	alone := reelectBounced(PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1}, Version: 20}, []int32{1, 2}, live)
	if alone.Leader != 1 || alone.LeaderEpoch != 5 || !slices.Equal(alone.ISR, []int32{1}) {
		t.Fatalf("bounced leader alone in the ISR: %+v, want leader 1, epoch 5, ISR [1]", alone)
	}
}

// A batch of controller writes of which one lost its race (a leader wrote
// its ISR meanwhile) writes the others, in one transaction, and leaves the
// changed one as its writer left it.
func TestWriteStatesFencedSkipsLostRaces(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	mustCreate(t, s, "batch", [][]int32{{1, 2}, {1, 2}, {1, 2}, {1, 2}}, nil)
	epoch, err := s.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read := mustTopic(t, s, "batch")
	var ws []stateWrite
	for p, st := range read.Partitions {
		next := st
		next.Leader, next.LeaderEpoch, next.ISR, next.ControllerEpoch = 2, st.LeaderEpoch+1, []int32{2}, epoch
		ws = append(ws, stateWrite{"batch", int32(p), next})
	}
	// The leader of partition 2 shrinks its ISR first.
	raced := read.Partitions[2]
	raced.ISR = []int32{1}
	racedRev, err := s.UpdatePartitionState(ctx, "batch", 2, raced)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.writeStatesFenced(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	got := mustTopic(t, s, "batch")
	for p, st := range got.Partitions {
		switch {
		case p == 2:
			if st.Version != racedRev || st.Leader != 1 || !slices.Equal(st.ISR, []int32{1}) {
				t.Errorf("partition 2 (lost race): %+v, want the leader's ISR write", st)
			}
		case st.Leader != 2 || st.Version != rev:
			t.Errorf("partition %d: %+v, want leader 2 written at revision %d (one transaction)", p, st, rev)
		}
	}
}

// TestWriteStatesInConcurrentBatches: writeStates writes 1,050 states in
// transactions of stateBatch, several in flight, each partition once; a
// store that is no longer controller writes none and says so.
func TestWriteStatesInConcurrentBatches(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	assignment := make([][]int32, 1050)
	for i := range assignment {
		assignment[i] = []int32{1, 2}
	}
	mustCreate(t, s, "many", assignment, nil)
	epoch, err := s.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	moves := func() []stateWrite {
		var ws []stateWrite
		for p, st := range mustTopic(t, s, "many").Partitions {
			next := st
			next.Leader, next.LeaderEpoch, next.ControllerEpoch = 3-st.Leader, st.LeaderEpoch+1, epoch
			ws = append(ws, stateWrite{"many", int32(p), next})
		}
		return ws
	}
	rev, err := s.writeStates(ctx, moves())
	if err != nil {
		t.Fatal(err)
	}
	revs := map[int64]int{}
	var last int64
	for p, st := range mustTopic(t, s, "many").Partitions {
		if st.Leader != 2 || st.LeaderEpoch != 1 {
			t.Fatalf("partition %d: %+v, want leader 2 in epoch 1", p, st)
		}
		revs[st.Version]++
		last = max(last, st.Version)
	}
	if len(revs) != 11 || rev != last {
		t.Fatalf("%d transactions, returned revision %d of %d; want 11 and the last", len(revs), rev, last)
	}
	ws := moves()
	if err := s.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.writeStates(ctx, ws); !errors.Is(err, ErrNotController) {
		t.Fatalf("writeStates after resigning: %v, want ErrNotController", err)
	}
	for p, st := range mustTopic(t, s, "many").Partitions {
		if st.Leader != 2 {
			t.Fatalf("partition %d written after resigning: %+v", p, st)
		}
	}
}
