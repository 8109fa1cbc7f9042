package compat

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/testutil"
)

// The partition side of transactions, driven by hand as a transaction
// coordinator would: transactional batches in raw Produce requests, COMMIT
// and ABORT markers in raw WriteTxnMarkers requests, and read_committed
// readers (raw Fetch, ListOffsets, a kgo consumer) that must see neither
// aborted nor undecided records.

// rawTxnBatch is rawBatch with the transactional attribute (bit 4).
func rawTxnBatch(producerID int64, epoch int16, baseSeq int32, values ...string) []byte {
	vs := make([][]byte, len(values))
	for i, v := range values {
		vs[i] = []byte(v)
	}
	return asTransactional(rawBatch(producerID, epoch, baseSeq, time.Now().UnixMilli(), vs...))
}

// asTransactional sets a batch's transactional attribute and its CRC.
func asTransactional(b []byte) []byte {
	binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|0x10)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32c))
	return b
}

// rawKeyedBatch encodes an uncompressed batch of key, value pairs with
// the given producer fields, transactional or not.
func rawKeyedBatch(producerID int64, epoch int16, baseSeq int32, txn bool, kv ...string) []byte {
	var recs []byte
	for i := 0; i+1 < len(kv); i += 2 {
		r := kmsg.Record{OffsetDelta: int32(i / 2), Key: []byte(kv[i]), Value: []byte(kv[i+1])}
		body := r.AppendTo(nil)[1:]
		r.Length = int32(len(body))
		recs = r.AppendTo(recs)
	}
	ts := time.Now().UnixMilli()
	b := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(len(kv)/2 - 1), FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: producerID, ProducerEpoch: epoch, FirstSequence: baseSeq, NumRecords: int32(len(kv) / 2), Records: recs}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	if txn {
		return asTransactional(out)
	}
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32c))
	return out
}

// txnRawID is the transactional id of the raw transactional produces.
var txnRawID = kmsg.StringPtr("txnlog-raw")

// produceTxnRaw produces a transactional batch and fails the test unless
// it is appended at wantOffset.
func produceTxnRaw(t testing.TB, cl *kgo.Client, topic string, id [16]byte, records []byte, wantOffset int64) {
	t.Helper()
	sp := produceRawTxn(t, cl, topic, id, 0, txnRawID, records)
	wantCode(t, "transactional produce", sp.ErrorCode, nil)
	if sp.BaseOffset != wantOffset {
		t.Fatalf("transactional batch at %d, want %d", sp.BaseOffset, wantOffset)
	}
}

// writeMarker sends one WriteTxnMarkers request for partition 0 of topic
// through broker b (the partition's leader) and returns the partition's
// error code.
func writeMarker(t testing.TB, b *kgo.Broker, topic string, pid int64, epoch int16, coordEpoch int32, commit bool) int16 {
	t.Helper()
	return writeMarkerTV(t, b, topic, pid, epoch, coordEpoch, commit, 0)
}

