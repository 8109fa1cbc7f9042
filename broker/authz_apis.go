package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
)

// Authorization around the handlers, as Kafka's KafkaApis checks each
// request (its AuthHelper calls) before it reaches the coordinators. Every
// entry of the dispatch table declares what its key authorizes (access,
// below); with an authorizer, serveAuthorized runs the declared check,
// which answers a request the principal may not make at all without
// calling its handler, or takes the refused items (topics, groups,
// transactional ids, config resources) out of a batched request before
// the handler serves the rest, adding them back to the response with
// Kafka's error (filterMerge). A key that declares nothing is served to
// super users only. The checks made inside handlers (Produce, Fetch,
// Metadata, the group membership APIs, ACLs, quotas, SCRAM) use the
// helpers in authz.go.
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

// need is one operation on one type of resource that an API checks.
type need struct {
	res security.ResourceType
	op  security.Operation
}

func topicOp(op security.Operation) need   { return need{security.ResourceTopic, op} }
func groupOp(op security.Operation) need   { return need{security.ResourceGroup, op} }
func clusterOp(op security.Operation) need { return need{security.ResourceCluster, op} }
func txnIDOp(op security.Operation) need   { return need{security.ResourceTransactionalID, op} }

// access is what an API key authorizes, declared by its entry in the
// dispatch table (dispatch.go): the operations on the resource types it
// checks (needs), and how. With an authorizer, check (if any) runs before
// the handler: it answers a request refused whole, or takes the refused
// items out of a batched one and returns the merge that adds them back to
// the handler's response (filterMerge). inHandler: the handler makes (the
// rest of) the checks itself, in its file. A key without an access is
// served to super users only; TestEveryAPIDeclaresAuthorization walks the
// table.
type access struct {
	needs []need
	// clusterPass, when set, is the operation on the cluster with which
	// the request is served without check (ClusterAction for a broker's
	// requests, Describe or Alter for an operator's).
	clusterPass security.Operation
	check       func(*Broker, *request) (kmsg.Response, authzMerge)
	inHandler   bool
}

// noAccess declares an API that authorizes nothing: ApiVersions and the
// SASL exchange, served before a principal is known.
var noAccess = &access{}

// anyPrincipal declares an API that Kafka serves to every authenticated
// principal, checking no ACL: GetTelemetrySubscriptions and PushTelemetry
// (KIP-714; a client pushes its own metrics).
var anyPrincipal = &access{}

// authzMerge adds refused items back to a handler's response.
type authzMerge func(kmsg.Response)

