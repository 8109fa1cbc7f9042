package compat

// Share groups (KIP-932) with the Java 4.4 KafkaShareConsumer
// (compat/java's ShareMember): queue semantics over one partition, locks
// that expire when a member dies holding them, and the delivery limit.

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// shareDelivery is one record a share member got: who, and the delivery
// count the broker gave.
type shareDelivery struct {
	member string
	count  int
}

// shareLedger collects what the share members print.
type shareLedger struct {
	mu         sync.Mutex
	reads      map[int64][]shareDelivery    // offset of partition 0 -> deliveries
	byPart     map[[2]int64][]shareDelivery // partition, offset -> deliveries
	acked      map[[2]int64]bool            // records whose acknowledgement a commit confirmed
	pending    map[string][][2]int64        // member -> the records of its last poll
	failed     map[string]map[int64]bool    // member -> partitions its last commit failed on
	holding    map[string]bool              // members that hold records (mode hold)
	commitErrs map[int64][]string           // partition -> its failed commits, as the member printed them
}

func newShareLedger() *shareLedger {
	return &shareLedger{reads: map[int64][]shareDelivery{}, byPart: map[[2]int64][]shareDelivery{},
		acked: map[[2]int64]bool{}, pending: map[string][][2]int64{}, failed: map[string]map[int64]bool{},
		holding: map[string]bool{}, commitErrs: map[int64][]string{}}
}

// awaitHolding waits until member (in mode hold) holds records.
func (l *shareLedger) awaitHolding(t *testing.T, member string) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.holding[member] {
			return fmt.Errorf("%s holds nothing yet", member)
		}
		return nil
	})
}

// startShareMember runs compat/java's ShareMember in mode (accept,
// release, reject, hold) in a JVM of its own.
func startShareMember(t *testing.T, addr, group, topic, name, mode string, l *shareLedger, props ...string) *procMember {
	t.Helper()
	cmd := javaMemberCmd(t, "ShareMember", append([]string{addr, group, topic, name, mode}, props...)...)
	m := startProcLines(t, name, cmd, func(f []string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		switch {
		case len(f) == 4 && f[0] == "R":
			p, _ := strconv.ParseInt(f[1], 10, 64)
			o, _ := strconv.ParseInt(f[2], 10, 64)
			n, _ := strconv.Atoi(f[3])
			l.reads[o] = append(l.reads[o], shareDelivery{name, n})
			k := [2]int64{p, o}
			l.byPart[k] = append(l.byPart[k], shareDelivery{name, n})
			l.pending[name] = append(l.pending[name], k)
		case len(f) >= 1 && f[0] == "H":
			l.holding[name] = true
		case len(f) >= 3 && f[0] == "E" && f[1] == "commit":
			// E commit <topicId>:<topic>-<partition>: <exception>
			tp := strings.TrimSuffix(f[2], ":")
			p, err := strconv.ParseInt(tp[strings.LastIndexByte(tp, '-')+1:], 10, 64)
			if l.failed[name] == nil {
				l.failed[name] = map[int64]bool{}
			}
			l.failed[name][p] = true
			l.commitErrs[p] = append(l.commitErrs[p], strings.Join(f, " "))
			if err != nil {
				l.failed[name][-1] = true // unreadable: none of the poll counts
			}
			t.Logf("%s: %v", name, f)
		case len(f) >= 1 && f[0] == "E":
			t.Logf("%s: %v", name, f)
		case len(f) == 2 && f[0] == "C":
			for _, k := range l.pending[name] {
				if !l.failed[name][k[0]] && !l.failed[name][-1] {
					l.acked[k] = true
				}
			}
			l.pending[name], l.failed[name] = nil, nil
		}
	})
	t.Cleanup(m.close)
	return m
}

// shareStartOffset is the share-partition start offset of group on
// topic's partition 0 (DescribeShareGroupOffsets), -1 before the
// partition has state.
func shareStartOffset(t *testing.T, cl *kgo.Client, group, topic string) (int64, error) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	rg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		return -1, err
	}
	if len(resp.Groups) != 1 {
		return -1, fmt.Errorf("%d groups in the answer", len(resp.Groups))
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 {
		return -1, fmt.Errorf("group error %d", g.ErrorCode)
	}
	if len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("answer %+v", g.Topics)
	}
	p := g.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return -1, fmt.Errorf("partition error %d", p.ErrorCode)
	}
	return p.StartOffset, nil
}

// awaitShareStart waits, up to within, until group's share-partition of
// topic-0 starts at want.
func awaitShareStart(t *testing.T, cl *kgo.Client, group, topic string, want int64, within time.Duration) {
	t.Helper()
	testutil.Eventually(t, within, func() error {
		start, err := shareStartOffset(t, cl, group, topic)
		if err != nil {
			return err
		}
		if start != want {
			return fmt.Errorf("start offset %d, want %d", start, want)
		}
		return nil
	})
}

