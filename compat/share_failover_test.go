package compat

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// shareGroupOnBroker is a group id whose coordinator is broker id.
func shareGroupOnBroker(t *testing.T, addr, prefix string, id int32) string {
	t.Helper()
	for i := range 200 {
		g := prefix + strconv.Itoa(i)
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = g
		var resp *kmsg.FindCoordinatorResponse
		testutil.Eventually(t, 60*time.Second, func() error {
			resp = admDial(t, addr).roundTrip(req, 3).(*kmsg.FindCoordinatorResponse)
			if resp.ErrorCode != 0 {
				return fmt.Errorf("FindCoordinator %s: error %d", g, resp.ErrorCode)
			}
			return nil
		})
		if resp.NodeID == id {
			return g
		}
	}
	t.Fatalf("no group of 200 has broker %d as its coordinator", id)
	return ""
}

// rawShareHeartbeat sends one ShareGroupHeartbeat v1 to group's coordinator.
func rawShareHeartbeat(t *testing.T, addr, group, member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
	resp := admDialCoordinator(t, addr, group).roundTrip(req, 1).(*kmsg.ShareGroupHeartbeatResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ShareGroupHeartbeat %s epoch %d: error %d %s", member, epoch, resp.ErrorCode, derefStr(resp.ErrorMessage))
	}
	return resp
}

// shareStartOffsets are the start offsets DescribeShareGroupOffsets gives
// for every partition of group with state (no topics named).
func shareStartOffsets(t *testing.T, cl *kgo.Client, group string) (map[string]int64, error) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(testCtx(t, 20*time.Second), cl)
	if err != nil {
		return nil, err
	}
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return nil, fmt.Errorf("DescribeShareGroupOffsets: %+v", resp.Groups)
	}
	out := map[string]int64{}
	for _, tp := range resp.Groups[0].Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				return nil, fmt.Errorf("%s-%d: error %d %s", tp.Topic, p.Partition, p.ErrorCode, derefStr(p.ErrorMessage))
			}
			out[fmt.Sprintf("%s-%d", tp.Topic, p.Partition)] = p.StartOffset
		}
	}
	return out, nil
}

