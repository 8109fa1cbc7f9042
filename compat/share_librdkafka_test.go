package compat

// Share groups (KIP-932) with librdkafka's share consumer
// (compat/python/share_member.py, confluent-kafka) and the group's
// options: share.isolation.level=read_committed over an aborted
// transaction, fetch.max.bytes=1, and a close with explicit
// acknowledgements pending. Each scenario runs against samsa and, in
// TestShareLibrdkafkaKafkaReference, against Apache Kafka 4.4.

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/testutil"
)

// rdShareLedger collects what share_member.py processes print.
type rdShareLedger struct {
	mu     sync.Mutex
	reads  map[[2]int64][]int // partition, offset -> delivery counts
	acked  map[[2]int64]int   // partition, offset -> acknowledgements confirmed
	errs   []string
	closed map[string]bool
}

func newRdShareLedger() *rdShareLedger {
	return &rdShareLedger{reads: map[[2]int64][]int{}, acked: map[[2]int64]int{}, closed: map[string]bool{}}
}

// startRdShareMember runs compat/python/share_member.py in mode (accept,
// close-after:N) with the consumer properties props (name=value).
func startRdShareMember(t *testing.T, addr, group, topic, name, mode string, l *rdShareLedger, props ...string) *procMember {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "compat", "python", "share_member.py")
	args := append([]string{"-u", script, addr, group, topic, name, mode}, props...)
	m := startProcLines(t, name, exec.Command(venvPython(t, root), args...), func(f []string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		switch {
		case len(f) == 4 && f[0] == "R":
			p, _ := strconv.ParseInt(f[1], 10, 64)
			o, _ := strconv.ParseInt(f[2], 10, 64)
			n, _ := strconv.Atoi(f[3])
			l.reads[[2]int64{p, o}] = append(l.reads[[2]int64{p, o}], n)
		case len(f) == 3 && f[0] == "A":
			p, _ := strconv.ParseInt(f[1], 10, 64)
			o, _ := strconv.ParseInt(f[2], 10, 64)
			l.acked[[2]int64{p, o}]++
		case len(f) == 2 && f[0] == "S" && f[1] == "closed":
			l.closed[name] = true
		case len(f) >= 1 && f[0] == "E":
			l.errs = append(l.errs, strings.Join(f, " "))
			t.Logf("%s: %v", name, f)
		}
	})
	t.Cleanup(m.close)
	return m
}

// count is how many distinct records were read.
func (l *rdShareLedger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reads)
}

// awaitRead waits until n distinct records were read.
func (l *rdShareLedger) awaitRead(t *testing.T, n int, d time.Duration) {
	t.Helper()
	testutil.Eventually(t, d, func() error {
		if got := l.count(); got < n {
			return fmt.Errorf("%d of %d records read", got, n)
		}
		return nil
	})
}

// shareEnv is a cluster (samsa or Kafka) for the librdkafka scenarios.
type shareEnv struct {
	bootstrap string // for share_member.py: every broker
	cl        *kgo.Client
	adm       *kadm.Client
	rf        int16
}

func newShareEnv(t *testing.T, addrs ...string) shareEnv {
	t.Helper()
	cl := newKgo(t, addrs[0], kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	return shareEnv{bootstrap: strings.Join(addrs, ","), cl: cl, adm: kadm.NewClient(cl), rf: int16(len(addrs))}
}

func (e shareEnv) createTopic(t *testing.T, topic string, partitions int32) {
	t.Helper()
	resp, err := e.adm.CreateTopic(testCtx(t, 30*time.Second), partitions, e.rf, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic %s: %v %v", topic, err, resp.Err)
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		td, err := e.adm.ListTopics(testCtx(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		if len(td[topic].Partitions) != int(partitions) {
			return fmt.Errorf("%d partitions", len(td[topic].Partitions))
		}
		for _, p := range td[topic].Partitions {
			if p.Leader < 0 {
				return fmt.Errorf("partition %d has no leader", p.Partition)
			}
		}
		return nil
	})
}

// produce produces n records to each of topic's partitions, per records
// to a batch.
func (e shareEnv) produce(t *testing.T, topic string, partitions int32, n, per int) {
	t.Helper()
	for i := 0; i < n; i += per {
		var recs []*kgo.Record
		for p := range partitions {
			for j := i; j < min(i+per, n); j++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(strconv.Itoa(j))})
			}
		}
		produceAll(t, e.cl, recs...)
	}
}

