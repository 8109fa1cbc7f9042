package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
)

// Authorization around the handlers, as Kafka's KafkaApis checks each
// request (its AuthHelper calls) before it reaches the coordinators: with
// an authorizer, serveAuthorized answers a request the principal may not
// make at all without calling its handler, and takes the refused items
// (topics, groups, transactional ids, config resources) out of a batched
// request before the handler serves the rest, adding them back to the
// response with Kafka's error. The checks made inside handlers (Produce,
// Fetch, Metadata, the group membership APIs, ACLs, quotas, SCRAM) are
// in authz.go.
//
//	FindCoordinator          Describe on the group / transactional id
//	DescribeGroups           Describe on each group; AuthorizedOperations
//	ListGroups               Describe on the cluster, else the groups described
//	DeleteGroups             Delete on each group
//	OffsetDelete             Delete on the group, Read on each topic
//	OffsetCommit             (Read on the group in authz.go) Read on each topic
//	                         (v10: by the name its id has)
//	OffsetFetch              Describe on each group (before v8 in authz.go),
//	                         Describe on each topic (the others left out)
//	ConsumerGroupHeartbeat   Read on the group, Describe on subscribed topics
//	ConsumerGroupDescribe    Describe on each group and the topics its members hold
//	Describe/(Incremental)AlterConfigs  DescribeConfigs/AlterConfigs on a
//	                         topic, on the cluster for a broker or logger
//	CreatePartitions         Alter on each topic
//	DeleteRecords            Delete on each topic
//	ElectLeaders, AlterPartitionReassignments, AlterReplicaLogDirs
//	                         Alter on the cluster
//	ListPartitionReassignments, DescribeLogDirs  Describe on the cluster
//	DescribeProducers        Read on each topic
//	OffsetForLeaderEpoch     ClusterAction, else Describe on each topic
//	Produce (transactional), InitProducerId, AddOffsetsToTxn, EndTxn,
//	TxnOffsetCommit, AddPartitionsToTxn v0-3
//	                         Write on the transactional id (and Read on the
//	                         group, Write/Read on the topics)
//	AddPartitionsToTxn v4+, WriteTxnMarkers  ClusterAction
//	DescribeTransactions     Describe on each id, topics filtered by Describe
//	ListTransactions         the ids described
//	Describe/Alter/DeleteShareGroupOffsets  in authz_share.go

// Kafka's Errors messages, where Kafka sends them.
const (
	msgTopicAuthz = "Topic authorization failed."
	msgClusterAz  = "Cluster authorization failed."
)

// authzMerge adds refused items back to a handler's response.
type authzMerge func(kmsg.Response)

// serveAuthorized serves r through serve with the checks above.
func (b *Broker) serveAuthorized(ctx context.Context, r *request, serve func(*Broker, context.Context, *request) (kmsg.Response, error)) (kmsg.Response, error) {
	if b.authz == nil {
		return serve(b, ctx, r)
	}
	refused, merge := b.authorizeRequest(r)
	if refused != nil {
		return refused, nil
	}
	resp, err := serve(b, ctx, r)
	if err == nil && resp != nil && merge != nil {
		merge(resp)
	}
	return resp, err
}

func (b *Broker) may(r *request, op security.Operation, t security.ResourceType, name string) bool {
	return b.authz.Authorize(r.principal, aclHost(r), op, t, name)
}

func (b *Broker) mayCluster(r *request, op security.Operation) bool {
	return b.may(r, op, security.ResourceCluster, clusterName)
}