// serveAuthorized serves r through h with the checks h declares.
func (b *Broker) serveAuthorized(ctx context.Context, r *request, h handler) (kmsg.Response, error) {
	if b.authz == nil {
		return h.serve(b, ctx, r)
	}
	az := h.access
	if az == nil {
		if !b.authz.SuperUser(r.principal) {
			return nil, fmt.Errorf("%w: %s declares no authorization", errCloseConn, kmsg.NameForKey(r.hdr.Key))
		}
		return h.serve(b, ctx, r)
	}
	var merge authzMerge
	if az.check != nil && (az.clusterPass == 0 || !b.mayCluster(r, az.clusterPass)) {
		var refused kmsg.Response
		if refused, merge = az.check(b, r); refused != nil {
			return refused, nil
		}
	}
	resp, err := h.serve(b, ctx, r)
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

// mayOn is may for a fixed operation and resource type.
func (b *Broker) mayOn(r *request, op security.Operation, t security.ResourceType) func(string) bool {
	return func(name string) bool { return b.may(r, op, t, name) }
}

// filterMerge is the filter-and-merge of a batched request: it takes the
// items allow refuses out of *items and returns the merge that appends
// answer(item) for each to the list of the handler's response that list
// points at (list returns nil to add nothing: the response failed
// whole); nil when nothing was refused.
func filterMerge[In, Out any, R kmsg.Response](items *[]In, allow func(In) bool, answer func(In) Out, list func(R) *[]Out) authzMerge {
	var refused []Out
	*items = keepIf(*items, func(e In) bool {
		if allow(e) {
			return true
		}
		refused = append(refused, answer(e))
		return false
	})
	if len(refused) == 0 {
		return nil
	}
	return func(resp kmsg.Response) {
		if l := list(resp.(R)); l != nil {
			*l = append(*l, refused...)
		}
	}
}

// both is the merge that runs m then n (either may be nil).
func both(m, n authzMerge) authzMerge {
	switch {
	case m == nil:
		return n
	case n == nil:
		return m
	}
	return func(resp kmsg.Response) { m(resp); n(resp) }
}

// groupTopicsMerge filters the topics asked for of one group of a batched
// request (OffsetFetch v8+, DescribeShareGroupOffsets), whose answer list
// finds in the handler's response (nil when the group failed): named
// topics that allow refuses are taken out and answered by answer; when
// all the group's topics are asked for (*topics nil), those the principal
// may not see (keep false) are left out of the answer.
func groupTopicsMerge[In, Out any, R kmsg.Response](topics *[]In, allow func(In) bool, answer func(In) Out, keep func(Out) bool, list func(R) *[]Out) authzMerge {
	if *topics != nil {
		return filterMerge(topics, allow, answer, list)
	}
	return func(resp kmsg.Response) {
		if l := list(resp.(R)); l != nil {
			*l = keepIf(*l, keep)
		}
	}
}

// refusedPartitions answers each partition of a refused topic.
func refusedPartitions[P, Out any](ps []P, answer func(P) Out) []Out {
	out := make([]Out, 0, len(ps))
	for _, p := range ps {
		out = append(out, answer(p))
	}
	return out
}

// The declarations of the APIs checked here, before their handlers. A
// check whose declaration has a clusterPass runs only for a principal
// without that operation on the cluster.
var (
	azFindCoordinator = &access{needs: []need{groupOp(security.OpDescribe), txnIDOp(security.OpDescribe), clusterOp(security.OpClusterAction)},
		check: (*Broker).authzFindCoordinator, inHandler: true} // a share key's ClusterAction in the handler
	azDescribeGroups = &access{needs: []need{groupOp(security.OpDescribe)}, check: (*Broker).authzDescribeGroups}
	azListGroups     = &access{needs: []need{clusterOp(security.OpDescribe), groupOp(security.OpDescribe)}, clusterPass: security.OpDescribe, check: (*Broker).authzListGroups}
	azDeleteGroups   = &access{needs: []need{groupOp(security.OpDelete)}, check: (*Broker).authzDeleteGroups}
	azOffsetDelete   = &access{needs: []need{groupOp(security.OpDelete), topicOp(security.OpRead)}, check: (*Broker).authzOffsetDelete}
	azOffsetCommit   = &access{needs: []need{groupOp(security.OpRead), topicOp(security.OpRead)},
		check: (*Broker).authzOffsetCommit, inHandler: true} // the group's Read in the handler (authz.go)
	azOffsetFetch = &access{needs: []need{groupOp(security.OpDescribe), topicOp(security.OpDescribe)},
		check: (*Broker).authzOffsetFetch, inHandler: true} // before v8, the group's Describe in the handler
	azConsumerGroupHeartbeat = &access{needs: []need{groupOp(security.OpRead), topicOp(security.OpDescribe)},
		check: (*Broker).authzConsumerGroupHeartbeat, inHandler: true} // a regex's topics in the handler
	azConsumerGroupDescribe   = &access{needs: []need{groupOp(security.OpDescribe), topicOp(security.OpDescribe)}, check: (*Broker).authzConsumerGroupDescribe}
	azDescribeConfigs         = &access{needs: []need{topicOp(security.OpDescribeConfigs), clusterOp(security.OpDescribeConfigs), groupOp(security.OpDescribeConfigs)}, check: (*Broker).authzDescribeConfigs, inHandler: true}
	azAlterConfigs            = &access{needs: []need{topicOp(security.OpAlterConfigs), clusterOp(security.OpAlterConfigs)}, check: (*Broker).authzAlterConfigs}
	azIncrementalAlterConfigs = &access{needs: []need{topicOp(security.OpAlterConfigs), clusterOp(security.OpAlterConfigs), groupOp(security.OpAlterConfigs)}, check: (*Broker).authzIncrementalAlterConfigs, inHandler: true}
	azCreatePartitions        = &access{needs: []need{topicOp(security.OpAlter)}, check: (*Broker).authzCreatePartitions}
	azDeleteRecords           = &access{needs: []need{topicOp(security.OpDelete)}, check: (*Broker).authzDeleteRecords}
	azElectLeaders            = &access{needs: []need{clusterOp(security.OpAlter)}, clusterPass: security.OpAlter, check: (*Broker).authzElectLeaders}
	azAlterPartitionAssign    = &access{needs: []need{clusterOp(security.OpAlter)}, clusterPass: security.OpAlter, check: (*Broker).authzAlterPartitionAssignments}
	azListReassignments       = &access{needs: []need{clusterOp(security.OpDescribe)}, clusterPass: security.OpDescribe, check: (*Broker).authzListPartitionReassignments}
	azDescribeLogDirs         = &access{needs: []need{clusterOp(security.OpDescribe)}, clusterPass: security.OpDescribe, check: (*Broker).authzDescribeLogDirs}
	azAlterReplicaLogDirs     = &access{needs: []need{clusterOp(security.OpAlter)}, clusterPass: security.OpAlter, check: (*Broker).authzAlterReplicaLogDirs}
	azOffsetForLeaderEpoch    = &access{needs: []need{clusterOp(security.OpClusterAction), topicOp(security.OpDescribe)}, clusterPass: security.OpClusterAction, check: (*Broker).authzOffsetForLeaderEpoch}
	azDescribeProducers       = &access{needs: []need{topicOp(security.OpRead)}, check: (*Broker).authzDescribeProducers}
)

func (b *Broker) authzListGroups(r *request) (kmsg.Response, authzMerge) {
	return nil, func(resp kmsg.Response) {
		lr := resp.(*kmsg.ListGroupsResponse)
		lr.Groups = keepIf(lr.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
			return b.may(r, security.OpDescribe, security.ResourceGroup, g.Group)
		})
	}
}

