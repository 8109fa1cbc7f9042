package compat

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// describeBrokers is DescribeCluster v2 with fenced brokers: id -> fenced.
func describeBrokers(t *testing.T, addr string) map[int32]bool {
	t.Helper()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	resp := admDial(t, addr).roundTrip(req, 2).(*kmsg.DescribeClusterResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("DescribeCluster v2: error %d", resp.ErrorCode)
	}
	out := map[int32]bool{}
	for _, b := range resp.Brokers {
		out[b.NodeID] = b.IsFenced
	}
	return out
}

func unregisterBroker(t *testing.T, addr string, id int32) *kmsg.UnregisterBrokerResponse {
	t.Helper()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	return admDial(t, addr).roundTrip(req, 0).(*kmsg.UnregisterBrokerResponse)
}

// kafka-cluster.sh (Kafka 4.4's ClusterTool) against a three-broker
// cluster: a killed broker stays registered and fenced (list-endpoints
// --include-fenced-brokers shows it) until `unregister --id` removes it;
// unregistering it again is BROKER_ID_NOT_REGISTERED, a live broker is
// refused, and the removed broker registers again when it comes back.
func TestUnregisterBrokerTool(t *testing.T) {
	t.Parallel()
	cl := testutil.StartCluster(t, 3, nil)
	addr := cl.Nodes[0].Addr()
	ctx := testCtx(t, 4*time.Minute)
	cl.Node(3).Kill()
	testutil.Eventually(t, 60*time.Second, func() error {
		if got := describeBrokers(t, addr); !got[3] || got[1] || got[2] || len(got) != 3 {
			return fmt.Errorf("DescribeCluster: %v, want 1 and 2 live, 3 fenced", got)
		}
		return nil
	})
	list := runKafkaTool(t, ctx, "", "org.apache.kafka.tools.ClusterTool", "list-endpoints", "--bootstrap-server", addr, "--include-fenced-brokers")
	if !regexp.MustCompile(`(?m)^3\s.*\bfenced\b`).MatchString(list) {
		t.Errorf("list-endpoints --include-fenced-brokers:\n%s\nwant broker 3 fenced", list)
	}
	out := runKafkaTool(t, ctx, "", "org.apache.kafka.tools.ClusterTool", "unregister", "--bootstrap-server", addr, "--id", "3")
	if !strings.Contains(out, "Broker 3 is no longer registered.") {
		t.Errorf("unregister --id 3:\n%s", out)
	}
	if got := describeBrokers(t, addr); len(got) != 2 || got[1] || got[2] {
		t.Errorf("DescribeCluster after unregister: %v, want 1 and 2 live", got)
	}
	if r := unregisterBroker(t, addr, 3); r.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Errorf("UnregisterBroker 3 again: error %d %q, want BROKER_ID_NOT_REGISTERED", r.ErrorCode, derefStr(r.ErrorMessage))
	}
	// Kafka 4.4 answers NONE and drops a live broker from its metadata;
	// samsa refuses (64_unregister_broker.go).
	if r := unregisterBroker(t, addr, 2); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("UnregisterBroker 2 (live): error %d %q, want INVALID_REQUEST", r.ErrorCode, derefStr(r.ErrorMessage))
	}
	cl.Node(3).Restart()
	testutil.Eventually(t, 60*time.Second, func() error {
		if got := describeBrokers(t, addr); len(got) != 3 || got[1] || got[2] || got[3] {
			return fmt.Errorf("DescribeCluster after the restart: %v, want 1, 2 and 3 live", got)
		}
		return nil
	})
}
