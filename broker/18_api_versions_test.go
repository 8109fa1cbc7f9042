package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions at each version lists every key with its range and, from v3,
// the finalized features (transaction.version 2); v3 needs a valid client
// software name and version, v5 both or neither of cluster id and node id,
// and the right ones; a version past ours is answered at v0 with
// UNSUPPORTED_VERSION and ApiVersions' own range, so the client can retry
// lower; alice, with no ACLs, may ask.
func TestApiVersionsHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	apiVersions := func(v int16) *kmsg.ApiVersionsRequest {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "handler-test", "1.0"
		return req
	}
	var ours int16 // ApiVersions' own max, as the broker lists it
	for v := int16(0); v <= 5; v++ {
		resp := b.do(apiVersions(v)).(*kmsg.ApiVersionsResponse)
		wantCode(t, "ApiVersions", resp.ErrorCode, nil)
		keys := map[int16]kmsg.ApiVersionsResponseApiKey{}
		for _, k := range resp.ApiKeys {
			keys[k.ApiKey] = k
		}
		for _, key := range []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.Metadata, kmsg.ApiVersions, kmsg.CreateTopics, kmsg.InitProducerID} {
			k, ok := keys[key.Int16()]
			if !ok || k.MinVersion > k.MaxVersion || k.MaxVersion < 4 {
				t.Errorf("v%d: %v: listed %v, versions %d..%d", v, key, ok, k.MinVersion, k.MaxVersion)
			}
		}
		ours = keys[kmsg.ApiVersions.Int16()].MaxVersion
		finalized, supported := false, false
		for _, f := range resp.FinalizedFeatures {
			finalized = finalized || f.Name == "transaction.version" && f.MaxVersionLevel == 2
		}
		for _, f := range resp.SupportedFeatures {
			supported = supported || f.Name == "transaction.version" && f.MinVersion == 0 && f.MaxVersion == 2
		}
		// Features are tagged fields of v3+; a feature whose minimum is 0
		// is listed as supported only from v4 on.
		if finalized != (v >= 3) || supported != (v >= 4) {
			t.Errorf("v%d: transaction.version finalized %v, supported %v", v, finalized, supported)
		}
	}
	if ours != 5 {
		t.Errorf("ApiVersions max version %d, want 5 (Kafka 4.4's)", ours)
	}

	bad := apiVersions(3)
	bad.ClientSoftwareName = "no spaces allowed"
	wantCode(t, "v3 invalid client software name", b.do(bad).(*kmsg.ApiVersionsResponse).ErrorCode, kerr.InvalidRequest)
	half := apiVersions(5)
	half.ClusterID, half.NodeID = kmsg.StringPtr("x"), -1
	wantCode(t, "v5 cluster id without node id", b.do(half).(*kmsg.ApiVersionsResponse).ErrorCode, kerr.InvalidRequest)
	wrong := apiVersions(5)
	wrong.ClusterID, wrong.NodeID = kmsg.StringPtr("not-this-cluster"), 1
	wantCode(t, "v5 another cluster's id", b.do(wrong).(*kmsg.ApiVersionsResponse).ErrorCode, kerr.RebootstrapRequired)

	// A version past ours: answered at v0, UNSUPPORTED_VERSION.
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, apiVersions(0), 7)
	frame[6], frame[7] = 0, 99 // the header's api_version
	resp := b.raw(frame, kmsg.NewPtrApiVersionsResponse()).(*kmsg.ApiVersionsResponse)
	wantCode(t, "ApiVersions v99", resp.ErrorCode, kerr.UnsupportedVersion)
	if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != kmsg.ApiVersions.Int16() || resp.ApiKeys[0].MaxVersion != ours {
		t.Errorf("ApiVersions v99: keys %+v, want only ApiVersions 0..%d", resp.ApiKeys, ours)
	}

	aresp := b.as("alice", apiVersions(0)).(*kmsg.ApiVersionsResponse)
	wantCode(t, "ApiVersions as alice", aresp.ErrorCode, nil)
}