// writeMarkerTV is writeMarker with the marker's transaction version
// (WriteTxnMarkers v2).
func writeMarkerTV(t testing.TB, b *kgo.Broker, topic string, pid int64, epoch int16, coordEpoch int32, commit bool, tv int8) int16 {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed = pid, epoch, coordEpoch, commit
	m.TransactionVersion = tv
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{0}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	kr, err := b.Request(testCtx(t, 40*time.Second), req)
	if err != nil {
		t.Fatalf("WriteTxnMarkers: %v", err)
	}
	resp := kr.(*kmsg.WriteTxnMarkersResponse)
	if len(resp.Markers) != 1 || resp.Markers[0].ProducerID != pid || len(resp.Markers[0].Topics) != 1 ||
		len(resp.Markers[0].Topics[0].Partitions) != 1 {
		t.Fatalf("WriteTxnMarkers: malformed answer %+v", resp)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// committedState is what a read_committed reader is told of partition 0.
type committedState struct {
	lso     int64
	aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
	last    int64 // last offset of the last batch returned, -1 none
}

func fetchCommitted(t testing.TB, b *kgo.Broker, topic string, id [16]byte) committedState {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.IsolationLevel, req.MaxBytes = -1, 1, 10<<20
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = -1, -1, 10<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kr, err := b.Request(testCtx(t, 15*time.Second), req)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	resp := kr.(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Fetch: malformed answer")
	}
	p := resp.Topics[0].Partitions[0]
	wantCode(t, "read_committed fetch", p.ErrorCode, nil)
	if p.AbortedTransactions == nil {
		t.Fatal("read_committed fetch: aborted transactions null, want a list")
	}
	st := committedState{lso: p.LastStableOffset, aborted: p.AbortedTransactions, last: -1}
	for _, s := range scanBatches(p.RecordBatches) {
		st.last = s.lastOffset
	}
	if st.last >= st.lso {
		t.Fatalf("read_committed fetch returned offset %d at or past the LSO %d", st.last, st.lso)
	}
	return st
}

func abortedList(pairs ...int64) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	for i := 0; i+1 < len(pairs); i += 2 {
		a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		a.ProducerID, a.FirstOffset = pairs[i], pairs[i+1]
		out = append(out, a)
	}
	return out
}

func checkCommitted(t testing.TB, b *kgo.Broker, topic string, id [16]byte, lso int64, aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction) {
	t.Helper()
	st := fetchCommitted(t, b, topic, id)
	same := slices.EqualFunc(st.aborted, aborted, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) bool {
		return a.ProducerID == b.ProducerID && a.FirstOffset == b.FirstOffset
	})
	if st.lso != lso || !same {
		t.Fatalf("read_committed: LSO %d, aborted %+v; want LSO %d, aborted %+v", st.lso, st.aborted, lso, aborted)
	}
}

func listLatest(t testing.TB, b *kgo.Broker, topic string, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.Timestamp = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kr, err := b.Request(testCtx(t, 10*time.Second), req)
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	p := kr.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	wantCode(t, "ListOffsets", p.ErrorCode, nil)
	return p.Offset
}

// consumeCommitted reads partition 0 from the start at read_committed
// with a kgo consumer until the record "last" arrives, and returns the
// values seen.
func consumeCommitted(t testing.TB, addrs []string, topic string) []string {
	t.Helper()
	return consumeUntilLast(t, addrs, topic, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
}

// consumeUntilLast reads partition 0 from the start with a kgo consumer
// until the record "last" arrives, and returns the values seen.
func consumeUntilLast(t testing.TB, addrs []string, topic string, opts ...kgo.Opt) []string {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})}, opts...)
	cl := newKgo(t, addrs[0], opts...)
	defer cl.Close()
	ctx := testCtx(t, 30*time.Second)
	var got []string
	for len(got) == 0 || got[len(got)-1] != "last" {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumer: %v before the last record (got %q)", ctx.Err(), got)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("consumer: %v", fe.Err)
		}
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	return got
}

