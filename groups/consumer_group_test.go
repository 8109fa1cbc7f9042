package groups

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func cgTestConfig(l Log) Config {
	cfg := testConfig(l)
	cfg.Topics = func() []TopicMeta {
		return []TopicMeta{{Name: "t1", ID: [16]byte{1}, Partitions: 4}, {Name: "t2", ID: [16]byte{2}, Partitions: 2}}
	}
	return cfg
}

func cgHeartbeat(t *testing.T, c *Coordinator, member string, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, f func(*kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch, req.Topics = "g", member, epoch, owned
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = []string{"t1", "t2"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if f != nil {
		f(req)
	}
	resp := c.ConsumerGroupHeartbeat(Client{ID: member, Host: "/127.0.0.1"}, req)
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat %s epoch %d: error %d %v", member, epoch, resp.ErrorCode, deref(resp.ErrorMessage))
	}
	return resp
}

// owns converts a heartbeat answer's assignment into what the member then
// reports it owns.
func owns(resp *kmsg.ConsumerGroupHeartbeatResponse) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if resp.Assignment == nil {
		return out
	}
	for _, t := range resp.Assignment.Topics {
		out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
	}
	return out
}

func countParts(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) int {
	n := 0
	for _, t := range ts {
		n += len(t.Partitions)
	}
	return n
}

// A second member joining: the first gives up half its partitions first
// (its epoch stays until it reports them gone), and the second gets them
// only then; a new coordinator over the same log knows both members, their
// epochs and assignments.
func TestConsumerGroupReconcileAndReload(t *testing.T) {
	l := newMemLog()
	c := New(cgTestConfig(l))
	defer c.Close()
	ownAll(t, c)

	a := cgHeartbeat(t, c, "a", 0, nil, nil)
	aOwned := owns(a)
	if a.MemberEpoch != 1 || countParts(aOwned) != 6 {
		t.Fatalf("a alone: epoch %d, %d partitions", a.MemberEpoch, countParts(aOwned))
	}
	b := cgHeartbeat(t, c, "b", 0, nil, nil)
	if countParts(owns(b)) != 0 || b.MemberEpoch != 2 {
		t.Fatalf("b before a revoked: epoch %d, %d partitions", b.MemberEpoch, countParts(owns(b)))
	}
	a = cgHeartbeat(t, c, "a", 1, aOwned, nil)
	if a.MemberEpoch != 1 || countParts(owns(a)) != 3 {
		t.Fatalf("a revoking: epoch %d, %d partitions, want epoch 1 and 3", a.MemberEpoch, countParts(owns(a)))
	}
	aOwned = owns(a)
	a = cgHeartbeat(t, c, "a", 1, aOwned, nil)
	if a.MemberEpoch != 2 {
		t.Fatalf("a after revoking: epoch %d, want 2", a.MemberEpoch)
	}
	b = cgHeartbeat(t, c, "b", 2, []kmsg.ConsumerGroupHeartbeatRequestTopic{}, nil)
	if countParts(owns(b)) != 3 || b.MemberEpoch != 2 {
		t.Fatalf("b after a revoked: epoch %d, %d partitions", b.MemberEpoch, countParts(owns(b)))
	}
	before := c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0]
	c.Close()

	c2 := New(cgTestConfig(l))
	defer c2.Close()
	ownAll(t, c2)
	after := c2.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0]
	if fmt.Sprintf("%+v", before) != fmt.Sprintf("%+v", after) {
		t.Errorf("reloaded group differs:\nbefore %+v\nafter  %+v", before, after)
	}
	if after.State != "Stable" || after.Epoch != 2 || len(after.Members) != 2 {
		t.Errorf("reloaded: %s epoch %d with %d members", after.State, after.Epoch, len(after.Members))
	}
	// The members go on with their epochs.
	cgHeartbeat(t, c2, "b", 2, owns(b), nil)
	// One leaves: its records are tombstoned, and a third coordinator
	// loads one member.
	cgHeartbeat(t, c2, "a", -1, nil, nil)
	c2.Close()
	c3 := New(cgTestConfig(l))
	defer c3.Close()
	ownAll(t, c3)
	g := c3.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0]
	if len(g.Members) != 1 || g.Members[0].MemberID != "b" || g.Epoch != 3 {
		t.Errorf("after a left and a reload: epoch %d, members %+v", g.Epoch, g.Members)
	}
}

// Both assignors give a member the partitions on its rack where the
// balance allows, and stay balanced.
func TestConsumerAssignorsRackAware(t *testing.T) {
	meta := map[string]TopicMeta{"t": {Name: "t", ID: [16]byte{9}, Partitions: 6,
		Racks: [][]string{{"r2"}, {"r2"}, {"r1"}, {"r0"}, {"r1"}, {"r0"}}}}
	for _, assignor := range []string{assignorUniform, assignorRange} {
		cg := newConsumerGroup()
		for i, id := range []string{"m0", "m1", "m2"} {
			cg.members[id] = &consumerMember{id: id, rack: fmt.Sprintf("r%d", i), topics: []string{"t"}}
		}
		// m0 held everything before (uniform is sticky): the racks win.
		cg.target["m0"] = []topicPartition{{"t", 0}, {"t", 1}, {"t", 2}, {"t", 3}, {"t", 4}, {"t", 5}}
		got := assign(assignor, cg, meta)
		for id, tps := range got {
			if len(tps) != 2 {
				t.Errorf("%s: %s got %v, want 2 partitions", assignor, id, tps)
			}
			for _, tp := range tps {
				if !meta["t"].onRack(tp.partition, cg.members[id].rack) {
					t.Errorf("%s: %s (rack %s) got partition %d off its rack", assignor, id, cg.members[id].rack, tp.partition)
				}
			}
		}
	}
}

// A SubscribedTopicRegex takes the topics it matches whole, internal ones
// too, as Kafka 4.4's coordinator resolves it (compat
// TestConsumerGroupRegexKafkaReference asks Kafka itself): a match inside
// a name does not count.
func TestConsumerGroupRegexMatchesWholeNames(t *testing.T) {
	l := newMemLog()
	cfg := testConfig(l)
	cfg.Topics = func() []TopicMeta {
		return []TopicMeta{
			{Name: "__consumer_offsets", ID: [16]byte{1}, Partitions: 3, Internal: true},
			{Name: "orders", ID: [16]byte{2}, Partitions: 2},
			{Name: "orders-eu", ID: [16]byte{3}, Partitions: 1},
			{Name: "my-orders", ID: [16]byte{4}, Partitions: 1},
		}
	}
	c := New(cfg)
	defer c.Close()
	ownAll(t, c)
	tests := []struct {
		regex string
		want  map[[16]byte]int
	}{
		{"orders", map[[16]byte]int{{2}: 2}},
		{"orders.*", map[[16]byte]int{{2}: 2, {3}: 1}},
		{"__consumer_offsets|my-.*", map[[16]byte]int{{1}: 3, {4}: 1}},
		{"__.*", map[[16]byte]int{{1}: 3}},
	}
	for i, tt := range tests {
		member := fmt.Sprintf("m%d", i)
		resp := cgHeartbeat(t, c, member, 0, nil, func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Group = "rx" + member
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, kmsg.StringPtr(tt.regex)
		})
		got := map[[16]byte]int{}
		for _, at := range owns(resp) {
			got[at.TopicID] = len(at.Partitions)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("regex %q: assigned %v, want %v", tt.regex, got, tt.want)
		}
	}
}
