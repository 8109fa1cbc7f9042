package controller

import (
	"fmt"
	"slices"
)

// AssignReplicas places rf replicas of each of partitions new partitions
// on brokers, as Kafka's AdminUtils does: leaders (first replicas) go round
// the brokers from start, so they spread evenly; followers follow on
// the next brokers, shifted once per round so that no two brokers always
// pair up. When brokers carry racks, the broker list alternates racks and
// each partition's replicas take one broker per rack before any rack gets a
// second (rack-aware assignment). start is usually random; first is the
// index of the first new partition (CreatePartitions continues the round).
func AssignReplicas(brokers []BrokerInfo, partitions, rf, start int) ([][]int32, error) {
	n := len(brokers)
	if rf <= 0 || rf > n {
		return nil, fmt.Errorf("%w: replication factor %d with %d brokers", ErrInvalid, rf, n)
	}
	if partitions < 0 {
		return nil, fmt.Errorf("%w: %d partitions", ErrInvalid, partitions)
	}
	start = ((start % n) + n) % n
	ids, racks := rackAlternated(brokers)
	out := make([][]int32, partitions)
	nRacks := len(slices.Compact(slices.Sorted(slices.Values(racks))))
	for p := range partitions {
		lead := (start + p) % n
		shift := 1 + ((start+p)/n)%max(n-1, 1)
		rs := []int32{ids[lead]}
		usedRacks := map[string]bool{racks[lead]: true}
		for k := 0; len(rs) < rf && k < 2*n; k++ {
			i := (lead + shift + k) % n
			if slices.Contains(rs, ids[i]) {
				continue
			}
			// A rack gets a second replica only once every rack has one.
			if racks[i] != "" && usedRacks[racks[i]] && len(usedRacks) < nRacks {
				continue
			}
			rs = append(rs, ids[i])
			usedRacks[racks[i]] = true
		}
		for i := 0; len(rs) < rf && i < n; i++ {
			if !slices.Contains(rs, ids[i]) {
				rs = append(rs, ids[i])
			}
		}
		out[p] = rs
	}
	return out, nil
}

// rackAlternated orders broker ids by id, and, when any broker has a rack,
// interleaves the racks (r1's first, r2's first, ..., r1's second, ...), as
// Kafka's getRackAlternatedBrokerList. It returns the ids and their racks.
func rackAlternated(brokers []BrokerInfo) ([]int32, []string) {
	bs := slices.Clone(brokers)
	slices.SortFunc(bs, func(a, b BrokerInfo) int { return int(a.ID) - int(b.ID) })
	anyRack := false
	for _, b := range bs {
		anyRack = anyRack || b.Rack != ""
	}
	ids := make([]int32, 0, len(bs))
	racks := make([]string, 0, len(bs))
	if !anyRack {
		for _, b := range bs {
			ids = append(ids, b.ID)
			racks = append(racks, "")
		}
		return ids, racks
	}
	byRack := map[string][]int32{}
	var names []string
	for _, b := range bs {
		if _, ok := byRack[b.Rack]; !ok {
			names = append(names, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], b.ID)
	}
	slices.Sort(names)
	for i := 0; len(ids) < len(bs); i++ {
		for _, r := range names {
			if i < len(byRack[r]) {
				ids = append(ids, byRack[r][i])
				racks = append(racks, r)
			}
		}
	}
	return ids, racks
}
