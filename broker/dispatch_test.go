package broker_test

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
	"github.com/samsa-io/samsa/logstore"
)

// seedRequests are well-formed requests for every served key, aimed at the
// topic "fuzz", at several versions.
func seedRequests(tb testing.TB) [][]byte {
	batch, err := logstore.BuildBatch(0, logstore.CodecNone, []logstore.Record{{Key: []byte("k"), Value: []byte("v")}}, -1, -1, -1)
	if err != nil {
		tb.Fatal(err)
	}
	topic := "fuzz"
	var reqs []kmsg.Request
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = 1, 1000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	reqs = append(reqs, produce)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxBytes, fetch.MaxWaitMillis, fetch.SessionEpoch = 1<<20, 10, 0
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	reqs = append(reqs, fetch)

	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -3
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	reqs = append(reqs, lo)

	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &topic
	md.Topics = append(md.Topics, mt)
	reqs = append(reqs, md)

	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "fuzz2", 2, 1
	ct.Topics = append(ct.Topics, ctt)
	ct.ValidateOnly = true
	reqs = append(reqs, ct)

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	dc.Resources = append(dc.Resources, dr)
	reqs = append(reqs, dc)

	iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	ic.Name, ic.Value = "retention.ms", kmsg.StringPtr("1000000")
	ir.Configs = append(ir.Configs, ic)
	iac.Resources, iac.ValidateOnly = append(iac.Resources, ir), true
	reqs = append(reqs, iac)

	ofle := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = topic
	ot.Partitions = append(ot.Partitions, kmsg.NewOffsetForLeaderEpochRequestTopicPartition())
	ofle.Topics = append(ofle.Topics, ot)
	reqs = append(reqs, ofle)

	reqs = append(reqs, kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrInitProducerIDRequest(),
		kmsg.NewPtrDescribeClusterRequest(), kmsg.NewPtrDeleteRecordsRequest(), kmsg.NewPtrCreatePartitionsRequest(),
		kmsg.NewPtrAlterConfigsRequest())

	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	var out [][]byte
	for _, r := range reqs {
		for _, v := range []int16{r.MaxVersion(), r.MaxVersion() / 2, 4} {
			if v > r.MaxVersion() {
				continue
			}
			r.SetVersion(v)
			out = append(out, f.AppendRequest(nil, r, 1))
		}
	}
	return out
}

// TestDispatchSurvivesMutatedRequests sends well-formed requests of every
// served key with random bytes changed to a live broker: whatever a handler
// receives, it must answer or close the connection, never panic, and the
// broker must go on serving. (Deterministic, so CI runs the same inputs;
// the decoders themselves are fuzzed in package protocol and logstore.)
func TestDispatchSurvivesMutatedRequests(t *testing.T) {
	seeds := seedRequests(t)
	node := testutil.StartBroker(t, map[string]string{"auto.create.topics.enable": "true"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(node.Addr()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fuzz", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	r := rand.New(rand.NewPCG(2026, 11))
	for i := range 2000 {
		frame := append([]byte(nil), seeds[r.IntN(len(seeds))]...)
		for range 1 + r.IntN(4) {
			frame[4+r.IntN(len(frame)-4)] = byte(r.Uint32())
		}
		if r.IntN(8) == 0 { // sometimes cut it short
			frame = frame[:4+r.IntN(len(frame)-4)]
		}
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		sendOne(t, node.Addr(), frame)
		if n := node.Panics(); n != 0 {
			t.Fatalf("input %d: %d handler panics on %x", i, n, frame)
		}
	}
	// Still serving.
	cl, err = kgo.NewClient(kgo.SeedBrokers(node.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fuzz", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("after the mutated requests: %v", err)
	}
}

// sendOne writes one frame on a fresh connection and reads the answer, if
// any, within a second (long polls and acks=0 produce answer nothing).
func sendOne(t *testing.T, addr string, frame []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("broker stopped accepting: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write(frame); err != nil {
		return
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err == nil {
		io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(size[:])))
	}
}