// txnScenario runs the same hand-built sequence of transactional produces,
// markers and refused requests against the broker at addr (samsa, or
// Apache Kafka as the reference) and checks each answer; it leaves
// partition 0 of topic at offset 9 with two aborted transactions (want).
//
// Produce is capped at v11: from v12 (transactions version 2) Kafka adds
// the partition to the transaction itself, through a coordinator, which
// these hand-built transactions have not.
func txnScenario(t *testing.T, addr, topic string) (id [16]byte, want []kmsg.FetchResponseTopicPartitionAbortedTransaction) {
	cl := newKgo(t, addr, kgo.MaxVersions(produceV11()))
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic, 1, nil)
	id = topicID(t, adm, topic)
	waitLed(t, addr, topic, 0)
	b := cl.SeedBrokers()[0]

	wantCode(t, "plain produce", produceRaw(t, cl, topic, id, 0, rawBatch(-1, -1, -1, time.Now().UnixMilli(), []byte("p0"))).ErrorCode, nil)
	wantCode(t, "transactional records without a transactional id", produceRaw(t, cl, topic, id, 0, rawTxnBatch(1000, 0, 0, "x")).ErrorCode,
		kerr.TransactionalIDAuthorizationFailed)
	produceTxnRaw(t, cl, topic, id, rawTxnBatch(1000, 0, 0, "a1", "a2"), 1) // 1-2, aborted below
	produceTxnRaw(t, cl, topic, id, rawTxnBatch(2000, 0, 0, "b1"), 3)       // 3, committed below
	// Both open: read_committed readers stop at the first, offset 1.
	checkCommitted(t, b, topic, id, 1, abortedList())
	if got := listLatest(t, b, topic, 1); got != 1 {
		t.Fatalf("ListOffsets latest at read_committed: %d, want 1", got)
	}
	if got := listLatest(t, b, topic, 0); got != 4 {
		t.Fatalf("ListOffsets latest at read_uncommitted: %d, want 4", got)
	}

	wantCode(t, "abort 1000", writeMarker(t, b, topic, 1000, 0, 3, false), nil) // 4
	checkCommitted(t, b, topic, id, 3, abortedList(1000, 1))
	wantCode(t, "commit 2000", writeMarker(t, b, topic, 2000, 0, 3, true), nil) // 5
	checkCommitted(t, b, topic, id, 6, abortedList(1000, 1))
	if got := listLatest(t, b, topic, 1); got != 6 {
		t.Fatalf("ListOffsets latest at read_committed after the markers: %d, want 6", got)
	}

	// Kafka's answers to what a coordinator or client must not do; nothing
	// is appended.
	wantCode(t, "marker from an older coordinator epoch", writeMarker(t, b, topic, 2000, 0, 2, false), kerr.TransactionCoordinatorFenced)
	produceTxnRaw(t, cl, topic, id, rawTxnBatch(2000, 1, 0, "b2"), 6) // epoch bumped to 1, open
	wantCode(t, "marker for an older producer epoch", writeMarker(t, b, topic, 2000, 0, 3, false), kerr.InvalidProducerEpoch)
	wantCode(t, "transactional batch of an older epoch", produceRawTxn(t, cl, topic, id, 0, txnRawID, rawTxnBatch(2000, 0, 1, "x")).ErrorCode,
		kerr.InvalidProducerEpoch)
	ctrl := rawTxnBatch(3000, 0, -1, "x")
	binary.BigEndian.PutUint16(ctrl[21:], 0x30)
	binary.BigEndian.PutUint32(ctrl[17:], crc32.Checksum(ctrl[21:], crc32c))
	wantCode(t, "client control batch", produceRawTxn(t, cl, topic, id, 0, txnRawID, ctrl).ErrorCode, kerr.InvalidRecord)
	wantCode(t, "marker for an unknown partition", writeMarker(t, b, "no-such-topic", 2000, 1, 3, true), kerr.UnknownTopicOrPartition)
	wantCode(t, "abort 2000 epoch 1", writeMarker(t, b, topic, 2000, 1, 3, false), nil) // 7
	wantCode(t, "last", produceRaw(t, cl, topic, id, 0, rawBatch(-1, -1, -1, time.Now().UnixMilli(), []byte("last"))).ErrorCode, nil)
	want = abortedList(1000, 1, 2000, 6)
	checkCommitted(t, b, topic, id, 9, want)
	if got := listLatest(t, b, topic, 0); got != 9 {
		t.Fatalf("log end %d, want 9: a refused request appended", got)
	}

	// A kgo read_committed consumer sees the committed records only.
	if got := consumeCommitted(t, []string{addr}, topic); !slices.Equal(got, []string{"p0", "b1", "last"}) {
		t.Fatalf("read_committed consumer read %q, want [p0 b1 last]", got)
	}
	// DescribeProducers (what kafka-transactions.sh describe-producers
	// shows), but the timestamps.
	checkProducers(t, cl, topic, "1000/0 seq 1 coordinator 3 txn -1, 2000/1 seq 0 coordinator 3 txn -1")
	return id, want
}

// produceV11 is the newest versions with Produce capped at v11.
func produceV11() *kversion.Versions {
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	return versions
}