// authorizeRequest is the refusal of a whole request, or the merge of the
// items it took out of it (either may be nil).
func (b *Broker) authorizeRequest(r *request) (kmsg.Response, authzMerge) {
	switch req := r.body.(type) {
	case *kmsg.FindCoordinatorRequest:
		return b.authzFindCoordinator(r, req)
	case *kmsg.DescribeGroupsRequest:
		return nil, b.authzDescribeGroups(r, req)
	case *kmsg.ListGroupsRequest:
		if b.mayCluster(r, security.OpDescribe) {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			lr := resp.(*kmsg.ListGroupsResponse)
			keep := lr.Groups[:0]
			for _, g := range lr.Groups {
				if b.may(r, security.OpDescribe, security.ResourceGroup, g.Group) {
					keep = append(keep, g)
				}
			}
			lr.Groups = keep
		}
	case *kmsg.DeleteGroupsRequest:
		var refused []kmsg.DeleteGroupsResponseGroup
		req.Groups = keepIf(req.Groups, func(g string) bool {
			if b.may(r, security.OpDelete, security.ResourceGroup, g) {
				return true
			}
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			refused = append(refused, rg)
			return false
		})
		return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
			dr := resp.(*kmsg.DeleteGroupsResponse)
			dr.Groups = append(dr.Groups, refused...)
		})
	case *kmsg.OffsetDeleteRequest:
		if !b.may(r, security.OpDelete, security.ResourceGroup, req.Group) {
			resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		var refused []kmsg.OffsetDeleteResponseTopic
		req.Topics = keepIf(req.Topics, func(t kmsg.OffsetDeleteRequestTopic) bool {
			if b.may(r, security.OpRead, security.ResourceTopic, t.Topic) {
				return true
			}
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused = append(refused, rt)
			return false
		})
		return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
			or := resp.(*kmsg.OffsetDeleteResponse)
			or.Topics = append(or.Topics, refused...)
		})
	case *kmsg.OffsetCommitRequest:
		return nil, b.authzOffsetCommit(r, req)
	case *kmsg.OffsetFetchRequest:
		if r.hdr.Version < 8 {
			return nil, b.authzOffsetFetchV0(r, req)
		}
		return nil, b.authzOffsetFetch(r, req)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		if !b.may(r, security.OpRead, security.ResourceGroup, req.Group) {
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return resp, nil
		}
		for _, t := range req.SubscribedTopicNames {
			if !b.may(r, security.OpDescribe, security.ResourceTopic, t) {
				resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				return resp, nil
			}
		}
	case *kmsg.ConsumerGroupDescribeRequest:
		return nil, b.authzConsumerGroupDescribe(r, req)
	case *kmsg.DescribeConfigsRequest:
		return nil, b.authzDescribeConfigs(r, req)
	case *kmsg.AlterConfigsRequest:
		var refused []kmsg.AlterConfigsResponseResource
		req.Resources, refused = configsRefused(b, r, security.OpAlterConfigs, req.Resources,
			func(rr kmsg.AlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
				return rr.ResourceType, rr.ResourceName
			},
			func(t kmsg.ConfigResourceType, name string, code int16) kmsg.AlterConfigsResponseResource {
				res := kmsg.NewAlterConfigsResponseResource()
				res.ResourceType, res.ResourceName, res.ErrorCode = t, name, code
				return res
			})
		return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
			ar := resp.(*kmsg.AlterConfigsResponse)
			ar.Resources = append(ar.Resources, refused...)
		})
	case *kmsg.IncrementalAlterConfigsRequest:
		var refused []kmsg.IncrementalAlterConfigsResponseResource
		req.Resources, refused = configsRefused(b, r, security.OpAlterConfigs, req.Resources,
			func(rr kmsg.IncrementalAlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
				return rr.ResourceType, rr.ResourceName
			},
			func(t kmsg.ConfigResourceType, name string, code int16) kmsg.IncrementalAlterConfigsResponseResource {
				res := kmsg.NewIncrementalAlterConfigsResponseResource()
				res.ResourceType, res.ResourceName, res.ErrorCode = t, name, code
				return res
			})
		return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
			ar := resp.(*kmsg.IncrementalAlterConfigsResponse)
			ar.Resources = append(ar.Resources, refused...)
		})
	case *kmsg.CreatePartitionsRequest:
		var refused []kmsg.CreatePartitionsResponseTopic
		req.Topics = keepIf(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool {
			if b.may(r, security.OpAlter, security.ResourceTopic, t.Topic) {
				return true
			}
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			rt.ErrorMessage = kmsg.StringPtr("The topic authorization is failed.")
			refused = append(refused, rt)
			return false
		})
		return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
			cr := resp.(*kmsg.CreatePartitionsResponse)
			cr.Topics = append(cr.Topics, refused...)
		})
	case *kmsg.DeleteRecordsRequest:
		var refused []kmsg.DeleteRecordsResponseTopic
		req.Topics = keepIf(req.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool {
			if b.may(r, security.OpDelete, security.ResourceTopic, t.Topic) {
				return true
			}
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.LowWatermark, rp.ErrorCode = p.Partition, -1, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused = append(refused, rt)
			return false
		})
		return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
			dr := resp.(*kmsg.DeleteRecordsResponse)
			dr.Topics = append(dr.Topics, refused...)
		})
	case *kmsg.ElectLeadersRequest:
		if b.mayCluster(r, security.OpAlter) {
			return nil, nil
		}
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.AlterPartitionAssignmentsRequest:
		if b.mayCluster(r, security.OpAlter) {
			return nil, nil
		}
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(msgClusterAz)
		for _, t := range req.Topics { // and on every partition, as Kafka's error response
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, resp.ErrorCode, resp.ErrorMessage
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.ListPartitionReassignmentsRequest:
		if b.mayCluster(r, security.OpDescribe) {
			return nil, nil
		}
		resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(msgClusterAz)
		return resp, nil
	case *kmsg.DescribeLogDirsRequest:
		if b.mayCluster(r, security.OpDescribe) {
			return nil, nil
		}
		resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	case *kmsg.AlterReplicaLogDirsRequest:
		if b.mayCluster(r, security.OpAlter) {
			return nil, nil
		}
		resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
		for _, d := range req.Dirs {
			for _, t := range d.Topics {
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return resp, nil
	case *kmsg.OffsetForLeaderEpochRequest:
		if b.mayCluster(r, security.OpClusterAction) {
			return nil, nil
		}
		var refused []kmsg.OffsetForLeaderEpochResponseTopic
		req.Topics = keepIf(req.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool {
			if b.may(r, security.OpDescribe, security.ResourceTopic, t.Topic) {
				return true
			}
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused = append(refused, rt)
			return false
		})
		return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
			or := resp.(*kmsg.OffsetForLeaderEpochResponse)
			or.Topics = append(or.Topics, refused...)
		})
	case *kmsg.DescribeProducersRequest:
		var refused []kmsg.DescribeProducersResponseTopic
		req.Topics = keepIf(req.Topics, func(t kmsg.DescribeProducersRequestTopic) bool {
			if b.may(r, security.OpRead, security.ResourceTopic, t.Topic) {
				return true
			}
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.TopicAuthorizationFailed.Code
				rp.ErrorMessage = kmsg.StringPtr(msgTopicAuthz)
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused = append(refused, rt)
			return false
		})
		return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
			dr := resp.(*kmsg.DescribeProducersResponse)
			dr.Topics = append(dr.Topics, refused...)
		})
	}
	if resp, merge := b.authorizeShareRequest(r); resp != nil || merge != nil { // authz_share.go
		return resp, merge
	}
	return b.authorizeTxnRequest(r) // authz_txn.go
}