func (b *Broker) authzDeleteGroups(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.DeleteGroupsRequest)
	return nil, filterMerge(&req.Groups, b.mayOn(r, security.OpDelete, security.ResourceGroup),
		func(g string) kmsg.DeleteGroupsResponseGroup {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			return rg
		},
		func(dr *kmsg.DeleteGroupsResponse) *[]kmsg.DeleteGroupsResponseGroup { return &dr.Groups })
}

func (b *Broker) authzOffsetDelete(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.OffsetDeleteRequest)
	if !b.may(r, security.OpDelete, security.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	mayRead := b.mayOn(r, security.OpRead, security.ResourceTopic)
	return nil, filterMerge(&req.Topics, func(t kmsg.OffsetDeleteRequestTopic) bool { return mayRead(t.Topic) },
		func(t kmsg.OffsetDeleteRequestTopic) kmsg.OffsetDeleteResponseTopic {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			rt.Partitions = refusedPartitions(t.Partitions, func(p kmsg.OffsetDeleteRequestTopicPartition) kmsg.OffsetDeleteResponseTopicPartition {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				return rp
			})
			return rt
		},
		func(or *kmsg.OffsetDeleteResponse) *[]kmsg.OffsetDeleteResponseTopic { return &or.Topics })
}

func (b *Broker) authzConsumerGroupHeartbeat(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.ConsumerGroupHeartbeatRequest)
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
	return nil, nil
}

// configsMerge is filterMerge for the config resources r may not do op
// on, answered by answer with configRefusal's error.
func configsMerge[In, Out any, R kmsg.Response](b *Broker, r *request, op security.Operation, items *[]In,
	key func(In) (kmsg.ConfigResourceType, string), answer func(kmsg.ConfigResourceType, string, int16) Out, list func(R) *[]Out) authzMerge {
	code := func(e In) int16 { t, name := key(e); return b.configRefusal(r, op, t, name) }
	return filterMerge(items, func(e In) bool { return code(e) == 0 },
		func(e In) Out { t, name := key(e); return answer(t, name, code(e)) }, list)
}

func (b *Broker) authzAlterConfigs(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.AlterConfigsRequest)
	return nil, configsMerge(b, r, security.OpAlterConfigs, &req.Resources,
		func(rr kmsg.AlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
			return rr.ResourceType, rr.ResourceName
		},
		func(t kmsg.ConfigResourceType, name string, code int16) kmsg.AlterConfigsResponseResource {
			res := kmsg.NewAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode = t, name, code
			return res
		},
		func(ar *kmsg.AlterConfigsResponse) *[]kmsg.AlterConfigsResponseResource { return &ar.Resources })
}

