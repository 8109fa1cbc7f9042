package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aliceDescribeACL is the binding that lets alice describe topic.
func aliceDescribeACL(topic string) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow
	return c
}

// aliceFilter matches alice's bindings on topic.
func aliceFilter(topic string) (kmsg.ACLResourceType, *string, kmsg.ACLResourcePatternType, *string) {
	return kmsg.ACLResourceTypeTopic, kmsg.StringPtr(topic), kmsg.ACLResourcePatternTypeLiteral, kmsg.StringPtr("User:alice")
}

// metadataCodeAs is the code user gets for topic in Metadata.
func (b *handlerBroker) metadataCodeAs(user, topic string) int16 {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return b.as(user, req).(*kmsg.MetadataResponse).Topics[0].ErrorCode
}

// CreateAcls, DescribeAcls and DeleteAcls v1-v3: a binding created lets
// alice describe the topic, is listed, and once deleted (the answer lists
// it) she may not; a CLUSTER resource not named kafka-cluster is
// INVALID_REQUEST; alice (no ACLs) may not create, list or delete them
// (CLUSTER_AUTHORIZATION_FAILED).
func TestACLsHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"acl": 1})
	for v := int16(1); v <= 3; v++ {
		create := kmsg.NewPtrCreateACLsRequest()
		create.Version, create.Creations = v, []kmsg.CreateACLsRequestCreation{aliceDescribeACL("acl")}
		wantCode(t, fmt.Sprintf("v%d create", v), b.do(create).(*kmsg.CreateACLsResponse).Results[0].ErrorCode, nil)
		b.eventually(func() error {
			return kerr.ErrorForCode(b.metadataCodeAs("alice", "acl"))
		})

		describe := kmsg.NewPtrDescribeACLsRequest()
		describe.Version = v
		describe.ResourceType, describe.ResourceName, describe.ResourcePatternType, describe.Principal = aliceFilter("acl")
		describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		dr := b.do(describe).(*kmsg.DescribeACLsResponse)
		wantCode(t, fmt.Sprintf("v%d describe", v), dr.ErrorCode, nil)
		if len(dr.Resources) != 1 || len(dr.Resources[0].ACLs) != 1 || dr.Resources[0].ACLs[0].Operation != kmsg.ACLOperationDescribe {
			t.Errorf("v%d describe: %+v, want alice's one binding", v, dr.Resources)
		}

		del := kmsg.NewPtrDeleteACLsRequest()
		del.Version = v
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType, f.Principal = aliceFilter("acl")
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		del.Filters = append(del.Filters, f)
		res := b.do(del).(*kmsg.DeleteACLsResponse).Results[0]
		wantCode(t, fmt.Sprintf("v%d delete", v), res.ErrorCode, nil)
		if len(res.MatchingACLs) != 1 {
			t.Errorf("v%d delete: matched %+v, want alice's one binding", v, res.MatchingACLs)
		}
		b.eventually(func() error {
			if code := b.metadataCodeAs("alice", "acl"); code != kerr.TopicAuthorizationFailed.Code {
				return fmt.Errorf("alice after the delete: %v", kerr.ErrorForCode(code))
			}
			return nil
		})
	}

	bad := kmsg.NewPtrCreateACLsRequest()
	bad.Version = 3
	c := aliceDescribeACL("x")
	c.ResourceType = kmsg.ACLResourceTypeCluster
	bad.Creations = append(bad.Creations, c)
	wantCode(t, "cluster not named kafka-cluster", b.do(bad).(*kmsg.CreateACLsResponse).Results[0].ErrorCode, kerr.InvalidRequest)

	create := kmsg.NewPtrCreateACLsRequest()
	create.Version, create.Creations = 3, []kmsg.CreateACLsRequestCreation{aliceDescribeACL("acl")}
	wantCode(t, "create as alice", b.as("alice", create).(*kmsg.CreateACLsResponse).Results[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.Version, describe.ResourceType, describe.ResourcePatternType = 3, kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	wantCode(t, "describe as alice", b.as("alice", describe).(*kmsg.DescribeACLsResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
	if code := b.metadataCodeAs("alice", "acl"); code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("after alice's create: %v", kerr.ErrorForCode(code))
	}
}
