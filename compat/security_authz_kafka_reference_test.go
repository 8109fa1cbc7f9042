package compat

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// The authorization of every API key samsa serves, compared with Kafka
// 4.4's: the same requests, naming azEnv's resources, asked of Apache
// Kafka (internal/kafkaref, StandardAuthorizer) and of samsa as alice (no
// ACL) and as bob (Read on t1 and g1, and on the share group sg: the
// share-group APIs need one), and each
// answer reduced to what authorization decides (azOutcome): per resource
// named, allowed or which authorization error, the authorized operations
// reported, the fixture's resources a list shows. The keys come from
// samsa's ApiVersions, which its dispatch table (broker/dispatch.go)
// drives: a key without a case in azCases fails the test.

// azCase is one API key: the requests to compare, or why none are.
type azCase struct {
	reqs func(e *azEnv) []kmsg.Request
	skip string // why the key is not compared (reqs nil)
	// refusalsOnly compares the refusals alone: the answer leaves out a
	// partition with nothing to say (Kafka's ShareFetch without records).
	refusalsOnly bool
}

// azMemberID is the member id of the group heartbeats (a Kafka Uuid, as
// share members' must be).
const azMemberID = "AAAAAAAAAAAAAAAAAAAAAQ"

// azUnknownID is a topic id no topic has.
var azUnknownID = [16]byte{1, 2, 3}

// azNames are the resources of the fixture (and the ones its requests
// name that do not exist): list items naming another are left out of the
// comparison (internal topics, the other broker's groups).
var azNames = map[string]bool{"t1": true, "t2": true, "t3": true, "missing": true, "g1": true, "g2": true, "sg": true, "tx1": true, "1": true, "unknown-id": true, "User:alice": true, "alice": true}

