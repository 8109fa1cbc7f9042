package broker

// ApiVersions v0-v5. v3: flexible, client software name and version
// (KIP-511), which must match protocol.ValidClientSoftware or the answer is
// INVALID_REQUEST; the feature flags (KIP-584) in tagged fields (features.go).
// v5: the cluster id and node id the client expects (KIP-1242): both or
// neither (INVALID_REQUEST), and REBOOTSTRAP_REQUIRED when either is not
// this broker's. A version above ours is answered in v0 by dispatch. The
// response header is always v0.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/protocol"
)

func (b *Broker) handleApiVersions(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!protocol.ValidClientSoftware(req.ClientSoftwareName) || !protocol.ValidClientSoftware(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if req.Version >= 5 {
		switch {
		case (req.ClusterID == nil) != (req.NodeID == -1):
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		case req.ClusterID != nil && (*req.ClusterID != b.clusterID || req.NodeID != b.nodeID):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return resp, nil
		}
	}
	if req.Version >= 3 && r.software != nil {
		r.software.name, r.software.version = req.ClientSoftwareName, req.ClientSoftwareVersion
	}
	for _, v := range b.versions {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = v.Key, v.Min, v.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	addFeatures(resp)
	return resp, nil
}
