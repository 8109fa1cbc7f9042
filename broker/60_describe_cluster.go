package broker

// DescribeCluster v0-v2. v1: endpoint type (brokers only here; asking for
// controllers is MISMATCHED_ENDPOINT_TYPE). v2: fenced brokers. Cluster
// authorized operations, when asked: all (no authorizer; see 03_metadata.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleDescribeCluster(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = 1
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr("the request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
		return resp, nil
	}
	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		return nil, err
	}
	resp.ClusterID = b.clusterID
	resp.ControllerID = b.controllerID(brokers)
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.clusterOps(r)
	}
	for _, bi := range brokers {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID = bi.ID
		rb.Host, rb.Port = endpointFor(bi, r.listener)
		if bi.Rack != "" {
			rb.Rack = &bi.Rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp, nil
}
