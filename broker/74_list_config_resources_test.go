package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListConfigResources v1 lists the topics and this broker (as BROKER and
// BROKER_LOGGER) when asked for every type; alice (no ACLs) gets
// CLUSTER_AUTHORIZATION_FAILED.
func TestListConfigResourcesHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"lcr": 1})
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.Version = 1
	resp := b.do(req).(*kmsg.ListConfigResourcesResponse)
	wantCode(t, "ListConfigResources", resp.ErrorCode, nil)
	got := map[int8]map[string]bool{}
	for _, r := range resp.ConfigResources {
		if got[r.Type] == nil {
			got[r.Type] = map[string]bool{}
		}
		got[r.Type][r.Name] = true
	}
	if !got[int8(kmsg.ConfigResourceTypeTopic)]["lcr"] || !got[int8(kmsg.ConfigResourceTypeBroker)]["1"] || !got[int8(kmsg.ConfigResourceTypeBrokerLogger)]["1"] {
		t.Errorf("resources %v, want topic lcr and broker 1 (and its logger)", got)
	}
	topics := kmsg.NewPtrListConfigResourcesRequest()
	topics.Version, topics.ResourceTypes = 1, []int8{int8(kmsg.ConfigResourceTypeTopic)}
	for _, r := range b.do(topics).(*kmsg.ListConfigResourcesResponse).ConfigResources {
		if r.Type != int8(kmsg.ConfigResourceTypeTopic) {
			t.Errorf("asked for topics, got %+v", r)
		}
	}
	wantCode(t, "as alice", b.as("alice", req).(*kmsg.ListConfigResourcesResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
}
