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

// The declarations of the share and streams group APIs.
var (
	azShareGroupHeartbeat = &access{needs: []need{groupOp(security.OpRead), topicOp(security.OpDescribe)}, inHandler: true}
	azShareGroupDescribe  = &access{needs: []need{groupOp(security.OpDescribe), topicOp(security.OpDescribe)},
		check: (*Broker).authzShareGroupDescribe, inHandler: true} // the groups' Describe in the handler
	azShareFetch                = &access{needs: []need{groupOp(security.OpRead), topicOp(security.OpRead)}, inHandler: true}
	azDescribeShareGroupOffsets = &access{needs: []need{groupOp(security.OpDescribe), topicOp(security.OpDescribe)},
		check: (*Broker).authzDescribeShareGroupOffsets, inHandler: true} // the groups' Describe in the handler
	azAlterShareGroupOffsets  = &access{needs: []need{groupOp(security.OpRead), topicOp(security.OpRead)}, check: (*Broker).authzAlterShareGroupOffsets}
	azDeleteShareGroupOffsets = &access{needs: []need{groupOp(security.OpDelete), topicOp(security.OpRead)}, check: (*Broker).authzDeleteShareGroupOffsets}
	azShareGroupState         = &access{needs: []need{clusterOp(security.OpClusterAction)}, inHandler: true}
	azStreamsGroupHeartbeat   = &access{needs: []need{groupOp(security.OpRead), topicOp(security.OpDescribe), clusterOp(security.OpCreate), topicOp(security.OpCreate)}, inHandler: true}
	azStreamsGroupDescribe    = &access{needs: []need{groupOp(security.OpDescribe), topicOp(security.OpDescribe)},
		check: (*Broker).authzStreamsGroupDescribe, inHandler: true} // the groups' Describe in the handler
	azStreamsGroupTopologyUpdate = &access{needs: []need{groupOp(security.OpRead)}, inHandler: true}
)

// groupOps is a group's AuthorizedOperations for r.
func (b *Broker) groupOps(r *request, group string) int32 {
	return b.authz.AuthorizedOps(r.principal, aclHost(r), security.ResourceGroup, group)
}

// authzShareGroupDescribe: the handler refuses the groups the principal
// may not describe; a group one of whose members is assigned a topic the
// principal may not describe is TOPIC_AUTHORIZATION_FAILED and nothing
// else, and the others carry the principal's own operations on them.
func (b *Broker) authzShareGroupDescribe(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.ShareGroupDescribeRequest)
	return nil, func(resp kmsg.Response) {
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
func (b *Broker) authzStreamsGroupDescribe(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.StreamsGroupDescribeRequest)
	return nil, func(resp kmsg.Response) {
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

func (b *Broker) authzAlterShareGroupOffsets(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.AlterShareGroupOffsetsRequest)
	if !b.may(r, security.OpRead, security.ResourceGroup, req.GroupID) {
		resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(kerr.GroupAuthorizationFailed.Message)
		return resp, nil
	}
	mayRead := b.mayOn(r, security.OpRead, security.ResourceTopic)
	return nil, filterMerge(&req.Topics, func(t kmsg.AlterShareGroupOffsetsRequestTopic) bool { return mayRead(t.Topic) },
		func(t kmsg.AlterShareGroupOffsetsRequestTopic) kmsg.AlterShareGroupOffsetsResponseTopic {
			rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			if id, ok := b.topicIDOf(t.Topic); ok {
				rt.TopicID = id
			}
			rt.Partitions = refusedPartitions(t.Partitions, func(p kmsg.AlterShareGroupOffsetsRequestTopicPartition) kmsg.AlterShareGroupOffsetsResponseTopicPartition {
				rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rp.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
				return rp
			})
			return rt
		},
		func(ar *kmsg.AlterShareGroupOffsetsResponse) *[]kmsg.AlterShareGroupOffsetsResponseTopic {
			if ar.ErrorCode != 0 {
				return nil
			}
			return &ar.Topics
		})
}

func (b *Broker) authzDeleteShareGroupOffsets(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.DeleteShareGroupOffsetsRequest)
	if !b.may(r, security.OpDelete, security.ResourceGroup, req.GroupID) {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(kerr.GroupAuthorizationFailed.Message)
		return resp, nil
	}
	mayRead := b.mayOn(r, security.OpRead, security.ResourceTopic)
	return nil, filterMerge(&req.Topics, func(t kmsg.DeleteShareGroupOffsetsRequestTopic) bool { return mayRead(t.Topic) },
		func(t kmsg.DeleteShareGroupOffsetsRequestTopic) kmsg.DeleteShareGroupOffsetsResponseTopic {
			rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			rt.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
			return rt
		},
		func(dr *kmsg.DeleteShareGroupOffsetsResponse) *[]kmsg.DeleteShareGroupOffsetsResponseTopic {
			if dr.ErrorCode != 0 {
				return nil
			}
			return &dr.Topics
		})
}

// authzDescribeShareGroupOffsets: a group the principal may describe
// (the handler refuses the others) has the topics it may not describe
// answered with TOPIC_AUTHORIZATION_FAILED on each partition when named,
// and left out when all its offsets are asked for.
func (b *Broker) authzDescribeShareGroupOffsets(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.DescribeShareGroupOffsetsRequest)
	mayTopic := b.mayOn(r, security.OpDescribe, security.ResourceTopic)
	var merge authzMerge
	for i := range req.Groups {
		merge = both(groupTopicsMerge(&req.Groups[i].Topics,
			func(t kmsg.DescribeShareGroupOffsetsRequestGroupTopic) bool { return mayTopic(t.Topic) },
			func(t kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
				rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				rt.Topic = t.Topic
				rt.Partitions = refusedPartitions(t.Partitions, func(p int32) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
					rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
					rp.ErrorMessage = kmsg.StringPtr(kerr.TopicAuthorizationFailed.Message)
					return rp
				})
				return rt
			},
			func(t kmsg.DescribeShareGroupOffsetsResponseGroupTopic) bool { return mayTopic(t.Topic) },
			func(dr *kmsg.DescribeShareGroupOffsetsResponse) *[]kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
				if i >= len(dr.Groups) || dr.Groups[i].ErrorCode != 0 {
					return nil
				}
				return &dr.Groups[i].Topics
			}), merge)
	}
	return nil, merge
}