func (b *Broker) authzFindCoordinator(r *request, req *kmsg.FindCoordinatorRequest) (kmsg.Response, authzMerge) {
	code := func(key string) int16 {
		switch req.CoordinatorType {
		case 0:
			if !b.may(r, security.OpDescribe, security.ResourceGroup, key) {
				return kerr.GroupAuthorizationFailed.Code
			}
		case 1:
			if !b.may(r, security.OpDescribe, security.ResourceTransactionalID, key) {
				return kerr.TransactionalIDAuthorizationFailed.Code
			}
		}
		return 0
	}
	if r.hdr.Version < 4 {
		c := code(req.CoordinatorKey)
		if c == 0 {
			return nil, nil
		}
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode, resp.NodeID, resp.Port = c, -1, -1
		return resp, nil
	}
	var refused []kmsg.FindCoordinatorResponseCoordinator
	req.CoordinatorKeys = keepIf(req.CoordinatorKeys, func(k string) bool {
		c := code(k)
		if c == 0 {
			return true
		}
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key, rc.NodeID, rc.Port, rc.ErrorCode = k, -1, -1, c
		refused = append(refused, rc)
		return false
	})
	return nil, mergeIf(len(refused) > 0, func(resp kmsg.Response) {
		fr := resp.(*kmsg.FindCoordinatorResponse)
		fr.Coordinators = append(fr.Coordinators, refused...)
	})
}

func (b *Broker) authzDescribeGroups(r *request, req *kmsg.DescribeGroupsRequest) authzMerge {
	var refused []kmsg.DescribeGroupsResponseGroup
	req.Groups = keepIf(req.Groups, func(g string) bool {
		if b.may(r, security.OpDescribe, security.ResourceGroup, g) {
			return true
		}
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		refused = append(refused, rg)
		return false
	})
	return func(resp kmsg.Response) {
		dr := resp.(*kmsg.DescribeGroupsResponse)
		if req.IncludeAuthorizedOperations {
			for i := range dr.Groups {
				if dr.Groups[i].ErrorCode == 0 {
					dr.Groups[i].AuthorizedOperations = b.groupOps(r, dr.Groups[i].Group)
				}
			}
		}
		dr.Groups = append(dr.Groups, refused...)
	}
}

