package compat

// Helpers for the admin, sarama, kafka-go and bad-input tests. Every name
// starts with "adm" so that it cannot clash with helpers_test.go.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// admTimeout bounds every client call so that a broker bug fails a test
// instead of hanging it.
const admTimeout = 20 * time.Second

// admCtx is a context that ends after d or with the test.
func admCtx(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var admSeq atomic.Int64

// admTopic is a topic name unique in this test binary.
func admTopic(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1_000_000, admSeq.Add(1))
}

// admBroker starts a broker with overrides.
func admBroker(t testing.TB, overrides map[string]string) *testutil.Node {
	t.Helper()
	return testutil.StartBroker(t, overrides)
}

// admClient is a kgo client for addr, closed when the test ends.
func admClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.RequestRetries(3),
		kgo.RetryTimeout(5 * time.Second),
		kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.ProducerLinger(0),
		// Records go to the partition the test sets (0 when unset).
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// admAdmin is a kadm client over a new kgo client for addr.
func admAdmin(t testing.TB, addr string, opts ...kgo.Opt) (*kadm.Client, *kgo.Client) {
	t.Helper()
	cl := admClient(t, addr, opts...)
	return kadm.NewClient(cl), cl
}

// admCreate creates a topic and fails the test unless it succeeds.
func admCreate(t testing.TB, adm *kadm.Client, topic string, partitions int32, rf int16, configs map[string]*string) kadm.CreateTopicResponse {
	t.Helper()
	resps, err := adm.CreateTopics(admCtx(t, admTimeout), partitions, rf, configs, topic)
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	r, ok := resps[topic]
	if !ok {
		t.Fatalf("CreateTopics %s: no response for the topic: %+v", topic, resps)
	}
	if r.Err != nil {
		t.Fatalf("CreateTopics %s: %v (%s)", topic, r.Err, r.ErrMessage)
	}
	return r
}

// admStartOffset is the log start offset of topic's partition 0
// (ListOffsets, earliest).
func admStartOffset(t testing.TB, adm *kadm.Client, topic string) int64 {
	t.Helper()
	lo, err := adm.ListStartOffsets(testCtx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := lo.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("ListStartOffsets %s: %+v", topic, o)
	}
	return o.Offset
}

// admMetadata issues an uncached Metadata request (latest version) for topics;
// AllowAutoTopicCreation false.
func admMetadata(t testing.TB, cl *kgo.Client, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	for _, tp := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tp)
		req.Topics = append(req.Topics, rt)
	}
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(admCtx(t, admTimeout), cl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	return resp
}

// admMetaTopic finds topic in a Metadata response.
func admMetaTopic(resp *kmsg.MetadataResponse, topic string) (kmsg.MetadataResponseTopic, bool) {
	for _, mt := range resp.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			return mt, true
		}
	}
	return kmsg.MetadataResponseTopic{}, false
}