// A Java 4.4 KafkaShareConsumer reads a three-partition topic (RF 3) of a
// three-broker cluster while the broker leading partition 0, which is
// also the group's coordinator, is killed: nothing whose acknowledgement
// was confirmed before the kill is delivered again, what was delivered and
// not acknowledged comes back with a higher delivery count, nothing is
// lost, and the new coordinator has the group from its records (its epoch
// did not start over, the member did not rejoin). DescribeShareGroupOffsets
// then lists all three partitions, led by other brokers than the
// coordinator, at their end.
func TestShareGroupJavaLeaderChange(t *testing.T) {
	cl := testutil.StartCluster(t, 3, map[string]string{"group.share.heartbeat.interval.ms": "500"})
	addrs := cl.Addrs()
	kc := newKgo(t, addrs[0], kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(kc)
	const topic, per = "share-failover", 100
	resp, err := adm.CreateTopic(testCtx(t, 30*time.Second), 3, 3, map[string]*string{"min.insync.replicas": strp("2")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic: %v %v", err, resp.Err)
	}
	var victim int32 = -1
	testutil.Eventually(t, 60*time.Second, func() error {
		td, err := adm.ListTopics(testCtx(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		p, ok := td[topic].Partitions[0]
		if !ok || p.Leader < 0 {
			return fmt.Errorf("partition 0 has no leader yet")
		}
		victim = p.Leader
		return nil
	})
	group := shareGroupOnBroker(t, addrs[0], "sf", victim)
	setGroupConfig(t, kc, group, "share.auto.offset.reset", "earliest")
	produce := func(round int) {
		var recs []*kgo.Record
		for p := range int32(3) {
			for i := range per {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%d-%d", round, i))})
			}
		}
		produceAll(t, kc, recs...)
	}
	produce(0)
	l := newShareLedger()
	startShareMember(t, strings.Join(addrs, ","), group, topic, "m", "accept", l)
	acked := func(n int) func() error {
		return func() error {
			l.mu.Lock()
			defer l.mu.Unlock()
			if len(l.acked) < n {
				return fmt.Errorf("%d of %d records acknowledged", len(l.acked), n)
			}
			return nil
		}
	}
	testutil.Eventually(t, 120*time.Second, acked(3*per))
	// Another member joins and leaves: the group epoch moves past what a
	// rejoin on an empty coordinator would give.
	addr := addrs[slices.IndexFunc(cl.Nodes, func(n *testutil.Node) bool { return n.NodeID() != victim })]
	rawShareHeartbeat(t, addr, group, "x-member-0000000000", 0, []string{topic})
	rawShareHeartbeat(t, addr, group, "x-member-0000000000", -1, nil)
	var before kmsg.ShareGroupDescribeResponseGroup
	testutil.Eventually(t, 30*time.Second, func() error {
		before = describeShare(t, kc, group)
		if len(before.Members) != 1 || before.Members[0].MemberEpoch != before.GroupEpoch {
			return fmt.Errorf("group epoch %d, members %+v", before.GroupEpoch, before.Members)
		}
		return nil
	})
	if before.GroupEpoch < 3 {
		t.Fatalf("group epoch %d before the kill, want at least 3", before.GroupEpoch)
	}

	produce(1)
	l.mu.Lock()
	ackedBefore := maps.Clone(l.acked)
	l.mu.Unlock()
	leadersBefore := map[int32]int32{}
	td, err := adm.ListTopics(testCtx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, pd := range td[topic].Partitions {
		leadersBefore[p] = pd.Leader
	}
	cl.Node(victim).Kill()
	produce(2)
	// Done when the broker has every record acknowledged: the start
	// offsets DescribeShareGroupOffsets gives, through the new
	// coordinator, for all three partitions, led by two brokers.
	testutil.Eventually(t, 180*time.Second, func() error {
		got, err := shareStartOffsets(t, kc, group)
		if err != nil {
			return err
		}
		want := map[string]int64{topic + "-0": 3 * per, topic + "-1": 3 * per, topic + "-2": 3 * per}
		if !maps.Equal(got, want) {
			return fmt.Errorf("start offsets %v, want %v", got, want)
		}
		return nil
	})

	l.mu.Lock()
	for p := range int64(3) {
		for o := range int64(3 * per) {
			ds := l.byPart[[2]int64{p, o}]
			switch {
			case len(ds) == 0:
				t.Errorf("%s-%d offset %d never delivered", topic, p, o)
			case ackedBefore[[2]int64{p, o}] && len(ds) > 1:
				t.Errorf("%s-%d offset %d, acknowledged before the kill, delivered again: %v", topic, p, o, ds)
			}
			for i := 1; i < len(ds); i++ {
				if ds[i].count <= ds[i-1].count {
					t.Errorf("%s-%d offset %d redelivered with delivery count %d after %d", topic, p, o, ds[i].count, ds[i-1].count)
				}
			}
		}
	}
	redelivered := 0
	for _, ds := range l.byPart {
		if len(ds) > 1 {
			redelivered++
		}
	}
	t.Logf("%d records acknowledged before the kill, %d delivered more than once", len(ackedBefore), redelivered)
	// An acknowledgement to a live leader whose state could not be written
	// while the share coordinator moved gets COORDINATOR_NOT_AVAILABLE,
	// which the client retries, as from Kafka: never UNKNOWN_SERVER_ERROR.
	// (The Java client reports its own lost connection to the killed
	// leader as an unknown server error.)
	for p, errs := range l.commitErrs {
		for _, e := range errs {
			if leadersBefore[int32(p)] != victim && strings.Contains(e, "UnknownServerException") {
				t.Errorf("a commit to live leader %d failed with an unknown server error: %s", leadersBefore[int32(p)], e)
			}
		}
	}
	l.mu.Unlock()

	after := describeShare(t, kc, group)
	if after.GroupEpoch < before.GroupEpoch || len(after.Members) != 1 || after.Members[0].MemberID != before.Members[0].MemberID ||
		after.Members[0].MemberEpoch < before.Members[0].MemberEpoch {
		t.Errorf("after the coordinator moved: group epoch %d, members %+v; before: epoch %d, members %+v",
			after.GroupEpoch, after.Members, before.GroupEpoch, before.Members)
	}
}