// txnScenarioTV2 checks the producer epoch rules of transactions version 2
// markers (WriteTxnMarkers v2, KIP-1228): the coordinator bumps the epoch
// for each marker, so the producer's own epoch is refused while its
// transaction is open and a retried marker is written again.
func txnScenarioTV2(t *testing.T, addr, topic string) {
	cl := newKgo(t, addr, kgo.MaxVersions(produceV11()))
	adm := newAdmin(t, addr)
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)
	waitLed(t, addr, topic, 0)
	b := cl.SeedBrokers()[0]
	produceTxnRaw(t, cl, topic, id, rawTxnBatch(5000, 0, 0, "x"), 0)
	wantCode(t, "TV2 marker with the producer's epoch", writeMarkerTV(t, b, topic, 5000, 0, 3, true, 2), kerr.InvalidProducerEpoch)
	wantCode(t, "TV2 marker with the bumped epoch", writeMarkerTV(t, b, topic, 5000, 1, 3, true, 2), nil) // 1
	checkCommitted(t, b, topic, id, 2, abortedList())
	wantCode(t, "TV2 marker retried", writeMarkerTV(t, b, topic, 5000, 1, 3, true, 2), nil) // 2
	wantCode(t, "TV2 marker with an older epoch", writeMarkerTV(t, b, topic, 5000, 0, 3, false, 2), kerr.InvalidProducerEpoch)
	if got := listLatest(t, b, topic, 1); got != 3 {
		t.Fatalf("log end %d after the retried marker, want 3", got)
	}
	checkProducers(t, cl, topic, "5000/1 seq -1 coordinator 3 txn -1")
}

// checkProducers compares partition 0's DescribeProducers answer with want.
func checkProducers(t testing.TB, cl *kgo.Client, topic, want string) {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	kr, err := cl.SeedBrokers()[0].Request(testCtx(t, 10*time.Second), req)
	if err != nil {
		t.Fatalf("DescribeProducers: %v", err)
	}
	p := kr.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
	wantCode(t, "DescribeProducers", p.ErrorCode, nil)
	var got []string
	for _, ap := range p.ActiveProducers {
		if ap.LastTimestamp <= 0 {
			t.Errorf("producer %d: last timestamp %d", ap.ProducerID, ap.LastTimestamp)
		}
		got = append(got, fmt.Sprintf("%d/%d seq %d coordinator %d txn %d", ap.ProducerID, ap.ProducerEpoch, ap.LastSequence, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset))
	}
	slices.Sort(got)
	if s := strings.Join(got, ", "); s != want {
		t.Fatalf("DescribeProducers: %s; want %s", s, want)
	}
}

func TestTxnMarkersVersion2(t *testing.T) {
	n := testutil.StartBroker(t, noVerification)
	txnScenarioTV2(t, n.Addr(), "txnlog-tv2")
}

// noVerification lets raw transactional produces in without a
// coordinator: Kafka's transaction.partition.verification.enable.
var noVerification = map[string]string{"transaction.partition.verification.enable": "false"}

func TestTxnReadCommitted(t *testing.T) {
	n := testutil.StartBroker(t, noVerification)
	const topic = "txnlog"
	id, want := txnScenario(t, n.Addr(), topic)

	// A restart (clean, then as after a crash) rebuilds the same state
	// from the snapshot, the .txnindex and the log.
	restart := func(crash bool) *kgo.Broker {
		n.Stop()
		if crash {
			removeCleanShutdownMarkers(t, n.Dir)
		}
		n.Restart()
		waitLed(t, n.Addr(), topic, 0)
		return newKgo(t, n.Addr()).SeedBrokers()[0]
	}
	end := int64(9)
	for _, crash := range []bool{false, true} {
		b := restart(crash)
		checkCommitted(t, b, topic, id, end, want)
		// An open transaction is known after a restart: it holds the LSO
		// until its marker.
		pid := 4000 + end
		produceTxnRaw(t, newKgo(t, n.Addr(), kgo.MaxVersions(produceV11())), topic, id, rawTxnBatch(pid, 0, 0, "c"), end)
		checkCommitted(t, b, topic, id, end, want)
		b = restart(crash)
		checkCommitted(t, b, topic, id, end, want)
		wantCode(t, "commit after restart", writeMarker(t, b, topic, pid, 0, 3, true), nil)
		end += 2
		checkCommitted(t, b, topic, id, end, want)
	}
}

