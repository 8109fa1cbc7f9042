package broker

// DeleteTopics v1-v6. v4: flexible. v5: error messages. v6: topics by name
// or by id. A timeout of 0 or less times every topic out unlooked-up
// (REQUEST_TIMED_OUT, no message), as Kafka 4.4's controller.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
)

func (b *Broker) handleDeleteTopics(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: &n})
		}
	}
	for _, tg := range targets {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = tg.name, tg.id
		var t *topic
		if tg.name != nil {
			t = b.meta.topic(*tg.name)
		} else {
			t = b.meta.topicByID(tg.id)
		}
		var err error
		switch {
		case req.Version >= 6 && (tg.name == nil) == (tg.id == [16]byte{}):
			err = fmt.Errorf("%w: give a topic name or a topic id, not both or neither", kerr.InvalidRequest)
		case t != nil && b.topicRefusal(r, security.OpDelete, t.name) != nil: // authz.go
			err = kerr.TopicAuthorizationFailed
		case t == nil && tg.name != nil && b.topicRefusal(r, security.OpDelete, *tg.name) != nil:
			// By name, Kafka checks Delete before the topic's existence.
			err = kerr.TopicAuthorizationFailed
		case !b.deleteEnabled:
			err = kerr.TopicDeletionDisabled
		case req.TimeoutMillis <= 0:
			// Kafka's controller: the deadline (now plus the timeout)
			// has passed, no topic is looked up or deleted.
			rt.ErrorCode = kerr.RequestTimedOut.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		case t == nil && tg.name == nil:
			err = kerr.UnknownTopicID
		case t == nil:
			err = kerr.UnknownTopicOrPartition
		default:
			name := t.name
			rt.Topic, rt.TopicID = &name, t.id
			if err = b.mutationQuota(r, len(t.parts), 5); err != nil { // 48_client_quotas.go
				break
			}
			if err = b.store.DeleteTopic(ctx, t.name); err == nil {
				err = b.syncMetadata(ctx)
			}
			if err == nil {
				if ferr := b.forgetMirror(ctx, t.name); ferr != nil { // link.go
					b.log.Warn("cluster link: a deleted mirror topic's record stays", "topic", t.name, "err", ferr)
				}
			}
		}
		rt.ErrorCode = errCode(err)
		if err != nil && req.Version >= 5 {
			rt.ErrorMessage = errMsg(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	resp.ThrottleMillis = r.throttleMillis()
	return resp, nil
}
