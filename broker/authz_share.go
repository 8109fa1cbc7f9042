package broker

import (
	"slices"

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
//
// ShareGroupDescribe and StreamsGroupDescribe (Describe on each group, in
// the handlers) as ConsumerGroupDescribe: the principal's own
// AuthorizedOperations, and a group using a topic the principal may not
// describe is TOPIC_AUTHORIZATION_FAILED.

func (b *Broker) authorizeShareRequest(r *request) (kmsg.Response, authzMerge) {
	switch req := r.body.(type) {
	case *kmsg.DescribeShareGroupOffsetsRequest:
		return nil, b.authzDescribeShareGroupOffsets(r, req)
	case *kmsg.AlterShareGroupOffsetsRequest:
		return b.authzAlterShareGroupOffsets(r, req)
	case *kmsg.DeleteShareGroupOffsetsRequest:
		return b.authzDeleteShareGroupOffsets(r, req)
	case *kmsg.ShareGroupDescribeRequest:
		return nil, b.authzShareGroupDescribe(r, req)
	case *kmsg.StreamsGroupDescribeRequest:
		return nil, b.authzStreamsGroupDescribe(r, req)
	}
	return nil, nil
}

// groupOps is a group's AuthorizedOperations for r.
func (b *Broker) groupOps(r *request, group string) int32 {
	return b.authz.AuthorizedOps(r.principal, aclHost(r), security.ResourceGroup, group)
}

// authzShareGroupDescribe: the handler refuses the groups the principal
// may not describe; a group one of whose members is assigned a topic the
// principal may not describe is TOPIC_AUTHORIZATION_FAILED and nothing
// else, and the others carry the principal's own operations on them.
func (b *Broker) authzShareGroupDescribe(r *request, req *kmsg.ShareGroupDescribeRequest) authzMerge {
	return func(resp kmsg.Response) {
		sr := resp.(*kmsg.ShareGroupDescribeResponse)
		for i := range sr.Groups {
			g := &sr.Groups[i]
			if g.ErrorCode != 0 {
				continue
			}
			if req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = b.groupOps(r, g.GroupID)
			}
			for _, m := range g.Members {
				if slices.ContainsFunc(m.Assignment.TopicPartitions, func(tp kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition) bool {
					return !b.may(r, security.OpDescribe, security.ResourceTopic, tp.Topic)
				}) {
					ng := kmsg.NewShareGroupDescribeResponseGroup()
					ng.GroupID, ng.ErrorCode = g.GroupID, kerr.TopicAuthorizationFailed.Code
					ng.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
					*g = ng
					break
				}
			}
		}
	}
}

// authzStreamsGroupDescribe is authzShareGroupDescribe for streams
// groups, whose topics are those of the topology.
func (b *Broker) authzStreamsGroupDescribe(r *request, req *kmsg.StreamsGroupDescribeRequest) authzMerge {
	return func(resp kmsg.Response) {
		sr := resp.(*kmsg.StreamsGroupDescribeResponse)
		for i := range sr.Groups {
			g := &sr.Groups[i]
			if g.ErrorCode != 0 {
				continue
			}
			if req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = b.groupOps(r, g.Group)
			}
			if g.Topology != nil && !b.topologyDescribed(r, g.Topology) {
				ng := kmsg.NewStreamsGroupDescribeResponseGroup()
				ng.Group, ng.ErrorCode = g.Group, kerr.TopicAuthorizationFailed.Code
				ng.ErrorMessage = kmsg.StringPtr("The described group uses topics that the client is not authorized to describe.")
				*g = ng
			}
		}
	}
}

// topologyDescribed: the principal may describe every topic of a streams
// group's topology.
func (b *Broker) topologyDescribed(r *request, t *kmsg.StreamsGroupDescribeResponseGroupTopology) bool {
	may := func(name string) bool { return b.may(r, security.OpDescribe, security.ResourceTopic, name) }
	for _, st := range t.Subtopologies {
		for _, names := range [][]string{st.SourceTopics, st.RepartitionSinkTopics} {
			for _, n := range names {
				if !may(n) {
					return false
				}
			}
		}
		for _, infos := range [][]kmsg.TopicInfo{st.RepartitionSourceTopics, st.StateChangelogTopics} {
			for _, ti := range infos {
				if !may(ti.Topic) {
					return false
				}
			}
		}
	}
	return true
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