// azCases are the requests each API key is compared with, by key.
var azCases = map[kmsg.Key]azCase{
	kmsg.Produce: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, 1, 5000
		for _, name := range []string{"t1", "t2", "missing"} {
			req.Topics = append(req.Topics, kmsg.ProduceRequestTopic{Topic: name, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: azBatch()}}})
		}
		return []kmsg.Request{req, transactionalProduce("tx1")}
	}},
	kmsg.Fetch: {reqs: func(e *azEnv) []kmsg.Request {
		var out []kmsg.Request
		for _, v := range []int16{12, 18} {
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.ReplicaID, req.MaxBytes = v, -1, 1<<20
			for _, name := range []string{"t1", "t2", "missing"} {
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic, rt.TopicID = name, e.id(name)
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.PartitionMaxBytes = 1 << 20
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
			}
			out = append(out, req)
			// A follower's fetch, as broker 1 (Kafka's node id; samsa's
			// too): without ClusterAction.
			out = append(out, fakeFollowerFetch(v, "t1", e.id("t1"), 1, 0), fakeFollowerFetch(v, "missing", azUnknownID, 1, 0))
		}
		return out
	}},
	kmsg.ListOffsets: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 9, -1
		for _, name := range []string{"t1", "t2", "missing"} {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = name
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		return []kmsg.Request{req}
	}},
	kmsg.Metadata: {reqs: func(e *azEnv) []kmsg.Request {
		named := kmsg.NewPtrMetadataRequest()
		named.Version, named.AllowAutoTopicCreation, named.IncludeTopicAuthorizedOperations = 12, true, true
		for _, name := range []string{"t1", "t2", "missing"} {
			named.Topics = append(named.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(name)})
		}
		byID := kmsg.NewPtrMetadataRequest()
		byID.Version = 12
		for _, name := range []string{"t1", "t2"} {
			byID.Topics = append(byID.Topics, kmsg.MetadataRequestTopic{TopicID: e.id(name)})
		}
		all := kmsg.NewPtrMetadataRequest()
		all.Version, all.IncludeClusterAuthorizedOperations, all.IncludeTopicAuthorizedOperations = 10, true, true
		return []kmsg.Request{named, byID, all}
	}},
	kmsg.OffsetCommit: {reqs: func(e *azEnv) []kmsg.Request {
		v9 := kmsg.NewPtrOffsetCommitRequest()
		v9.Version, v9.Group, v9.Generation = 9, "g1", -1
		v10 := kmsg.NewPtrOffsetCommitRequest()
		v10.Version, v10.Group, v10.Generation = 10, "g1", -1
		for _, name := range []string{"t1", "t2", "missing"} {
			p := []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0, LeaderEpoch: -1}}
			v9.Topics = append(v9.Topics, kmsg.OffsetCommitRequestTopic{Topic: name, Partitions: p})
			v10.Topics = append(v10.Topics, kmsg.OffsetCommitRequestTopic{TopicID: e.id(name), Partitions: p})
		}
		g2 := kmsg.NewPtrOffsetCommitRequest()
		g2.Version, g2.Group, g2.Generation = 9, "g2", -1
		g2.Topics = v9.Topics
		return []kmsg.Request{v9, v10, g2}
	}},
	kmsg.OffsetFetch: {reqs: func(e *azEnv) []kmsg.Request {
		v7 := kmsg.NewPtrOffsetFetchRequest()
		v7.Version, v7.Group = 7, "g1"
		v7all := kmsg.NewPtrOffsetFetchRequest()
		v7all.Version, v7all.Group = 7, "g1"
		v10 := kmsg.NewPtrOffsetFetchRequest()
		v10.Version = 10
		g1 := kmsg.NewOffsetFetchRequestGroup()
		g1.Group = "g1"
		for _, name := range []string{"t1", "t2", "missing"} {
			v7.Topics = append(v7.Topics, kmsg.OffsetFetchRequestTopic{Topic: name, Partitions: []int32{0}})
			g1.Topics = append(g1.Topics, kmsg.OffsetFetchRequestGroupTopic{TopicID: e.id(name), Partitions: []int32{0}})
		}
		all := kmsg.NewOffsetFetchRequestGroup()
		all.Group = "g2"
		v10.Groups = append(v10.Groups, g1, all)
		v10all := kmsg.NewPtrOffsetFetchRequest()
		v10all.Version = 10
		v10all.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g1"}}
		return []kmsg.Request{v7, v7all, v10, v10all}
	}},
	kmsg.FindCoordinator: {reqs: func(e *azEnv) []kmsg.Request {
		v3 := kmsg.NewPtrFindCoordinatorRequest()
		v3.Version, v3.CoordinatorKey = 3, "g1"
		groups := kmsg.NewPtrFindCoordinatorRequest()
		groups.Version, groups.CoordinatorKeys = 6, []string{"g1", "g2"}
		txns := kmsg.NewPtrFindCoordinatorRequest()
		txns.Version, txns.CoordinatorType, txns.CoordinatorKeys = 6, 1, []string{"tx1"}
		return []kmsg.Request{v3, groups, txns}
	}},
	kmsg.JoinGroup: {reqs: func(e *azEnv) []kmsg.Request {
		var out []kmsg.Request
		for _, g := range []string{"g1", "g2"} {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version, req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 9, g, 30000, 30000, "consumer"
			req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0}}}
			out = append(out, req) // no member id: MEMBER_ID_REQUIRED once allowed
		}
		return out
	}},
	kmsg.Heartbeat: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.Generation, req.MemberID = 4, "g1", 1, "nobody"
		return []kmsg.Request{req}
	}},
	kmsg.LeaveGroup: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group = 5, "g1"
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "nobody"}}
		return []kmsg.Request{req}
	}},
	kmsg.SyncGroup: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version, req.Group, req.Generation, req.MemberID = 5, "g1", 1, "nobody"
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		return []kmsg.Request{req}
	}},
	kmsg.DescribeGroups: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version, req.Groups, req.IncludeAuthorizedOperations = 5, []string{"g1", "g2"}, true
		return []kmsg.Request{req}
	}},
	kmsg.ListGroups: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = 5
		return []kmsg.Request{req}
	}},
	kmsg.SASLHandshake:             {skip: "authentication, before any authorization (TestSASLStateMachine)"},
	kmsg.SASLAuthenticate:          {skip: "authentication, before any authorization (TestSASLStateMachine)"},
	kmsg.ApiVersions:               {skip: "answered to anyone, authenticated or not: nothing to authorize"},
	kmsg.GetTelemetrySubscriptions: {skip: "KIP-714: neither broker checks an ACL; TestTelemetryKafkaReference compares every answer"},
	kmsg.PushTelemetry:             {skip: "KIP-714: neither broker checks an ACL; TestTelemetryKafkaReference compares every answer"},
	kmsg.CreateTopics: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis, req.ValidateOnly = 7, 5000, true
		for _, name := range []string{"t1", "t3"} {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
			req.Topics = append(req.Topics, rt)
		}
		return []kmsg.Request{req}
	}},
	kmsg.DeleteTopics: {reqs: func(e *azEnv) []kmsg.Request {
		byName := kmsg.NewPtrDeleteTopicsRequest()
		byName.Version, byName.TimeoutMillis = 5, 5000
		byName.TopicNames = []string{"t1", "missing"}
		byID := kmsg.NewPtrDeleteTopicsRequest()
		byID.Version, byID.TimeoutMillis = 6, 5000
		for _, name := range []string{"t1", "t2", "missing"} {
			byID.Topics = append(byID.Topics, kmsg.DeleteTopicsRequestTopic{TopicID: e.id(name)})
		}
		return []kmsg.Request{byName, byID}
	}},
	kmsg.DeleteRecords: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version, req.TimeoutMillis = 2, 5000
		for _, name := range []string{"t1", "t2", "missing"} {
			req.Topics = append(req.Topics, kmsg.DeleteRecordsRequestTopic{Topic: name, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}})
		}
		return []kmsg.Request{req}
	}},
	kmsg.InitProducerID: {reqs: func(e *azEnv) []kmsg.Request {
		txn := kmsg.NewPtrInitProducerIDRequest()
		txn.Version, txn.TransactionalID, txn.TransactionTimeoutMillis = 5, kmsg.StringPtr("tx1"), 60000
		idem := kmsg.NewPtrInitProducerIDRequest()
		idem.Version = 5
		return []kmsg.Request{txn, idem}
	}},
	kmsg.OffsetForLeaderEpoch: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = 4, -1
		for _, name := range []string{"t1", "t2", "missing"} {
			req.Topics = append(req.Topics, kmsg.OffsetForLeaderEpochRequestTopic{Topic: name, Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}})
		}
		follower := kmsg.NewPtrOffsetForLeaderEpochRequest()
		follower.Version, follower.ReplicaID, follower.Topics = 4, 1, req.Topics
		return []kmsg.Request{req, follower}
	}},
	kmsg.AddPartitionsToTxn: {reqs: func(e *azEnv) []kmsg.Request {
		v3 := kmsg.NewPtrAddPartitionsToTxnRequest()
		v3.Version, v3.TransactionalID, v3.ProducerID, v3.ProducerEpoch = 3, "tx1", 1, 0
		v3.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t1", Partitions: []int32{0}}, {Topic: "t2", Partitions: []int32{0}}}
		v5 := kmsg.NewPtrAddPartitionsToTxnRequest()
		v5.Version = 5
		v5.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: "tx1", ProducerID: 1, VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t1", Partitions: []int32{0}}}}}
		return []kmsg.Request{v3, v5}
	}},
	kmsg.AddOffsetsToTxn: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.Group = 4, "tx1", 1, "g1"
		return []kmsg.Request{req}
	}},
	kmsg.EndTxn: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.Commit = 5, "tx1", 1, true
		return []kmsg.Request{req}
	}},
	kmsg.WriteTxnMarkers: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 1
		req.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 1, Committed: true, Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t1", Partitions: []int32{0}}}}}
		return []kmsg.Request{req}
	}},
	kmsg.TxnOffsetCommit: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.Group, req.ProducerID, req.Generation = 3, "tx1", "g1", 1, -1
		for _, name := range []string{"t1", "t2"} {
			req.Topics = append(req.Topics, kmsg.TxnOffsetCommitRequestTopic{Topic: name, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0, LeaderEpoch: -1}}})
		}
		return []kmsg.Request{req}
	}},
	kmsg.DescribeACLs: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.Version, req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = 3, kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return []kmsg.Request{req}
	}},
	kmsg.CreateACLs: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrCreateACLsRequest()
		req.Version = 3
		req.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t2", ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}}
		return []kmsg.Request{req}
	}},
	kmsg.DeleteACLs: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDeleteACLsRequest()
		req.Version = 3
		req.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: kmsg.StringPtr("t1"), ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral,
			Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}}
		return []kmsg.Request{req}
	}},
	kmsg.DescribeConfigs: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		for _, r := range azConfigResources() {
			req.Resources = append(req.Resources, kmsg.DescribeConfigsRequestResource{ResourceType: r.typ, ResourceName: r.name})
		}
		return []kmsg.Request{req}
	}},
	kmsg.AlterConfigs: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version, req.ValidateOnly = 2, true
		for _, r := range azConfigResources() {
			if r.typ != kmsg.ConfigResourceTypeBrokerLogger {
				req.Resources = append(req.Resources, kmsg.AlterConfigsRequestResource{ResourceType: r.typ, ResourceName: r.name})
			}
		}
		return []kmsg.Request{req}
	}},
	kmsg.IncrementalAlterConfigs: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version, req.ValidateOnly = 1, true
		for _, r := range azConfigResources() {
			req.Resources = append(req.Resources, kmsg.IncrementalAlterConfigsRequestResource{ResourceType: r.typ, ResourceName: r.name})
		}
		return []kmsg.Request{req}
	}},
	kmsg.AlterReplicaLogDirs: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		req.Version = 2
		req.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{{Dir: "/nonexistent", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "t1", Partitions: []int32{0}}}}}
		return []kmsg.Request{req}
	}},
	kmsg.DescribeLogDirs: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = 4
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: "t1", Partitions: []int32{0}}}
		return []kmsg.Request{req}
	}},
	kmsg.CreatePartitions: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.TimeoutMillis, req.ValidateOnly = 3, 5000, true
		for _, name := range []string{"t1", "t2", "missing"} {
			req.Topics = append(req.Topics, kmsg.CreatePartitionsRequestTopic{Topic: name, Count: 2})
		}
		return []kmsg.Request{req}
	}},
	kmsg.CreateDelegationToken: {reqs: func(e *azEnv) []kmsg.Request {
		own := kmsg.NewPtrCreateDelegationTokenRequest()
		own.Version, own.MaxLifetimeMillis = 3, -1
		other := kmsg.NewPtrCreateDelegationTokenRequest()
		other.Version, other.MaxLifetimeMillis = 3, -1
		other.OwnerPrincipalType, other.OwnerPrincipalName = kmsg.StringPtr("User"), kmsg.StringPtr("admin")
		return []kmsg.Request{own, other}
	}},
	kmsg.RenewDelegationToken: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrRenewDelegationTokenRequest()
		req.Version, req.HMAC, req.RenewTimeMillis = 2, []byte("not a token"), -1
		return []kmsg.Request{req}
	}},
	kmsg.ExpireDelegationToken: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrExpireDelegationTokenRequest()
		req.Version, req.HMAC, req.ExpiryPeriodMillis = 2, []byte("not a token"), -1
		return []kmsg.Request{req}
	}},
	kmsg.DescribeDelegationToken: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeDelegationTokenRequest()
		req.Version = 3
		return []kmsg.Request{req}
	}},
	kmsg.DeleteGroups: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = 2, []string{"g1", "g2"}
		return []kmsg.Request{req}
	}},
	kmsg.ElectLeaders: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.TimeoutMillis = 2, 5000
		req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t1", Partitions: []int32{0}}}
		return []kmsg.Request{req}
	}},
	kmsg.AlterPartitionAssignments: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.Version, req.TimeoutMillis = 0, 5000
		req.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t1", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}}}}
		return []kmsg.Request{req}
	}},
	kmsg.ListPartitionReassignments: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrListPartitionReassignmentsRequest()
		req.TimeoutMillis = 5000
		return []kmsg.Request{req}
	}},
	kmsg.OffsetDelete: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = "g1"
		for _, name := range []string{"t1", "t2"} {
			req.Topics = append(req.Topics, kmsg.OffsetDeleteRequestTopic{Topic: name, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
		}
		return []kmsg.Request{req}
	}},
	kmsg.DescribeClientQuotas: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Version = 1
		return []kmsg.Request{req}
	}},
	kmsg.AlterClientQuotas: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Version, req.ValidateOnly = 1, true
		req.Entries = []kmsg.AlterClientQuotasRequestEntry{{
			Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("alice")}},
			Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}},
		}}
		return []kmsg.Request{req}
	}},
	kmsg.DescribeUserSCRAMCredentials: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "alice"}}
		return []kmsg.Request{req}
	}},
	kmsg.AlterUserSCRAMCredentials: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: 1}}
		return []kmsg.Request{req}
	}},
	kmsg.DescribeQuorum: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.Version = 2
		req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
		return []kmsg.Request{req}
	}},
	kmsg.UpdateFeatures: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version, req.TimeoutMillis, req.ValidateOnly = 1, 5000, true
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 1}}
		return []kmsg.Request{req}
	}},
	kmsg.DescribeCluster: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.IncludeClusterAuthorizedOperations = 1, true
		return []kmsg.Request{req}
	}},
	kmsg.DescribeProducers: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeProducersRequest()
		for _, name := range []string{"t1", "t2", "missing"} {
			req.Topics = append(req.Topics, kmsg.DescribeProducersRequestTopic{Topic: name, Partitions: []int32{0}})
		}
		return []kmsg.Request{req}
	}},
	kmsg.UnregisterBroker: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = 99
		return []kmsg.Request{req}
	}},
	kmsg.DescribeTransactions: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{"tx1"}
		return []kmsg.Request{req}
	}},
	kmsg.ListTransactions: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = 1
		return []kmsg.Request{req}
	}},
	kmsg.ConsumerGroupHeartbeat: {reqs: func(e *azEnv) []kmsg.Request {
		var out []kmsg.Request
		for _, c := range []struct {
			group  string
			topics []string
		}{{"g2", []string{"t1"}}, {"g1", []string{"t1", "t2"}}, {"g1", []string{"missing"}}, {"g1", []string{"t1"}}} {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, c.group, azMemberID, 30000
			req.SubscribedTopicNames, req.Topics = c.topics, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			out = append(out, req)
		}
		return out
	}},
	kmsg.ConsumerGroupDescribe: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Version, req.Groups, req.IncludeAuthorizedOperations = 1, []string{"g1", "g2"}, true
		return []kmsg.Request{req}
	}},
	kmsg.ListConfigResources: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.Version = 1
		return []kmsg.Request{req}
	}},
	kmsg.DescribeTopicPartitions: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, name := range []string{"t1", "t2", "missing"} {
			req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: name})
		}
		req.ResponsePartitionLimit = 100
		return []kmsg.Request{req}
	}},
	kmsg.ShareGroupHeartbeat: {reqs: func(e *azEnv) []kmsg.Request {
		var out []kmsg.Request
		for _, c := range []struct {
			group  string
			topics []string
		}{{"sg", []string{"t1", "t2"}}, {"sg", []string{"missing"}}, {"g2", []string{"t1"}}} {
			req := kmsg.NewPtrShareGroupHeartbeatRequest()
			req.Version, req.GroupID, req.MemberID, req.SubscribedTopicNames = 1, c.group, azMemberID, c.topics
			out = append(out, req)
		}
		return out
	}},
	kmsg.ShareGroupDescribe: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.Version, req.GroupIDs, req.IncludeAuthorizedOperations = 1, []string{"sg", "g2"}, true
		return []kmsg.Request{req}
	}},
	kmsg.ShareFetch: {refusalsOnly: true, reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrShareFetchRequest()
		req.Version, req.GroupID, req.MemberID, req.ShareSessionEpoch, req.MaxBytes, req.MaxRecords, req.BatchSize = 1, kmsg.StringPtr("sg"), kmsg.StringPtr(azMemberID), 0, 1<<20, 10, 10
		// Not an unknown topic id: Kafka 4.4 answers the whole request
		// UNKNOWN_SERVER_ERROR then (authorizing a topic without a name).
		for _, name := range []string{"t1", "t2"} {
			req.Topics = append(req.Topics, kmsg.ShareFetchRequestTopic{TopicID: e.id(name), Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}})
		}
		return []kmsg.Request{req}
	}},
	kmsg.ShareAcknowledge: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version, req.GroupID, req.MemberID, req.ShareSessionEpoch = 1, kmsg.StringPtr("sg"), kmsg.StringPtr(azMemberID), 1
		for _, name := range []string{"t1", "t2"} {
			req.Topics = append(req.Topics, kmsg.ShareAcknowledgeRequestTopic{TopicID: e.id(name), Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
				AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}}}})
		}
		return []kmsg.Request{req}
	}},
	kmsg.ReadShareGroupState: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = "sg"
		req.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: e.id("t1"), Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: 0}}}}
		return []kmsg.Request{req}
	}},
	kmsg.WriteShareGroupState: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = "sg"
		req.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: e.id("t1"), Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: 0, LeaderEpoch: 0, StartOffset: 0}}}}
		return []kmsg.Request{req}
	}},
	kmsg.StreamsGroupHeartbeat: {reqs: func(e *azEnv) []kmsg.Request {
		var out []kmsg.Request
		for _, c := range []struct {
			group  string
			topics []string
		}{{"g2", []string{"t1"}}, {"g1", []string{"t1", "t2"}}, {"g1", []string{"missing"}}} {
			req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			req.Group, req.MemberID, req.RebalanceTimeoutMillis = c.group, azMemberID, 30000
			req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 0, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{
				SubtopologyID: "0", SourceTopics: c.topics,
			}}}
			req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
			out = append(out, req)
		}
		return out
	}},
	kmsg.StreamsGroupDescribe: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups, req.IncludeAuthorizedOperations = []string{"g1", "g2"}, true
		return []kmsg.Request{req}
	}},
	kmsg.StreamsGroupTopologyDescriptionUpdate: {reqs: func(e *azEnv) []kmsg.Request {
		var out []kmsg.Request
		for _, g := range []string{"g1", "g2"} {
			req := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
			req.Group = g
			out = append(out, req)
		}
		return out
	}},
	kmsg.DescribeShareGroupOffsets: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Version = 1
		named := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		named.GroupID = "sg"
		for _, name := range []string{"t1", "t2", "missing"} {
			named.Topics = append(named.Topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: []int32{0}})
		}
		all := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		all.GroupID = "g2"
		req.Groups = append(req.Groups, named, all)
		return []kmsg.Request{req}
	}},
	kmsg.AlterShareGroupOffsets: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = "sg"
		for _, name := range []string{"t1", "t2", "missing"} {
			req.Topics = append(req.Topics, kmsg.AlterShareGroupOffsetsRequestTopic{Topic: name, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}})
		}
		return []kmsg.Request{req}
	}},
	kmsg.DeleteShareGroupOffsets: {reqs: func(e *azEnv) []kmsg.Request {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = "sg"
		for _, name := range []string{"t1", "t2"} {
			req.Topics = append(req.Topics, kmsg.DeleteShareGroupOffsetsRequestTopic{Topic: name})
		}
		return []kmsg.Request{req}
	}},
}

