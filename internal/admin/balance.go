package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Balancing, what Cruise Control does for Kafka, in two steps: replicas
// move (partition reassignments) until every broker holds as many replicas
// as the others give or take one, preferring among equal counts the moves
// that even out bytes, and never putting two replicas of a partition in one
// rack where the partition had them in distinct racks; then the preferred
// leader (the first replica) of partitions is rotated, a reorder without
// data movement, until every broker is the preferred leader of as many
// partitions as the others give or take one, and a preferred-leader
// election moves the leadership. A cordoned broker (KIP-1066: every log
// directory of it cordoned) takes no replica, and a partition with a
// replica on one is left as it is: the controller refuses any assignment
// naming a cordoned broker, as Kafka's does.

// PartitionPlacement is one partition's replicas, first the preferred
// leader, and the bytes of each replica.
type PartitionPlacement struct {
	Topic     string
	Partition int32
	Replicas  []int32
	Bytes     map[int32]int64 // by broker; missing: unknown (0)
}

// Move is one change of a plan: a partition's replicas from, then to.
type Move struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	From      []int32 `json:"from"`
	To        []int32 `json:"to"`
	Bytes     int64   `json:"bytes"`        // bytes copied to new replicas
	Reorder   bool    `json:"reorder_only"` // the same replicas in another order
}

// BrokerLoad is a broker's share of a placement.
type BrokerLoad struct {
	ID       int32 `json:"id"`
	Replicas int   `json:"replicas"`
	Leaders  int   `json:"preferred_leaders"`
	Bytes    int64 `json:"bytes"`
}

// Plan is what Balance would do, and the loads before and after.
type Plan struct {
	Moves  []Move       `json:"moves"`
	Before []BrokerLoad `json:"before"`
	After  []BrokerLoad `json:"after"`
}

// PlanBalance computes a plan for the partitions over the brokers (with
// their racks; "" for none), of which cordoned take nothing new.
func PlanBalance(parts []PartitionPlacement, racks map[int32]string, cordoned map[int32]bool) Plan {
	all := slices.Sorted(maps.Keys(racks))
	brokers := slices.DeleteFunc(slices.Clone(all), func(id int32) bool { return cordoned[id] })
	cur := make([]PartitionPlacement, len(parts))
	for i, p := range parts {
		cur[i] = p
		cur[i].Replicas = slices.Clone(p.Replicas)
	}
	fixed := func(p *PartitionPlacement) bool {
		return slices.ContainsFunc(p.Replicas, func(id int32) bool { return cordoned[id] })
	}
	plan := Plan{Before: loads(cur, all)}
	size := func(p *PartitionPlacement) int64 {
		var n int64
		for _, b := range p.Bytes {
			n = max(n, b)
		}
		return n
	}
	// Step 1: replica counts.
	for range len(cur) * len(brokers) {
		ls := loads(cur, brokers)
		if len(ls) < 2 {
			break
		}
		hi := slices.MaxFunc(ls, func(a, b BrokerLoad) int {
			return cmp.Or(cmp.Compare(a.Replicas, b.Replicas), cmp.Compare(a.Bytes, b.Bytes))
		})
		lo := slices.MinFunc(ls, func(a, b BrokerLoad) int {
			return cmp.Or(cmp.Compare(a.Replicas, b.Replicas), cmp.Compare(a.Bytes, b.Bytes))
		})
		if hi.Replicas-lo.Replicas <= 1 {
			break
		}
		best, bestScore := -1, int64(-1)
		for i := range cur {
			p := &cur[i]
			if fixed(p) || !slices.Contains(p.Replicas, hi.ID) || slices.Contains(p.Replicas, lo.ID) || !rackOK(p.Replicas, hi.ID, lo.ID, racks) {
				continue
			}
			// Prefer the partition whose bytes come closest to halving
			// the two brokers' byte difference.
			gap := (hi.Bytes - lo.Bytes) / 2
			score := int64(1<<62) - abs(size(p)-gap)
			if score > bestScore {
				best, bestScore = i, score
			}
		}
		if best < 0 {
			break
		}
		p := &cur[best]
		p.Replicas[slices.Index(p.Replicas, hi.ID)] = lo.ID
		if p.Bytes != nil {
			p.Bytes[lo.ID] = size(p)
			delete(p.Bytes, hi.ID)
		}
	}
	// Step 2: preferred leaders, by reordering.
	for range len(cur) * len(brokers) {
		ls := loads(cur, brokers)
		if len(ls) < 2 {
			break
		}
		hi := slices.MaxFunc(ls, func(a, b BrokerLoad) int { return cmp.Compare(a.Leaders, b.Leaders) })
		lo := slices.MinFunc(ls, func(a, b BrokerLoad) int { return cmp.Compare(a.Leaders, b.Leaders) })
		if hi.Leaders-lo.Leaders <= 1 {
			break
		}
		moved := false
		for i := range cur {
			p := &cur[i]
			if len(p.Replicas) > 0 && p.Replicas[0] == hi.ID && !fixed(p) {
				if j := slices.Index(p.Replicas, lo.ID); j > 0 {
					p.Replicas[0], p.Replicas[j] = p.Replicas[j], p.Replicas[0]
					moved = true
					break
				}
			}
		}
		if !moved {
			break
		}
	}
	for i, p := range cur {
		was := parts[i].Replicas
		if slices.Equal(was, p.Replicas) {
			continue
		}
		m := Move{Topic: p.Topic, Partition: p.Partition, From: slices.Clone(was), To: p.Replicas}
		m.Reorder = len(was) == len(p.Replicas) && !slices.ContainsFunc(p.Replicas, func(id int32) bool { return !slices.Contains(was, id) })
		if !m.Reorder {
			for _, id := range p.Replicas {
				if !slices.Contains(was, id) {
					m.Bytes += size(&parts[i])
				}
			}
		}
		plan.Moves = append(plan.Moves, m)
	}
	plan.After = loads(cur, all)
	return plan
}