// admProduce produces records synchronously and fails the test on any error.
func admProduce(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(admCtx(t, admTimeout), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// admConsume reads n records of topic from the start of the given
// partitions, failing the test if they do not arrive in time.
func admConsume(t testing.TB, addr, topic string, partitions []int32, n int) []*kgo.Record {
	t.Helper()
	offs := map[int32]kgo.Offset{}
	for _, p := range partitions {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := admClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchMaxWait(200*time.Millisecond))
	ctx := admCtx(t, admTimeout)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s: got %d of %d records before the deadline", topic, len(out), n)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("consume %s: fetch error on %s/%d: %v", topic, fe.Topic, fe.Partition, fe.Err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// ---------------------------------------------------------------------------
// Raw connections: requests and responses framed by hand.

// admConn is a raw Kafka protocol connection.
type admConn struct {
	t        testing.TB
	c        net.Conn
	corr     int32
	clientID *string // of the request headers; nil: samsa-compat
}

// admDial opens a raw connection to addr.
func admDial(t testing.TB, addr string) *admConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &admConn{t: t, c: c, corr: 100}
}

// writeRaw writes bytes as they are.
func (c *admConn) writeRaw(b []byte) {
	c.t.Helper()
	c.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send writes req (at its set version) with a request header; it returns the
// correlation id used.
func (c *admConn) send(req kmsg.Request) int32 {
	c.t.Helper()
	c.corr++
	id := "samsa-compat"
	if c.clientID != nil {
		id = *c.clientID
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(id))
	c.writeRaw(f.AppendRequest(nil, req, c.corr))
	return c.corr
}

// readFrame reads one size-prefixed frame.
func (c *admConn) readFrame() ([]byte, error) {
	c.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	var sz [4]byte
	if _, err := io.ReadFull(c.c, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("response frame size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.c, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// admSkipTags skips a tagged-field section.
func admSkipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[k:]
	for range n {
		_, k = binary.Uvarint(b)
		if k <= 0 {
			return nil, errors.New("bad tag key")
		}
		b = b[k:]
		sz, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < sz {
			return nil, errors.New("bad tag size")
		}
		b = b[k+int(sz):]
	}
	return b, nil
}

// readResponse reads the response to the request sent with corr, and
// decodes it as version v of resp.
func (c *admConn) readResponse(corr int32, resp kmsg.Response, v int16) {
	c.t.Helper()
	frame, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("reading %s response: %v", kmsg.NameForKey(resp.Key()), err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		c.t.Fatalf("%s response: correlation id %d, want %d", kmsg.NameForKey(resp.Key()), got, corr)
	}
	body := frame[4:]
	resp.SetVersion(v)
	// ApiVersions always answers with response header v0.
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		if body, err = admSkipTags(body); err != nil {
			c.t.Fatalf("%s response header: %v", kmsg.NameForKey(resp.Key()), err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decoding %s v%d response: %v", kmsg.NameForKey(resp.Key()), v, err)
	}
}

// roundTrip sends req at version v and decodes its response.
func (c *admConn) roundTrip(req kmsg.Request, v int16) kmsg.Response {
	c.t.Helper()
	req.SetVersion(v)
	corr := c.send(req)
	resp := req.ResponseKind()
	c.readResponse(corr, resp, v)
	return resp
}

// expectClosed asserts that the broker closes the connection: a read ends
// with EOF or a reset, and no response arrives first.
func (c *admConn) expectClosed(what string) {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var buf [512]byte
	n, err := c.c.Read(buf[:])
	switch {
	case n > 0:
		c.t.Errorf("%s: want the connection closed, got %d bytes of response: %x", what, n, buf[:min(n, 64)])
	case err == nil:
		c.t.Errorf("%s: want the connection closed, read returned nothing and no error", what)
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		// closed, as Kafka does
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.t.Errorf("%s: want the connection closed, still open after 10s", what)
	default:
		c.t.Errorf("%s: want EOF or reset, got %v", what, err)
	}
}

// admHeader builds a request header (v1, or v2 when flexible) for key/version.
func admHeader(key, version int16, corr int32, clientID string, flexible bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if flexible {
		b = append(b, 0)
	}
	return b
}

// admFrame prefixes payload with its size.
func admFrame(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

// ---------------------------------------------------------------------------
// Record batches built by hand.

var admCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// admRecord is one record of a hand-built batch.
type admRecord struct {
	key, value []byte
	headers    []kmsg.Header
}

// admBatch builds an uncompressed v2 record batch: base offset 0, no
// producer id, timestamps ts, a correct CRC32C.
func admBatch(ts int64, recs ...admRecord) []byte {
	var records []byte
	for i, r := range recs {
		kr := kmsg.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value, Headers: r.headers}
		enc := kr.AppendTo(nil)[1:] // Length 0 is one varint byte; drop it
		records = binary.AppendVarint(records, int64(len(enc)))
		records = append(records, enc...)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              records,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	admFixCRC(b)
	return b
}

// admFixCRC recomputes the CRC32C of a v2 batch after an edit.
func admFixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], admCastagnoli))
}

// admProduceReq is a one-partition Produce request carrying records.
func admProduceReq(topic string, partition int32, acks int16, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// admProducePartition is the single partition answer of a Produce response.
func admProducePartition(t testing.TB, resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response: want one topic with one partition, got %+v", pr.Topics)
	}
	return pr.Topics[0].Partitions[0]
}

// admPayload is a deterministic, non-trivial value for record i.
func admPayload(tag string, i, size int) []byte {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s-%06d|", tag, i)
	for sb.Len() < size {
		sb.WriteByte(byte('a' + (i*7+sb.Len())%26))
	}
	return []byte(sb.String()[:size])
}