func (b *Broker) authzIncrementalAlterConfigs(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.IncrementalAlterConfigsRequest)
	return nil, configsMerge(b, r, security.OpAlterConfigs, &req.Resources,
		func(rr kmsg.IncrementalAlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
			return rr.ResourceType, rr.ResourceName
		},
		func(t kmsg.ConfigResourceType, name string, code int16) kmsg.IncrementalAlterConfigsResponseResource {
			res := kmsg.NewIncrementalAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode = t, name, code
			return res
		},
		func(ar *kmsg.IncrementalAlterConfigsResponse) *[]kmsg.IncrementalAlterConfigsResponseResource {
			return &ar.Resources
		})
}

func (b *Broker) authzCreatePartitions(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.CreatePartitionsRequest)
	mayAlter := b.mayOn(r, security.OpAlter, security.ResourceTopic)
	return nil, filterMerge(&req.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return mayAlter(t.Topic) },
		func(t kmsg.CreatePartitionsRequestTopic) kmsg.CreatePartitionsResponseTopic {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
			rt.ErrorMessage = kmsg.StringPtr("The topic authorization is failed.")
			return rt
		},
		func(cr *kmsg.CreatePartitionsResponse) *[]kmsg.CreatePartitionsResponseTopic { return &cr.Topics })
}

func (b *Broker) authzDeleteRecords(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.DeleteRecordsRequest)
	mayDelete := b.mayOn(r, security.OpDelete, security.ResourceTopic)
	return nil, filterMerge(&req.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return mayDelete(t.Topic) },
		func(t kmsg.DeleteRecordsRequestTopic) kmsg.DeleteRecordsResponseTopic {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			rt.Partitions = refusedPartitions(t.Partitions, func(p kmsg.DeleteRecordsRequestTopicPartition) kmsg.DeleteRecordsResponseTopicPartition {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.LowWatermark, rp.ErrorCode = p.Partition, -1, kerr.TopicAuthorizationFailed.Code
				return rp
			})
			return rt
		},
		func(dr *kmsg.DeleteRecordsResponse) *[]kmsg.DeleteRecordsResponseTopic { return &dr.Topics })
}

func (b *Broker) authzElectLeaders(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = refusedPartitions(t.Partitions, func(p int32) kmsg.ElectLeadersResponseTopicPartition {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
			return rp
		})
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (b *Broker) authzAlterPartitionAssignments(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(msgClusterAz)
	for _, t := range req.Topics { // and on every partition, as Kafka's error response
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = refusedPartitions(t.Partitions, func(p kmsg.AlterPartitionAssignmentsRequestTopicPartition) kmsg.AlterPartitionAssignmentsResponseTopicPartition {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, resp.ErrorCode, resp.ErrorMessage
			return rp
		})
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (b *Broker) authzListPartitionReassignments(r *request) (kmsg.Response, authzMerge) {
	resp := r.body.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr(msgClusterAz)
	return resp, nil
}

func (b *Broker) authzDescribeLogDirs(r *request) (kmsg.Response, authzMerge) {
	resp := r.body.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	return resp, nil
}

func (b *Broker) authzAlterReplicaLogDirs(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
			rt.Topic = t.Topic
			rt.Partitions = refusedPartitions(t.Partitions, func(p int32) kmsg.AlterReplicaLogDirsResponseTopicPartition {
				rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				return rp
			})
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return resp, nil
}

func (b *Broker) authzOffsetForLeaderEpoch(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.OffsetForLeaderEpochRequest)
	mayDescribe := b.mayOn(r, security.OpDescribe, security.ResourceTopic)
	return nil, filterMerge(&req.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return mayDescribe(t.Topic) },
		func(t kmsg.OffsetForLeaderEpochRequestTopic) kmsg.OffsetForLeaderEpochResponseTopic {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			rt.Partitions = refusedPartitions(t.Partitions, func(p kmsg.OffsetForLeaderEpochRequestTopicPartition) kmsg.OffsetForLeaderEpochResponseTopicPartition {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				return rp
			})
			return rt
		},
		func(or *kmsg.OffsetForLeaderEpochResponse) *[]kmsg.OffsetForLeaderEpochResponseTopic {
			return &or.Topics
		})
}

func (b *Broker) authzDescribeProducers(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.DescribeProducersRequest)
	mayRead := b.mayOn(r, security.OpRead, security.ResourceTopic)
	return nil, filterMerge(&req.Topics, func(t kmsg.DescribeProducersRequestTopic) bool { return mayRead(t.Topic) },
		func(t kmsg.DescribeProducersRequestTopic) kmsg.DescribeProducersResponseTopic {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			rt.Partitions = refusedPartitions(t.Partitions, func(p int32) kmsg.DescribeProducersResponseTopicPartition {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.TopicAuthorizationFailed.Code
				rp.ErrorMessage = kmsg.StringPtr(msgTopicAuthz)
				return rp
			})
			return rt
		},
		func(dr *kmsg.DescribeProducersResponse) *[]kmsg.DescribeProducersResponseTopic { return &dr.Topics })
}

