package compat

// Cluster links (issue 29): topics of a source cluster mirrored into samsa
// at the same offsets, compared batch by batch and record by record, then
// promoted. The source is Apache Kafka 4.4 (internal/kafkaref) or another
// samsa cluster.

import (
	"bytes"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/admin"
	"github.com/samsa-io/samsa/internal/cli"
	"github.com/samsa-io/samsa/internal/poll"
	"github.com/samsa-io/samsa/internal/testutil"
)

// linkCLI runs `samsa link ARGS --bootstrap-server addr` and returns its
// output; a failure fails the test unless wantFail.
func linkCLI(t *testing.T, addr string, wantFail bool, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append(append([]string{"link"}, args...), "--bootstrap-server", addr, "--timeout", "90s")
	code := cli.Run(testCtx(t, 2*time.Minute), args, cli.IO{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
	if (code != 0) != wantFail {
		t.Fatalf("samsa %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	return stdout.String() + stderr.String()
}

// linkDescribe is `samsa link describe NAME --format json`.
func linkDescribe(t *testing.T, addr, name string) admin.Link {
	t.Helper()
	var l admin.Link
	out := linkCLI(t, addr, false, "describe", name, "--format", "json")
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("describe: %v\n%s", err, out)
	}
	return l
}

// linkSourceData writes to the source what the mirror must copy: a
// plain topic of 3 partitions written by idempotent producers with each
// compression codec, and a transactional topic with committed and
// aborted transactions. It returns the topics.
func linkSourceData(t *testing.T, src string, prefix string) (plain, txn string) {
	t.Helper()
	adm, _ := admAdmin(t, src)
	plain, txn = prefix+"-plain", prefix+"-txn"
	admCreate(t, adm, plain, 3, 1, nil)
	admCreate(t, adm, txn, 2, 1, nil)
	ctx := testCtx(t, 2*time.Minute)
	for i, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		cl := newKgo(t, src, kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic(plain), kgo.ProducerLinger(5*time.Millisecond))
		var recs []*kgo.Record
		for j := range 40 {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", j%7)), Value: bytes.Repeat([]byte{byte('a' + i)}, 50+j),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i, j))}}, Partition: int32(j % 3)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	tcl := newKgo(t, src, kgo.TransactionalID(prefix+"-tx"), kgo.DefaultProduceTopic(txn), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for round := range 6 {
		if err := tcl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 10 {
			r := &kgo.Record{Value: []byte(fmt.Sprintf("r%d-%d", round, j)), Partition: int32(j % 2)}
			if err := tcl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := tcl.EndTransaction(ctx, kgo.TransactionEndTry(round%3 != 1)); err != nil {
			t.Fatalf("end txn %d: %v", round, err)
		}
	}
	return plain, txn
}

// linkEnds are the end offsets (high watermarks) of a topic's partitions.
func linkEnds(t *testing.T, addr, topic string) (map[int32]int64, error) {
	t.Helper()
	adm, _ := admAdmin(t, addr)
	los, err := adm.ListEndOffsets(testCtx(t, 10*time.Second), topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	var errs []error
	los.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out, errors.Join(errs...)
}

// linkWaitCaughtUp waits until the mirror has every partition of the
// source topic up to the source's end.
func linkWaitCaughtUp(t *testing.T, src, dst, topic string) {
	t.Helper()
	want, err := linkEnds(t, src, topic)
	if err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 60*time.Second, func() error {
		got, err := linkEnds(t, dst, topic)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("mirror ends %v, source %v", got, want)
		}
		return nil
	})
}

// linkBatches fetches every batch of a partition (read_uncommitted) from
// its log start, from its leader, with the partition leader epoch zeroed (the one field a
// mirror rewrites, outside the CRC).
func linkBatches(t *testing.T, addr, topic string, partition int32, end int64) [][]byte {
	t.Helper()
	cl := newKgo(t, addr)
	ctx := testCtx(t, 30*time.Second)
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("metadata %s: %v", topic, err)
	}
	var leader int32 = -1
	for _, p := range mresp.Topics[0].Partitions {
		if p.Partition == partition {
			leader = p.Leader
		}
	}
	var out [][]byte
	for off := linkStart(t, addr, topic, partition); off < end; {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, mresp.Topics[0].TopicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, off, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kr, err := cl.Broker(int(leader)).Request(ctx, req)
		if err != nil {
			t.Fatalf("fetch %s-%d@%d: %v", topic, partition, off, err)
		}
		resp := kr.(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch %s-%d: %+v", topic, partition, resp)
		}
		fp := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(fp.ErrorCode); err != nil {
			t.Fatalf("fetch %s-%d@%d: %v", topic, partition, off, err)
		}
		b := fp.RecordBatches
		moved := false
		for len(b) >= 61 {
			size := int(uint32(b[8])<<24|uint32(b[9])<<16|uint32(b[10])<<8|uint32(b[11])) + 12
			if size > len(b) {
				break
			}
			batch := bytes.Clone(b[:size])
			var h kmsg.RecordBatch
			if err := h.ReadFrom(batch); err != nil {
				t.Fatal(err)
			}
			b = b[size:]
			if h.FirstOffset+int64(h.LastOffsetDelta) < off {
				continue
			}
			copy(batch[12:16], []byte{0, 0, 0, 0})
			out = append(out, batch)
			off, moved = h.FirstOffset+int64(h.LastOffsetDelta)+1, true
		}
		if !moved {
			t.Fatalf("fetch %s-%d@%d: no progress below %d", topic, partition, off, end)
		}
	}
	return out
}

// linkCompare checks that the mirror holds the source's batches, byte for
// byte but the leader epoch, and that read_committed consumers of both
// see the same records at the same offsets.
func linkCompare(t *testing.T, src, dst, topic string) {
	t.Helper()
	ends, err := linkEnds(t, src, topic)
	if err != nil {
		t.Fatal(err)
	}
	lastVisible := map[int32]int64{}
	for p, end := range ends {
		sb, mb := linkBatches(t, src, topic, p, end), linkBatches(t, dst, topic, p, end)
		if len(sb) != len(mb) {
			t.Fatalf("%s-%d: %d batches on the source, %d on the mirror", topic, p, len(sb), len(mb))
		}
		for i := range sb {
			if !bytes.Equal(sb[i], mb[i]) {
				t.Fatalf("%s-%d: batch %d differs", topic, p, i)
			}
		}
		lastVisible[p] = linkLastVisible(t, sb)
	}
	read := func(addr string) []string {
		cl := newKgo(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var out []string
		done := map[int32]bool{}
		for p, o := range lastVisible {
			if o < 0 {
				done[p] = true
			}
		}
		ctx := testCtx(t, 60*time.Second)
		for len(done) < len(ends) {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("reading %s from %s: %v (%d records)", topic, addr, err, len(out))
			}
			fs.EachRecord(func(r *kgo.Record) {
				out = append(out, fmt.Sprintf("%d/%d %s=%s %v %d", r.Partition, r.Offset, r.Key, r.Value, r.Headers, r.Timestamp.UnixMilli()))
				if r.Offset >= lastVisible[r.Partition] {
					done[r.Partition] = true
				}
			})
		}
		return out
	}
	s, m := read(src), read(dst)
	slices.Sort(s)
	slices.Sort(m)
	if len(s) != len(m) {
		t.Fatalf("%s read_committed: source %d records, mirror %d", topic, len(s), len(m))
	}
	for i := range s {
		if s[i] != m[i] {
			t.Fatalf("%s read_committed: record %d: source %s, mirror %s", topic, i, s[i], m[i])
		}
	}
}

// linkScenario mirrors a source's topics into dst, compares them, checks
// that the mirror refuses produce, then promotes the plain topic and
// fails over the transactional one.
func linkScenario(t *testing.T, src, dst, prefix string) {
	plain, txn := linkSourceData(t, src, prefix)
	linkCLI(t, dst, false, "create", "l1", "--source-bootstrap-servers", src, "--topics", prefix+"-.*",
		"--groups", prefix+"-g.*", "--config", "metadata.refresh.interval.ms=100")
	if out := linkCLI(t, dst, true, "create", "l1", "--source-bootstrap-servers", src, "--topics", "x"); !strings.Contains(out, "already exists") {
		t.Fatalf("a second create: %s", out)
	}
	if out := linkCLI(t, dst, false, "list"); !strings.Contains(out, "l1") {
		t.Fatalf("list: %s", out)
	}
	linkWaitCaughtUp(t, src, dst, plain)
	linkWaitCaughtUp(t, src, dst, txn)
	linkCompare(t, src, dst, plain)
	linkCompare(t, src, dst, txn)

	// Produce to a mirror is refused, saying why.
	dcl := newKgo(t, dst, kgo.DefaultProduceTopic(plain))
	tds, err := kadm.NewClient(dcl).ListTopics(testCtx(t, 10*time.Second), plain)
	if err != nil {
		t.Fatal(err)
	}
	rp := produceRaw(t, dcl, plain, tds[plain].ID, 0, rawBatch(-1, -1, -1, time.Now().UnixMilli(), []byte("x")))
	if rp.ErrorCode != kerr.InvalidRequest.Code || rp.ErrorMessage == nil || !strings.Contains(*rp.ErrorMessage, "mirror") {
		t.Fatalf("produce to a mirror: %d %v", rp.ErrorCode, rp.ErrorMessage)
	}

	// What the source gets after the link was made is copied too.
	scl := newKgo(t, src, kgo.DefaultProduceTopic(plain))
	for i := range 30 {
		if err := scl.ProduceSync(testCtx(t, 10*time.Second), &kgo.Record{Value: []byte(fmt.Sprint("late", i)), Partition: int32(i % 3)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	linkWaitCaughtUp(t, src, dst, plain)
	l := linkDescribe(t, dst, "l1")
	if len(l.Mirrors) != 2 || len(l.Partitions) != 5 {
		t.Fatalf("describe: %+v", l)
	}

	// A group consumes part of the topic on the source and commits; its
	// offsets are copied while it is not active here.
	group := prefix + "-g1"
	committed := linkConsumeSome(t, src, plain, group, 100)
	poll.Eventually(t, 30*time.Second, func() error {
		got := linkCommitted(t, dst, group, plain)
		if fmt.Sprint(got) != fmt.Sprint(committed) {
			return fmt.Errorf("group offsets here %v, on the source %v", got, committed)
		}
		return nil
	})

	// promote: caught up to the source's end, then writable.
	ends, _ := linkEnds(t, src, plain)
	out := linkCLI(t, dst, false, "promote", "l1", "--topics", plain)
	if !strings.Contains(out, "promoted") {
		t.Fatalf("promote: %s", out)
	}
	// The group moved here resumes where it committed on the source:
	// nothing lost, nothing read twice.
	resumed := linkConsumeFrom(t, dst, plain, group, committed, ends)
	for p, end := range ends {
		if got := resumed[p]; len(got) != int(end-committed[p]) || len(got) > 0 && got[0] != committed[p] {
			t.Fatalf("partition %d resumed at %v (%d records), committed %d, end %d", p, got[:min(len(got), 1)], len(got), committed[p], end)
		}
	}
	// A producer of this cluster is never given an id whose state the
	// mirror holds (its first batch would be OUT_OF_ORDER_SEQUENCE).
	ireq := kmsg.NewPtrInitProducerIDRequest()
	iresp, err := ireq.RequestWith(testCtx(t, 10*time.Second), dcl)
	if err != nil || iresp.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v %v", err, iresp)
	}
	if high := linkMaxProducerID(t, src, plain, txn); iresp.ProducerID <= high {
		t.Fatalf("InitProducerID here gave %d, a producer id the mirror copied (up to %d)", iresp.ProducerID, high)
	}
	res := dcl.ProduceSync(testCtx(t, 10*time.Second), &kgo.Record{Value: []byte("after"), Partition: 0})
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce after promote: %v", err)
	}
	if r := res[0].Record; r.Offset != ends[r.Partition] {
		t.Fatalf("produce after promote at %d, the source ended at %d", r.Offset, ends[r.Partition])
	}
	// failover: at once.
	linkCLI(t, dst, false, "failover", "l1", "--topics", txn)
	if err := newKgo(t, dst, kgo.DefaultProduceTopic(txn)).ProduceSync(testCtx(t, 10*time.Second), &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after failover: %v", err)
	}
	linkCLI(t, dst, false, "delete", "l1")
	if out := linkCLI(t, dst, false, "list"); strings.Contains(out, "l1") {
		t.Fatalf("list after delete: %s", out)
	}
}

func TestLinkFromSamsa(t *testing.T) {
	t.Parallel()
	fast := map[string]string{"group.initial.rebalance.delay.ms": "0"}
	src := testutil.StartBroker(t, fast)
	dst := testutil.StartBroker(t, fast)
	linkScenario(t, src.Addr(), dst.Addr(), admTopic("lnk"))
}

func TestLinkFromKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRefWith(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	dst := testutil.StartBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	linkScenario(t, kb.Addr, dst.Addr(), admTopic("lnk"))
}

// linkLastVisible is the offset of the last record of batches that a
// read_committed consumer sees (-1 for none): data outside transactions
// and in committed ones.
func linkLastVisible(t *testing.T, batches [][]byte) int64 {
	t.Helper()
	last := int64(-1)
	pending := map[int64]int64{} // producer id -> last offset of its open transaction
	for _, raw := range batches {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			t.Fatal(err)
		}
		end := b.FirstOffset + int64(b.LastOffsetDelta)
		txnl, control := b.Attributes&0x10 != 0, b.Attributes&0x20 != 0
		switch {
		case control:
			var r kmsg.Record
			if err := r.ReadFrom(b.Records); err != nil || len(r.Key) < 4 {
				t.Fatalf("control record: %v", err)
			}
			if r.Key[3] == 1 { // COMMIT
				if o, ok := pending[b.ProducerID]; ok {
					last = max(last, o)
				}
			}
			delete(pending, b.ProducerID)
		case txnl:
			pending[b.ProducerID] = end
		default:
			last = max(last, end)
		}
	}
	return last
}

// linkConsumeSome consumes about n records of topic in group, commits
// what it consumed and leaves; it returns the committed offsets.
func linkConsumeSome(t *testing.T, addr, topic, group string, n int) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(append(kgoOpts(addr), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t, 60*time.Second)
	for got := 0; got < n; {
		fs := cl.PollRecords(ctx, n-got)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming %s: %v", topic, err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	return linkCommitted(t, addr, group, topic)
}

// linkCommitted are a group's committed offsets of topic.
func linkCommitted(t *testing.T, addr, group, topic string) map[int32]int64 {
	t.Helper()
	adm, _ := admAdmin(t, addr)
	os, err := adm.FetchOffsets(testCtx(t, 10*time.Second), group)
	if err != nil {
		return nil
	}
	out := map[int32]int64{}
	os.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			out[o.Partition] = o.At
		}
	})
	return out
}

