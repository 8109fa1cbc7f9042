package broker

// FindCoordinator v0-v6: the coordinator of a group is the leader of its
// __consumer_offsets partition, abs(javaHash(group)) % partitions, which is
// created on first use. v4+ asks for several keys at once. Key type 1: the
// coordinator of a transactional id is the leader of its
// __transaction_state partition, created on first use likewise.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleFindCoordinator(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version < 4 {
		c := b.findCoordinator(ctx, req.CoordinatorType, req.CoordinatorKey, r.listener)
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
		if req.Version >= 1 {
			resp.ErrorMessage = c.ErrorMessage
		}
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, b.findCoordinator(ctx, req.CoordinatorType, key, r.listener))
	}
	return resp, nil
}

func (b *Broker) findCoordinator(ctx context.Context, keyType int8, key, listener string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(err *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode = err.Code
		c.ErrorMessage = kmsg.StringPtr(msg)
		return c
	}
	var p *partition
	switch keyType {
	case 0: // group
		if err := b.ensureOffsetsTopic(ctx); err != nil {
			return fail(kerr.CoordinatorNotAvailable, "creating __consumer_offsets: "+err.Error())
		}
		p = b.meta.partition(offsetsTopic, b.groups.PartitionFor(key))
	case 1: // transaction
		if key == "" {
			return fail(kerr.InvalidRequest, "the transactional id is empty")
		}
		if err := b.ensureTxnTopic(ctx); err != nil {
			return fail(kerr.CoordinatorNotAvailable, "creating __transaction_state: "+err.Error())
		}
		p = b.meta.partition(txnTopic, b.txn.PartitionFor(key))
	default:
		return fail(kerr.InvalidRequest, "unsupported coordinator key type")
	}
	if p == nil {
		return fail(kerr.CoordinatorNotAvailable, "no coordinator partition for the key")
	}
	leader, _, _, _ := p.State()
	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		return fail(kerr.CoordinatorNotAvailable, err.Error())
	}
	for _, bi := range brokers {
		if bi.ID == leader {
			c.NodeID = bi.ID
			c.Host, c.Port = endpointFor(bi, listener)
			return c
		}
	}
	return fail(kerr.CoordinatorNotAvailable, "the coordinator is not available")
}
