package compat

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/broker"
	"github.com/samsa-io/samsa/internal/testutil"
)

// Fetch from the closest replica (KIP-392): with Kafka's
// RackAwareReplicaSelector, the leader answers a consumer in another rack
// with PreferredReadReplica naming the in-sync follower in the consumer's
// rack and no records; franz-go with kgo.Rack then reads everything from
// that follower (its sendfile counter moves; a follower serves no other
// reads), up to the follower's high watermark.
func TestClusterFetchFromClosestReplica(t *testing.T) {
	racks := map[int32]string{1: "rack-a", 2: "rack-b", 3: "rack-c"}
	c := testutil.StartClusterWith(t, 3, map[string]string{
		"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
	}, func(id int32, cfg *broker.Config) {
		p, err := cfg.Props.With(map[string]string{"broker.rack": racks[id]})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Props = p
	})
	const topic = "closest"
	createReplicatedTopic(t, c, topic, 1, 3, nil)
	mp := waitISR(t, c, topic, 0, 3, 30*time.Second)
	var follower int32
	for _, id := range mp.Replicas {
		if id != mp.Leader {
			follower = id
			break
		}
	}
	cl := newClusterKgo(t, c, kgo.ProducerLinger(0))
	const n = 50
	for i := range n {
		produceAll(t, cl, &kgo.Record{Topic: topic, Value: []byte("r" + itoa(i))})
	}
	// The follower has the records and the high watermark.
	waitISR(t, c, topic, 0, 3, 30*time.Second)

	// The leader points a consumer of the follower's rack there.
	lcl := newKgo(t, c.Node(mp.Leader).Addr())
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.Rack = -1, 1<<20, racks[follower]
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID(t, newAdmin(t, c.LiveAddr()), topic)
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	broker := lcl.Broker(int(mp.Leader))
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), broker)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Topics[0].Partitions[0]
	if got.PreferredReadReplica != follower || len(got.RecordBatches) != 0 || got.ErrorCode != 0 {
		t.Errorf("leader's answer to a consumer in %s: preferred %d, %d record bytes, error %d; want %d, none, none",
			racks[follower], got.PreferredReadReplica, len(got.RecordBatches), got.ErrorCode, follower)
	}
	// A consumer in the leader's own rack stays on the leader.
	req.Rack = racks[mp.Leader]
	if resp, err = req.RequestWith(testCtx(t, 10*time.Second), broker); err != nil {
		t.Fatal(err)
	} else if p := resp.Topics[0].Partitions[0]; p.PreferredReadReplica != -1 || len(p.RecordBatches) == 0 {
		t.Errorf("a consumer in the leader's rack: preferred %d, %d record bytes; want -1 and records", p.PreferredReadReplica, len(p.RecordBatches))
	}

	before := c.Node(follower).SendfileBytes()
	recs := consumeExact(t, c.LiveAddr(), topic, map[int32]int64{0: 0}, n, 30*time.Second,
		kgo.SeedBrokers(c.Addrs()...), kgo.Rack(racks[follower]))
	for i, r := range recs {
		if string(r.Value) != "r"+itoa(i) {
			t.Fatalf("record %d: %q", i, r.Value)
		}
	}
	if after := c.Node(follower).SendfileBytes(); after <= before {
		t.Errorf("the follower in the consumer's rack sent %d record bytes; the consumer did not read from it", after-before)
	}
}