// linkConsumeFrom consumes topic in group from its committed offsets
// (starts, expected) up to ends and returns the offsets read by
// partition.
func linkConsumeFrom(t *testing.T, addr, topic, group string, starts, ends map[int32]int64) map[int32][]int64 {
	t.Helper()
	cl := newKgo(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	out := map[int32][]int64{}
	ctx := testCtx(t, 60*time.Second)
	done := func() bool {
		for p, end := range ends {
			if o := out[p]; starts[p] < end && (len(o) == 0 || o[len(o)-1] < end-1) {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming %s here: %v (%v)", topic, err, out)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < ends[r.Partition] {
				out[r.Partition] = append(out[r.Partition], r.Offset)
			}
		})
	}
	return out
}

// linkMaxProducerID is the highest producer id in the topics' batches.
func linkMaxProducerID(t *testing.T, addr string, topics ...string) int64 {
	t.Helper()
	high := int64(-1)
	for _, topic := range topics {
		ends, err := linkEnds(t, addr, topic)
		if err != nil {
			t.Fatal(err)
		}
		for p, end := range ends {
			for _, raw := range linkBatches(t, addr, topic, p, end) {
				var b kmsg.RecordBatch
				if err := b.ReadFrom(raw); err != nil {
					t.Fatal(err)
				}
				high = max(high, b.ProducerID)
			}
		}
	}
	return high
}

