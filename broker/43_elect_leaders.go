package broker

// ElectLeaders v0-v2. v1: election type (0 preferred, 1 unclean) and a
// top-level error code. v2: flexible. Served by the controller, as in
// Kafka: another broker answers NOT_CONTROLLER and the client asks the
// controller Metadata names. A timeout of 0 or less times the request out
// unrun, as Kafka's controller does (its deadline has passed).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
)

func (b *Broker) handleElectLeaders(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	unclean := false
	if req.Version >= 1 {
		switch req.ElectionType {
		case 0:
		case 1:
			unclean = true
		default:
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
	}
	if req.TimeoutMillis <= 0 {
		return electTimedOut(req, resp), nil
	}
	var parts []controller.TopicPartition
	if req.Topics != nil {
		parts = []controller.TopicPartition{}
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, controller.TopicPartition{Topic: rt.Topic, Partition: p})
			}
		}
	}
	results, err := b.store.ElectLeaders(ctx, unclean, parts)
	// A state written by someone else meanwhile: decide again.
	for try := 0; err == nil && try < 3; try++ {
		var stale []controller.TopicPartition
		for tp, e := range results {
			if errors.Is(e, controller.ErrStale) {
				stale = append(stale, tp)
			}
		}
		if len(stale) == 0 {
			break
		}
		var again map[controller.TopicPartition]error
		if again, err = b.store.ElectLeaders(ctx, unclean, stale); err == nil {
			for tp, e := range again {
				results[tp] = e
			}
		}
	}
	if err != nil {
		code := errCode(err)
		if errors.Is(err, controller.ErrNotController) {
			code = kerr.NotController.Code
		}
		if req.Version >= 1 {
			resp.ErrorCode = code
			return resp, nil
		}
		results = map[controller.TopicPartition]error{}
		for _, tp := range parts {
			results[tp] = kerr.ErrorForCode(code)
		}
	}
	byTopic := map[string]int{}
	if parts == nil {
		for tp := range results {
			parts = append(parts, tp)
		}
	}
	for _, tp := range parts {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(resp.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = tp.Partition
		e := results[tp]
		switch {
		case e == nil:
		case errors.Is(e, controller.ErrElectionNotNeeded):
			rp.ErrorCode = kerr.ElectionNotNeeded.Code
		case errors.Is(e, controller.ErrPreferredLeaderNotAvailable):
			rp.ErrorCode = kerr.PreferredLeaderNotAvailable.Code
		case errors.Is(e, controller.ErrEligibleLeadersNotAvailable):
			rp.ErrorCode = kerr.EligibleLeadersNotAvailable.Code
		default:
			rp.ErrorCode = errCode(e)
		}
		if rp.ErrorCode != 0 {
			rp.ErrorMessage = errMsg(e)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	if err == nil {
		if serr := b.syncMetadata(ctx); serr != nil {
			b.log.Warn("metadata sync after leader election", "err", serr)
		}
	}
	return resp, nil
}

// electTimedOut is Kafka 4.4's answer to an ElectLeaders whose timeout is
// 0 or less: its controller gives the election a deadline of now plus the
// timeout, already passed, and answers REQUEST_TIMED_OUT without electing:
// at the top (v1+) and for each partition asked for, without a message;
// no topics when all were asked for. kafka-go's Client.ElectLeaders sends
// 0 unless given a Timeout.
func electTimedOut(req *kmsg.ElectLeadersRequest, resp *kmsg.ElectLeadersResponse) *kmsg.ElectLeadersResponse {
	resp.ErrorCode = kerr.RequestTimedOut.Code
	for _, rt := range req.Topics {
		t := kmsg.NewElectLeadersResponseTopic()
		t.Topic = rt.Topic
		for _, p := range rt.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = p
			rp.ErrorCode = kerr.RequestTimedOut.Code
			t.Partitions = append(t.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
