package compat

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// testCtx is a context that ends after d or with the test, whichever comes
// first, so that a broker bug fails a client call instead of hanging it.
func testCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newKgo is a kgo client for addr, closed when the test ends.
func newKgo(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append(kgoOpts(addr), opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// kgoOpts are the options every test client starts from.
func kgoOpts(seeds ...string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.RetryTimeout(20 * time.Second),
		kgo.RequestTimeoutOverhead(10 * time.Second),
	}
}

// newAdmin is a kadm client for addr, closed when the test ends.
func newAdmin(t testing.TB, addr string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newKgo(t, addr))
}

// strp returns a pointer to s, for topic configs.
func strp(s string) *string { return &s }

// createTopic creates a topic and fails the test unless the broker reports
// success.
func createTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopic(testCtx(t, 20*time.Second), partitions, 1, configs, topic)
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
	if resp.Err != nil {
		t.Fatalf("CreateTopic %s: %v (%s)", topic, resp.Err, resp.ErrMessage)
	}
	if resp.NumPartitions != partitions {
		t.Fatalf("CreateTopic %s: %d partitions, want %d", topic, resp.NumPartitions, partitions)
	}
}

// topicID returns a topic's id from Metadata.
func topicID(t testing.TB, adm *kadm.Client, topic string) [16]byte {
	t.Helper()
	var id [16]byte
	testutil.Eventually(t, 30*time.Second, func() error {
		tds, err := adm.ListTopics(testCtx(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		td, ok := tds[topic]
		if !ok {
			return fmt.Errorf("topic %s not in metadata", topic)
		}
		if td.Err != nil {
			return td.Err
		}
		if td.ID == ([16]byte{}) {
			return fmt.Errorf("topic %s has a zero topic id", topic)
		}
		id = td.ID
		return nil
	})
	return id
}

// produceAll produces records synchronously and fails the test on any
// error; the records come back with their offsets filled in.
func produceAll(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	res := cl.ProduceSync(testCtx(t, 60*time.Second), recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consumeExact reads records from the given partitions starting at the given
// offsets with a fresh client (no group) until want records arrived, and
// fails the test on a fetch error or after timeout. Records come back in
// arrival order.
func consumeExact(t testing.TB, addr, topic string, from map[int32]int64, want int, timeout time.Duration, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	offs := make(map[int32]kgo.Offset, len(from))
	for p, o := range from {
		offs[p] = kgo.NewOffset().At(o)
	}
	opts = append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs})}, opts...)
	cl := newKgo(t, addr, opts...)
	defer cl.Close()
	ctx := testCtx(t, timeout)
	var got []*kgo.Record
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: got %d records of %d before the deadline", topic, len(got), want)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("consume %s: fetch error on partition %d: %v", topic, fe.Partition, fe.Err)
		}
		got = append(got, fs.Records()...)
	}
	if len(got) != want {
		t.Fatalf("consume %s: got %d records, want %d", topic, len(got), want)
	}
	return got
}

// listOffsetRaw sends one ListOffsets request for one partition at the
// given timestamp (-1 latest, -2 earliest, -3 max timestamp, or a time in
// ms) at the newest version both sides speak.
func listOffsetRaw(t testing.TB, cl *kgo.Client, topic string, partition int32, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = partition
	rp.CurrentLeaderEpoch = -1
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatalf("ListOffsets %s/%d ts %d: %v", topic, partition, ts, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets %s/%d ts %d: malformed response %+v", topic, partition, ts, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// fetchRaw sends one sessionless Fetch for one partition (MaxWait 0) and
// returns that partition's answer.
func fetchRaw(t testing.TB, cl *kgo.Client, topic string, id [16]byte, partition int32, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	return fetchRawWait(t, cl, topic, id, partition, offset, 0, 0)
}

// fetchRawWait is fetchRaw with MaxWaitMillis and MinBytes.
func fetchRawWait(t testing.TB, cl *kgo.Client, topic string, id [16]byte, partition int32, offset int64, maxWaitMs, minBytes int32) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = maxWaitMs
	req.MinBytes = minBytes
	req.MaxBytes = 50 << 20
	req.SessionID = 0
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.FetchOffset = offset
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rp.PartitionMaxBytes = 10 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, time.Duration(maxWaitMs)*time.Millisecond+15*time.Second), cl)
	if err != nil {
		t.Fatalf("Fetch %s/%d@%d: %v", topic, partition, offset, err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("Fetch %s/%d@%d: top-level error %v", topic, partition, offset, kerr.ErrorForCode(resp.ErrorCode))
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Fetch %s/%d@%d: malformed response with %d topics", topic, partition, offset, len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// batchSpan is one record batch as found in a byte slice.
type batchSpan struct {
	pos        int   // where the batch starts
	size       int   // its total size (length field + 12)
	baseOffset int64 // its first offset
	lastOffset int64 // its last offset
	attrs      int16 // its attributes
	count      int32 // its record count
}

// scanBatches walks v2 record batch headers back to back in b (a segment
// file or a Fetch response's record bytes) and stops at the first
// incomplete one.
func scanBatches(b []byte) []batchSpan {
	var out []batchSpan
	for pos := 0; len(b)-pos >= 61; {
		length := int(int32(binary.BigEndian.Uint32(b[pos+8:])))
		if length < 49 || pos+12+length > len(b) {
			break
		}
		base := int64(binary.BigEndian.Uint64(b[pos:]))
		out = append(out, batchSpan{
			pos:        pos,
			size:       12 + length,
			baseOffset: base,
			lastOffset: base + int64(int32(binary.BigEndian.Uint32(b[pos+23:]))),
			attrs:      int16(binary.BigEndian.Uint16(b[pos+21:])),
			count:      int32(binary.BigEndian.Uint32(b[pos+57:])),
		})
		pos += 12 + length
	}
	return out
}

// segmentLogs lists a partition directory's .log files by base offset.
func segmentLogs(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") && len(e.Name()) == 24 {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out) // 20-digit names sort numerically
	return out
}

// segmentBase parses a segment file's base offset from its name.
func segmentBase(t testing.TB, path string) int64 {
	t.Helper()
	base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(path), ".log"), 10, 64)
	if err != nil {
		t.Fatalf("segment name %s: %v", path, err)
	}
	return base
}