// linkProduce writes n records to a partition, in batches of ten.
func linkProduce(t *testing.T, addr, topic string, partition int32, n int) {
	t.Helper()
	cl := newKgo(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ManualFlushing())
	ctx := testCtx(t, 10*time.Second)
	for i := 0; i < n; i += 10 {
		k := min(i+10, n) - i
		errs := make(chan error, k)
		for j := i; j < i+k; j++ {
			cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint("v", j)), Partition: partition}, func(_ *kgo.Record, err error) { errs <- err })
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
		for range k {
			if err := <-errs; err != nil {
				t.Fatalf("produce to %s: %v", topic, err)
			}
		}
	}
}

// linkStart is a partition's log start offset.
func linkStart(t *testing.T, addr, topic string, partition int32) int64 {
	t.Helper()
	adm, _ := admAdmin(t, addr)
	los, err := adm.ListStartOffsets(testCtx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := los.Lookup(topic, partition)
	return o.Offset
}

// The mirror follows its source: a log start inside a batch and moved
// later by DeleteRecords, topics created on the source after the link,
// partitions added there; and stops with an error, never diverging, when
// the source's offsets go back, when a topic here is not a mirror, when
// the source cannot be reached.
func TestLinkFollowsSource(t *testing.T) {
	t.Parallel()
	src := testutil.StartBroker(t, nil).Addr()
	dstNode := testutil.StartBroker(t, map[string]string{"samsa.http.listener": "127.0.0.1:0"})
	dst := dstNode.Addr()
	prefix := admTopic("lnkf")
	sadm, _ := admAdmin(t, src)
	dadm, _ := admAdmin(t, dst)
	a, b, c, own := prefix+"-a", prefix+"-b", prefix+"-c", prefix+"-own"
	admCreate(t, sadm, a, 1, 1, nil)
	admCreate(t, sadm, b, 1, 1, nil)
	admCreate(t, sadm, own, 1, 1, nil)
	admCreate(t, dadm, own, 1, 1, nil) // here already, not a mirror
	linkProduce(t, src, a, 0, 30)
	linkProduce(t, src, b, 0, 20)
	deleteTo := func(topic string, off int64) {
		rs, err := sadm.DeleteRecords(testCtx(t, 10*time.Second), kadm.Offsets{topic: {0: {At: off}}})
		if err != nil || rs.Error() != nil {
			t.Fatalf("DeleteRecords %s: %v %v", topic, err, rs.Error())
		}
	}
	deleteTo(a, 15) // inside the batch 10-19
	linkCLI(t, dst, false, "create", "f", "--source-bootstrap-servers", src, "--topics", prefix+"-.*",
		"--config", "metadata.refresh.interval.ms=100")
	linkCLI(t, dst, false, "create", "gone", "--source-bootstrap-servers", "127.0.0.1:1", "--topics", ".*",
		"--config", "metadata.refresh.interval.ms=100")
	linkWaitCaughtUp(t, src, dst, a)
	linkWaitCaughtUp(t, src, dst, b)
	if got := linkStart(t, dst, a, 0); got != 15 {
		t.Fatalf("mirror log start %d, the source's 15", got)
	}
	sb, mb := linkBatches(t, src, a, 0, 30), linkBatches(t, dst, a, 0, 30)
	if len(sb) != len(mb) {
		t.Fatalf("%d batches on the source, %d on the mirror", len(sb), len(mb))
	}
	for i := range sb {
		if !bytes.Equal(sb[i], mb[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	deleteTo(a, 25)
	poll.Eventually(t, 30*time.Second, func() error {
		linkProduce(t, src, a, 0, 1) // a fetch answer carries the new start
		if got := linkStart(t, dst, a, 0); got != 25 {
			return fmt.Errorf("mirror log start %d, the source's 25", got)
		}
		return nil
	})

	// /metrics has each mirror partition's lag.
	poll.Eventually(t, 30*time.Second, func() error {
		resp, err := http.Get("http://" + dstNode.HTTPAddr() + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		for _, want := range []string{
			fmt.Sprintf(`samsa_cluster_link_lag_records{link="f",partition="0",topic=%q} 0`, a),
			fmt.Sprintf(`samsa_cluster_link_source_end_offset{link="f",partition="0",topic=%q} `, b),
		} {
			if !strings.Contains(string(body), want) {
				return fmt.Errorf("/metrics lacks %s", want)
			}
		}
		return nil
	})

	// A topic created on the source later, and partitions added there.
	admCreate(t, sadm, c, 1, 1, nil)
	linkProduce(t, src, c, 0, 10)
	if _, err := sadm.CreatePartitions(testCtx(t, 10*time.Second), 1, a); err != nil {
		t.Fatal(err)
	}
	linkProduce(t, src, a, 1, 10)
	linkWaitCaughtUp(t, src, dst, c)
	linkWaitCaughtUp(t, src, dst, a)

	// The topic that is not a mirror stays writable and is reported.
	if err := newKgo(t, dst, kgo.DefaultProduceTopic(own)).ProduceSync(testCtx(t, 10*time.Second), &kgo.Record{Value: []byte("mine")}).FirstErr(); err != nil {
		t.Fatalf("produce to a topic that is not a mirror: %v", err)
	}
	poll.Eventually(t, 30*time.Second, func() error {
		l := linkDescribe(t, dst, "f")
		if !strings.Contains(l.Errors[own], "not a mirror") {
			return fmt.Errorf("errors %v", l.Errors)
		}
		return nil
	})
	poll.Eventually(t, 30*time.Second, func() error {
		if l := linkDescribe(t, dst, "gone"); l.Errors[""] == "" {
			return errors.New("no error on a link whose source is unreachable")
		}
		return nil
	})

	// b deleted and created again on the source with more records: the
	// mirror notices the new topic id, keeps what it has and says why.
	if _, err := sadm.DeleteTopics(testCtx(t, 10*time.Second), b); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, func() error {
		r, err := sadm.CreateTopic(testCtx(t, 10*time.Second), 1, 1, nil, b)
		if err == nil {
			err = r.Err
		}
		return err
	})
	linkProduce(t, src, b, 0, 30)
	poll.Eventually(t, 30*time.Second, func() error {
		for _, p := range linkDescribe(t, dst, "f").Partitions {
			if p.Topic == b && strings.Contains(p.Error, "deleted and created again") {
				return nil
			}
		}
		return errors.New("no error for " + b + ", created again on the source")
	})
	if ends, err := linkEnds(t, dst, b); err != nil || ends[0] != 20 {
		t.Fatalf("mirror of %s ends at %v (%v), want 20", b, ends, err)
	}
}

// A three-broker samsa destination (replication factor 3) whose mirror
// leader is killed while the source is written to: the new leader goes on
// from its own end, and the mirror is still the source byte for byte.
// Then the source cluster is stopped and the link failed over.
func TestLinkMirrorLeaderKilled(t *testing.T) {
	t.Parallel()
	src := testutil.StartBroker(t, nil)
	dst := testutil.StartCluster(t, 3, map[string]string{"default.replication.factor": "3", "min.insync.replicas": "2"})
	topic := admTopic("lnkk")
	sadm, _ := admAdmin(t, src.Addr())
	admCreate(t, sadm, topic, 2, 1, nil)
	linkProduce(t, src.Addr(), topic, 0, 200)
	linkCLI(t, dst.LiveAddr(), false, "create", "k", "--source-bootstrap-servers", src.Addr(), "--topics", topic,
		"--config", "metadata.refresh.interval.ms=100")
	poll.Eventually(t, 60*time.Second, func() error {
		ends, err := linkEnds(t, dst.LiveAddr(), topic)
		if err != nil || ends[0] < 100 {
			return fmt.Errorf("mirror ends %v (%v)", ends, err)
		}
		return nil
	})
	// Writes go on on the source while the mirror leader of partition 0
	// is killed.
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		for i := range 20 {
			linkProduce(t, src.Addr(), topic, int32(i%2), 50)
		}
	}()
	mp, err := partitionMeta(t, dst.LiveAddr(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	dst.Node(mp.Leader).Kill()
	<-writing
	linkWaitCaughtUp(t, src.Addr(), dst.LiveAddr(), topic)
	if now, err := partitionMeta(t, dst.LiveAddr(), topic, 0); err != nil || now.Leader == mp.Leader {
		t.Fatalf("partition 0 still led by the killed broker %d: %+v %v", mp.Leader, now, err)
	}
	linkCompare(t, src.Addr(), dst.LiveAddr(), topic)
	if ends, _ := linkEnds(t, dst.LiveAddr(), topic); ends[0]+ends[1] != 1200 {
		t.Fatalf("mirror ends %v, want 1200 records", ends)
	}

	// The source is gone: fail over, and the mirror takes writes.
	ends, _ := linkEnds(t, src.Addr(), topic)
	src.Stop()
	out := linkCLI(t, dst.LiveAddr(), false, "failover", "k")
	if !strings.Contains(out, "promoted") {
		t.Fatalf("failover: %s", out)
	}
	res := newClusterKgo(t, dst, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner())).
		ProduceSync(testCtx(t, 30*time.Second), &kgo.Record{Value: []byte("after"), Partition: 1})
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce after failover: %v", err)
	}
	if got := res[0].Record.Offset; got != ends[1] {
		t.Fatalf("produce after failover at %d, the source ended at %d", got, ends[1])
	}
}

// A link reaches a secured source with Kafka's client properties: SCRAM
// over SASL_SSL with a PEM trust store, PLAIN over SASL_PLAINTEXT, and
// mTLS (ssl.client.auth=required) with a PEM key store given inline each
// mirror; a wrong password, and no client certificate for the mTLS
// source, are errors on the link.
func TestLinkSourceSecurity(t *testing.T) {
	t.Parallel()
	src, ca := saslBroker(t)
	addrs := src.Addrs()
	dst := testutil.StartBroker(t, nil).Addr()
	sadm, _ := admAdmin(t, addrs[0])
	topic := admTopic("lnks")
	admCreate(t, sadm, topic, 1, 1, nil)
	linkProduce(t, addrs[0], topic, 0, 30)
	up := kadm.UpsertSCRAM{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"}
	if res, err := sadm.AlterUserSCRAMs(testCtx(t, 10*time.Second), nil, []kadm.UpsertSCRAM{up}); err != nil || res["bob"].Err != nil {
		t.Fatalf("AlterUserSCRAMs: %v %+v", err, res)
	}
	trust := t.TempDir() + "/ca.pem"
	if err := os.WriteFile(trust, []byte(ca.CertPEM()), 0o600); err != nil {
		t.Fatal(err)
	}
	jaas := func(user, pass string) string {
		return fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username=%q password=%q;`, user, pass)
	}
	linkCLI(t, dst, false, "create", "bad", "--source-bootstrap-servers", addrs[1], "--topics", "nothing",
		"--source-config", "security.protocol=SASL_PLAINTEXT", "--source-config", "sasl.mechanism=SCRAM-SHA-512",
		"--source-config", "sasl.jaas.config="+jaas("bob", "wrong"), "--config", "metadata.refresh.interval.ms=100")
	linkCLI(t, dst, false, "create", "tls", "--source-bootstrap-servers", addrs[2], "--topics", topic,
		"--source-config", "security.protocol=SASL_SSL", "--source-config", "sasl.mechanism=SCRAM-SHA-512",
		"--source-config", "sasl.jaas.config="+jaas("bob", "bob-secret"),
		"--source-config", "ssl.truststore.type=PEM", "--source-config", "ssl.truststore.location="+trust,
		"--config", "metadata.refresh.interval.ms=100")
	plainTopic := admTopic("lnksp")
	admCreate(t, sadm, plainTopic, 2, 1, nil)
	linkProduce(t, addrs[0], plainTopic, 1, 20)
	linkCLI(t, dst, false, "create", "plain", "--source-bootstrap-servers", addrs[1], "--topics", plainTopic,
		"--source-config", "security.protocol=SASL_PLAINTEXT", "--source-config", "sasl.mechanism=PLAIN",
		"--source-config", `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";`,
		"--config", "metadata.refresh.interval.ms=100")

	// mTLS: the source's SSL listener requires a client certificate.
	mtls, mtlsAddr := tlsBroker(t, ca, map[string]string{"listener.name.ssl.ssl.client.auth": "required"})
	mtlsTopic := admTopic("lnksm")
	madm, _ := admAdmin(t, mtls.Addr())
	admCreate(t, madm, mtlsTopic, 1, 1, nil)
	linkProduce(t, mtls.Addr(), mtlsTopic, 0, 25)
	client := ca.Issue(t, pkix.Name{CommonName: "link"}, nil)
	tlsArgs := []string{"--source-config", "security.protocol=SSL", "--source-config", "ssl.truststore.type=PEM",
		"--source-config", "ssl.truststore.certificates=" + ca.CertPEM(), "--config", "metadata.refresh.interval.ms=100"}
	linkCLI(t, dst, false, append([]string{"create", "mtls", "--source-bootstrap-servers", mtlsAddr, "--topics", mtlsTopic,
		"--source-config", "ssl.keystore.type=PEM", "--source-config", "ssl.keystore.certificate.chain=" + client.CertPEM(),
		"--source-config", "ssl.keystore.key=" + client.KeyPEM(t)}, tlsArgs...)...)
	linkCLI(t, dst, false, append([]string{"create", "nocert", "--source-bootstrap-servers", mtlsAddr, "--topics", "nothing"}, tlsArgs...)...)

	linkWaitCaughtUp(t, addrs[0], dst, topic)
	linkCompare(t, addrs[0], dst, topic)
	linkWaitCaughtUp(t, addrs[0], dst, plainTopic)
	linkCompare(t, addrs[0], dst, plainTopic)
	linkWaitCaughtUp(t, mtls.Addr(), dst, mtlsTopic)
	linkCompare(t, mtls.Addr(), dst, mtlsTopic)
	poll.Eventually(t, 30*time.Second, func() error {
		l := linkDescribe(t, dst, "bad")
		if !strings.Contains(l.Errors[""], "SASL_AUTHENTICATION_FAILED") {
			return fmt.Errorf("errors of a link with a wrong password: %v", l.Errors)
		}
		if l := linkDescribe(t, dst, "nocert"); !strings.Contains(l.Errors[""], "certificate required") {
			return fmt.Errorf("a link without a client certificate to an mTLS source has no error: %+v", l)
		}
		if l := linkDescribe(t, dst, "mtls"); strings.Contains(l.Configs["source.ssl.keystore.key"], "PRIVATE KEY") {
			return fmt.Errorf("describe shows the key store's key")
		}
		if v := l.Configs["source.sasl.jaas.config"]; strings.Contains(v, "wrong") {
			return fmt.Errorf("describe shows the password: %s", v)
		}
		return nil
	})
}

// A compacted Apache Kafka 4.4 topic, its cleaner having left gaps, is
// mirrored at the same offsets into a compacted mirror (sync.configs):
// every record the mirror holds is the one written at its offset, and
// every key's latest record is the source's.
func TestLinkCompactedFromKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRefWith(t, map[string]string{"log.cleaner.backoff.ms": "100"})
	dst := testutil.StartBroker(t, nil).Addr()
	topic := admTopic("lnkc")
	adm, _ := admAdmin(t, kb.Addr)
	admCreate(t, adm, topic, 1, 1, map[string]*string{
		"cleanup.policy": kmsg.StringPtr("compact"), "segment.ms": kmsg.StringPtr("100"),
		"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01"), "min.compaction.lag.ms": kmsg.StringPtr("0"),
	})
	cl := newKgo(t, kb.Addr, kgo.DefaultProduceTopic(topic))
	written := map[int64]string{} // offset -> key=value
	round := 0
	poll.Eventually(t, 120*time.Second, func() error {
		// Rounds of the same ten keys roll segments (segment.ms) until the
		// cleaner has removed some records.
		var recs []*kgo.Record
		for k := range 10 {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("k", k)), Value: []byte(fmt.Sprint(round, "-", k))})
		}
		round++
		res := cl.ProduceSync(testCtx(t, 10*time.Second), recs...)
		if err := res.FirstErr(); err != nil {
			return err
		}
		for _, r := range res {
			written[r.Record.Offset] = string(r.Record.Key) + "=" + string(r.Record.Value)
		}
		held := len(linkRecords(t, kb.Addr, topic))
		if held >= len(written) {
			return fmt.Errorf("no gap yet: %d records held of %d", held, len(written))
		}
		return nil
	})
	linkCLI(t, dst, false, "create", "c", "--source-bootstrap-servers", kb.Addr, "--topics", topic, "--sync-configs",
		"--config", "metadata.refresh.interval.ms=100")
	linkWaitCaughtUp(t, kb.Addr, dst, topic)
	dadm, _ := admAdmin(t, dst)
	if cfg := admTopicConfigs(t, dadm, topic); cfg["cleanup.policy"].Value == nil || *cfg["cleanup.policy"].Value != "compact" {
		t.Fatalf("mirror cleanup.policy %v, want the source's compact", cfg["cleanup.policy"].Value)
	}
	latest := func(recs map[int64]string) map[string]string {
		out := map[string]string{}
		for _, o := range slices.Sorted(maps.Keys(recs)) {
			k, _, _ := strings.Cut(recs[o], "=")
			out[k] = recs[o]
		}
		return out
	}
	mirror, source := linkRecords(t, dst, topic), linkRecords(t, kb.Addr, topic)
	for o, r := range mirror {
		if written[o] != r {
			t.Fatalf("the mirror holds %q at %d, where %q was written", r, o, written[o])
		}
	}
	if m, s, w := fmt.Sprint(latest(mirror)), fmt.Sprint(latest(source)), fmt.Sprint(latest(written)); m != s || s != w {
		t.Fatalf("latest per key: mirror %s, source %s, written %s", m, s, w)
	}
}

