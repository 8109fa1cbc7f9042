package groups

// The server-side assignors of KIP-848 consumer groups
// (group.consumer.assignors; the first is the default, a member may ask
// for another with ServerAssignor, and the one most members ask for is
// used, as in Kafka):
//
//   - uniform: every subscribed partition to one of its subscribers,
//     spread as evenly as the subscriptions allow, keeping each member's
//     previous target where it can (Kafka's UniformAssignor: few
//     partitions move on a change, so few are revoked).
//   - range: per topic, its partitions in contiguous ranges over the
//     topic's subscribers sorted by member id (Kafka's RangeAssignor), so
//     that members subscribed to co-partitioned topics get the same
//     partition numbers of each.
//
// Both are rack-aware, as Kafka's are: where members give a rack and the
// brokers have racks, a member gets partitions with a replica on its rack
// first (fetching from its rack's follower, KIP-392), as far as the
// balance allows; without racks the assignment is the same as before.

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

const (
	assignorUniform = "uniform"
	assignorRange   = "range"
)

func (c *Coordinator) consumerAssignors() []string {
	if len(c.cfg.ConsumerAssignors) == 0 {
		return []string{assignorUniform, assignorRange}
	}
	return c.cfg.ConsumerAssignors
}

// chooseAssignor is the assignor most members ask for (ties: the earlier
// in group.consumer.assignors), the default when none asks.
func (c *Coordinator) chooseAssignor(cg *consumerGroup) string {
	names := c.consumerAssignors()
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best := names[0]
	for _, n := range names {
		if votes[n] > votes[best] {
			best = n
		}
	}
	return best
}

// subscribes: the member subscribes to topic by name, or by its regex
// when its principal may describe the topic.
func (m *consumerMember) subscribes(topic string) bool {
	return slices.Contains(m.topics, topic) ||
		m.re != nil && m.re.MatchString(topic) && (m.mayDescribe == nil || m.mayDescribe(topic))
}

// assign computes the target assignment: member id -> partitions, sorted.
func assign(assignor string, cg *consumerGroup, meta map[string]TopicMeta) map[string][]topicPartition {
	ids := slices.Sorted(maps.Keys(cg.members))
	var out map[string][]topicPartition
	if assignor == assignorRange {
		out = assignRange(cg, ids, meta)
	} else {
		out = assignUniform(cg, ids, meta)
	}
	for id := range out {
		slices.SortFunc(out[id], compareTP)
	}
	return out
}

func compareTP(a, b topicPartition) int {
	return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
}

func assignRange(cg *consumerGroup, ids []string, meta map[string]TopicMeta) map[string][]topicPartition {
	out := map[string][]topicPartition{}
	for _, name := range slices.Sorted(maps.Keys(meta)) {
		var subs []string
		for _, id := range ids {
			if cg.members[id].subscribes(name) {
				subs = append(subs, id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		t := meta[name]
		n := int(t.Partitions)
		per, extra := n/len(subs), n%len(subs)
		quota := map[string]int{}
		for i, id := range subs {
			quota[id] = per
			if i < extra {
				quota[id]++
			}
		}
		// Each member first takes partitions on its rack (lowest first),
		// then the rest fill the quotas in order: contiguous ranges when
		// there are no racks.
		taken := make([]bool, n)
		for _, id := range subs {
			rack := cg.members[id].rack
			for p := 0; p < n && quota[id] > 0 && rack != ""; p++ {
				if !taken[p] && t.onRack(int32(p), rack) {
					taken[p] = true
					out[id] = append(out[id], topicPartition{name, int32(p)})
					quota[id]--
				}
			}
		}
		p := 0
		for _, id := range subs {
			for ; quota[id] > 0; p++ {
				if !taken[p] {
					taken[p] = true
					out[id] = append(out[id], topicPartition{name, int32(p)})
					quota[id]--
				}
			}
		}
	}
	return out
}

func assignUniform(cg *consumerGroup, ids []string, meta map[string]TopicMeta) map[string][]topicPartition {
	valid := func(id string, tp topicPartition) bool {
		t, ok := meta[tp.topic]
		return ok && tp.partition < t.Partitions && cg.members[id].subscribes(tp.topic)
	}
	owner := map[topicPartition]string{}
	load := map[string]int{}
	for _, id := range ids {
		load[id] = 0
		for _, tp := range cg.target[id] {
			if valid(id, tp) {
				owner[tp] = id
				load[id]++
			}
		}
	}
	var all []topicPartition
	for _, name := range slices.Sorted(maps.Keys(meta)) {
		for p := range meta[name].Partitions {
			all = append(all, topicPartition{name, p})
		}
	}
	// The least loaded subscriber of tp with fewer than limit partitions,
	// one on a rack of tp's replicas first.
	least := func(tp topicPartition, limit int) string {
		for _, rackOnly := range []bool{true, false} {
			best := ""
			for _, id := range ids {
				m := cg.members[id]
				if rackOnly && !meta[tp.topic].onRack(tp.partition, m.rack) {
					continue
				}
				if m.subscribes(tp.topic) && load[id] < limit && (best == "" || load[id] < load[best]) {
					best = id
				}
			}
			if best != "" {
				return best
			}
		}
		return ""
	}
	for _, tp := range all {
		if _, ok := owner[tp]; ok {
			continue
		}
		if id := least(tp, int(^uint(0)>>1)); id != "" {
			owner[tp] = id
			load[id]++
		}
	}
	// Move partitions from the most loaded members to subscribers with at
	// least two fewer, until none can move: balanced within one where the
	// subscriptions allow it.
	for moved := true; moved; {
		moved = false
		for _, tp := range all {
			from, ok := owner[tp]
			if !ok {
				continue
			}
			if to := least(tp, load[from]-1); to != "" {
				owner[tp] = to
				load[from]--
				load[to]++
				moved = true
			}
		}
	}
	// Then bring partitions to a member on their rack where the balance
	// stays: a move to one with fewer, or a swap with one holding a
	// partition off its own rack.
	onRack := func(tp topicPartition, id string) bool {
		return meta[tp.topic].onRack(tp.partition, cg.members[id].rack)
	}
	for moved, rounds := true, 0; moved && rounds < len(all); rounds++ {
		moved = false
		for _, tp := range all {
			a, ok := owner[tp]
			if !ok || onRack(tp, a) {
				continue
			}
			for _, b := range ids {
				if b == a || !onRack(tp, b) || !cg.members[b].subscribes(tp.topic) {
					continue
				}
				if load[b] < load[a] {
					owner[tp] = b
					load[a]--
					load[b]++
					moved = true
					break
				}
				if q, ok := swapCandidate(all, owner, b, a, cg, onRack); ok {
					owner[tp], owner[q] = b, a
					moved = true
					break
				}
			}
		}
	}
	out := map[string][]topicPartition{}
	for tp, id := range owner {
		out[id] = append(out[id], tp)
	}
	return out
}

// swapCandidate is a partition b owns off its rack that a may take.
func swapCandidate(all []topicPartition, owner map[topicPartition]string, b, a string, cg *consumerGroup, onRack func(topicPartition, string) bool) (topicPartition, bool) {
	for _, q := range all {
		if owner[q] == b && !onRack(q, b) && cg.members[a].subscribes(q.topic) {
			return q, true
		}
	}
	return topicPartition{}, false
}
