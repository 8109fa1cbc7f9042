package compat

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// Each partition of a Fetch gets its own PartitionMaxBytes within what the
// response's MaxBytes has left; in a session, partitions that returned
// records go to the back, so a backlog on one cannot starve the others.
func TestFetchByteLimitsAcrossPartitions(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := newAdmin(t, n.Addr())
	const topic = "limits"
	createTopic(t, adm, topic, 3, nil)
	id := topicID(t, adm, topic)
	val := bytes.Repeat([]byte("v"), 10<<10)
	var recs []*kgo.Record
	for p := range int32(3) {
		for range 250 { // 2.5 MB a partition, in batches of about 60 KB
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: val})
		}
	}
	produceAll(t, cl, recs...)

	var lastSession int32
	fetch := func(sessionID, epoch, maxBytes int32, parts []int32) map[int32]int {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes = maxBytes
		req.SessionID, req.SessionEpoch = sessionID, epoch
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(parts) > 0 {
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("Fetch: %v, code %d", err, resp.ErrorCode)
		}
		lastSession = resp.SessionID
		sizes := map[int32]int{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				sizes[rp.Partition] = len(rp.RecordBatches)
			}
		}
		return sizes
	}

	// Plenty of response budget: every partition returns about its own 1 MiB.
	sizes := fetch(0, -1, 50<<20, []int32{0, 1, 2})
	for p := range int32(3) {
		if sizes[p] < 900<<10 || sizes[p] > 1<<20 {
			t.Errorf("partition %d returned %d bytes, want about 1 MiB (all sizes %v)", p, sizes[p], sizes)
		}
	}
	// A 1.5 MiB response budget: the first partition fills 1 MiB, the
	// second gets what is left, the third nothing.
	sizes = fetch(0, -1, 1536<<10, []int32{0, 1, 2})
	if sizes[0] < 900<<10 || sizes[1] < 400<<10 || sizes[1] > 512<<10+100 || sizes[2] != 0 {
		t.Errorf("with a 1.5 MiB budget: %v", sizes)
	}

	// A session with a 1 MiB budget: partition 0 fills the first answer;
	// then it moves to the back, and the next answer is partition 1's
	// although nobody moved an offset.
	sizes = fetch(0, 0, 1<<20, []int32{0, 1, 2})
	if sizes[0] < 900<<10 || sizes[1]+sizes[2] > 100<<10 {
		t.Fatalf("first session fetch: %v, want partition 0 to fill it", sizes)
	}
	sid := lastSession
	if sid == 0 {
		t.Fatal("no session opened")
	}
	sizes = fetch(sid, 1, 1<<20, nil)
	if sizes[1] < 900<<10 || sizes[0] != 0 {
		t.Fatalf("second session fetch: %v, want partition 1 to fill it", sizes)
	}
	sizes = fetch(sid, 2, 1<<20, nil)
	if sizes[2] < 900<<10 {
		t.Fatalf("third session fetch: %v, want partition 2 to fill it", sizes)
	}
}
