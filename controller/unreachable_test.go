package controller

import (
	"slices"
	"testing"
)

func TestMoveFromUnreachable(t *testing.T) {
	live := map[int32]bool{1: true, 2: true, 3: true}
	epochs := map[int32]int64{1: 100, 2: 200, 3: 300}
	st := PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, Version: 7}
	pos := func(epoch int32, end, hw int64) FollowerPosition {
		return FollowerPosition{Topic: "t", Partition: 0, LeaderEpoch: epoch, LogEnd: end, HighWatermark: hw}
	}
	rep := func(brokerEpoch int64, p ...FollowerPosition) unreachableReport {
		return unreachableReport{BrokerEpoch: brokerEpoch, Positions: p}
	}
	for _, tt := range []struct {
		name    string
		st      PartitionState
		reports map[int32]unreachableReport
		leader  int32 // -1: no move
		isr     []int32
	}{
		{"every follower caught up: the first of the assignment leads, the old leader leaves the ISR",
			st, map[int32]unreachableReport{2: rep(100, pos(4, 50, 50)), 3: rep(100, pos(4, 60, 50))}, 2, []int32{2, 3}},
		{"one follower still reaches the leader: no move",
			st, map[int32]unreachableReport{2: rep(100, pos(4, 50, 50))}, -1, nil},
		{"a report of an earlier registration of the leader: no move",
			st, map[int32]unreachableReport{2: rep(99, pos(4, 50, 50)), 3: rep(100, pos(4, 50, 50))}, -1, nil},
		{"a report under an earlier leader epoch: no move",
			st, map[int32]unreachableReport{2: rep(100, pos(3, 50, 50)), 3: rep(100, pos(4, 50, 50))}, -1, nil},
		{"a report without the partition: no move",
			st, map[int32]unreachableReport{2: rep(100), 3: rep(100, pos(4, 50, 50))}, -1, nil},
		{"only caught-up followers are elected",
			st, map[int32]unreachableReport{2: rep(100, pos(4, 40, 50)), 3: rep(100, pos(4, 50, 50))}, 3, []int32{2, 3}},
		{"no follower caught up: no move",
			st, map[int32]unreachableReport{2: rep(100, pos(4, 40, 50)), 3: rep(100, pos(4, 10, -1))}, -1, nil},
		{"a leader alone in the ISR stays",
			PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1}, Version: 7},
			map[int32]unreachableReport{2: rep(100, pos(4, 50, 50)), 3: rep(100, pos(4, 50, 50))}, -1, nil},
		{"a follower outside the ISR is neither needed nor elected",
			PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 3}, Version: 7},
			map[int32]unreachableReport{2: rep(100, pos(4, 50, 50)), 3: rep(100, pos(4, 50, 50))}, 3, []int32{3}},
	} {
		got, moved := moveFromUnreachable("t", 0, tt.st, []int32{1, 2, 3}, live, epochs, tt.reports)
		switch {
		case tt.leader < 0 && moved:
			t.Errorf("%s: moved to %+v", tt.name, got)
		case tt.leader >= 0 && (!moved || got.Leader != tt.leader || got.LeaderEpoch != tt.st.LeaderEpoch+1 || !slices.Equal(got.ISR, tt.isr)):
			t.Errorf("%s: got %+v moved=%v, want leader %d epoch %d ISR %v", tt.name, got, moved, tt.leader, tt.st.LeaderEpoch+1, tt.isr)
		}
	}
}