// A leader killed after a marker: the new leader, which replicated the
// batches and the markers, answers the same LSO and aborted list, and an
// open transaction still holds its LSO until its marker lands there.
func TestTxnFailover(t *testing.T) {
	c := testutil.StartCluster(t, 3, noVerification)
	const topic = "txnfail"
	createReplicatedTopic(t, c, topic, 1, 3, map[string]*string{"min.insync.replicas": strp("2")})
	mp := waitISR(t, c, topic, 0, 3, 30*time.Second)
	cl := newKgo(t, c.Node(mp.Leader).Addr(), kgo.MaxVersions(produceV11()))
	id := topicID(t, newAdmin(t, c.Node(mp.Leader).Addr()), topic)
	waitLed(t, c.Node(mp.Leader).Addr(), topic, 0)
	lb := cl.SeedBrokers()[0]

	produceTxnRaw(t, cl, topic, id, rawTxnBatch(1000, 0, 0, "a1", "a2"), 0)      // 0-1, aborted
	produceTxnRaw(t, cl, topic, id, rawTxnBatch(2000, 0, 0, "b1"), 2)            // 2, stays open
	wantCode(t, "abort 1000", writeMarker(t, lb, topic, 1000, 0, 1, false), nil) // 3
	produceTxnRaw(t, cl, topic, id, rawTxnBatch(3000, 0, 0, "c1"), 4)            // 4, committed
	wantCode(t, "commit 3000", writeMarker(t, lb, topic, 3000, 0, 1, true), nil) // 5
	want := abortedList(1000, 0)
	checkCommitted(t, lb, topic, id, 2, want)

	c.Node(mp.Leader).Kill()
	nmp := waitLeader(t, c, topic, 0, mp.Leader, 60*time.Second)
	ncl := newKgo(t, c.Node(nmp.Leader).Addr())
	waitLed(t, c.Node(nmp.Leader).Addr(), topic, 0)
	nb := ncl.SeedBrokers()[0]
	// The new leader's high watermark catches up with the ISR's fetches.
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := listLatest(t, nb, topic, 0); got != 6 {
			return fmt.Errorf("high watermark %d, want 6", got)
		}
		return nil
	})
	checkCommitted(t, nb, topic, id, 2, want)
	wantCode(t, "abort 2000 on the new leader", writeMarker(t, nb, topic, 2000, 0, 2, false), nil) // 6
	checkCommitted(t, nb, topic, id, 7, abortedList(1000, 0, 2000, 2))
	wantCode(t, "last", produceRaw(t, ncl, topic, id, 0, rawBatch(-1, -1, -1, time.Now().UnixMilli(), []byte("last"))).ErrorCode, nil)
	if got := consumeCommitted(t, c.Addrs(), topic); !slices.Equal(got, []string{"c1", "last"}) {
		t.Fatalf("read_committed consumer read %q, want [c1 last]", got)
	}
}

// TestTxnKafkaReference runs txnScenario against Apache Kafka 4.4
// (internal/kafkaref) with the KIP-890 verification off, as no coordinator
// added the partitions: the same offsets, last stable offsets, aborted
// lists, error codes and producer states as samsa's.
func TestTxnKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRefWith(t, noVerification)
	txnScenario(t, kb.Addr, "txnlog")
	txnScenarioTV2(t, kb.Addr, "txnlog-tv2")
}