func (b *Broker) authzFindCoordinator(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.FindCoordinatorRequest)
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
	return nil, filterMerge(&req.CoordinatorKeys, func(k string) bool { return code(k) == 0 },
		func(k string) kmsg.FindCoordinatorResponseCoordinator {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key, rc.NodeID, rc.Port, rc.ErrorCode = k, -1, -1, code(k)
			return rc
		},
		func(fr *kmsg.FindCoordinatorResponse) *[]kmsg.FindCoordinatorResponseCoordinator {
			return &fr.Coordinators
		})
}

func (b *Broker) authzDescribeGroups(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.DescribeGroupsRequest)
	refused := filterMerge(&req.Groups, b.mayOn(r, security.OpDescribe, security.ResourceGroup),
		func(g string) kmsg.DescribeGroupsResponseGroup {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			return rg
		},
		func(dr *kmsg.DescribeGroupsResponse) *[]kmsg.DescribeGroupsResponseGroup { return &dr.Groups })
	if !req.IncludeAuthorizedOperations {
		return nil, refused
	}
	return nil, both(func(resp kmsg.Response) {
		dr := resp.(*kmsg.DescribeGroupsResponse)
		for i := range dr.Groups {
			if dr.Groups[i].ErrorCode == 0 {
				dr.Groups[i].AuthorizedOperations = b.groupOps(r, dr.Groups[i].Group)
			}
		}
	}, refused)
}

func (b *Broker) authzConsumerGroupDescribe(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.ConsumerGroupDescribeRequest)
	refused := filterMerge(&req.Groups, b.mayOn(r, security.OpDescribe, security.ResourceGroup),
		func(g string) kmsg.ConsumerGroupDescribeResponseGroup {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			return rg
		},
		func(cr *kmsg.ConsumerGroupDescribeResponse) *[]kmsg.ConsumerGroupDescribeResponseGroup {
			return &cr.Groups
		})
	return nil, both(func(resp kmsg.Response) {
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
	}, refused)
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

// byIDName is the name a v10+ request's topic id has (OffsetCommit,
// OffsetFetch), by which it is checked; an unknown id is allowed on, for
// the handler's UNKNOWN_TOPIC_ID.
func (b *Broker) byIDName(r *request, name string, id [16]byte) (string, bool) {
	if r.hdr.Version < 10 {
		return name, true
	}
	name = b.topicNameOf(id)
	return name, name != unknownTopicName
}

func (b *Broker) authzOffsetCommit(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.OffsetCommitRequest)
	if !b.may(r, security.OpRead, security.ResourceGroup, req.Group) {
		return nil, nil // the handler refuses every partition (authz.go)
	}
	return nil, filterMerge(&req.Topics, func(t kmsg.OffsetCommitRequestTopic) bool {
		name, known := b.byIDName(r, t.Topic, t.TopicID)
		return !known || b.may(r, security.OpRead, security.ResourceTopic, name)
	}, func(t kmsg.OffsetCommitRequestTopic) kmsg.OffsetCommitResponseTopic {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, _ = b.byIDName(r, t.Topic, t.TopicID)
		rt.TopicID = t.TopicID
		rt.Partitions = refusedPartitions(t.Partitions, func(p kmsg.OffsetCommitRequestTopicPartition) kmsg.OffsetCommitResponseTopicPartition {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			return rp
		})
		return rt
	}, func(or *kmsg.OffsetCommitResponse) *[]kmsg.OffsetCommitResponseTopic { return &or.Topics })
}

// fetchRefusedPartitions are the partitions of a topic whose offsets the
// principal may not see, as KafkaApis answers them.
func fetchRefusedPartitions(partitions []int32) []kmsg.OffsetFetchResponseGroupTopicPartition {
	return refusedPartitions(partitions, func(p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.ErrorCode = p, -1, kerr.TopicAuthorizationFailed.Code
		return rp
	})
}

