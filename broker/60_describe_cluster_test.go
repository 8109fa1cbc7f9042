package broker_test

import (
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster v0-v2: the one broker at the address of the listener
// asked, the cluster id and controller; from v1 asking for controllers is
// MISMATCHED_ENDPOINT_TYPE; the cluster's authorized operations, when
// asked, are a super user's all and alice's (no ACLs) none, and alice may
// describe the cluster.
func TestDescribeClusterHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	host, port, _ := net.SplitHostPort(b.addr)
	var superOps int32
	for v := int16(0); v <= 2; v++ {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType, req.IncludeClusterAuthorizedOperations = v, 1, true
		resp := b.do(req).(*kmsg.DescribeClusterResponse)
		wantCode(t, fmt.Sprintf("v%d", v), resp.ErrorCode, nil)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Host != host || strconv.Itoa(int(resp.Brokers[0].Port)) != port {
			t.Errorf("v%d: brokers %+v, want 1 at %s", v, resp.Brokers, b.addr)
		}
		if resp.ClusterID == "" || resp.ControllerID < 0 {
			t.Errorf("v%d: cluster %q controller %d", v, resp.ClusterID, resp.ControllerID)
		}
		superOps = resp.ClusterAuthorizedOperations
	}
	// Every operation Kafka's ACLs allow on the cluster (by ACL operation
	// code): CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
	// ALTER_CONFIGS, IDEMPOTENT_WRITE.
	var all int32
	for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite} {
		all |= 1 << op
	}
	if superOps != all {
		t.Errorf("super user's cluster operations %b, want %b", superOps, all)
	}
	controllers := kmsg.NewPtrDescribeClusterRequest()
	controllers.Version, controllers.EndpointType = 1, 2
	wantCode(t, "controllers", b.do(controllers).(*kmsg.DescribeClusterResponse).ErrorCode, kerr.MismatchedEndpointType)

	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.EndpointType, req.IncludeClusterAuthorizedOperations = 2, 1, true
	resp := b.as("alice", req).(*kmsg.DescribeClusterResponse)
	wantCode(t, "as alice", resp.ErrorCode, nil)
	if resp.ClusterAuthorizedOperations != 0 {
		t.Errorf("alice's cluster operations %b, want none", resp.ClusterAuthorizedOperations)
	}
}
