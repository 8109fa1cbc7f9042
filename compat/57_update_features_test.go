package compat

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// UpdateFeatures: what Kafka 4.4 refuses is refused with its code and
// message (recorded from a 4.4 broker: an unknown feature, a level beyond
// the supported range, a downgrade without a downgrade type); the level in
// effect is accepted; a level samsa cannot move to is refused saying so.
// kafka-features.sh upgrade to the finalized level succeeds.
func TestUpdateFeatures(t *testing.T) {
	t.Parallel()
	n := admBroker(t, nil)
	c := admDial(t, n.Addr())
	update := func(v int16, name string, level int16, typ int8) string {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.ValidateOnly = true
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, typ
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		r := c.roundTrip(req, v).(*kmsg.UpdateFeaturesResponse)
		return fmt.Sprintf("%d %s", r.ErrorCode, derefStr(r.ErrorMessage))
	}
	const failed = "The update failed for all features since the following feature had an error: "
	for _, v := range []int16{1, 2} {
		for _, tc := range []struct {
			name        string
			level       int16
			typ         int8
			want        string
			wantPrefix  bool
			description string
		}{
			{"group.version", 1, 1, "0 <nil>", false, "the finalized level"},
			{"group.version", 5, 1, "95 " + failed + "Invalid update version 5 for feature group.version. Local controller 1 only supports versions 0-1", false, "beyond the supported range"},
			{"group.version", 0, 1, "95 " + failed + "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.", false, "a downgrade as an upgrade"},
			{"bogus.version", 1, 1, "95 " + failed + "Invalid update version 1 for feature bogus.version. Local controller 1 does not support this feature.", false, "an unknown feature"},
			{"group.version", 0, 2, "95 " + failed + "Invalid update version 0 for feature group.version. samsa", true, "a safe downgrade samsa cannot make"},
		} {
			got := update(v, tc.name, tc.level, tc.typ)
			if got != tc.want && !(tc.wantPrefix && strings.HasPrefix(got, tc.want)) {
				t.Errorf("v%d %s (%s=%d, type %d):\n got %s\nwant %s", v, tc.description, tc.name, tc.level, tc.typ, got, tc.want)
			}
		}
	}
	out := runKafkaTool(t, testCtx(t, 3*time.Minute), "", "org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", n.Addr(), "upgrade", "--feature", "group.version=1")
	if !strings.Contains(out, "group.version was upgraded to 1") {
		t.Errorf("kafka-features.sh upgrade --feature group.version=1:\n%s", out)
	}
}