// authzOffsetFetch is KafkaApis' OffsetFetch: a group without Describe
// is GROUP_AUTHORIZATION_FAILED (before v8, one group at the top level,
// refused by the handler) and the others are answered; a topic asked for
// without Describe on it has TOPIC_AUTHORIZATION_FAILED on each
// partition, and all of a group's offsets leave such topics out. v10
// names topics by id: those are checked by the name the id has.
func (b *Broker) authzOffsetFetch(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.OffsetFetchRequest)
	mayTopic := b.mayOn(r, security.OpDescribe, security.ResourceTopic)
	if r.hdr.Version < 8 {
		if !b.may(r, security.OpDescribe, security.ResourceGroup, req.Group) {
			return nil, nil
		}
		if req.Topics == nil { // all the group's offsets: the refused topics left out
			return nil, func(resp kmsg.Response) {
				or := resp.(*kmsg.OffsetFetchResponse)
				or.Topics = keepIf(or.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return mayTopic(t.Topic) })
			}
		}
		return nil, filterMerge(&req.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return mayTopic(t.Topic) },
			func(t kmsg.OffsetFetchRequestTopic) kmsg.OffsetFetchResponseTopic {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range fetchRefusedPartitions(t.Partitions) {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p.Partition, p.Offset, p.ErrorCode
					rt.Partitions = append(rt.Partitions, rp)
				}
				return rt
			},
			func(or *kmsg.OffsetFetchResponse) *[]kmsg.OffsetFetchResponseTopic {
				if or.ErrorCode != 0 {
					return nil
				}
				return &or.Topics
			})
	}
	merge := filterMerge(&req.Groups, func(g kmsg.OffsetFetchRequestGroup) bool {
		return b.may(r, security.OpDescribe, security.ResourceGroup, g.Group)
	}, func(g kmsg.OffsetFetchRequestGroup) kmsg.OffsetFetchResponseGroup {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group, rg.ErrorCode = g.Group, kerr.GroupAuthorizationFailed.Code
		return rg
	}, func(or *kmsg.OffsetFetchResponse) *[]kmsg.OffsetFetchResponseGroup { return &or.Groups })
	for i := range req.Groups { // the groups kept, answered in this order before the refused
		merge = both(groupTopicsMerge(&req.Groups[i].Topics, func(t kmsg.OffsetFetchRequestGroupTopic) bool {
			name, known := b.byIDName(r, t.Topic, t.TopicID)
			return !known || mayTopic(name)
		}, func(t kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroupTopic {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, _ = b.byIDName(r, t.Topic, t.TopicID)
			rt.TopicID, rt.Partitions = t.TopicID, fetchRefusedPartitions(t.Partitions)
			return rt
		}, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return mayTopic(t.Topic) },
			func(or *kmsg.OffsetFetchResponse) *[]kmsg.OffsetFetchResponseGroupTopic {
				if i >= len(or.Groups) || or.Groups[i].ErrorCode != 0 {
					return nil
				}
				return &or.Groups[i].Topics
			}), merge)
	}
	return nil, merge
}

// configRefusal is the error of a config resource the principal may not
// describe or alter (op): TOPIC and REMOTE_LOG on the topic, BROKER, BROKER_LOGGER and
// CLIENT_METRICS on the cluster; GROUP is checked by the handlers; 0 when allowed.
func (b *Broker) configRefusal(r *request, op security.Operation, t kmsg.ConfigResourceType, name string) int16 {
	switch t {
	case kmsg.ConfigResourceTypeTopic, remoteLogResourceType:
		if !b.may(r, op, security.ResourceTopic, name) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics, linkResourceType:
		if !b.mayCluster(r, op) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}

func (b *Broker) authzDescribeConfigs(r *request) (kmsg.Response, authzMerge) {
	req := r.body.(*kmsg.DescribeConfigsRequest)
	return nil, configsMerge(b, r, security.OpDescribeConfigs, &req.Resources,
		func(rr kmsg.DescribeConfigsRequestResource) (kmsg.ConfigResourceType, string) {
			return rr.ResourceType, rr.ResourceName
		},
		func(t kmsg.ConfigResourceType, name string, code int16) kmsg.DescribeConfigsResponseResource {
			res := kmsg.NewDescribeConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode = t, name, code
			return res
		},
		func(dr *kmsg.DescribeConfigsResponse) *[]kmsg.DescribeConfigsResponseResource { return &dr.Resources })
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
