package compat

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestInternalTopicsKafkaReference asks Apache Kafka 4.4 and samsa about
// the three internal topics (Kafka's Topic.INTERNAL_TOPICS), each made by
// the FindCoordinator that needs it: Metadata marks them internal, and a
// client's Produce to one is INVALID_TOPIC_EXCEPTION, as Kafka's
// ReplicaManager refuses it. samsa left __share_group_state out: not
// internal, and the Produce was appended.
func TestInternalTopicsKafkaReference(t *testing.T) {
	t.Parallel()
	probeKafkaAndSamsa(t, nil, internalTopicsProbe)
}

func internalTopicsProbe(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	adm, _ := admAdmin(t, addr)
	topic := "internal-probe"
	admCreate(t, adm, topic, 1, 1, nil)
	id := topicID(t, adm, topic)
	c := admDial(t, addr)

	// Each FindCoordinator creates its topic; polled until answered.
	for keyType, key := range map[int8]string{
		0: "internal-probe-group",
		1: "internal-probe-txn",
		2: "internal-probe-share:" + base64.RawURLEncoding.EncodeToString(id[:]) + ":0",
	} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = keyType, []string{key}
		testutil.Eventually(t, 60*time.Second, func() error {
			resp := c.roundTrip(req, 6).(*kmsg.FindCoordinatorResponse)
			if e := resp.Coordinators[0].ErrorCode; e != 0 {
				return fmt.Errorf("FindCoordinator %d %s: error %d", keyType, key, e)
			}
			return nil
		})
	}

	for _, name := range []string{"__consumer_offsets", "__transaction_state", "__share_group_state"} {
		md := kmsg.NewPtrMetadataRequest()
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(name)}}
		var mt kmsg.MetadataResponseTopic
		testutil.Eventually(t, 60*time.Second, func() error {
			mt = c.roundTrip(md, 12).(*kmsg.MetadataResponse).Topics[0]
			if mt.ErrorCode != 0 || len(mt.Partitions) == 0 || mt.Partitions[0].Leader < 0 {
				return fmt.Errorf("metadata of %s: error %d, %d partitions", name, mt.ErrorCode, len(mt.Partitions))
			}
			return nil
		})
		out["metadata "+name] = fmt.Sprintf("internal %v", mt.IsInternal)

		pr := kmsg.NewPtrProduceRequest()
		pr.Acks, pr.TimeoutMillis = 1, 5000
		pr.Topics = []kmsg.ProduceRequestTopic{{Topic: name, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: azBatch()}}}}
		resp := c.roundTrip(pr, 9).(*kmsg.ProduceResponse)
		code := resp.Topics[0].Partitions[0].ErrorCode
		out["produce "+name] = fmt.Sprintf("error %d (%v)", code, kerr.ErrorForCode(code))
	}
	return out
}
