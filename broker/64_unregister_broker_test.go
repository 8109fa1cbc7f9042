package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func unregisterRequest(id int32) *kmsg.UnregisterBrokerRequest {
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	return req
}

func unregisterCode(resp kmsg.Response) int16 { return resp.(*kmsg.UnregisterBrokerResponse).ErrorCode }

// UnregisterBroker v0: an id with no registration is
// BROKER_ID_NOT_REGISTERED; the broker itself, up, is refused with
// INVALID_REQUEST and stays registered (samsa's answer: Kafka 4.4 drops a
// live broker from the cluster for good); alice gets
// CLUSTER_AUTHORIZATION_FAILED until she may Alter the cluster.
// (compat's TestUnregisterBrokerTool unregisters a broker that is down.)
func TestUnregisterBrokerHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	wantCode(t, "broker 99", unregisterCode(b.do(unregisterRequest(99))), kerr.BrokerIDNotRegistered)
	wantCode(t, "broker 1, up", unregisterCode(b.do(unregisterRequest(1))), kerr.InvalidRequest)
	describe := kmsg.NewPtrDescribeClusterRequest()
	describe.Version, describe.IncludeFencedBrokers = 2, true
	if brokers := b.do(describe).(*kmsg.DescribeClusterResponse).Brokers; len(brokers) != 1 || brokers[0].NodeID != 1 || brokers[0].IsFenced {
		t.Errorf("after refusing to unregister broker 1: brokers %+v", brokers)
	}
	b.wantAuthz(unregisterRequest(99), unregisterCode,
		authzStep{want: kerr.ClusterAuthorizationFailed},
		authzStep{grants: []grant{clusterGrant(kmsg.ACLOperationDescribe)}, want: kerr.ClusterAuthorizationFailed},
		authzStep{grants: []grant{clusterGrant(kmsg.ACLOperationAlter)}, want: kerr.BrokerIDNotRegistered})
}
