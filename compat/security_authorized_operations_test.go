package compat

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// With no authorizer, Kafka answers a request that asks for authorized
// operations with every operation the resource supports (AuthHelper's
// supportedOps as a bit field, 1<<AclOperation code): 8 for a topic, 7 for
// the cluster. Unasked, the field stays INT32_MIN ("not provided").
var (
	wantTopicOps = []kadm.ACLOperation{ // READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS
		kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
	}
	wantClusterOps = []kadm.ACLOperation{ // CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE
		kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
	}
)

const (
	topicOpsBits   = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11 // 3576
	clusterOpsBits = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12       // 8096
)

func sortedOps(ops []kadm.ACLOperation) []kadm.ACLOperation {
	ops = slices.Clone(ops)
	slices.Sort(ops)
	return ops
}

func TestAuthorizedOperationsWithoutAuthorizer(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	cl := newKgo(t, n.Addr())
	adm := kadm.NewClient(cl)
	const topic = "authorized-ops"
	createTopic(t, adm, topic, 1, nil)

	// kadm asks for topic operations with WithAuthorizedOps.
	md, err := adm.Metadata(kadm.WithAuthorizedOps(testCtx(t, 10*time.Second)), topic)
	if err != nil {
		t.Fatal(err)
	}
	if got := sortedOps(md.Topics[topic].AuthorizedOperations); !slices.Equal(got, sortedOps(wantTopicOps)) {
		t.Errorf("topic authorized operations %v, want %v", got, wantTopicOps)
	}

	// Each version on a raw connection: kgo's Metadata path does not pass
	// the cluster's field through.
	raw := admDial(t, n.Addr())
	for _, v := range []int16{8, 10, 12, 13} {
		for _, ask := range []bool{false, true} {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			req.IncludeTopicAuthorizedOperations = ask
			req.IncludeClusterAuthorizedOperations = ask // v8-v10 only
			resp := raw.roundTrip(req, v).(*kmsg.MetadataResponse)
			wantTopic, wantCluster := int32(math.MinInt32), int32(math.MinInt32)
			if ask {
				wantTopic = topicOpsBits
				if v <= 10 {
					wantCluster = clusterOpsBits
				}
			}
			if len(resp.Topics) != 1 || resp.Topics[0].AuthorizedOperations != wantTopic {
				t.Errorf("Metadata v%d ask=%v: topic authorized_operations %v, want %d", v, ask, resp.Topics, wantTopic)
			}
			if v <= 10 && resp.AuthorizedOperations != wantCluster {
				t.Errorf("Metadata v%d ask=%v: cluster authorized_operations %d, want %d", v, ask, resp.AuthorizedOperations, wantCluster)
			}
		}
	}

	for _, v := range []int16{0, 1, 2} {
		for _, ask := range []bool{false, true} {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.IncludeClusterAuthorizedOperations = ask
			resp := raw.roundTrip(req, v).(*kmsg.DescribeClusterResponse)
			want := int32(math.MinInt32)
			if ask {
				want = clusterOpsBits
			}
			if resp.ClusterAuthorizedOperations != want {
				t.Errorf("DescribeCluster v%d ask=%v: %d, want %d", v, ask, resp.ClusterAuthorizedOperations, want)
			}
			if ask {
				if got := sortedOps(kadm.DecodeACLOperations(resp.ClusterAuthorizedOperations)); !slices.Equal(got, sortedOps(wantClusterOps)) {
					t.Errorf("DescribeCluster v%d: operations %v, want %v", v, got, wantClusterOps)
				}
			}
		}
	}
}