func (b *Broker) authzConsumerGroupDescribe(r *request, req *kmsg.ConsumerGroupDescribeRequest) authzMerge {
	var refused []kmsg.ConsumerGroupDescribeResponseGroup
	req.Groups = keepIf(req.Groups, func(g string) bool {
		if b.may(r, security.OpDescribe, security.ResourceGroup, g) {
			return true
		}
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		refused = append(refused, rg)
		return false
	})
	return func(resp kmsg.Response) {
		cr := resp.(*kmsg.ConsumerGroupDescribeResponse)
		for i := range cr.Groups {
			g := &cr.Groups[i]
			if g.ErrorCode != 0 {
				continue
			}
			if !b.groupTopicsDescribed(r, g) {
				ng := kmsg.NewConsumerGroupDescribeResponseGroup()
				ng.Group, ng.ErrorCode = g.Group, kerr.TopicAuthorizationFailed.Code
				ng.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
				*g = ng
				continue
			}
			if req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = b.groupOps(r, g.Group)
			}
		}
		cr.Groups = append(cr.Groups, refused...)
	}
}

// groupTopicsDescribed: the principal may describe every topic the
// group's members are assigned or about to be.
func (b *Broker) groupTopicsDescribed(r *request, g *kmsg.ConsumerGroupDescribeResponseGroup) bool {
	for _, m := range g.Members {
		for _, tps := range [][]kmsg.AssignmentTopicPartition{m.Assignment.TopicPartitions, m.TargetAssignment.TopicPartitions} {
			for _, tp := range tps {
				if !b.may(r, security.OpDescribe, security.ResourceTopic, tp.Topic) {
					return false
				}
			}
		}
	}
	return true
}

func (b *Broker) authzOffsetCommit(r *request, req *kmsg.OffsetCommitRequest) authzMerge {
	if !b.may(r, security.OpRead, security.ResourceGroup, req.Group) {
		return nil // the handler refuses every partition (authz.go)
	}
	var refused []kmsg.OffsetCommitResponseTopic
	req.Topics = keepIf(req.Topics, func(t kmsg.OffsetCommitRequestTopic) bool {
		name := t.Topic
		if r.hdr.Version >= 10 { // by topic id: checked by the name it has
			if name = b.topicNameOf(t.TopicID); name == unknownTopicName {
				return true // the handler's UNKNOWN_TOPIC_ID
			}
		}
		if b.may(r, security.OpRead, security.ResourceTopic, name) {
			return true
		}
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = name, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		refused = append(refused, rt)
		return false
	})
	return mergeIf(len(refused) > 0, func(resp kmsg.Response) {
		or := resp.(*kmsg.OffsetCommitResponse)
		or.Topics = append(or.Topics, refused...)
	})
}

// fetchRefusedPartitions are the partitions of a topic whose offsets the
// principal may not see, as KafkaApis answers them.
func fetchRefusedPartitions(partitions []int32) []kmsg.OffsetFetchResponseGroupTopicPartition {
	var out []kmsg.OffsetFetchResponseGroupTopicPartition
	for _, p := range partitions {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.TopicAuthorizationFailed.Code
		out = append(out, rp)
	}
	return out
}

// authzOffsetFetchV0 is authzOffsetFetch for OffsetFetch v1-v7, one group
// at the top level, which the handler refuses without Describe on it.
func (b *Broker) authzOffsetFetchV0(r *request, req *kmsg.OffsetFetchRequest) authzMerge {
	mayTopic := func(t string) bool { return b.may(r, security.OpDescribe, security.ResourceTopic, t) }
	if !b.may(r, security.OpDescribe, security.ResourceGroup, req.Group) {
		return nil
	}
	if req.Topics == nil { // all the group's offsets: the refused topics left out
		return func(resp kmsg.Response) {
			or := resp.(*kmsg.OffsetFetchResponse)
			or.Topics = keepIf(or.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return mayTopic(t.Topic) })
		}
	}
	var refused []kmsg.OffsetFetchResponseTopic
	req.Topics = keepIf(req.Topics, func(t kmsg.OffsetFetchRequestTopic) bool {
		if mayTopic(t.Topic) {
			return true
		}
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range fetchRefusedPartitions(t.Partitions) {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.ErrorCode = p.Partition, p.Offset, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		refused = append(refused, rt)
		return false
	})
	return mergeIf(len(refused) > 0, func(resp kmsg.Response) {
		if or := resp.(*kmsg.OffsetFetchResponse); or.ErrorCode == 0 {
			or.Topics = append(or.Topics, refused...)
		}
	})
}

