package broker

// DescribeCluster v0-v2. v1: endpoint type (brokers only here; asking for
// controllers is MISMATCHED_ENDPOINT_TYPE). v2: fenced brokers (registered
// and down, controller/unregister.go). Cluster
// authorized operations, when asked: all (no authorizer; see 03_metadata.go).

import (
	"context"
	"slices"

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
	if req.IncludeFencedBrokers {
		if err := b.describeFencedBrokers(ctx, r.listener, resp); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// describeFencedBrokers adds the registered brokers that are down
// (controller/unregister.go), with IsFenced, in id order among the others.
func (b *Broker) describeFencedBrokers(ctx context.Context, listener string, resp *kmsg.DescribeClusterResponse) error {
	regs, err := b.store.RegisteredBrokers(ctx)
	if err != nil {
		return err
	}
	for _, bi := range regs {
		if !bi.Fenced || slices.ContainsFunc(resp.Brokers, func(rb kmsg.DescribeClusterResponseBroker) bool { return rb.NodeID == bi.ID }) {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.IsFenced = bi.ID, true
		rb.Host, rb.Port = endpointFor(bi.BrokerInfo, listener)
		if bi.Rack != "" {
			rb.Rack = &bi.Rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	slices.SortFunc(resp.Brokers, func(x, y kmsg.DescribeClusterResponseBroker) int { return int(x.NodeID) - int(y.NodeID) })
	return nil
}
