package broker

// CreatePartitions v0-v3. v2: flexible. v3: same as v2 (KIP-599 errors).
// A timeout of 0 or less times every topic out unchecked
// (REQUEST_TIMED_OUT, no message), as Kafka 4.4's controller.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleCreatePartitions(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := countNames(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic })
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if seen[rt.Topic] > 1 {
			err = fmt.Errorf("%w: duplicate topic %s", kerr.InvalidRequest, rt.Topic)
		} else if req.TimeoutMillis <= 0 {
			// Kafka's controller: the deadline (now plus the timeout)
			// has passed, nothing is checked or added.
			st.ErrorCode = kerr.RequestTimedOut.Code
			resp.Topics = append(resp.Topics, st)
			continue
		} else if t := b.meta.topic(rt.Topic); t != nil && !req.ValidateOnly && int(rt.Count) > len(t.parts) {
			err = b.mutationQuota(r, int(rt.Count)-len(t.parts), 3) // 48_client_quotas.go
		}
		if err == nil {
			err = b.createPartitions(ctx, rt, req.ValidateOnly)
		}
		st.ErrorCode = errCode(err)
		st.ErrorMessage = errMsg(err)
		resp.Topics = append(resp.Topics, st)
	}
	resp.ThrottleMillis = r.throttleMillis()
	return resp, nil
}

func (b *Broker) createPartitions(ctx context.Context, rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	// Decide on the partition count etcd has now, not a stale cache.
	if err := b.syncMetadata(ctx); err != nil {
		return err
	}
	t := b.meta.topic(rt.Topic)
	if t == nil {
		return kerr.UnknownTopicOrPartition
	}
	have := int32(len(t.parts))
	if rt.Count <= have {
		return fmt.Errorf("%w: topic currently has %d partitions, %d would not be an increase", kerr.InvalidPartitions, have, rt.Count)
	}
	if n := int(rt.Count - have); n > maxPartitionsPerRequest {
		return fmt.Errorf("%w: %d new partitions in one request, at most %d", kerr.PolicyViolation, n, maxPartitionsPerRequest)
	}
	rf := t.parts[0].ReplicationFactor()
	need := hasBrokers(rf)
	if rt.Assignment != nil {
		var named [][]int32
		for _, a := range rt.Assignment {
			named = append(named, a.Replicas)
		}
		need = hasBrokers(0, named...)
	}
	brokers, err := b.brokersFor(ctx, need)
	if err != nil {
		return err
	}
	ids := make([]int32, len(brokers))
	for i, bi := range brokers {
		ids[i] = bi.ID
	}
	var assignment [][]int32
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != rt.Count-have {
			return fmt.Errorf("%w: increasing the number of partitions by %d but %d assignments provided",
				kerr.InvalidReplicaAssignment, rt.Count-have, len(rt.Assignment))
		}
		for _, a := range rt.Assignment {
			assignment = append(assignment, a.Replicas)
		}
		if err := validateAssignment(assignment, ids, rf); err != nil {
			return err
		}
		if err := cordonRefusal(brokers, assignment...); err != nil {
			return err
		}
	} else {
		usable := uncordoned(brokers)
		if err := placementRefusal(rf, len(usable), false); err != nil {
			return err
		}
		all, err := placeReplicas(usable, int(rt.Count), rf, 0)
		if err != nil {
			return err
		}
		assignment = all[have:]
	}
	if validateOnly {
		return nil
	}
	if err := b.store.AddPartitions(ctx, rt.Topic, assignment); err != nil {
		return err
	}
	return b.awaitTopic(ctx, rt.Topic, int(rt.Count))
}