// removeCleanShutdownMarkers deletes every .clean-shutdown marker under dir
// so the next start runs log recovery, as after a crash.
func removeCleanShutdownMarkers(t testing.TB, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == ".clean-shutdown" {
			n++
			return os.Remove(path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("remove markers: %v", err)
	}
	return n
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// initProducerID is a raw InitProducerId of an idempotent producer: the
// producer id and epoch it is given.
func initProducerID(t testing.TB, cl *kgo.Client) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	wantCode(t, "InitProducerId", resp.ErrorCode, nil)
	return resp.ProducerID, resp.ProducerEpoch
}

// rawBatch encodes an uncompressed v2 record batch with the given producer
// fields and values (offset deltas 0..n-1, timestamp ts for every record).
func rawBatch(producerID int64, epoch int16, baseSeq int32, ts int64, values ...[]byte) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: v}
		body := r.AppendTo(nil)[1:] // drop the zero length varint
		r.Length = int32(len(body))
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		FirstOffset:     0,
		Magic:           2,
		LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp:  ts,
		MaxTimestamp:    ts,
		ProducerID:      producerID,
		ProducerEpoch:   epoch,
		FirstSequence:   baseSeq,
		NumRecords:      int32(len(values)),
		Records:         recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32c))
	return out
}

// produceRaw sends one Produce request (acks=-1) with the given records for
// one partition and returns that partition's answer.
func produceRaw(t testing.TB, cl *kgo.Client, topic string, id [16]byte, partition int32, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	return produceRawTxn(t, cl, topic, id, partition, nil, records)
}

// produceRawTxn is produceRaw with the request's transactional id.
func produceRawTxn(t testing.TB, cl *kgo.Client, topic string, id [16]byte, partition int32, txnID *string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = txnID
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 20*time.Second), cl)
	if err != nil {
		t.Fatalf("Produce %s/%d: %v", topic, partition, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Produce %s/%d: malformed response with %d topics", topic, partition, len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// wantCode fails the test unless code is the given Kafka error (nil: 0).
func wantCode(t testing.TB, what string, code int16, want *kerr.Error) {
	t.Helper()
	got := kerr.ErrorForCode(code)
	if want == nil {
		if got != nil {
			t.Fatalf("%s: error %v, want none", what, got)
		}
		return
	}
	if !errors.Is(got, want) {
		t.Fatalf("%s: error %v (code %d), want %v (code %d)", what, got, code, want, want.Code)
	}
}

// waitLed waits until the broker at addr leads partition p of topic, as
// ListOffsets tells: a restarted broker takes a new leader epoch from the
// controller before it leads again (TestRestartedLeaderLeadsInANewEpoch),
// and a raw request meanwhile gets NOT_LEADER_OR_FOLLOWER, which clients
// retry.
func waitLed(t testing.TB, addr, topic string, p int32) {
	t.Helper()
	cl := newKgo(t, addr)
	testutil.Eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kr, err := cl.SeedBrokers()[0].Request(testCtx(t, 5*time.Second), req)
		if err != nil {
			return err
		}
		resp := kr.(*kmsg.ListOffsetsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("malformed ListOffsets answer")
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			return fmt.Errorf("%s-%d at %s: %v", topic, p, addr, kerr.ErrorForCode(code))
		}
		return nil
	})
}
