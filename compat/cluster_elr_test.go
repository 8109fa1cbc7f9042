package compat

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// elrState is a partition's leader, ISR, ELR and last known leader, as
// DescribeTopicPartitions answers them.
type elrState struct {
	leader              int32
	isr, elr, lastKnown []int32
}

func (s elrState) String() string {
	return fmt.Sprintf("leader %d ISR %v ELR %v last known %v", s.leader, s.isr, s.elr, s.lastKnown)
}

func describeELR(t *testing.T, addr, topic string) (elrState, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return elrState{}, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	req.ResponsePartitionLimit = 10
	resp, err := req.RequestWith(testCtx(t, 5*time.Second), cl)
	if err != nil {
		return elrState{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return elrState{}, fmt.Errorf("DescribeTopicPartitions: %+v", resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil && err != kerr.LeaderNotAvailable {
		return elrState{}, err
	}
	return elrState{p.LeaderID, p.ISR, p.EligibleLeaderReplicas, p.LastKnownELR}, nil
}

// KIP-966 through real clients, on four brokers and a topic of
// replication factor 3 (brokers 1-3) with min.insync.replicas 2: broker 3
// and then broker 2 shut down cleanly, and broker 2 enters the ELR; the
// high watermark stops while the ISR is below 2, so what a producer with
// acks=1 writes meanwhile is not served; broker 1, the last in the ISR,
// crashes. It comes back first, after an unclean shutdown (its unflushed
// tail could be lost): it is not elected, and kafka-topics.sh --describe
// shows the ELR. Broker 2 comes back and leads from the ELR, with every
// record acknowledged with acks=all, and nothing that was never
// committed.
func TestClusterELRUncleanShutdownNotElected(t *testing.T) {
	c := testutil.StartCluster(t, 4, nil)
	const topic = "elr"
	admin := newClusterKgo(t, c)
	req := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1, 2, 3}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("2")
	ct.Configs = append(ct.Configs, cfg)
	req.Topics = append(req.Topics, ct)
	resp, err := req.RequestWith(testCtx(t, 30*time.Second), admin)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v %+v", err, resp)
	}
	observer := c.Node(4).Addr() // holds no replica: answers throughout
	await := func(what string, ok func(elrState) bool) elrState {
		t.Helper()
		var st elrState
		testutil.Eventually(t, 60*time.Second, func() error {
			var err error
			if st, err = describeELR(t, observer, topic); err != nil {
				return err
			}
			if !ok(st) {
				return fmt.Errorf("%s: %v", what, st)
			}
			return nil
		})
		return st
	}
	await("created", func(s elrState) bool { return s.leader == 1 && len(s.isr) == 3 && len(s.elr) == 0 })

	produce := func(acks kgo.Acks, from, n int) {
		t.Helper()
		opts := []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(acks), kgo.ProducerLinger(0)}
		if acks != kgo.AllISRAcks() {
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
		cl := newClusterKgo(t, c, opts...)
		for i := from; i < from+n; i++ {
			if err := cl.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Topic: topic, Partition: 0, Value: []byte(itoa(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
		cl.Close()
	}
	produce(kgo.AllISRAcks(), 0, 100)
	c.Node(3).Stop()
	await("3 stopped", func(s elrState) bool { return slices.Equal(s.isr, []int32{1, 2}) && len(s.elr) == 0 })
	produce(kgo.AllISRAcks(), 100, 100)
	c.Node(2).Stop()
	await("2 stopped", func(s elrState) bool {
		return s.leader == 1 && slices.Equal(s.isr, []int32{1}) && slices.Equal(s.elr, []int32{2})
	})
	// Under min ISR: acks=all is refused, acks=1 is written but the high
	// watermark stays at 200.
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(0), kgo.ProducerLinger(0))
	if err := cl.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Topic: topic, Partition: 0, Value: []byte("refused")}).FirstErr(); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all under min ISR: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	cl.Close()
	produce(kgo.LeaderAck(), 200, 50)
	if end := listEnd(t, c.Node(1).Addr(), topic); end != 200 {
		t.Fatalf("high watermark %d after acks=1 writes under min ISR, want 200", end)
	}
	c.Node(1).Kill()
	await("1 crashed", func(s elrState) bool {
		return s.leader == -1 && len(s.isr) == 0 && slices.Equal(s.elr, []int32{1, 2}) && slices.Equal(s.lastKnown, []int32{1})
	})
	c.Node(1).Restart()
	st := await("1 back after an unclean shutdown", func(s elrState) bool { return slices.Equal(s.elr, []int32{2}) })
	if st.leader != -1 || len(st.isr) != 0 || !slices.Equal(st.lastKnown, []int32{1}) {
		t.Fatalf("after broker 1's unclean shutdown: %v, want no leader, ELR [2], last known [1]", st)
	}
	out := runKafkaTool(t, testCtx(t, 3*time.Minute), "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", observer, "--describe", "--topic", topic)
	for _, want := range []string{"Leader: none", "Replicas: 1,2,3", "Elr: 2", "LastKnownElr: 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("kafka-topics.sh --describe: no %q in\n%s", want, out)
		}
	}
	if st, err := describeELR(t, observer, topic); err != nil || st.leader != -1 {
		t.Fatalf("broker 1 was elected after its unclean shutdown while broker 2 is in the ELR: %v %v", st, err)
	}
	c.Node(2).Restart()
	await("2 back: elected from the ELR", func(s elrState) bool { return s.leader == 2 && len(s.elr) == 0 })
	c.Node(3).Restart()
	await("every replica back in the ISR", func(s elrState) bool { return len(s.isr) == 3 })

	// Every acks=all record, at its offset, and none of the uncommitted.
	rd := newClusterKgo(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 200 {
		fs := rd.PollFetches(testCtx(t, 30*time.Second))
		if err := fs.Err(); err != nil {
			t.Fatalf("consume after %d records: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(len(got)) || string(r.Value) != itoa(len(got)) {
				t.Fatalf("record at offset %d: %q, want offset %d value %q", r.Offset, r.Value, len(got), itoa(len(got)))
			}
			got = append(got, string(r.Value))
		})
	}
	if end := listEnd(t, c.LiveAddr(), topic); end != 200 {
		t.Fatalf("log end %d under broker 2's leadership, want 200 (the acks=1 tail was never committed)", end)
	}
}