type azConfigResource struct {
	typ  kmsg.ConfigResourceType
	name string
}

// azConfigResources are the config resources the config APIs name.
func azConfigResources() []azConfigResource {
	return []azConfigResource{
		{kmsg.ConfigResourceTypeTopic, "t1"}, {kmsg.ConfigResourceTypeTopic, "t2"},
		{kmsg.ConfigResourceTypeBroker, "1"}, {kmsg.ConfigResourceTypeBrokerLogger, "1"},
		{kmsg.ConfigResourceTypeGroupConfig, "g1"}, {kmsg.ConfigResourceTypeGroupConfig, "g2"},
	}
}

// azBatch is a record batch of one record, not idempotent.
func azBatch() []byte {
	rec := kmsg.Record{Value: []byte("x")}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	now := time.Now().UnixMilli()
	batch := kmsg.RecordBatch{Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, FirstTimestamp: now, MaxTimestamp: now}
	batch.Records = rec.AppendTo(nil)
	batch.Length = int32(len(batch.AppendTo(nil)) - 12)
	return batch.AppendTo(nil)
}

// id is the id of the fixture's topic name, azUnknownID for another.
func (e *azEnv) id(name string) [16]byte {
	if id, ok := e.ids[name]; ok {
		return id
	}
	return azUnknownID
}

