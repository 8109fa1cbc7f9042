package broker

// AlterPartitionReassignments (45) v0-v1 starts, replaces or cancels (null
// replicas) partition reassignments; v1 adds AllowReplicationFactorChange
// (KIP-860: false refuses a target of another size). The top-level error
// is for the whole request; each partition has its own.
// ListPartitionReassignments (46) v0 lists those in progress: the whole
// replica set, and the replicas being added and removed
// (controller.AlterReassignments does the work).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
)

func (b *Broker) handleAlterPartitionAssignments(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	var named [][]int32
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			named = append(named, rp.Replicas)
		}
	}
	brokers, err := b.brokersFor(ctx, hasBrokers(0, named...))
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.CoordinatorNotAvailable.Code, errMsg(err)
		return resp, nil
	}
	live := make(map[int32]bool, len(brokers))
	for _, bi := range brokers {
		live[bi.ID] = true
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		targets := make(map[int32][]int32, len(rt.Partitions))
		pre := map[int32]error{}
		t := b.meta.topic(rt.Topic)
		for _, rp := range rt.Partitions {
			var cordoned error
			if rp.Replicas != nil {
				cordoned = cordonRefusal(brokers, rp.Replicas)
			}
			switch {
			case t == nil:
				pre[rp.Partition] = kerr.UnknownTopicOrPartition
			case rp.Replicas != nil && !allowRF && int(rp.Partition) < len(t.parts) && len(rp.Replicas) != t.parts[rp.Partition].ReplicationFactor():
				pre[rp.Partition] = fmt.Errorf("%w: the reassignment would change the replication factor", kerr.InvalidReplicationFactor)
			case cordoned != nil:
				pre[rp.Partition] = cordoned
			default:
				targets[rp.Partition] = rp.Replicas
			}
		}
		var errs map[int32]error
		if len(targets) > 0 {
			errs, err = b.store.AlterReassignments(ctx, rt.Topic, targets, live)
			if err != nil {
				for p := range targets {
					pre[p] = err
				}
			}
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			err := pre[rp.Partition]
			if err == nil {
				err = errs[rp.Partition]
			}
			sp.ErrorCode, sp.ErrorMessage = reassignCode(err), errMsg(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if err := b.syncMetadata(ctx); err != nil {
		b.log.Warn("metadata sync failed", "err", err)
	}
	return resp, nil
}

func reassignCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, controller.ErrNoReassignment):
		return kerr.NoReassignmentInProgress.Code
	case errors.Is(err, controller.ErrInvalidAssignment):
		return kerr.InvalidReplicaAssignment.Code
	}
	return errCode(err)
}

func (b *Broker) handleListPartitionReassignments(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	topics, _, err := b.store.Topics(ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.CoordinatorNotAvailable.Code, errMsg(err)
		return resp, nil
	}
	var want map[string][]int32 // nil: every topic
	if req.Topics != nil {
		want = map[string][]int32{}
		for _, rt := range req.Topics {
			want[rt.Topic] = rt.Partitions
		}
	}
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		parts, asked := want[name]
		if want != nil && !asked {
			continue
		}
		ra := topics[name].Reassignments()
		ids := make([]int32, 0, len(ra))
		for p := range ra {
			if want == nil || slices.Contains(parts, p) {
				ids = append(ids, p)
			}
		}
		if len(ids) == 0 {
			continue
		}
		slices.Sort(ids)
		st := kmsg.NewListPartitionReassignmentsResponseTopic()
		st.Topic = name
		for _, p := range ids {
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition = p
			sp.Replicas, sp.AddingReplicas, sp.RemovingReplicas = ra[p].Replicas, ra[p].Adding, ra[p].Removing
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