// listEnd is the partition's end offset for a read_uncommitted consumer
// (its high watermark), as ListOffsets answers through addr.
func listEnd(t *testing.T, addr, topic string) int64 {
	t.Helper()
	var end int64
	testutil.Eventually(t, 30*time.Second, func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			return err
		}
		defer cl.Close()
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = 0, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t, 5*time.Second), cl)
		if err != nil {
			return err
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return err
		}
		end = p.Offset
		return nil
	})
	return end
}

// min.insync.replicas above a topic's replication factor is capped at it,
// as Kafka's effective min ISR: an acks=all write to a topic of one
// replica with min.insync.replicas 2 is acknowledged, and consumed.
func TestMinISRCappedAtReplicationFactor(t *testing.T) {
	n := admBroker(t, nil)
	topic := admTopic("capped")
	adm := kadm.NewClient(admClient(t, n.Addr()))
	resp, err := adm.CreateTopic(testCtx(t, 30*time.Second), 1, 1, map[string]*string{"min.insync.replicas": strp("2")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic: %v %v", err, resp.Err)
	}
	cl := admClient(t, n.Addr(), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := cl.ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Topic: topic, Value: []byte("one")}).FirstErr(); err != nil {
		t.Fatalf("acks=all to one replica with min.insync.replicas 2: %v, want acknowledged", err)
	}
	if end := listEnd(t, n.Addr(), topic); end != 1 {
		t.Fatalf("high watermark %d, want 1", end)
	}
}
