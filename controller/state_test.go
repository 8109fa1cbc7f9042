package controller

import (
	"errors"
	"slices"
	"testing"
)

func TestUpdatePartitionState(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	mustCreate(t, s, "t", [][]int32{{1, 2, 3}, {2, 3, 1}}, nil)
	st := mustTopic(t, s, "t").Partitions[1]

	shrunk := st
	shrunk.ISR = []int32{2, 3}
	v, err := s.UpdatePartitionState(ctx, "t", 1, shrunk)
	if err != nil {
		t.Fatal(err)
	}
	if v <= st.Version {
		t.Errorf("new version %d <= old %d", v, st.Version)
	}
	got := mustTopic(t, s, "t").Partitions[1]
	if got.Version != v || !slices.Equal(got.ISR, []int32{2, 3}) || got.Leader != 2 {
		t.Errorf("after update: %+v (version %d)", got, v)
	}

	// The same (now stale) version loses.
	stale := st
	stale.Leader, stale.LeaderEpoch = 3, 1
	if _, err := s.UpdatePartitionState(ctx, "t", 1, stale); !errors.Is(err, ErrStale) {
		t.Errorf("stale update: %v", err)
	}
	if got := mustTopic(t, s, "t").Partitions[1]; got.Leader != 2 || got.Version != v {
		t.Errorf("stale update wrote: %+v", got)
	}
	// With the current version it wins.
	next := got
	next.Leader, next.LeaderEpoch = 3, 1
	if _, err := s.UpdatePartitionState(ctx, "t", 1, next); err != nil {
		t.Errorf("update with current version: %v", err)
	}
	if got := mustTopic(t, s, "t").Partitions[1]; got.Leader != 3 || got.LeaderEpoch != 1 {
		t.Errorf("after leader change: %+v", got)
	}
	// Partition 0 untouched.
	if p0 := mustTopic(t, s, "t").Partitions[0]; p0.Leader != 1 || len(p0.ISR) != 3 {
		t.Errorf("partition 0: %+v", p0)
	}

	if _, err := s.UpdatePartitionState(ctx, "nope", 0, next); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("unknown topic: %v", err)
	}
	if _, err := s.UpdatePartitionState(ctx, "t", 7, next); !errors.Is(err, ErrUnknownPartition) {
		t.Errorf("unknown partition: %v", err)
	}
	zero := next
	zero.Version = 0
	if _, err := s.UpdatePartitionState(ctx, "t", 0, zero); !errors.Is(err, ErrStale) {
		t.Errorf("version 0: %v", err)
	}
}

// Several partitions' states go in one transaction, each conditioned on
// its own revision: all are written, or, when one lost its race, none.
func TestUpdatePartitionStates(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	mustCreate(t, s, "t", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}, nil)
	parts := mustTopic(t, s, "t").Partitions
	var us []StateUpdate
	for p, st := range parts {
		st.ISR = []int32{st.Leader}
		us = append(us, StateUpdate{Topic: "t", Partition: int32(p), State: st})
	}
	v, err := s.UpdatePartitionStates(ctx, us)
	if err != nil {
		t.Fatal(err)
	}
	for p, got := range mustTopic(t, s, "t").Partitions {
		if got.Version != v || !slices.Equal(got.ISR, []int32{got.Leader}) {
			t.Errorf("partition %d after the batch: %+v, want ISR [leader] at version %d", p, got, v)
		}
	}
	// The same versions again: every one is stale now, and nothing is
	// written; one current and one stale: neither is.
	if _, err := s.UpdatePartitionStates(ctx, us); !errors.Is(err, ErrStale) {
		t.Errorf("stale batch: %v, want ErrStale", err)
	}
	cur := mustTopic(t, s, "t").Partitions
	fresh := cur[0]
	fresh.ISR = []int32{1, 2, 3}
	mixed := []StateUpdate{{Topic: "t", Partition: 0, State: fresh}, us[1]}
	if _, err := s.UpdatePartitionStates(ctx, mixed); !errors.Is(err, ErrStale) {
		t.Errorf("batch with one stale state: %v, want ErrStale", err)
	}
	if got := mustTopic(t, s, "t").Partitions[0]; got.Version != v || len(got.ISR) != 1 {
		t.Errorf("partition 0 written by a failed batch: %+v", got)
	}
	if _, err := s.UpdatePartitionStates(ctx, nil); err == nil {
		t.Error("an empty batch was accepted")
	}
}