// awaitNoShareLag waits until DescribeShareGroupOffsets shows group's n
// partitions with state, each with lag 0: every record is done. (Kafka
// persists a share-partition's start offset before it moves past what an
// acknowledgement completed, so the lag, not the start, is compared.)
func awaitNoShareLag(t *testing.T, cl *kgo.Client, group string, n int) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() error {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = group
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(testCtx(t, 20*time.Second), cl)
		if err != nil {
			return err
		}
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			return fmt.Errorf("DescribeShareGroupOffsets: %+v", resp.Groups)
		}
		var parts []string
		for _, rt := range resp.Groups[0].Topics {
			for _, p := range rt.Partitions {
				if p.ErrorCode != 0 || p.Lag != 0 {
					return fmt.Errorf("%s-%d: error %d, start %d, lag %d", rt.Topic, p.Partition, p.ErrorCode, p.StartOffset, p.Lag)
				}
				parts = append(parts, fmt.Sprintf("%s-%d", rt.Topic, p.Partition))
			}
		}
		if len(parts) != n {
			return fmt.Errorf("partitions with state %v, want %d", parts, n)
		}
		return nil
	})
}

// txn produces n records to each of topic's partitions in one
// transaction, committed or aborted.
func (e shareEnv) txn(t *testing.T, id, topic string, partitions int32, n int, commit bool) {
	t.Helper()
	addrs := strings.Split(e.bootstrap, ",")
	tc := newKgo(t, addrs[0], kgo.SeedBrokers(addrs...), kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testCtx(t, 60*time.Second)
	if err := tc.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for p := range partitions {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%s-%d", id, i))})
		}
	}
	if err := tc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := tc.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("ending transaction %s (commit %v): %v", id, commit, err)
	}
}

// shareReadCommitted: a group with share.isolation.level=read_committed
// never gets the records of an aborted transaction; it gets those of a
// committed one and the plain records after them, and every offset is
// done in the end (the aborted records and the markers archived).
func shareReadCommitted(t *testing.T, e shareEnv) {
	const topic, group = "share-rc", "share-rc-group"
	e.createTopic(t, topic, 1)
	setGroupConfig(t, e.cl, group, "share.isolation.level", "read_committed")
	setGroupConfig(t, e.cl, group, "share.auto.offset.reset", "earliest")
	e.txn(t, "rc-aborted", topic, 1, 100, false)
	e.txn(t, "rc-committed", topic, 1, 10, true)
	var plain []*kgo.Record
	for i := range 5 {
		plain = append(plain, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("plain-%d", i))})
	}
	produceAll(t, e.cl, plain...)
	l := newRdShareLedger()
	startRdShareMember(t, e.bootstrap, group, topic, "rc", "accept", l)
	l.awaitRead(t, 15, 90*time.Second)
	awaitNoShareLag(t, e.cl, group, 1)
	// A transaction's marker lands after EndTxn answers, where the next
	// records may already be: the records are told apart by value.
	want := e.offsetsNotOf(t, topic, map[int32]int64{0: 0}, 115, "rc-aborted")
	if len(want) != 15 {
		t.Fatalf("%d records outside the aborted transaction, want 15", len(want))
	}
	l.checkReads(t, want)
}

// offsetsNotOf reads topic's n records (read_uncommitted) and returns the
// partition and offset of those whose value does not start with prefix.
func (e shareEnv) offsetsNotOf(t *testing.T, topic string, from map[int32]int64, n int, prefix string) map[[2]int64]bool {
	t.Helper()
	out := map[[2]int64]bool{}
	for _, r := range consumeExact(t, e.bootstrap, topic, from, n, 60*time.Second,
		kgo.SeedBrokers(strings.Split(e.bootstrap, ",")...), kgo.FetchIsolationLevel(kgo.ReadUncommitted())) {
		if !strings.HasPrefix(string(r.Value), prefix) {
			out[[2]int64{int64(r.Partition), r.Offset}] = true
		}
	}
	return out
}

// checkReads fails t unless the records read are exactly want, each once.
func (l *rdShareLedger) checkReads(t *testing.T, want map[[2]int64]bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, counts := range l.reads {
		if !want[k] {
			t.Errorf("%d-%d delivered %d times, want never (aborted)", k[0], k[1], len(counts))
		} else if len(counts) != 1 {
			t.Errorf("%d-%d delivered %d times, want once", k[0], k[1], len(counts))
		}
	}
	for k := range want {
		if len(l.reads[k]) == 0 {
			t.Errorf("%d-%d never delivered", k[0], k[1])
		}
	}
}

// shareFetchMaxBytesOne: fetch.max.bytes=1 still gets every record, a
// batch at a time (the limit is soft).
func shareFetchMaxBytesOne(t *testing.T, e shareEnv) {
	const topic, group = "share-maxbytes", "share-maxbytes-group"
	e.createTopic(t, topic, 3)
	setGroupConfig(t, e.cl, group, "share.auto.offset.reset", "earliest")
	e.produce(t, topic, 3, 30, 10)
	l := newRdShareLedger()
	startRdShareMember(t, e.bootstrap, group, topic, "mb", "accept", l, "fetch.max.bytes=1")
	l.awaitRead(t, 90, 90*time.Second)
}

