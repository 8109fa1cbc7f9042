package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// updateFeaturesRequest sets feature to level (v1+: as an upgrade).
func updateFeaturesRequest(v int16, feature string, level int16) *kmsg.UpdateFeaturesRequest {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version, req.TimeoutMillis = v, 10000
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = feature, level, 1
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	return req
}

// updateFeaturesCode is the answer's code: the top level's, else the one
// update's.
func updateFeaturesCode(resp kmsg.Response) int16 {
	r := resp.(*kmsg.UpdateFeaturesResponse)
	if r.ErrorCode != 0 || len(r.Results) == 0 {
		return r.ErrorCode
	}
	return r.Results[0].ErrorCode
}

// UpdateFeatures v0-v2: setting a feature to the level in effect succeeds;
// an unknown feature, a level past the supported range and a downgrade
// without a downgrade type are INVALID_UPDATE_VERSION; alice (no ACLs) gets
// CLUSTER_AUTHORIZATION_FAILED.
func TestUpdateFeaturesHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	for v := int16(0); v <= 2; v++ {
		wantCode(t, fmt.Sprintf("v%d the level in effect", v), updateFeaturesCode(b.do(updateFeaturesRequest(v, "transaction.version", 2))), nil)
	}
	wantCode(t, "unknown feature", updateFeaturesCode(b.do(updateFeaturesRequest(1, "no.such.feature", 1))), kerr.InvalidUpdateVersion)
	wantCode(t, "past the supported range", updateFeaturesCode(b.do(updateFeaturesRequest(1, "transaction.version", 99))), kerr.InvalidUpdateVersion)
	wantCode(t, "downgrade as an upgrade", updateFeaturesCode(b.do(updateFeaturesRequest(1, "transaction.version", 1))), kerr.InvalidUpdateVersion)
	wantCode(t, "as alice", updateFeaturesCode(b.as("alice", updateFeaturesRequest(1, "transaction.version", 2))), kerr.ClusterAuthorizationFailed)
}
