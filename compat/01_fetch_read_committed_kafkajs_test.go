package compat

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// kafkajs fetches read_committed by default: the answer carries the last
// stable offset (the high watermark, without transactions) and an empty,
// not null, list of aborted transactions, as Kafka sends.
func TestFetchReadCommitted(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	cl := newKgo(t, n.Addr())
	adm := newAdmin(t, n.Addr())
	const topic = "committed"
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)
	produceAll(t, cl, &kgo.Record{Topic: topic, Value: []byte("a")}, &kgo.Record{Topic: topic, Value: []byte("b")})

	for _, iso := range []int8{0, 1} {
		req := kmsg.NewPtrFetchRequest()
		req.IsolationLevel = iso
		req.MaxBytes = 1 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		wantCode(t, "fetch", p.ErrorCode, nil)
		if p.HighWatermark != 2 || p.LastStableOffset != 2 || len(p.RecordBatches) == 0 {
			t.Errorf("isolation %d: hw %d lso %d, %d record bytes", iso, p.HighWatermark, p.LastStableOffset, len(p.RecordBatches))
		}
		if iso == 1 && p.AbortedTransactions == nil {
			t.Errorf("read_committed: aborted transactions null, want an empty list")
		}
		if iso == 0 && p.AbortedTransactions != nil {
			t.Errorf("read_uncommitted: aborted transactions %v, want null", p.AbortedTransactions)
		}
	}
}
