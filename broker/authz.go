package broker

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/security"
)

// Authorization: with authorizer.class.name naming Kafka's
// StandardAuthorizer (or AclAuthorizer), every request is checked as Kafka
// checks it against the ACLs in etcd (security.Authorizer, reloaded by a
// watch on every change); without, b.authz is nil and every check is a
// nil test.

// The declarations (see access, authz_apis.go) of the APIs whose handlers
// make their checks, with the helpers below.
var (
	azFetch                   = &access{needs: []need{topicOp(security.OpRead), clusterOp(security.OpClusterAction)}, inHandler: true}
	azListOffsets             = &access{needs: []need{topicOp(security.OpDescribe)}, inHandler: true}
	azMetadata                = &access{needs: []need{topicOp(security.OpDescribe), clusterOp(security.OpCreate), topicOp(security.OpCreate)}, inHandler: true}
	azCreateTopics            = &access{needs: []need{clusterOp(security.OpCreate), topicOp(security.OpCreate)}, inHandler: true}
	azDeleteTopics            = &access{needs: []need{topicOp(security.OpDelete)}, inHandler: true}
	azDescribeTopicPartitions = &access{needs: []need{topicOp(security.OpDescribe)}, inHandler: true}
	azListConfigResources     = &access{needs: []need{clusterOp(security.OpDescribeConfigs)}, inHandler: true}
	azDescribeCluster         = &access{needs: []need{clusterOp(security.OpDescribe)}, inHandler: true} // its AuthorizedOperations
	// JoinGroup, SyncGroup, Heartbeat, LeaveGroup: groupDenied.
	azGroupMember = &access{needs: []need{groupOp(security.OpRead)}, inHandler: true}
	// DescribeQuorum, SCRAM credentials, ACLs, client quotas, features,
	// UnregisterBroker: an operation on the cluster.
	azClusterDescribe        = &access{needs: []need{clusterOp(security.OpDescribe)}, inHandler: true}
	azClusterAlter           = &access{needs: []need{clusterOp(security.OpAlter)}, inHandler: true}
	azClusterDescribeConfigs = &access{needs: []need{clusterOp(security.OpDescribeConfigs)}, inHandler: true}
	azClusterAlterConfigs    = &access{needs: []need{clusterOp(security.OpAlterConfigs)}, inHandler: true}
	// Delegation tokens (38_delegation_tokens.go): renewing and expiring
	// are the token's owner's or renewers', checked on the token.
	azCreateDelegationToken   = &access{needs: []need{{security.ResourceUser, security.OpCreateTokens}}, inHandler: true}
	azTokenOwner              = &access{inHandler: true}
	azDescribeDelegationToken = &access{needs: []need{{security.ResourceDelegationToken, security.OpDescribe}, {security.ResourceUser, security.OpDescribeTokens}}, inHandler: true}
)

// kafkaAuthorizers are the authorizer.class.name values that mean
// samsa's authorizer.
var kafkaAuthorizers = map[string]bool{
	"org.apache.kafka.metadata.authorizer.StandardAuthorizer": true,
	"kafka.security.authorizer.AclAuthorizer":                 true,
}

// clusterName is the name of the one Cluster resource.
const clusterName = "kafka-cluster"

// startAuthorizer loads the ACLs and watches them, when an authorizer is
// configured.
func (b *Broker) startAuthorizer(ctx context.Context) error {
	if !kafkaAuthorizers[b.props.String("authorizer.class.name")] {
		return nil
	}
	b.authz = security.NewAuthorizer(b.props.String("super.users"), b.props.Bool("allow.everyone.if.no.acl.found"))
	rev, err := b.loadACLs(ctx)
	if err != nil {
		return err
	}
	b.store.WatchACLs(b.ctx, rev, func() {
		if _, err := b.loadACLs(b.ctx); err != nil && b.ctx.Err() == nil {
			b.log.Warn("reloading ACLs failed", "err", err)
		}
	})
	return nil
}