// azAsk sends req on a new connection authenticated as user and returns
// its outcome: azOutcome of the answer, or that the broker closed the
// connection.
func (e *azEnv) azAsk(t *testing.T, user string, req kmsg.Request) map[string]string {
	t.Helper()
	c := e.dial(t, user)
	c.send(req)
	b, err := c.frame()
	if err != nil {
		return map[string]string{"": "connection closed"}
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := b[4:]
	if req.IsFlexible() && len(body) > 0 {
		body = body[1:] // the response header's (empty) tags
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s v%d as %s: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), user, err)
	}
	names := map[[16]byte]string{azUnknownID: "unknown-id"}
	for name, id := range e.ids {
		names[id] = name
	}
	out := map[string]string{}
	azOutcome(reflect.ValueOf(resp).Elem(), "", names, out)
	return out
}

// azAuthzErrors are the errors that are authorization's answers.
var azAuthzErrors = map[int16]bool{
	kerr.TopicAuthorizationFailed.Code: true, kerr.GroupAuthorizationFailed.Code: true,
	kerr.ClusterAuthorizationFailed.Code: true, kerr.TransactionalIDAuthorizationFailed.Code: true,
	kerr.DelegationTokenAuthorizationFailed.Code: true,
}

// azOutcome records what authorization decided in a response (v, a
// struct) under path: every ErrorCode as "allowed" or the authorization
// error, every authorized-operations field that is set, and each list
// item naming a fixture resource as present. List items are keyed by the
// resource they name (a topic id by its topic's name), else by index;
// items naming a resource outside azNames are left out.
func azOutcome(v reflect.Value, path string, ids map[[16]byte]string, out map[string]string) {
	ty := v.Type()
	for i := range ty.NumField() {
		f, fv := ty.Field(i), v.Field(i)
		switch {
		case f.Name == "ErrorCode" && fv.Kind() == reflect.Int16:
			code := int16(fv.Int())
			out[path+".ErrorCode"] = "allowed"
			if azAuthzErrors[code] {
				out[path+".ErrorCode"] = kerr.ErrorForCode(code).(*kerr.Error).Message
			}
		case strings.HasSuffix(f.Name, "AuthorizedOperations") && fv.Kind() == reflect.Int32:
			if ops := int32(fv.Int()); ops != math.MinInt32 {
				out[path+"."+f.Name] = fmt.Sprint(azOps(ops))
			}
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct:
			for j := range fv.Len() {
				el := fv.Index(j)
				name, named := azItemName(el, ids)
				if named && !azNames[name] {
					continue
				}
				key := fmt.Sprintf("%s.%s[%d]", path, f.Name, j)
				if named {
					key = fmt.Sprintf("%s.%s[%s]", path, f.Name, name)
					out[key] = "present"
				}
				azOutcome(el, key, ids, out)
			}
		case fv.Kind() == reflect.Struct && f.Name != "UnknownTags":
			azOutcome(fv, path+"."+f.Name, ids, out)
		case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct && !fv.IsNil():
			azOutcome(fv.Elem(), path+"."+f.Name, ids, out)
		}
	}
}

