package broker

// UpdateFeatures v0-v2 (v1: ValidateOnly and UpgradeType). samsa's
// finalized levels are fixed (features.go: a level is finalized with the
// behaviour it announces), so an update to the level in effect succeeds
// and changes nothing, and what Kafka refuses is refused with Kafka's
// INVALID_UPDATE_VERSION message: an unknown feature, a level outside the
// supported range, a downgrade without a downgrade type. A change Kafka
// would make is refused as well (samsa cannot move a level), with a
// message that says so. The whole request fails on the first bad update,
// as Kafka 4.4's controller answers. It needs Alter on the cluster.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
)

func (b *Broker) handleUpdateFeatures(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if err := b.clusterRefusal(r, security.OpAlter); err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	ctrl := b.controllerID(brokers)
	for _, u := range req.FeatureUpdates {
		if msg := featureUpdateRefusal(u, req.Version, ctrl); msg != "" {
			resp.ErrorCode = kerr.InvalidUpdateVersion.Code
			resp.ErrorMessage = kmsg.StringPtr("The update failed for all features since the following feature had an error: " + msg)
			return resp, nil
		}
	}
	return resp, nil
}

// featureUpdateRefusal is why one update cannot be made, "" when it
// changes nothing.
func featureUpdateRefusal(u kmsg.UpdateFeaturesRequestFeatureUpdate, version int16, ctrl int32) string {
	invalid := fmt.Sprintf("Invalid update version %d for feature %s.", u.MaxVersionLevel, u.Feature)
	var f *feature
	for i := range features {
		if features[i].name == u.Feature {
			f = &features[i]
		}
	}
	if f == nil {
		return fmt.Sprintf("%s Local controller %d does not support this feature.", invalid, ctrl)
	}
	if u.MaxVersionLevel < f.minLevel || u.MaxVersionLevel > f.maxLevel {
		return fmt.Sprintf("%s Local controller %d only supports versions %d-%d", invalid, ctrl, f.minLevel, f.maxLevel)
	}
	downgrade := u.UpgradeType == 2 || u.UpgradeType == 3
	if version == 0 {
		downgrade = u.AllowDowngrade
	}
	if u.MaxVersionLevel < f.finalized && !downgrade {
		return invalid + " Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
	}
	if u.MaxVersionLevel != f.finalized {
		return fmt.Sprintf("%s samsa serves %s at level %d only and cannot change it.", invalid, f.name, f.finalized)
	}
	return ""
}
