package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Partition reassignment, as Kafka's controller does it (KIP-455): the
// replica set becomes the target replicas followed by the original ones
// not in the target, with the difference recorded as adding and removing
// replicas; the brokers added open the log and follow the leader; once
// every target replica is in the ISR, the controller completes the move in
// one write: the assignment becomes the target, the ISR loses the removed
// replicas and, if the leader is one of them, a target replica in the ISR
// leads with the next epoch. The removed brokers then delete their copy.

// Reassignment is one partition's reassignment in progress.
type Reassignment struct {
	Replicas         []int32 // the whole replica set now: target, then the originals leaving
	Adding, Removing []int32
}

// Target is the replica set the reassignment moves to.
func (r Reassignment) Target() []int32 {
	return slices.DeleteFunc(slices.Clone(r.Replicas), func(id int32) bool { return slices.Contains(r.Removing, id) })
}

// Reassignments returns the reassignments in progress of topic t.
func (t *Topic) Reassignments() map[int32]Reassignment {
	var out map[int32]Reassignment
	for p := range int32(len(t.Assignment)) {
		if len(t.Adding[p]) == 0 && len(t.Removing[p]) == 0 {
			continue
		}
		if out == nil {
			out = map[int32]Reassignment{}
		}
		out[p] = Reassignment{Replicas: slices.Clone(t.Assignment[p]), Adding: slices.Clone(t.Adding[p]), Removing: slices.Clone(t.Removing[p])}
	}
	return out
}

// AlterReassignments starts, replaces or (a nil target) cancels the
// reassignment of partitions of topic: target replicas by partition. It
// returns an error per partition (ErrUnknownPartition, ErrNoReassignment,
// ErrInvalidAssignment) and writes the rest in one compare-and-set of the
// topic; live names the registered brokers a target may use.
func (s *Store) AlterReassignments(ctx context.Context, topic string, targets map[int32][]int32, live map[int32]bool) (map[int32]error, error) {
	for {
		t, err := s.Topic(ctx, topic)
		if err != nil {
			return nil, err
		}
		assignment := slices.Clone(t.Assignment)
		adding, removing := maps.Clone(t.Adding), maps.Clone(t.Removing)
		if adding == nil {
			adding = map[int32][]int32{}
		}
		if removing == nil {
			removing = map[int32][]int32{}
		}
		errs := map[int32]error{}
		changed := false
		for p, target := range targets {
			if p < 0 || int(p) >= len(assignment) {
				errs[p] = ErrUnknownPartition
				continue
			}
			// The original replicas: those before any reassignment began.
			original := slices.DeleteFunc(slices.Clone(assignment[p]), func(id int32) bool { return slices.Contains(adding[p], id) })
			if target == nil {
				if len(adding[p]) == 0 && len(removing[p]) == 0 {
					errs[p] = ErrNoReassignment
					continue
				}
				// Back to the original replicas, in their original order:
				// the removing ones are kept, the added ones dropped.
				assignment[p] = original
				delete(adding, p)
				delete(removing, p)
				changed = true
				continue
			}
			if err := validTarget(target, live); err != nil {
				errs[p] = err
				continue
			}
			next := slices.Clone(target)
			for _, id := range original {
				if !slices.Contains(next, id) {
					next = append(next, id)
				}
			}
			var add, rm []int32
			for _, id := range target {
				if !slices.Contains(original, id) {
					add = append(add, id)
				}
			}
			for _, id := range original {
				if !slices.Contains(target, id) {
					rm = append(rm, id)
				}
			}
			assignment[p], adding[p], removing[p] = next, add, rm
			if len(add) == 0 && len(rm) == 0 {
				assignment[p] = slices.Clone(target) // a reorder only: done at once
				delete(adding, p)
				delete(removing, p)
			}
			changed = true
		}
		if !changed {
			return errs, nil
		}
		tv, err := encodeTopicReassigning(t.ID, assignment, adding, removing)
		if err != nil {
			return nil, err
		}
		key := s.topicKey(topic)
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", t.Version)).
			Then(clientv3.OpPut(key, string(tv))).
			Commit()
		if err != nil {
			return nil, fmt.Errorf("controller: reassigning %s: %w", topic, err)
		}
		if resp.Succeeded {
			return errs, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

func validTarget(target []int32, live map[int32]bool) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: no replica", ErrInvalidAssignment)
	}
	for i, id := range target {
		if slices.Contains(target[:i], id) {
			return fmt.Errorf("%w: broker %d twice", ErrInvalidAssignment, id)
		}
		if !live[id] {
			return fmt.Errorf("%w: broker %d is not registered", ErrInvalidAssignment, id)
		}
	}
	return nil
}

// completeReassignment is the state and replicas partition p of t moves to
// when its reassignment can complete (every target replica in the ISR),
// and whether it can.
func completeReassignment(t *Topic, p int32, st PartitionState, live, draining map[int32]bool) (PartitionState, []int32, bool) {
	if len(t.Adding[p]) == 0 && len(t.Removing[p]) == 0 {
		return st, nil, false
	}
	target := Reassignment{Replicas: t.Assignment[p], Removing: t.Removing[p]}.Target()
	for _, id := range target {
		if !slices.Contains(st.ISR, id) {
			return st, nil, false
		}
	}
	if st.Leader < 0 || !live[st.Leader] {
		return st, nil, false // elect a leader first
	}
	next := st
	next.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(id int32) bool { return !slices.Contains(target, id) })
	if !slices.Contains(target, st.Leader) {
		r, ok := firstReplica(target, next.ISR, draining)
		if !ok {
			r, ok = firstReplica(target, next.ISR, nil)
		}
		if !ok {
			return st, nil, false
		}
		next.Leader, next.LeaderEpoch = r, st.LeaderEpoch+1
	}
	return next, target, true
}

// writeReassignmentDone completes a reassignment: the partition's state and
// the topic's assignment in one transaction, conditioned on both and on
// the election key.
func (s *Store) writeReassignmentDone(ctx context.Context, t *Topic, p int32, st PartitionState, target []int32) error {
	s.mu.Lock()
	e := s.election
	s.mu.Unlock()
	if e == nil {
		return ErrNotController
	}
	assignment := slices.Clone(t.Assignment)
	assignment[p] = target
	adding, removing := maps.Clone(t.Adding), maps.Clone(t.Removing)
	delete(adding, p)
	delete(removing, p)
	tv, err := encodeTopicReassigning(t.ID, assignment, adding, removing)
	if err != nil {
		return err
	}
	sv, err := encodeState(st)
	if err != nil {
		return err
	}
	tkey, skey := s.topicKey(t.Name), s.stateKey(t.Name, p)
	resp, err := s.cli.Txn(ctx).
		If(
			clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev()),
			clientv3.Compare(clientv3.ModRevision(tkey), "=", t.Version),
			clientv3.Compare(clientv3.ModRevision(skey), "=", st.Version),
		).
		Then(clientv3.OpPut(tkey, string(tv)), clientv3.OpPut(skey, string(sv))).
		Else(clientv3.OpGet(e.Key(), clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return fmt.Errorf("controller: completing the reassignment of %s-%d: %w", t.Name, p, err)
	}
	if resp.Succeeded {
		s.log.Info("controller: reassignment done", "topic", t.Name, "partition", p, "replicas", target, "leader", st.Leader, "isr", st.ISR)
		return nil
	}
	if resp.Responses[0].GetResponseRange().Count == 0 {
		return ErrNotController
	}
	return fmt.Errorf("%w: %s-%d changed while completing its reassignment", ErrStale, t.Name, p)
}