// azItemName is the resource a list item names, and its partition.
func azItemName(v reflect.Value, ids map[[16]byte]string) (string, bool) {
	var parts []string
	for _, field := range []string{"Topic", "TopicName", "Group", "GroupID", "TransactionalID", "ResourceName", "Key", "Name", "User"} {
		f := v.FieldByName(field)
		switch {
		case !f.IsValid():
		case f.Kind() == reflect.String && f.String() != "":
			parts = append(parts, f.String())
		case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String && f.Elem().String() != "":
			parts = append(parts, f.Elem().String())
		}
		if len(parts) > 0 {
			break
		}
	}
	if len(parts) == 0 {
		if f := v.FieldByName("TopicID"); f.IsValid() && f.Type() == reflect.TypeOf([16]byte{}) {
			id := f.Interface().([16]byte)
			if name, ok := ids[id]; ok {
				parts = append(parts, name)
			} else if id != ([16]byte{}) {
				parts = append(parts, "another topic")
			}
		}
	}
	if len(parts) == 0 {
		return "", false
	}
	return parts[0], true
}

// azOps names the operations of an authorized-operations bit field.
func azOps(ops int32) []string {
	var out []string
	for op := range 32 {
		if ops&(1<<op) != 0 {
			out = append(out, kmsg.ACLOperation(op).String())
		}
	}
	return out
}