// awaitShareInit waits until group's share-partition of topic-0 has
// state: share.auto.offset.reset is latest, so records produced before
// would not be delivered.
func awaitShareInit(t *testing.T, cl *kgo.Client, group, topic string) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() error {
		start, err := shareStartOffset(t, cl, group, topic)
		if err != nil {
			return err
		}
		if start < 0 {
			return fmt.Errorf("share-partition not initialized")
		}
		return nil
	})
}

// produceShare produces n records to partition 0 of topic, in batches of
// per records (one produce call each, so each is a batch of its own).
func produceShare(t *testing.T, cl *kgo.Client, topic string, n, per int) {
	t.Helper()
	for i := 0; i < n; i += per {
		var recs []*kgo.Record
		for j := i; j < min(i+per, n); j++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(j))})
		}
		produceAll(t, cl, recs...)
	}
}

func shareBroker(t *testing.T, overrides map[string]string) (string, *kgo.Client) {
	t.Helper()
	o := map[string]string{"group.share.heartbeat.interval.ms": "500"}
	for k, v := range overrides {
		o[k] = v
	}
	n := testutil.StartBroker(t, o)
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	return n.Addr(), cl
}

// Three Java share consumers on one partition: every record goes to one of
// them (none twice, since each accepts what it gets), and all three get
// records; ShareGroupDescribe shows all three on partition 0.
func TestShareGroupJavaThreeMembersOnePartition(t *testing.T) {
	addr, cl := shareBroker(t, nil)
	adm := newAdmin(t, addr)
	const topic, group, total = "share-queue", "sq", 300
	createTopic(t, adm, topic, 1, nil)
	l := newShareLedger()
	var ms []*procMember
	for i := range 3 {
		ms = append(ms, startShareMember(t, addr, group, topic, fmt.Sprintf("m%d", i), "accept", l))
	}
	awaitShareInit(t, cl, group, topic)
	testutil.Eventually(t, 60*time.Second, func() error {
		d := describeShare(t, cl, group)
		if len(d.Members) != 3 {
			return fmt.Errorf("%d members", len(d.Members))
		}
		for _, m := range d.Members {
			if len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != topic {
				return fmt.Errorf("member %s assigned %+v", m.MemberID, m.Assignment.TopicPartitions)
			}
		}
		return nil
	})
	// Batches of 10, one at a time once the last was read, so that the
	// members waiting take turns.
	for i := 0; i < total; i += 10 {
		produceShare(t, cl, topic, 10, 10)
		testutil.Eventually(t, 60*time.Second, func() error {
			l.mu.Lock()
			defer l.mu.Unlock()
			if len(l.reads) < i+10 {
				return fmt.Errorf("%d of %d records read", len(l.reads), i+10)
			}
			return nil
		})
	}
	l.mu.Lock()
	per := map[string]int{}
	for o := range int64(total) {
		ds := l.reads[o]
		if len(ds) != 1 || ds[0].count != 1 {
			t.Errorf("offset %d delivered %v, want once with delivery count 1", o, ds)
		}
		for _, d := range ds {
			per[d.member]++
		}
	}
	l.mu.Unlock()
	t.Logf("records per member: %v", per)
	if len(per) != 3 {
		t.Errorf("records went to %d members (%v), want all 3", len(per), per)
	}
	for _, m := range ms {
		m.leave()
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		d := describeShare(t, cl, group)
		if d.GroupState != "Empty" || len(d.Members) != 0 {
			return fmt.Errorf("group %s with %d members", d.GroupState, len(d.Members))
		}
		return nil
	})
	start, err := shareStartOffset(t, cl, group, topic)
	if err != nil || start != total {
		t.Errorf("share-partition start offset %d (%v), want %d: every record acknowledged", start, err, total)
	}
}

func describeShare(t *testing.T, cl *kgo.Client, group string) kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatalf("ShareGroupDescribe: %v", err)
	}
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("ShareGroupDescribe: %+v", resp.Groups)
	}
	return resp.Groups[0]
}