func (b *Broker) loadACLs(ctx context.Context) (int64, error) {
	acls, rev, err := b.store.ACLs(ctx)
	if err != nil {
		return 0, err
	}
	var bs []security.Binding
	for res, entries := range acls {
		t, ok := security.ParseResourceType(res.Type)
		if !ok {
			continue
		}
		pt := security.PatternLiteral
		if res.Pattern == "PREFIXED" {
			pt = security.PatternPrefixed
		}
		for _, e := range entries {
			op, ok := security.ParseOperation(e.Operation)
			if !ok {
				continue
			}
			perm := security.PermissionAllow
			if strings.EqualFold(e.PermissionType, "Deny") {
				perm = security.PermissionDeny
			}
			bs = append(bs, security.Binding{ResourceType: t, ResourceName: res.Name, PatternType: pt,
				Principal: e.Principal, Host: e.Host, Operation: op, Permission: perm})
		}
	}
	b.authz.Load(bs)
	return rev, nil
}

// aclHost is the host ACLs name for a connection: its address, without
// the "/" of Kafka's client host.
func aclHost(r *request) string { return strings.TrimPrefix(clientHost(r.conn), "/") }

// allowed reports whether r's principal may do op on a resource; always
// true without an authorizer.
func (b *Broker) allowed(r *request, op security.Operation, t security.ResourceType, name string) bool {
	return b.authz == nil || b.authz.Authorize(r.principal, aclHost(r), op, t, name)
}

// topicRefusal is TOPIC_AUTHORIZATION_FAILED when r may not do op on
// topic, else nil.
func (b *Broker) topicRefusal(r *request, op security.Operation, topic string) error {
	if b.allowed(r, op, security.ResourceTopic, topic) {
		return nil
	}
	return kerr.TopicAuthorizationFailed
}

// groupRefusal is GROUP_AUTHORIZATION_FAILED when r may not do op on the
// group, else nil.
func (b *Broker) groupRefusal(r *request, op security.Operation, group string) error {
	if b.allowed(r, op, security.ResourceGroup, group) {
		return nil
	}
	return kerr.GroupAuthorizationFailed
}

// groupsAllowed splits groups into those r may do op on and the others.
func (b *Broker) groupsAllowed(r *request, op security.Operation, groups []string) (allowed, denied []string) {
	for _, g := range groups {
		if b.groupRefusal(r, op, g) == nil {
			allowed = append(allowed, g)
		} else {
			denied = append(denied, g)
		}
	}
	return allowed, denied
}

// clusterRefusal is CLUSTER_AUTHORIZATION_FAILED when r may not do op on
// the cluster, else nil.
func (b *Broker) clusterRefusal(r *request, op security.Operation) error {
	if b.allowed(r, op, security.ResourceCluster, clusterName) {
		return nil
	}
	return kerr.ClusterAuthorizationFailed
}

// mayCreateTopic: Create on the cluster or on the topic.
func (b *Broker) mayCreateTopic(r *request, topic string) bool {
	return b.allowed(r, security.OpCreate, security.ResourceCluster, clusterName) ||
		b.allowed(r, security.OpCreate, security.ResourceTopic, topic)
}

// fetchDenied is the authorization of a fetch of one partition (t nil:
// unknown), as KafkaApis makes it before anything else: a follower
// (replicaID >= 0) needs ClusterAction on the cluster (followerDenied
// when it has not), and without it every partition, known or not, is
// TOPIC_AUTHORIZATION_FAILED; a consumer needs Read on the topic, by the
// name it asked for when the topic is unknown (an unknown topic id is
// UNKNOWN_TOPIC_ID, not refused).
func (b *Broker) fetchDenied(r *request, k fetchKey, t *topic, byID bool, replicaID int32, followerDenied bool) error {
	if b.authz == nil {
		return nil
	}
	if replicaID >= 0 {
		if followerDenied {
			return kerr.TopicAuthorizationFailed
		}
		return nil
	}
	name := k.topic
	if t != nil {
		name = t.name
	} else if byID {
		return nil
	}
	return b.topicRefusal(r, security.OpRead, name)
}

// topicOps is a topic's AuthorizedOperations for r.
func (b *Broker) topicOps(r *request, topic *string) int32 {
	if b.authz == nil || topic == nil {
		return topicAuthorizedOps
	}
	return b.authz.AuthorizedOps(r.principal, aclHost(r), security.ResourceTopic, *topic)
}

