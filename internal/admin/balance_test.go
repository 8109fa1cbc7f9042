package admin

import (
	"slices"
	"testing"
)

func TestPlanBalance(t *testing.T) {
	// Six partitions, two replicas each, all on brokers 1 and 2 with 1
	// the preferred leader of every one; broker 3 holds nothing.
	var parts []PartitionPlacement
	for p := range int32(6) {
		parts = append(parts, PartitionPlacement{Topic: "t", Partition: p, Replicas: []int32{1, 2}, Bytes: map[int32]int64{1: 100, 2: 100}})
	}
	plan := PlanBalance(parts, map[int32]string{1: "", 2: "", 3: ""}, nil)
	for _, l := range plan.After {
		if l.Replicas != 4 || l.Leaders != 2 {
			t.Errorf("broker %d after: %d replicas, %d preferred leaderships; want 4 and 2 (%+v)", l.ID, l.Replicas, l.Leaders, plan.After)
		}
	}
	moved := 0
	for _, m := range plan.Moves {
		if !m.Reorder {
			moved++
			if m.Bytes != 100 {
				t.Errorf("%+v: want 100 bytes to copy", m)
			}
		}
	}
	if moved != 4 {
		t.Errorf("%d replica moves, want the 4 that even 6/6/0 out", moved)
	}
	if parts[0].Replicas[0] != 1 || !slices.Equal(parts[0].Replicas, []int32{1, 2}) {
		t.Errorf("PlanBalance changed its input: %v", parts[0].Replicas)
	}

	// Racks: a partition in racks a and b never gets two replicas in b.
	racks := map[int32]string{1: "a", 2: "b", 3: "b"}
	parts = []PartitionPlacement{
		{Topic: "r", Partition: 0, Replicas: []int32{1, 2}},
		{Topic: "r", Partition: 1, Replicas: []int32{1, 2}},
	}
	plan = PlanBalance(parts, racks, nil)
	for _, m := range plan.Moves {
		if slices.Contains(m.To, 2) && slices.Contains(m.To, 3) {
			t.Errorf("%+v puts both replicas in rack b", m)
		}
	}

	// Balanced already: no move.
	parts = []PartitionPlacement{
		{Topic: "b", Partition: 0, Replicas: []int32{1, 2}},
		{Topic: "b", Partition: 1, Replicas: []int32{2, 3}},
		{Topic: "b", Partition: 2, Replicas: []int32{3, 1}},
	}
	if plan := PlanBalance(parts, map[int32]string{1: "", 2: "", 3: ""}, nil); len(plan.Moves) != 0 {
		t.Errorf("a balanced placement gets moves %+v", plan.Moves)
	}
}

// A cordoned broker (KIP-1066) takes no replica, and a partition with a
// replica on one keeps its assignment (the controller refuses any that
// names a cordoned broker, a reorder too); the other brokers even out.
func TestPlanBalanceLeavesCordonedBrokers(t *testing.T) {
	var parts []PartitionPlacement
	for p := range int32(6) {
		parts = append(parts, PartitionPlacement{Topic: "t", Partition: p, Replicas: []int32{1, 2}})
	}
	parts = append(parts, PartitionPlacement{Topic: "c", Partition: 0, Replicas: []int32{1, 3}}, PartitionPlacement{Topic: "c", Partition: 1, Replicas: []int32{1, 3}})
	plan := PlanBalance(parts, map[int32]string{1: "", 2: "", 3: "", 4: ""}, map[int32]bool{3: true})
	toFour := 0
	for _, m := range plan.Moves {
		if m.Topic == "c" || slices.Contains(m.To, 3) {
			t.Errorf("%+v touches cordoned broker 3", m)
		}
		if slices.Contains(m.To, 4) && !slices.Contains(m.From, 4) {
			toFour++
		}
	}
	if toFour == 0 {
		t.Errorf("nothing moved to broker 4: %+v", plan.Moves)
	}
	for _, l := range plan.After {
		if l.ID == 3 && l.Replicas != 2 {
			t.Errorf("cordoned broker 3 after: %+v, want its 2 replicas", l)
		}
	}
}
