package compat

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/testutil"
)

// startTwoBrokers starts brokers 1 and 2 on one etcd of their own.
func startTwoBrokers(t *testing.T) (*testutil.Node, *testutil.Node) {
	t.Helper()
	etcd, err := controller.StartEmbedded(controller.EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() })
	ep := etcd.Endpoints()[0]
	b1 := testutil.StartBroker(t, map[string]string{"node.id": "1", "etcd.endpoints": ep})
	b2 := testutil.StartBroker(t, map[string]string{"node.id": "2", "etcd.endpoints": ep})
	return b1, b2
}

// Two brokers on one external etcd form one cluster: each sees the other in
// Metadata, partitions are spread over both, and a client produces to and
// consumes from the leader of each partition.
func TestTwoBrokersShareOneCluster(t *testing.T) {
	b1, b2 := startTwoBrokers(t)

	cl := newKgo(t, b1.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := newAdmin(t, b2.Addr())
	const topic = "spread"
	createTopic(t, adm, topic, 4, nil)

	var md *kmsg.MetadataResponse
	testutil.Eventually(t, 10*time.Second, func() error {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t, 5*time.Second), cl)
		if err != nil {
			return err
		}
		if len(resp.Brokers) != 2 {
			return fmt.Errorf("%d brokers in Metadata", len(resp.Brokers))
		}
		md = resp
		return nil
	})
	leaders := map[int32]int{}
	for _, p := range md.Topics[0].Partitions {
		leaders[p.Leader]++
	}
	if leaders[1] != 2 || leaders[2] != 2 {
		t.Fatalf("partition leaders %v, want two partitions on each broker", leaders)
	}
	if md.ClusterID == nil || *md.ClusterID == "" {
		t.Fatal("no cluster id")
	}

	var recs []*kgo.Record
	for i := range 400 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 4), Value: []byte(fmt.Sprint(i))})
	}
	produceAll(t, cl, recs...)
	got := consumeExact(t, b2.Addr(), topic, map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0}, 400, 30*time.Second)
	seen := map[string]bool{}
	for _, r := range got {
		if i, err := strconv.Atoi(string(r.Value)); err != nil || int32(i%4) != r.Partition {
			t.Fatalf("record %s in partition %d", r.Value, r.Partition)
		}
		seen[string(r.Value)] = true
	}
	if len(seen) != 400 {
		t.Fatalf("consumed %d distinct records, want 400", len(seen))
	}
}