// rackOK reports whether replacing from by to among replicas keeps the
// partition's replicas in as many racks as before.
func rackOK(replicas []int32, from, to int32, racks map[int32]string) bool {
	if racks[to] == racks[from] {
		return true
	}
	for _, r := range replicas {
		if r != from && racks[r] != "" && racks[r] == racks[to] {
			return false
		}
	}
	return true
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func loads(parts []PartitionPlacement, brokers []int32) []BrokerLoad {
	by := make(map[int32]*BrokerLoad, len(brokers))
	out := make([]BrokerLoad, len(brokers))
	for i, id := range brokers {
		out[i].ID = id
		by[id] = &out[i]
	}
	for _, p := range parts {
		for i, r := range p.Replicas {
			l := by[r]
			if l == nil {
				continue
			}
			l.Replicas++
			l.Bytes += p.Bytes[r]
			if i == 0 {
				l.Leaders++
			}
		}
	}
	return out
}

// Placement reads the cluster's brokers and every partition of the
// topics (every topic but the internal ones when none is named) with the
// bytes of each replica.
func (c *Client) Placement(ctx context.Context, topics ...string) ([]PartitionPlacement, map[int32]string, error) {
	md, err := c.ADM.Metadata(ctx, topics...)
	if err != nil {
		return nil, nil, err
	}
	racks := map[int32]string{}
	for _, b := range md.Brokers {
		racks[b.NodeID] = ""
		if b.Rack != nil {
			racks[b.NodeID] = *b.Rack
		}
	}
	td := kadm.TopicDetails{}
	for name, t := range md.Topics {
		if t.Err != nil {
			return nil, nil, fmt.Errorf("topic %s: %w", name, t.Err)
		}
		if len(topics) == 0 && t.IsInternal {
			continue
		}
		td[name] = t
	}
	sizes := c.sizes(ctx, td)
	var out []PartitionPlacement
	for _, name := range td.Names() {
		for _, p := range td[name].Partitions.Sorted() {
			pp := PartitionPlacement{Topic: name, Partition: p.Partition, Replicas: slices.Clone(p.Replicas), Bytes: map[int32]int64{}}
			for _, r := range p.Replicas {
				pp.Bytes[r] = sizes[replica{name, p.Partition, r}]
			}
			out = append(out, pp)
		}
	}
	return out, racks, nil
}

// Cordoned are the brokers all of whose log directories are cordoned
// (KIP-1066), as each answers DescribeLogDirs (v5's IsCordoned); a broker
// that does not answer counts as not cordoned.
func (c *Client) Cordoned(ctx context.Context, brokers []int32) map[int32]bool {
	out := map[int32]bool{}
	for _, id := range brokers {
		// One broker at a time: kgo's merge of a DescribeLogDirs sent to
		// all drops IsCordoned.
		kresp, err := c.KGO.Broker(int(id)).Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
		if err != nil {
			continue
		}
		resp := kresp.(*kmsg.DescribeLogDirsResponse)
		out[id] = len(resp.Dirs) > 0 && !slices.ContainsFunc(resp.Dirs, func(d kmsg.DescribeLogDirsResponseDir) bool { return !d.IsCordoned })
	}
	return out
}

// ApplyBalance starts the plan's reassignments, waits (up to ctx) until
// none is in progress, then elects the preferred leader of every partition
// it changed.
func (c *Client) ApplyBalance(ctx context.Context, plan Plan) error {
	if len(plan.Moves) == 0 {
		return nil
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	set := kadm.TopicsSet{}
	for _, m := range plan.Moves {
		req.Assign(m.Topic, m.Partition, m.To)
		set.Add(m.Topic, m.Partition)
	}
	res, err := c.ADM.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	for _, ps := range res {
		for _, r := range ps {
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, withMessage(r.Err, r.ErrMessage)))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for {
		ls, err := c.ADM.ListPartitionReassignments(ctx, set)
		if err != nil {
			return err
		}
		n := 0
		for _, ps := range ls {
			n += len(ps)
		}
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d reassignments still in progress: %w", n, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	el, err := c.ADM.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		return err
	}
	for _, ps := range el {
		for _, r := range ps {
			if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				errs = append(errs, fmt.Errorf("electing %s-%d: %w", r.Topic, r.Partition, r.Err))
			}
		}
	}
	return errors.Join(errs...)
}