// linkRecords reads partition 0 of topic from its start to its end:
// offset -> key=value.
func linkRecords(t *testing.T, addr, topic string) map[int64]string {
	t.Helper()
	ends, err := linkEnds(t, addr, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for _, raw := range linkBatches(t, addr, topic, 0, ends[0]) {
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: 0}, &kmsg.FetchResponseTopicPartition{RecordBatches: raw}, kgo.DefaultDecompressor(), nil)
		for _, r := range fp.Records {
			out[r.Offset] = string(r.Key) + "=" + string(r.Value)
		}
	}
	return out
}

// The source partition's leader is killed while the mirror copies it:
// the link finds the new leader and goes on from the mirror's end, with
// no gap and no duplicate.
func TestLinkSourceLeaderKilled(t *testing.T) {
	t.Parallel()
	src := testutil.StartCluster(t, 3, map[string]string{"default.replication.factor": "3", "min.insync.replicas": "2"})
	dst := testutil.StartBroker(t, nil).Addr()
	topic := admTopic("lnksk")
	createReplicatedTopic(t, src, topic, 1, 3, nil)
	linkProduce(t, src.LiveAddr(), topic, 0, 100)
	linkCLI(t, dst, false, "create", "sk", "--source-bootstrap-servers", strings.Join(src.Addrs(), ","), "--topics", topic,
		"--config", "metadata.refresh.interval.ms=100")
	linkWaitCaughtUp(t, src.LiveAddr(), dst, topic)
	mp, err := partitionMeta(t, src.LiveAddr(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	src.Node(mp.Leader).Kill()
	waitPartition(t, src, topic, 0, 60*time.Second, func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Leader < 0 || p.Leader == mp.Leader {
			return fmt.Errorf("leader %d", p.Leader)
		}
		return nil
	})
	linkProduce(t, src.LiveAddr(), topic, 0, 100)
	linkWaitCaughtUp(t, src.LiveAddr(), dst, topic)
	linkCompare(t, src.LiveAddr(), dst, topic)
	if ends, _ := linkEnds(t, dst, topic); ends[0] != 200 {
		t.Fatalf("mirror ends at %v, want 200", ends)
	}
}
