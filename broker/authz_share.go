package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
)

// The share-group offset APIs' authorization (authz_apis.go has the
// list), as Kafka 4.4's KafkaApis checks them:
//
//	DescribeShareGroupOffsets  Describe on each group (in the handler),
//	                           Describe on each topic (the others left out)
//	AlterShareGroupOffsets     Read on the group, Read on each topic
//	DeleteShareGroupOffsets    Delete on the group, Read on each topic
//
// A refused topic is answered only when the group coordinator answers the
// rest without an error, as Kafka answers.

func (b *Broker) authorizeShareRequest(r *request) (kmsg.Response, authzMerge) {
	switch req := r.body.(type) {
	case *kmsg.DescribeShareGroupOffsetsRequest:
		return nil, b.authzDescribeShareGroupOffsets(r, req)
	case *kmsg.AlterShareGroupOffsetsRequest:
		return b.authzAlterShareGroupOffsets(r, req)
	case *kmsg.DeleteShareGroupOffsetsRequest:
		return b.authzDeleteShareGroupOffsets(r, req)
	}
	return nil, nil
}

func (b *Broker) authzAlterShareGroupOffsets(r *request, req *kmsg.AlterShareGroupOffsetsRequest) (kmsg.Response, authzMerge) {
	if !b.may(r, security.OpRead, security.ResourceGroup, req.GroupID) {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(kerr.GroupAuthorizationFailed.Message)
		return resp, nil
	}
	var refused []kmsg.AlterShareGroupOffsetsResponseTopic
	req.Topics = keepIf(req.Topics, func(t kmsg.AlterShareGroupOffsetsRequestTopic) bool {
		if b.may(r, security.OpRead, security.ResourceTopic, t.Topic) {
			return true
		}
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		if id, ok := b.topicIDOf(t.Topic); ok {
			rt.TopicID = id
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rp.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
			rt.Partitions = append(rt.Partitions, rp)
		}
		refused = append(refused, rt)
		return false
	})
	return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
		if ar := resp.(*kmsg.AlterShareGroupOffsetsResponse); ar.ErrorCode == 0 {
			ar.Topics = append(ar.Topics, refused...)
		}
	})
}

func (b *Broker) authzDeleteShareGroupOffsets(r *request, req *kmsg.DeleteShareGroupOffsetsRequest) (kmsg.Response, authzMerge) {
	if !b.may(r, security.OpDelete, security.ResourceGroup, req.GroupID) {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(kerr.GroupAuthorizationFailed.Message)
		return resp, nil
	}
	var refused []kmsg.DeleteShareGroupOffsetsResponseTopic
	req.Topics = keepIf(req.Topics, func(t kmsg.DeleteShareGroupOffsetsRequestTopic) bool {
		if b.may(r, security.OpRead, security.ResourceTopic, t.Topic) {
			return true
		}
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		rt.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
		refused = append(refused, rt)
		return false
	})
	return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
		if dr := resp.(*kmsg.DeleteShareGroupOffsetsResponse); dr.ErrorCode == 0 {
			dr.Topics = append(dr.Topics, refused...)
		}
	})
}

// authzDescribeShareGroupOffsets: a group the principal may describe
// (the handler refuses the others) has the topics it may not describe
// answered with TOPIC_AUTHORIZATION_FAILED on each partition when named,
// and left out when all its offsets are asked for.
func (b *Broker) authzDescribeShareGroupOffsets(r *request, req *kmsg.DescribeShareGroupOffsetsRequest) authzMerge {
	mayTopic := func(t string) bool { return b.may(r, security.OpDescribe, security.ResourceTopic, t) }
	refused := make([][]kmsg.DescribeShareGroupOffsetsResponseGroupTopic, len(req.Groups))
	all := make([]bool, len(req.Groups))
	for i := range req.Groups {
		g := &req.Groups[i]
		if all[i] = g.Topics == nil; all[i] {
			continue
		}
		g.Topics = keepIf(g.Topics, func(t kmsg.DescribeShareGroupOffsetsRequestGroupTopic) bool {
			if mayTopic(t.Topic) {
				return true
			}
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				rp.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused[i] = append(refused[i], rt)
			return false
		})
	}
	return func(resp kmsg.Response) {
		dr := resp.(*kmsg.DescribeShareGroupOffsetsResponse)
		for i := range dr.Groups {
			g := &dr.Groups[i]
			if i >= len(all) || g.ErrorCode != 0 {
				continue
			}
			if all[i] {
				g.Topics = keepIf(g.Topics, func(t kmsg.DescribeShareGroupOffsetsResponseGroupTopic) bool { return mayTopic(t.Topic) })
			}
			g.Topics = append(g.Topics, refused[i]...)
		}
	}
}
