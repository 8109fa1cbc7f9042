package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// A Metadata request that auto-creates a topic is answered as Kafka 4.4
// answers it: the topic named, LEADER_NOT_AVAILABLE and no partitions; the
// partitions appear in a later answer. A client's test suite creates a
// topic, deletes it and asks for it with auto-creation on: it must not
// find the deleted topic back, with partitions, in that very answer. For
// Metadata v0-v3 the broker setting alone allows creation, for v4+ the
// request's flag too.
func TestMetadataAutoCreationAnswersLeaderNotAvailable(t *testing.T) {
	n := admBroker(t, map[string]string{"auto.create.topics.enable": "true", "num.partitions": "2"})
	addr := n.Addr()
	adm := newAdmin(t, addr)
	for _, v := range []int16{0, 1, 3, 4, 6, 9, 12} {
		topic := fmt.Sprintf("autocreate-v%d", v)
		createTopic(t, adm, topic, 1, nil)
		if _, err := adm.DeleteTopics(testCtx(t, 10*time.Second), topic); err != nil {
			t.Fatalf("DeleteTopics %s: %v", topic, err)
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			if _, ok := admMetaTopic(admMetadata(t, admClient(t, addr)), topic); ok {
				return fmt.Errorf("%s still listed after its deletion", topic)
			}
			return nil
		})
		c := admDial(t, addr)
		ask := func() kmsg.MetadataResponseTopic {
			t.Helper()
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			req.AllowAutoTopicCreation = true
			resp := c.roundTrip(req, v).(*kmsg.MetadataResponse)
			if len(resp.Topics) != 1 {
				t.Fatalf("Metadata v%d: %d topics in the answer", v, len(resp.Topics))
			}
			return resp.Topics[0]
		}
		first := ask()
		if first.ErrorCode != kerr.LeaderNotAvailable.Code || len(first.Partitions) != 0 || first.Topic == nil || *first.Topic != topic {
			t.Fatalf("Metadata v%d creating %s: error %v, %d partitions; want LEADER_NOT_AVAILABLE and none",
				v, topic, kerr.ErrorForCode(first.ErrorCode), len(first.Partitions))
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			mt := ask()
			if mt.ErrorCode != 0 || len(mt.Partitions) != 2 {
				return fmt.Errorf("Metadata v%d: %s error %v, %d partitions; want the new topic's 2", v, topic, kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
			}
			return nil
		})
	}
}
