package compat

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestOddsKafkaReference asks Apache Kafka 4.4 and samsa the same
// questions and compares the answers: UnregisterBroker of an unknown id,
// FindCoordinator of share-partition keys (good, malformed, below v6) and
// the group configs of a group DeleteGroups deleted (Kafka 4.4 keeps them).
func TestOddsKafkaReference(t *testing.T) {
	t.Parallel()
	probeKafkaAndSamsa(t, nil, oddsProbe)
}

func oddsProbe(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	adm, _ := admAdmin(t, addr)
	topic := "odds-probe"
	admCreate(t, adm, topic, 1, 1, nil)
	id := topicID(t, adm, topic)
	c := admDial(t, addr)

	r := unregisterBroker(t, addr, 7)
	out["unregister unknown"] = fmt.Sprintf("error %d %q", r.ErrorCode, derefStr(r.ErrorMessage))

	uuid := base64.RawURLEncoding.EncodeToString(id[:])
	find := func(what string, v int16, key string) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 2
		req.CoordinatorKey, req.CoordinatorKeys = key, []string{key}
		var fc kmsg.FindCoordinatorResponseCoordinator
		testutil.Eventually(t, 60*time.Second, func() error {
			resp := c.roundTrip(req, v).(*kmsg.FindCoordinatorResponse)
			if v < 4 {
				fc = kmsg.FindCoordinatorResponseCoordinator{ErrorCode: resp.ErrorCode, ErrorMessage: resp.ErrorMessage, NodeID: resp.NodeID}
			} else {
				fc = resp.Coordinators[0]
			}
			if fc.ErrorCode == kerr.CoordinatorNotAvailable.Code {
				return fmt.Errorf("%s: COORDINATOR_NOT_AVAILABLE", what)
			}
			return nil
		})
		out["find share "+what] = fmt.Sprintf("error %d %q node %d", fc.ErrorCode, derefStr(fc.ErrorMessage), fc.NodeID)
	}
	find("good", 6, "g:"+uuid+":0")
	find("colon group", 6, "a:b:"+uuid+":0")
	find("v5", 5, "g:"+uuid+":0")
	find("empty", 6, "")
	find("no colon", 6, "nocolon")
	find("bad uuid", 6, "g:notauuid:0")
	find("empty group", 6, " :"+uuid+":0")
	find("bad partition", 6, "g:"+uuid+":x")

	group := "odds-probe-group"
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = group, -1
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = topic
	op := kmsg.NewOffsetCommitRequestTopicPartition()
	op.Offset = 0
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	testutil.Eventually(t, 60*time.Second, func() error {
		resp := admDialCoordinator(t, addr, group).roundTrip(oc, 8).(*kmsg.OffsetCommitResponse)
		if e := resp.Topics[0].Partitions[0].ErrorCode; e != 0 {
			return fmt.Errorf("OffsetCommit: error %d", e)
		}
		return nil
	})
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	ic.Name, ic.Value = "consumer.session.timeout.ms", kmsg.StringPtr("50000")
	ir.Configs = append(ir.Configs, ic)
	ia.Resources = append(ia.Resources, ir)
	if e := c.roundTrip(ia, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; e != 0 {
		t.Fatalf("IncrementalAlterConfigs %s: error %d", group, e)
	}
	sessionConfig := func() string {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		rr.ConfigNames = []string{"consumer.session.timeout.ms"}
		req.Resources = append(req.Resources, rr)
		res := c.roundTrip(req, 4).(*kmsg.DescribeConfigsResponse).Resources[0]
		if res.ErrorCode != 0 || len(res.Configs) != 1 {
			return fmt.Sprintf("error %d, %d configs", res.ErrorCode, len(res.Configs))
		}
		return fmt.Sprintf("%s source %d", derefStr(res.Configs[0].Value), res.Configs[0].Source)
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		if got := sessionConfig(); !strings.HasPrefix(got, "50000 ") {
			return fmt.Errorf("group config before the delete: %s", got)
		}
		return nil
	})
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{group}
	resp := admDialCoordinator(t, addr, group).roundTrip(dg, 2).(*kmsg.DeleteGroupsResponse)
	out["delete group"] = fmt.Sprintf("error %d", resp.Groups[0].ErrorCode)
	out["group config after delete"] = sessionConfig()

	// Kafka answers NONE for its live broker, which then drops out of its
	// metadata; samsa refuses (TestUnregisterBrokerTool), so that is not
	// compared here.
	return out
}

// admDialCoordinator is a raw connection to the coordinator of group.
func admDialCoordinator(t *testing.T, addr, group string) *admConn {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = group
	var resp *kmsg.FindCoordinatorResponse
	testutil.Eventually(t, 60*time.Second, func() error {
		resp = admDial(t, addr).roundTrip(req, 3).(*kmsg.FindCoordinatorResponse)
		if resp.ErrorCode != 0 {
			return fmt.Errorf("FindCoordinator %s: error %d", group, resp.ErrorCode)
		}
		return nil
	})
	return admDial(t, fmt.Sprintf("%s:%d", resp.Host, resp.Port))
}