// A member that dies holding records: after the acquisition lock expires
// they go to another member, with delivery count 2; none is lost.
func TestShareGroupJavaLockExpiry(t *testing.T) {
	addr, cl := shareBroker(t, map[string]string{"group.share.record.lock.duration.ms": "3000"})
	adm := newAdmin(t, addr)
	const topic, group, total = "share-locks", "sl", 40
	createTopic(t, adm, topic, 1, nil)
	l := newShareLedger()
	holder := startShareMember(t, addr, group, topic, "holder", "hold", l)
	awaitShareInit(t, cl, group, topic)
	produceShare(t, cl, topic, total, total)
	l.awaitHolding(t, "holder")
	l.mu.Lock()
	held := len(l.reads)
	l.mu.Unlock()
	if held != total {
		t.Fatalf("holder got %d records, want all %d (one batch)", held, total)
	}
	holder.crash()
	startShareMember(t, addr, group, topic, "taker", "accept", l)
	testutil.Eventually(t, 90*time.Second, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		for o := range int64(total) {
			if len(l.reads[o]) < 2 {
				return fmt.Errorf("offset %d delivered %d times", o, len(l.reads[o]))
			}
		}
		return nil
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	for o := range int64(total) {
		ds := l.reads[o]
		if len(ds) != 2 || ds[0] != (shareDelivery{"holder", 1}) || ds[1] != (shareDelivery{"taker", 2}) {
			t.Errorf("offset %d delivered %v, want to holder (count 1) then taker (count 2)", o, ds)
		}
	}
}

// A member that releases every record it gets sees each one
// group.share.delivery.count.limit times, then the records are archived
// and the start offset moves past them.
func TestShareGroupJavaDeliveryLimit(t *testing.T) {
	addr, cl := shareBroker(t, map[string]string{"group.share.delivery.count.limit": "3"})
	adm := newAdmin(t, addr)
	const topic, group, total = "share-limit", "sd", 10
	createTopic(t, adm, topic, 1, nil)
	l := newShareLedger()
	startShareMember(t, addr, group, topic, "releaser", "release", l)
	awaitShareInit(t, cl, group, topic)
	produceShare(t, cl, topic, total, 5)
	awaitShareStart(t, cl, group, topic, total, 60*time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	for o := range int64(total) {
		ds := l.reads[o]
		if len(ds) != 3 {
			t.Errorf("offset %d delivered %d times (%v), want 3", o, len(ds), ds)
			continue
		}
		for i, d := range ds {
			if d.count != i+1 {
				t.Errorf("offset %d delivery %d has count %d", o, i+1, d.count)
			}
		}
	}
}

// setGroupConfig sets a group config with IncrementalAlterConfigs and
// waits until DescribeConfigs shows it.
func setGroupConfig(t *testing.T, cl *kgo.Client, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
	rr.Configs = append(rr.Configs, cfg)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs %s=%s on group %s: %v %+v", name, value, group, err, resp)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		dr := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{name}
		dr.Resources = append(dr.Resources, r)
		resp, err := dr.RequestWith(testCtx(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		if len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != 1 || derefStr(resp.Resources[0].Configs[0].Value) != value {
			return fmt.Errorf("DescribeConfigs: %+v", resp.Resources)
		}
		return nil
	})
}

// A broker restart loses no acknowledgement: records accepted before it
// are not delivered again, records held by a member that died are
// delivered once more with their delivery count kept, and the group's
// share.auto.offset.reset=earliest starts a new share-partition at the
// log start.
func TestShareGroupJavaBrokerRestart(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{"group.share.heartbeat.interval.ms": "500"})
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := newAdmin(t, n.Addr())
	const topic, group = "share-restart", "sr"
	createTopic(t, adm, topic, 1, nil)
	setGroupConfig(t, cl, group, "share.auto.offset.reset", "earliest")
	produceShare(t, cl, topic, 60, 10) // before any member: earliest reads them
	l := newShareLedger()
	acc := startShareMember(t, n.Addr(), group, topic, "acc", "accept", l)
	awaitShareStart(t, cl, group, topic, 60, 90*time.Second)
	acc.leave()
	produceShare(t, cl, topic, 40, 10) // offsets 60-99
	holder := startShareMember(t, n.Addr(), group, topic, "holder", "hold", l)
	l.awaitHolding(t, "holder")
	holder.crash()
	l.mu.Lock()
	held := map[int64]bool{}
	for o, ds := range l.reads {
		for _, d := range ds {
			if d.member == "holder" {
				held[o] = true
			}
		}
	}
	l.mu.Unlock()
	if len(held) == 0 {
		t.Fatal("the holder holds no record")
	}

	n.Restart()
	cl2 := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	startShareMember(t, n.Addr(), group, topic, "after", "accept", l)
	awaitShareStart(t, cl2, group, topic, 100, 120*time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	for o := range int64(100) {
		var after []shareDelivery
		for _, d := range l.reads[o] {
			if d.member == "after" {
				after = append(after, d)
			}
		}
		switch {
		case o < 60 && len(after) > 0:
			t.Errorf("offset %d, accepted before the restart, delivered again: %v", o, after)
		case o >= 60 && len(after) != 1:
			t.Errorf("offset %d delivered %v after the restart, want once", o, after)
		case o >= 60 && held[o] && after[0].count != 2:
			t.Errorf("offset %d, held before the restart, has delivery count %d after, want 2", o, after[0].count)
		case o >= 60 && !held[o] && after[0].count != 1:
			t.Errorf("offset %d has delivery count %d, want 1", o, after[0].count)
		}
	}
}
