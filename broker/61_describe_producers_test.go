package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/logstore"
)

// describeProducersRequest asks for the producers of topic's partition.
func describeProducersRequest(topic string, partition int32) *kmsg.DescribeProducersRequest {
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	req.Topics = append(req.Topics, rt)
	return req
}

// DescribeProducers v0: an idempotent producer's id, epoch and last
// sequence; an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION;
// alice (no ACLs) gets TOPIC_AUTHORIZATION_FAILED.
func TestDescribeProducersHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"dp": 1})
	ip := b.do(initProducerIDRequest(4, nil, 60000)).(*kmsg.InitProducerIDResponse)
	wantCode(t, "InitProducerId", ip.ErrorCode, nil)
	batch, err := logstore.EncodeBatch(logstore.BatchSpec{
		PartitionLeaderEpoch: -1, ProducerID: ip.ProducerID, ProducerEpoch: ip.ProducerEpoch, BaseSequence: 0,
	}, []logstore.Record{{Value: []byte("a")}, {Value: []byte("b")}})
	if err != nil {
		t.Fatal(err)
	}
	produce := produceRequest(9, "dp", 0)
	produce.Topics[0].Partitions[0].Records = batch
	wantCode(t, "idempotent produce", b.do(produce).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, nil)

	result := func(resp kmsg.Response) kmsg.DescribeProducersResponseTopicPartition {
		return resp.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
	}
	rp := result(b.do(describeProducersRequest("dp", 0)))
	wantCode(t, "dp-0", rp.ErrorCode, nil)
	if len(rp.ActiveProducers) != 1 {
		t.Fatalf("producers %+v, want one", rp.ActiveProducers)
	}
	if p := rp.ActiveProducers[0]; p.ProducerID != ip.ProducerID || p.ProducerEpoch != int32(ip.ProducerEpoch) || p.LastSequence != 1 || p.CurrentTxnStartOffset != -1 {
		t.Errorf("producer %+v, want id %d epoch %d last sequence 1, no transaction", p, ip.ProducerID, ip.ProducerEpoch)
	}
	wantCode(t, "unknown topic", result(b.do(describeProducersRequest("nope", 0))).ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "partition 1 of 1", result(b.do(describeProducersRequest("dp", 1))).ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "as alice", result(b.as("alice", describeProducersRequest("dp", 0))).ErrorCode, kerr.TopicAuthorizationFailed)
}