// shareCloseAcks: a consumer in explicit mode acknowledges 50 records and
// closes with the acknowledgements pending; close() commits them, and
// the acknowledgement commit callback gets all 50.
func shareCloseAcks(t *testing.T, e shareEnv) {
	const topic, group = "share-close", "share-close-group"
	e.createTopic(t, topic, 3)
	setGroupConfig(t, e.cl, group, "share.auto.offset.reset", "earliest")
	e.produce(t, topic, 3, 50, 50)
	l := newRdShareLedger()
	startRdShareMember(t, e.bootstrap, group, topic, "closer", "close-after:150", l)
	testutil.Eventually(t, 90*time.Second, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.closed["closer"] {
			return fmt.Errorf("not closed; %d records read", len(l.reads))
		}
		return nil
	})
	l.mu.Lock()
	for p := range int64(3) {
		for o := range int64(50) {
			if n := l.acked[[2]int64{p, o}]; n != 1 {
				t.Errorf("%d-%d: %d acknowledgements confirmed to the callback, want 1", p, o, n)
			}
		}
	}
	l.mu.Unlock()
	awaitNoShareLag(t, e.cl, group, 3)
}

func TestShareLibrdkafkaReadCommitted(t *testing.T) {
	shareReadCommitted(t, newShareEnv(t, testutil.StartBroker(t, nil).Addr()))
}

func TestShareLibrdkafkaFetchMaxBytesOne(t *testing.T) {
	shareFetchMaxBytesOne(t, newShareEnv(t, shareCluster(t).Addrs()...))
}

func TestShareLibrdkafkaCloseAcknowledges(t *testing.T) {
	shareCloseAcks(t, newShareEnv(t, shareCluster(t).Addrs()...))
}

// shareCluster is three brokers for share groups.
func shareCluster(t *testing.T) *testutil.Cluster {
	t.Helper()
	return testutil.StartCluster(t, 3, map[string]string{"group.share.heartbeat.interval.ms": "500"})
}

// TestShareLibrdkafkaKafkaReference runs the scenarios against Apache
// Kafka 4.4 (internal/kafkaref), so that samsa's answers are Kafka's.
func TestShareLibrdkafkaKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	e := newShareEnv(t, kb.Addr)
	t.Run("ReadCommitted", func(t *testing.T) { shareReadCommitted(t, e) })
	t.Run("FetchMaxBytesOne", func(t *testing.T) { shareFetchMaxBytesOne(t, e) })
	t.Run("CloseAcknowledges", func(t *testing.T) { shareCloseAcks(t, e) })
}

// share.auto.offset.reset=earliest and share.isolation.level=read_committed
// set through one broker, and a share consumer at once: the partitions led
// by the other two brokers, whose etcd watch has not brought them the
// group's configs (held back here, as on a loaded cluster), start at the
// log start all the same, every record produced before the first fetch
// arrives, and none of an aborted transaction.
func TestShareLibrdkafkaEarliestThreeBrokers(t *testing.T) {
	c := shareCluster(t)
	addrs := c.Addrs()
	release := make(chan struct{})
	for _, id := range []int32{2, 3} {
		c.Node(id).SetGroupConfigWatchHook(func() { <-release })
	}
	t.Cleanup(func() { close(release) })
	e := newShareEnv(t, addrs...)
	const topic, group = "share-earliest", "share-earliest-group"
	e.createTopic(t, topic, 3)
	td, err := e.adm.ListTopics(testCtx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	others := 0
	for _, p := range td[topic].Partitions {
		if p.Leader != 1 {
			others++
		}
	}
	if others == 0 {
		t.Fatalf("every partition of %s is led by broker 1: %+v", topic, td[topic].Partitions)
	}
	e.produce(t, topic, 3, 30, 10)
	e.txn(t, "early-aborted", topic, 3, 10, false)
	e.produce(t, topic, 3, 5, 5)

	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for name, v := range map[string]string{"share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed"} {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = name, kmsg.StringPtr(v)
		rr.Configs = append(rr.Configs, cfg)
	}
	req.Resources = append(req.Resources, rr)
	resp := admDial(t, c.Node(1).Addr()).roundTrip(req, 1).(*kmsg.IncrementalAlterConfigsResponse)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs through broker 1: %+v", resp.Resources)
	}

	l := newRdShareLedger()
	startRdShareMember(t, e.bootstrap, group, topic, "early", "accept", l)
	l.awaitRead(t, 105, 90*time.Second)
	awaitNoShareLag(t, e.cl, group, 3)
	want := e.offsetsNotOf(t, topic, map[int32]int64{0: 0, 1: 0, 2: 0}, 135, "early-aborted")
	if len(want) != 105 {
		t.Fatalf("%d records outside the aborted transaction, want 105", len(want))
	}
	l.checkReads(t, want)
}