// clusterOps is the cluster's AuthorizedOperations for r.
func (b *Broker) clusterOps(r *request) int32 {
	if b.authz == nil {
		return clusterAuthorizedOps
	}
	return b.authz.AuthorizedOps(r.principal, aclHost(r), security.ResourceCluster, clusterName)
}

// aclResource is the etcd form of a binding's resource pattern.
func aclResource(bd security.Binding) controller.ACLResource {
	p := "LITERAL"
	if bd.PatternType == security.PatternPrefixed {
		p = "PREFIXED"
	}
	return controller.ACLResource{Type: bd.ResourceType.String(), Name: bd.ResourceName, Pattern: p}
}

// aclEntry is the etcd form of a binding's ACL.
func aclEntry(bd security.Binding) controller.ACLEntry {
	perm := "Allow"
	if bd.Permission == security.PermissionDeny {
		perm = "Deny"
	}
	return controller.ACLEntry{Principal: bd.Principal, PermissionType: perm, Operation: bd.Operation.String(), Host: bd.Host}
}

// metadataRefusal is the Metadata answer for a requested topic the
// principal may not describe, or (absent, about to be auto-created) may
// not create: TOPIC_AUTHORIZATION_FAILED and nothing else, as Kafka
// answers; refused is false otherwise.
func (b *Broker) metadataRefusal(r *request, name *string, t *topic, allowCreate bool) (mt kmsg.MetadataResponseTopic, refused bool) {
	if b.authz == nil {
		return mt, false
	}
	n := ""
	switch {
	case t != nil:
		n = t.name
	case name != nil:
		n = *name
	}
	refused = !b.allowed(r, security.OpDescribe, security.ResourceTopic, n)
	if !refused && t == nil && b.autoCreate && allowCreate && validateTopicName(n) == nil && !isInternalTopic(n) {
		refused = !b.mayCreateTopic(r, n)
	}
	mt = kmsg.NewMetadataResponseTopic()
	mt.Topic = name
	if t != nil {
		mt.Topic = &t.name
	}
	mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
	return mt, refused
}

// groupDenied is the answer to a group request whose principal may not use
// the group (Read for membership and commits, Describe for fetching
// offsets), GROUP_AUTHORIZATION_FAILED as Kafka answers it; nil when
// allowed (always without an authorizer).
func (b *Broker) groupDenied(r *request) kmsg.Response {
	if b.authz == nil {
		return nil
	}
	code := kerr.GroupAuthorizationFailed.Code
	deny := func(op security.Operation, group string) bool { return b.groupRefusal(r, op, group) != nil }
	switch req := r.body.(type) {
	case *kmsg.JoinGroupRequest:
		if deny(security.OpRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode, resp.LeaderID, resp.MemberID = code, "", ""
			return resp
		}
	case *kmsg.SyncGroupRequest:
		if deny(security.OpRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
			resp.ErrorCode = code
			return resp
		}
	case *kmsg.HeartbeatRequest:
		if deny(security.OpRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
			resp.ErrorCode = code
			return resp
		}
	case *kmsg.LeaveGroupRequest:
		if deny(security.OpRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = code
			return resp
		}
	case *kmsg.OffsetCommitRequest:
		if deny(security.OpRead, req.Group) {
			resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetCommitResponseTopic()
				rt.Topic, rt.TopicID = t.Topic, t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
	case *kmsg.OffsetFetchRequest:
		if r.hdr.Version < 8 && deny(security.OpDescribe, req.Group) {
			resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = code
			return resp
		}
		// v8+: each group and topic in authzOffsetFetch (authz_apis.go).
	}
	return nil
}

// idempotentRefusal is CLUSTER_AUTHORIZATION_FAILED for an idempotent
// producer's InitProducerId without IdempotentWrite on the cluster or
// Write on some topic (Kafka's authorizeByResourceType), else nil.
func (b *Broker) idempotentRefusal(r *request) error {
	if b.authz == nil || b.clusterRefusal(r, security.OpIdempotentWrite) == nil ||
		b.authz.AnyAllowed(r.principal, aclHost(r), security.OpWrite, security.ResourceTopic) {
		return nil
	}
	return kerr.ClusterAuthorizationFailed
}
