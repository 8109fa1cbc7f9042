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

func (m *consumerMember) subscribes(topic string) bool {
	return slices.Contains(m.topics, topic) || m.re != nil && m.re.MatchString(topic)
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
		n := int(meta[name].Partitions)
		per, extra := n/len(subs), n%len(subs)
		p := 0
		for i, id := range subs {
			k := per
			if i < extra {
				k++
			}
			for range k {
				out[id] = append(out[id], topicPartition{name, int32(p)})
				p++
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
	// The least loaded subscriber of tp with fewer than limit partitions.
	least := func(tp topicPartition, limit int) string {
		best := ""
		for _, id := range ids {
			if cg.members[id].subscribes(tp.topic) && load[id] < limit && (best == "" || load[id] < load[best]) {
				best = id
			}
		}
		return best
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
	out := map[string][]topicPartition{}
	for tp, id := range owner {
		out[id] = append(out[id], tp)
	}
	return out
}