// The log cleaner removes an aborted transaction's records from a
// compacted topic (read_uncommitted readers stop seeing them) and keeps
// the committed ones; read_committed readers see the same before and
// after.
func TestTxnCompactionRemovesAborted(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{"log.cleaner.backoff.ms": "50", "transaction.partition.verification.enable": "false"})
	cl := newKgo(t, n.Addr(), kgo.MaxVersions(produceV11()))
	adm := newAdmin(t, n.Addr())
	const topic = "txncompact"
	createTopic(t, adm, topic, 1, map[string]*string{
		"cleanup.policy": strp("compact"), "internal.segment.bytes": strp("2048"),
		"min.cleanable.dirty.ratio": strp("0.01"), "delete.retention.ms": strp("0"),
	})
	id := topicID(t, adm, topic)
	b := cl.SeedBrokers()[0]
	produceTxnRaw(t, cl, topic, id, rawKeyedBatch(1000, 0, 0, true, "k1", "aborted", "k2", "aborted"), 0)
	wantCode(t, "abort", writeMarker(t, b, topic, 1000, 0, 1, false), nil) // 2
	produceTxnRaw(t, cl, topic, id, rawKeyedBatch(2000, 0, 0, true, "k1", "committed"), 3)
	wantCode(t, "commit", writeMarker(t, b, topic, 2000, 0, 1, true), nil) // 4
	for i := range 60 {                                                    // roll the transactions into sealed segments
		wantCode(t, "filler", produceRaw(t, cl, topic, id, 0, rawKeyedBatch(-1, -1, -1, false, fmt.Sprintf("f%d", i), strings.Repeat("f", 40))).ErrorCode, nil)
	}
	wantCode(t, "last", produceRaw(t, cl, topic, id, 0, rawKeyedBatch(-1, -1, -1, false, "last", "last")).ErrorCode, nil)

	committed := func(vs []string) []string {
		return slices.DeleteFunc(slices.Clone(vs), func(v string) bool { return strings.HasPrefix(v, "f") })
	}
	if got := committed(consumeCommitted(t, []string{n.Addr()}, topic)); !slices.Equal(got, []string{"committed", "last"}) {
		t.Fatalf("read_committed before cleaning: %q", got)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		got := committed(consumeUntilLast(t, []string{n.Addr()}, topic))
		if !slices.Equal(got, []string{"committed", "last"}) {
			return fmt.Errorf("read_uncommitted reads %q: the aborted records are not cleaned yet", got)
		}
		return nil
	})
	if got := committed(consumeCommitted(t, []string{n.Addr()}, topic)); !slices.Equal(got, []string{"committed", "last"}) {
		t.Fatalf("read_committed after cleaning: %q", got)
	}
}

// kafka-transactions.sh describe-producers from Kafka 4.4 shows each
// producer of a partition, with the start of its open transaction.
func TestTxnDescribeProducersTool(t *testing.T) {
	t.Parallel()
	n := testutil.StartBroker(t, noVerification)
	cl := newKgo(t, n.Addr(), kgo.MaxVersions(produceV11()))
	adm := newAdmin(t, n.Addr())
	const topic = "txnproducers"
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)
	produceTxnRaw(t, cl, topic, id, rawTxnBatch(2000, 3, 0, "b1", "b2"), 0)
	wantCode(t, "commit 2000", writeMarker(t, cl.SeedBrokers()[0], topic, 2000, 3, 7, true), nil) // 2
	produceTxnRaw(t, cl, topic, id, rawTxnBatch(1000, 0, 0, "a1"), 3)                             // open

	out := kafkaTool(t, "org.apache.kafka.tools.TransactionsCommand",
		"--bootstrap-server", n.Addr(), "describe-producers", "--topic", topic, "--partition", "0")
	t.Logf("kafka-transactions describe-producers:\n%s", out)
	rows := map[string][]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 6 {
			rows[f[0]] = f
		}
	}
	// ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp CurrentTransactionStartOffset
	for pid, want := range map[string][]string{"1000": {"0", "-1", "0", "3"}, "2000": {"3", "7", "1", "None"}} {
		got := rows[pid]
		if len(got) != 6 || got[1] != want[0] || got[2] != want[1] || got[3] != want[2] || got[5] != want[3] {
			t.Errorf("producer %s: %v, want epoch %s, coordinator epoch %s, last sequence %s, transaction start %s", pid, got, want[0], want[1], want[2], want[3])
		}
	}
}

