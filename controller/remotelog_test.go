package controller

import (
	"errors"
	"testing"
)

// TestPutRemoteLogMetadata: the leader in its epoch writes, on the
// revision it read; a stale revision, another broker, an older epoch
// and a deposed leader write nothing.
func TestPutRemoteLogMetadata(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	mustCreate(t, s, "t", [][]int32{{1, 2}}, nil)
	tp := mustTopic(t, s, "t")
	id, st := tp.ID, tp.Partitions[0]
	if v, rev, err := s.RemoteLogMetadata(ctx, id, 0); err != nil || v != nil || rev != 0 {
		t.Fatalf("before any write: %q %d %v", v, rev, err)
	}
	rev, err := s.PutRemoteLogMetadata(ctx, "t", id, 0, 1, st.LeaderEpoch, 0, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRemoteLogMetadata(ctx, "t", id, 0, 1, st.LeaderEpoch, 0, []byte("b")); !errors.Is(err, ErrStale) {
		t.Errorf("write on a stale revision: %v", err)
	}
	if _, err := s.PutRemoteLogMetadata(ctx, "t", id, 0, 2, st.LeaderEpoch, rev, []byte("b")); !errors.Is(err, ErrFenced) {
		t.Errorf("write by a follower: %v", err)
	}
	// An ISR change keeps the leader and epoch: the write still goes.
	shrunk := st
	shrunk.ISR = []int32{1}
	if shrunk.Version, err = s.UpdatePartitionState(ctx, "t", 0, shrunk); err != nil {
		t.Fatal(err)
	}
	if rev, err = s.PutRemoteLogMetadata(ctx, "t", id, 0, 1, st.LeaderEpoch, rev, []byte("c")); err != nil {
		t.Fatalf("write after an ISR change: %v", err)
	}
	// A new leader: the old one is fenced, the new one writes.
	moved := shrunk
	moved.Leader, moved.LeaderEpoch, moved.ISR = 2, st.LeaderEpoch+1, []int32{2}
	if _, err := s.UpdatePartitionState(ctx, "t", 0, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRemoteLogMetadata(ctx, "t", id, 0, 1, st.LeaderEpoch, rev, []byte("d")); !errors.Is(err, ErrFenced) {
		t.Errorf("write by the deposed leader: %v", err)
	}
	if _, err := s.PutRemoteLogMetadata(ctx, "t", id, 0, 2, moved.LeaderEpoch, rev, []byte("e")); err != nil {
		t.Errorf("write by the new leader: %v", err)
	}
	if v, _, err := s.RemoteLogMetadata(ctx, id, 0); err != nil || string(v) != "e" {
		t.Errorf("stored %q, %v; want e", v, err)
	}
	if _, err := s.PutRemoteLogMetadata(ctx, "t", id, 1, 1, 0, 0, []byte("x")); !errors.Is(err, ErrFenced) {
		t.Errorf("write to a partition without a state: %v", err)
	}
}