// authzOffsetFetch is KafkaApis' OffsetFetch (v8+): a group without
// Describe is GROUP_AUTHORIZATION_FAILED and the others are answered; a
// topic asked for without Describe on it has TOPIC_AUTHORIZATION_FAILED
// on each partition, and all of a group's offsets leave such topics out.
// v10 names topics by id: those are checked by the name the id has (an
// unknown id goes on, for the handler's UNKNOWN_TOPIC_ID).
func (b *Broker) authzOffsetFetch(r *request, req *kmsg.OffsetFetchRequest) authzMerge {
	mayTopic := func(t string) bool { return b.may(r, security.OpDescribe, security.ResourceTopic, t) }
	var refusedGroups []kmsg.OffsetFetchResponseGroup
	var refusedTopics [][]kmsg.OffsetFetchResponseGroupTopic // by kept group
	var all []bool                                           // by kept group: all its offsets asked for
	kept := req.Groups[:0]
	for _, g := range req.Groups {
		if !b.may(r, security.OpDescribe, security.ResourceGroup, g.Group) {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, kerr.GroupAuthorizationFailed.Code
			refusedGroups = append(refusedGroups, rg)
			continue
		}
		var refused []kmsg.OffsetFetchResponseGroupTopic
		if g.Topics != nil {
			g.Topics = keepIf(g.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) bool {
				name := t.Topic
				if r.hdr.Version >= 10 {
					if name = b.topicNameOf(t.TopicID); name == unknownTopicName {
						return true
					}
				}
				if mayTopic(name) {
					return true
				}
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.TopicID, rt.Partitions = name, t.TopicID, fetchRefusedPartitions(t.Partitions)
				refused = append(refused, rt)
				return false
			})
		}
		kept = append(kept, g)
		refusedTopics = append(refusedTopics, refused)
		all = append(all, g.Topics == nil)
	}
	req.Groups = kept
	return func(resp kmsg.Response) {
		or := resp.(*kmsg.OffsetFetchResponse)
		for i := range or.Groups {
			g := &or.Groups[i]
			if i >= len(all) || g.ErrorCode != 0 {
				continue
			}
			if all[i] {
				g.Topics = keepIf(g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return mayTopic(t.Topic) })
			}
			g.Topics = append(g.Topics, refusedTopics[i]...)
		}
		or.Groups = append(or.Groups, refusedGroups...)
	}
}

// configRefusal is the error of a config resource the principal may not
// describe or alter (op): TOPIC on the topic, BROKER and BROKER_LOGGER on
// the cluster; GROUP is checked by the handlers; 0 when allowed.
func (b *Broker) configRefusal(r *request, op security.Operation, t kmsg.ConfigResourceType, name string) int16 {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		if !b.may(r, op, security.ResourceTopic, name) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !b.mayCluster(r, op) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}

func (b *Broker) authzDescribeConfigs(r *request, req *kmsg.DescribeConfigsRequest) authzMerge {
	var refused []kmsg.DescribeConfigsResponseResource
	req.Resources, refused = configsRefused(b, r, security.OpDescribeConfigs, req.Resources,
		func(rr kmsg.DescribeConfigsRequestResource) (kmsg.ConfigResourceType, string) {
			return rr.ResourceType, rr.ResourceName
		},
		func(t kmsg.ConfigResourceType, name string, code int16) kmsg.DescribeConfigsResponseResource {
			res := kmsg.NewDescribeConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode = t, name, code
			return res
		})
	return mergeIf(len(refused) > 0, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DescribeConfigsResponse)
		dr.Resources = append(dr.Resources, refused...)
	})
}

// configsRefused takes the config resources r may not do op on out of
// items (key names each) and answers them with answer.
func configsRefused[In, Out any](b *Broker, r *request, op security.Operation, items []In,
	key func(In) (kmsg.ConfigResourceType, string), answer func(kmsg.ConfigResourceType, string, int16) Out) ([]In, []Out) {
	var refused []Out
	kept := keepIf(items, func(e In) bool {
		t, name := key(e)
		code := b.configRefusal(r, op, t, name)
		if code != 0 {
			refused = append(refused, answer(t, name, code))
		}
		return code == 0
	})
	return kept, refused
}

// keepIf keeps the elements of s for which keep is true, in place.
func keepIf[T any](s []T, keep func(T) bool) []T {
	out := s[:0]
	for _, e := range s {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}

// mergeIf is m when there is something to merge.
func mergeIf(some bool, m authzMerge) authzMerge {
	if !some {
		return nil
	}
	return m
}