// TestAuthorizationKafkaReference asks Apache Kafka 4.4 and samsa every
// API key's requests of azCases as alice and as bob and compares what
// authorization decided (azOutcome).
func TestAuthorizationKafkaReference(t *testing.T) {
	t.Parallel()
	kafka, samsa := azKafka(t), azSamsa(t)
	for _, e := range []*azEnv{kafka, samsa} {
		// bob reads sg, a share group admin has made.
		e.shareGroup(t, "admin", "sg")
		e.grant(t, "bob", (*kadm.ACLBuilder).Groups, "sg", []kadm.ACLOperation{kadm.OpRead}, func() error {
			req := kmsg.NewPtrShareGroupDescribeRequest()
			req.Version, req.GroupIDs = 1, []string{"sg"}
			if code := e.dial(t, "bob").roundTrip(req).(*kmsg.ShareGroupDescribeResponse).Groups[0].ErrorCode; code != 0 {
				return fmt.Errorf("bob's ShareGroupDescribe of sg: %v", kerr.ErrorForCode(code))
			}
			return nil
		})
	}
	served, _ := apiVersionsTable(t, samsa.addr)
	for _, k := range slices.Sorted(maps.Keys(served)) {
		c, ok := azCases[kmsg.Key(k)]
		switch {
		case !ok:
			t.Errorf("key %d (%s) is served and has no case in azCases: add its requests, or why it cannot be compared", k, kmsg.NameForKey(k))
			continue
		case c.reqs == nil:
			t.Logf("key %d (%s) not compared: %s", k, kmsg.NameForKey(k), c.skip)
			continue
		}
		kreqs, sreqs := c.reqs(kafka), c.reqs(samsa)
		for i := range kreqs {
			what := fmt.Sprintf("%s v%d #%d", kmsg.NameForKey(k), kreqs[i].GetVersion(), i)
			for _, user := range []string{"alice", "bob"} {
				want, got := kafka.azAsk(t, user, kreqs[i]), samsa.azAsk(t, user, sreqs[i])
				if testing.Verbose() {
					t.Logf("%s as %s: Kafka %v", what, user, azRefusals(want))
				}
				if c.refusalsOnly {
					want, got = azRefusals(want), azRefusals(got)
				}
				for _, key := range slices.Sorted(maps.Keys(azUnion(want, got))) {
					if want[key] != got[key] {
						t.Errorf("%s as %s: %s: Kafka %q, samsa %q", what, user, key, want[key], got[key])
					}
				}
			}
		}
	}
	for k := range azCases {
		if _, ok := served[int16(k)]; !ok {
			t.Errorf("azCases has key %d (%s), which samsa does not serve", k, k.Name())
		}
	}

	// A streams member that may describe its topology's topics but not
	// create the internal ones: the broker creates none, and the status
	// says why.
	statuses := map[*azEnv]string{}
	for _, e := range []*azEnv{kafka, samsa} {
		e.grant(t, "bob", (*kadm.ACLBuilder).Groups, "sprobe", []kadm.ACLOperation{kadm.OpRead}, func() error { return nil })
		prefixed := kadm.NewACLs().Allow("User:bob").AllowHosts().ResourcePatternType(kadm.ACLPatternPrefixed).Topics("sprobe-").Operations(kadm.OpDescribe)
		if r, err := e.admin.CreateACLs(testCtx(t, 30*time.Second), prefixed); err != nil || r[0].Err != nil {
			t.Fatalf("CreateACLs: %v %+v", err, r)
		}
		c := e.dial(t, "bob")
		testutil.Eventually(t, 30*time.Second, func() error { // the ACLs apply a moment later
			resp := c.roundTrip(streamsHeartbeat(azMemberID, 0, true, "t1")).(*kmsg.StreamsGroupHeartbeatResponse)
			if resp.ErrorCode != 0 {
				return fmt.Errorf("StreamsGroupHeartbeat as bob: %v", kerr.ErrorForCode(resp.ErrorCode))
			}
			for _, s := range resp.Status {
				statuses[e] += fmt.Sprintf("%d %q; ", s.StatusCode, s.StatusDetail)
			}
			return nil
		})
	}
	if statuses[kafka] != statuses[samsa] || !strings.Contains(statuses[kafka], "Unauthorized to CREATE on topics sprobe-store-changelog") {
		t.Errorf("streams heartbeat without Create on its internal topic: Kafka's status %s, samsa's %s", statuses[kafka], statuses[samsa])
	}

	// A consumer group member subscribing by regex is assigned only the
	// topics its principal may describe: Kafka's coordinator filters what
	// the regex resolves to.
	assigned := map[*azEnv][]string{}
	for _, e := range []*azEnv{kafka, samsa} {
		e.grant(t, "bob", (*kadm.ACLBuilder).Groups, "rx", []kadm.ACLOperation{kadm.OpRead}, func() error { return nil })
		names := map[[16]byte]string{}
		for name, id := range e.ids {
			names[id] = name
		}
		c := e.dial(t, "bob")
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Version, hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = 1, "rx", "AAAAAAAAAAAAAAAAAAAAAg", 30000
		hb.SubscribedTopicRegex, hb.Topics = kmsg.StringPtr("t[12]"), []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		testutil.Eventually(t, 60*time.Second, func() error { // Kafka resolves the regex in the background
			resp := c.roundTrip(hb).(*kmsg.ConsumerGroupHeartbeatResponse)
			if resp.ErrorCode != 0 {
				return fmt.Errorf("ConsumerGroupHeartbeat as bob: %v", kerr.ErrorForCode(resp.ErrorCode))
			}
			hb.MemberEpoch = resp.MemberEpoch
			if resp.Assignment == nil || len(resp.Assignment.Topics) == 0 {
				return errors.New("nothing assigned yet")
			}
			assigned[e] = nil
			for _, at := range resp.Assignment.Topics {
				assigned[e] = append(assigned[e], names[at.TopicID])
			}
			slices.Sort(assigned[e])
			return nil
		})
	}
	if !slices.Equal(assigned[kafka], []string{"t1"}) || !slices.Equal(assigned[samsa], assigned[kafka]) {
		t.Errorf("regex t[12] subscribed as bob (Describe on t1 only): Kafka assigned %v, samsa %v", assigned[kafka], assigned[samsa])
	}
}

// azRefusals are the refusals of an outcome.
func azRefusals(o map[string]string) map[string]string {
	out := maps.Clone(o)
	maps.DeleteFunc(out, func(_, v string) bool { return v == "allowed" || v == "present" })
	return out
}

func azUnion(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}