// kafkaTool runs one of Kafka 4.4's command-line tools (its main class,
// from the jars internal/kafkaref resolves) and returns its output; a
// failure fails the test.
func kafkaTool(t *testing.T, class string, args ...string) []byte {
	t.Helper()
	return []byte(runKafkaTool(t, testCtx(t, 3*time.Minute), "", class, args...))
}

// A transaction begun in a leader's tail that never reached its follower:
// the follower leads, the old leader comes back, truncates that tail and
// rebuilds its producer state from the log, so when it leads again no
// phantom open transaction holds its last stable offset (a hanging
// transaction no marker would ever end).
func TestTxnTruncatedTailLeavesNoOpenTransaction(t *testing.T) {
	c := testutil.StartCluster(t, 2, map[string]string{"replica.lag.time.max.ms": "60000",
		"transaction.partition.verification.enable": "false"})
	const topic = "txntrunc"
	createReplicatedTopic(t, c, topic, 1, 2, map[string]*string{"min.insync.replicas": strp("1")})
	mp := waitISR(t, c, topic, 0, 2, 30*time.Second)
	first := mp.Leader
	second := 3 - first
	id := topicID(t, newAdmin(t, c.Node(first).Addr()), topic)

	// The follower stops fetching (still in the ISR); the leader takes a
	// transactional batch with acks=1 that only it holds.
	c.Node(second).StopReplicaFetchers()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = 1, 10000, txnRawID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = rawTxnBatch(7000, 0, 0, "lost")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// (kgo sends a raw Produce with its own acks setting.)
	one := newKgo(t, c.Node(first).Addr(), kgo.MaxVersions(produceV11()), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	kr, err := one.SeedBrokers()[0].Request(testCtx(t, 20*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "acks=1 transactional produce", kr.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, nil)

	// The leader dies; the follower leads and takes other records.
	c.Node(first).Kill()
	waitLeader(t, c, topic, 0, first, 60*time.Second)
	waitLed(t, c.Node(second).Addr(), topic, 0)
	cl2 := newKgo(t, c.Node(second).Addr())
	for i := range 3 {
		wantCode(t, "produce on the new leader", produceRaw(t, cl2, topic, id, 0, rawBatch(-1, -1, -1, time.Now().UnixMilli(), []byte("after"+itoa(i)))).ErrorCode, nil)
	}

	// The old leader returns as a follower, truncates its tail, catches
	// up, and leads again.
	c.Node(first).Restart()
	waitISR(t, c, topic, 0, 2, 60*time.Second)
	c.Node(second).Kill()
	waitLeader(t, c, topic, 0, second, 60*time.Second)
	waitLed(t, c.Node(first).Addr(), topic, 0)
	b := newKgo(t, c.Node(first).Addr()).SeedBrokers()[0]
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := listLatest(t, b, topic, 0); got != 3 {
			return fmt.Errorf("high watermark %d, want 3", got)
		}
		return nil
	})
	checkCommitted(t, b, topic, id, 3, abortedList())
}

// producer.id.expiration.ms forgets idle producers, never one whose
// transaction is open (Kafka's isProducerExpired).
func TestTxnOpenProducerOutlivesExpiration(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{"producer.id.expiration.ms": "1", "log.retention.check.interval.ms": "100",
		"transaction.partition.verification.enable": "false"})
	cl := newKgo(t, n.Addr(), kgo.MaxVersions(produceV11()))
	adm := newAdmin(t, n.Addr())
	const topic = "txnexpire"
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)
	wantCode(t, "idempotent produce", produceRaw(t, cl, topic, id, 0, rawBatch(6000, 0, 0, time.Now().UnixMilli(), []byte("i"))).ErrorCode, nil)
	produceTxnRaw(t, cl, topic, id, rawTxnBatch(6001, 0, 0, "open"), 1)
	testutil.Eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		var ids []int64
		for _, ap := range resp.Topics[0].Partitions[0].ActiveProducers {
			ids = append(ids, ap.ProducerID)
		}
		if !slices.Equal(ids, []int64{6001}) {
			return fmt.Errorf("active producers %v, want only the open transaction's 6001", ids)
		}
		return nil
	})
	checkCommitted(t, cl.SeedBrokers()[0], topic, id, 1, abortedList())
}
