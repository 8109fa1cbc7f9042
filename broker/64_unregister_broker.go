package broker

// UnregisterBroker v0 (kafka-cluster.sh unregister): the registration of
// a broker that is down is removed, as Kafka's controller removes a fenced
// broker's (controller/unregister.go); DescribeCluster stops listing it
// as fenced. An id with no registration is BROKER_ID_NOT_REGISTERED. A
// broker that is up is refused (INVALID_REQUEST): Kafka 4.4 answers NONE
// and the broker, still running, drops out of the cluster's metadata for
// good (TestOddsKafkaReference measured it gone 20 s later). It needs
// Alter on the cluster.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/security"
)

func (b *Broker) handleUnregisterBroker(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if err := b.clusterRefusal(r, security.OpAlter); err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	err := b.store.UnregisterBroker(ctx, req.BrokerID)
	switch {
	case err == nil:
		b.log.Info("broker unregistered", "broker", req.BrokerID)
	case errors.Is(err, controller.ErrBrokerLive):
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Broker %d is up: only a broker that is down can be unregistered", req.BrokerID))
	case errors.Is(err, controller.ErrBrokerNotRegistered):
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Broker ID %d is not currently registered", req.BrokerID))
	default:
		resp.ErrorCode = errCode(err)
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
	}
	return resp, nil
}
