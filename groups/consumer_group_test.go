package groups

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/poll"
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
	resp, got := cgTry(c, member, epoch, owned, f)
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat %s epoch %d: %s", member, epoch, got)
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
	if a.MemberEpoch != 2 || countParts(aOwned) != 6 {
		t.Fatalf("a alone: epoch %d, %d partitions", a.MemberEpoch, countParts(aOwned))
	}
	b := cgHeartbeat(t, c, "b", 0, nil, nil)
	if countParts(owns(b)) != 0 || b.MemberEpoch != 3 {
		t.Fatalf("b before a revoked: epoch %d, %d partitions", b.MemberEpoch, countParts(owns(b)))
	}
	a = cgHeartbeat(t, c, "a", 2, aOwned, nil)
	if a.MemberEpoch != 2 || countParts(owns(a)) != 3 {
		t.Fatalf("a revoking: epoch %d, %d partitions, want epoch 2 and 3", a.MemberEpoch, countParts(owns(a)))
	}
	aOwned = owns(a)
	a = cgHeartbeat(t, c, "a", 2, aOwned, nil)
	if a.MemberEpoch != 3 {
		t.Fatalf("a after revoking: epoch %d, want 3", a.MemberEpoch)
	}
	b = cgHeartbeat(t, c, "b", 3, []kmsg.ConsumerGroupHeartbeatRequestTopic{}, nil)
	if countParts(owns(b)) != 3 || b.MemberEpoch != 3 {
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
	if after.State != "Stable" || after.Epoch != 3 || len(after.Members) != 2 {
		t.Errorf("reloaded: %s epoch %d with %d members", after.State, after.Epoch, len(after.Members))
	}
	// The members go on with their epochs.
	cgHeartbeat(t, c2, "b", 3, owns(b), nil)
	// One leaves: its records are tombstoned, and a third coordinator
	// loads one member.
	cgHeartbeat(t, c2, "a", -1, nil, nil)
	c2.Close()
	c3 := New(cgTestConfig(l))
	defer c3.Close()
	ownAll(t, c3)
	g := c3.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0]
	if len(g.Members) != 1 || g.Members[0].MemberID != "b" || g.Epoch != 4 {
		t.Errorf("after a left and a reload: epoch %d, members %+v", g.Epoch, g.Members)
	}
}

// Both assignors give a member the partitions on its rack where the
// balance allows, and stay balanced.
func TestConsumerAssignorsRackAware(t *testing.T) {
	meta := map[string]TopicMeta{"t": {Name: "t", ID: [16]byte{9}, Partitions: 6,
		Racks: [][]string{{"r2"}, {"r2"}, {"r1"}, {"r0"}, {"r1"}, {"r0"}}}}
	for _, assignor := range []string{assignorUniform, assignorRange} {
		cg := newConsumerGroup(nil, time.Time{})
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

// cgTry is a ConsumerGroupHeartbeat of member at epoch to group "g" as
// cgHeartbeat builds it, answering its error (by name and message) too.
func cgTry(c *Coordinator, member string, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, f func(*kmsg.ConsumerGroupHeartbeatRequest)) (*kmsg.ConsumerGroupHeartbeatResponse, string) {
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
	return resp, answer(resp.ErrorCode, resp.ErrorMessage)
}

func describeConsumerGroup(c *Coordinator) kmsg.ConsumerGroupDescribeResponseGroup {
	return c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0]
}

func newConsumerCoordinator(t *testing.T, edit func(*Config)) *Coordinator {
	t.Helper()
	cfg := cgTestConfig(newMemLog())
	if edit != nil {
		edit(&cfg)
	}
	return startCoordinator(t, cfg)
}

// TestConsumerGroupMemberEpochs is Kafka's throwIfMemberEpochIsInvalid: an
// epoch ahead of the member's is FENCED_MEMBER_EPOCH, an unknown member
// UNKNOWN_MEMBER_ID; an epoch one behind (the previous one) passes only
// with owned partitions the member still has (a lost response), and the
// answer is the current epoch.
func TestConsumerGroupMemberEpochs(t *testing.T) {
	c := newConsumerCoordinator(t, nil)
	a := cgHeartbeat(t, c, "a", 0, nil, nil)
	want := fmt.Sprintf("FENCED_MEMBER_EPOCH: The consumer group member has a greater member epoch (5) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", a.MemberEpoch)
	if _, got := cgTry(c, "a", 5, nil, nil); got != want {
		t.Errorf("epoch 5: %s, want %s", got, want)
	}
	if _, got := cgTry(c, "nobody", 2, nil, nil); got != "UNKNOWN_MEMBER_ID: Member nobody is not a member of group g." {
		t.Errorf("unknown member: %s", got)
	}
	aOwned := owns(a)
	cgHeartbeat(t, c, "b", 0, nil, nil)
	a = cgHeartbeat(t, c, "a", 2, aOwned, nil) // revoking half
	aOwned = owns(a)
	a = cgHeartbeat(t, c, "a", 2, aOwned, nil)
	if a.MemberEpoch != 3 {
		t.Fatalf("a after revoking: epoch %d, want 3", a.MemberEpoch)
	}
	// The answer of epoch 3 lost: a comes back at 2 with what it owns.
	if r, got := cgTry(c, "a", 2, aOwned, nil); got != "-" || r.MemberEpoch != 3 {
		t.Errorf("previous epoch with its partitions: %s epoch %d, want epoch 3", got, r.MemberEpoch)
	}
	all := []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: [16]byte{1}, Partitions: []int32{0, 1, 2, 3}}, {TopicID: [16]byte{2}, Partitions: []int32{0, 1}}}
	if _, got := cgTry(c, "a", 2, all, nil); got[:19] != "FENCED_MEMBER_EPOCH" {
		t.Errorf("previous epoch with partitions revoked since: %s, want FENCED_MEMBER_EPOCH", got)
	}
	if _, got := cgTry(c, "a", 2, nil, nil); got[:19] != "FENCED_MEMBER_EPOCH" {
		t.Errorf("previous epoch without its partitions: %s, want FENCED_MEMBER_EPOCH", got)
	}
	if d := describeConsumerGroup(c); d.Epoch != 3 || d.AssignmentEpoch != 3 || len(d.Members) != 2 {
		t.Errorf("group epoch %d, assignment epoch %d, %d members", d.Epoch, d.AssignmentEpoch, len(d.Members))
	}
}

// TestConsumerGroupLeave is Kafka's consumerGroupLeave: epoch -1 removes
// the member (the group epoch moves on, its partitions are free), epoch
// -2 (a static member) keeps it for its instance to come back to under
// a new member id with its epoch and assignment and no new group epoch;
// while the instance is back, another member with its instance id is
// UNRELEASED_INSTANCE_ID.
func TestConsumerGroupLeave(t *testing.T) {
	c := newConsumerCoordinator(t, nil)
	static := func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("i1") }
	s1 := cgHeartbeat(t, c, "s1", 0, nil, static)
	cgHeartbeat(t, c, "a", 0, nil, nil)
	s1 = cgHeartbeat(t, c, "s1", s1.MemberEpoch, owns(s1), static)
	s1 = cgHeartbeat(t, c, "s1", s1.MemberEpoch, owns(s1), static)
	if s1.MemberEpoch != 3 {
		t.Fatalf("s1 epoch %d, want 3", s1.MemberEpoch)
	}
	held := countParts(owns(s1))

	if _, got := cgTry(c, "s1", -2, nil, nil); got != "INVALID_REQUEST: InstanceId can't be null." {
		t.Errorf("epoch -2 without an instance id: %s", got)
	}
	if r, got := cgTry(c, "s1", -2, nil, static); got != "-" || r.MemberEpoch != -2 || deref(r.MemberID) != "s1" {
		t.Fatalf("static leave: %s epoch %d", got, r.MemberEpoch)
	}
	d := describeConsumerGroup(c)
	if d.Epoch != 3 || len(d.Members) != 2 {
		t.Errorf("after the static leave: epoch %d with %d members, want 3 with 2", d.Epoch, len(d.Members))
	}
	s2 := cgHeartbeat(t, c, "s2", 0, nil, static)
	if s2.MemberEpoch != 3 || countParts(owns(s2)) != held {
		t.Errorf("the instance back as s2: epoch %d with %d partitions, want epoch 3 with %d", s2.MemberEpoch, countParts(owns(s2)), held)
	}
	if d := describeConsumerGroup(c); d.Epoch != 3 {
		t.Errorf("group epoch %d after the instance came back, want 3", d.Epoch)
	}
	if _, got := cgTry(c, "s3", 0, nil, static); got[:22] != "UNRELEASED_INSTANCE_ID" {
		t.Errorf("another member with the instance id: %s", got)
	}
	if _, got := cgTry(c, "s1", 3, nil, nil); got[:17] != "UNKNOWN_MEMBER_ID" {
		t.Errorf("the old member id: %s", got)
	}

	if r, got := cgTry(c, "a", -1, nil, nil); got != "-" || r.MemberEpoch != -1 {
		t.Fatalf("leave: %s epoch %d", got, r.MemberEpoch)
	}
	if d := describeConsumerGroup(c); d.Epoch != 4 || len(d.Members) != 1 {
		t.Errorf("after a left: epoch %d with %d members, want 4 with 1", d.Epoch, len(d.Members))
	}
	if _, got := cgTry(c, "a", -1, nil, nil); got[:17] != "UNKNOWN_MEMBER_ID" {
		t.Errorf("leaving again: %s", got)
	}
	if r := cgHeartbeat(t, c, "s2", 3, owns(s2), static); r.MemberEpoch != 4 || countParts(owns(r)) != 6 {
		t.Errorf("s2 alone: epoch %d with %d partitions, want 4 with 6", r.MemberEpoch, countParts(owns(r)))
	}
}

// TestConsumerGroupSessionTimeout: a member that stops heartbeating for
// its group's consumer.session.timeout.ms is removed, the group epoch
// moves on and its next heartbeat is UNKNOWN_MEMBER_ID.
func TestConsumerGroupSessionTimeout(t *testing.T) {
	c := newConsumerCoordinator(t, func(cfg *Config) {
		cfg.GroupSettings = func(string) GroupSettings { return GroupSettings{ConsumerSessionTimeout: 50 * time.Millisecond} }
	})
	cgHeartbeat(t, c, "a", 0, nil, nil)
	poll.Eventually(t, 10*time.Second, func() error {
		if d := describeConsumerGroup(c); d.State != "Empty" || d.Epoch != 3 {
			return fmt.Errorf("group %s at epoch %d, want Empty at 3", d.State, d.Epoch)
		}
		return nil
	})
	if _, got := cgTry(c, "a", 1, nil, nil); got[:17] != "UNKNOWN_MEMBER_ID" {
		t.Errorf("heartbeat after the session timeout: %s", got)
	}
}

// TestConsumerGroupRebalanceTimeout: a member that does not revoke its
// partitions within its rebalance timeout (at least a second, as in
// Kafka) is removed, and the partitions go to the member waiting for them.
func TestConsumerGroupRebalanceTimeout(t *testing.T) {
	c := newConsumerCoordinator(t, nil)
	a := cgHeartbeat(t, c, "a", 0, nil, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = 1 })
	aOwned := owns(a)
	cgHeartbeat(t, c, "b", 0, nil, nil)
	if a = cgHeartbeat(t, c, "a", 2, aOwned, nil); countParts(owns(a)) != 3 {
		t.Fatalf("a asked to revoke: %d partitions, want 3", countParts(owns(a)))
	}
	poll.Eventually(t, 10*time.Second, func() error {
		if d := describeConsumerGroup(c); len(d.Members) != 1 {
			return fmt.Errorf("%d members, want b alone once a's rebalance timeout passed", len(d.Members))
		}
		return nil
	})
	if b := cgHeartbeat(t, c, "b", 3, []kmsg.ConsumerGroupHeartbeatRequestTopic{}, nil); countParts(owns(b)) != 6 {
		t.Errorf("b: epoch %d with %d partitions, want all 6", b.MemberEpoch, countParts(owns(b)))
	}
}

// TestConsumerGroupRegexFollowsTopics: a regex subscription takes topics
// created after it (the group epoch moves when what it resolves to
// changes); an invalid regex is INVALID_REGULAR_EXPRESSION with Kafka's
// message.
func TestConsumerGroupRegexFollowsTopics(t *testing.T) {
	var mu sync.Mutex
	topics := []TopicMeta{{Name: "orders", ID: [16]byte{1}, Partitions: 2}}
	c := newConsumerCoordinator(t, func(cfg *Config) {
		cfg.Topics = func() []TopicMeta {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(topics)
		}
	})
	regex := func(re string) func(*kmsg.ConsumerGroupHeartbeatRequest) {
		return func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, kmsg.StringPtr(re)
		}
	}
	if _, got := cgTry(c, "a", 0, nil, regex("orders(")); got != "INVALID_REGULAR_EXPRESSION: SubscribedTopicRegex `orders(` is not a valid regular expression: error parsing regexp: missing closing ): `orders(`." {
		t.Errorf("invalid regex: %s", got)
	}
	a := cgHeartbeat(t, c, "a", 0, nil, regex("orders.*"))
	if a.MemberEpoch != 2 || countParts(owns(a)) != 2 {
		t.Fatalf("a: epoch %d with %d partitions", a.MemberEpoch, countParts(owns(a)))
	}
	mu.Lock()
	topics = append(topics, TopicMeta{Name: "orders-eu", ID: [16]byte{2}, Partitions: 3}, TopicMeta{Name: "other", ID: [16]byte{3}, Partitions: 1})
	mu.Unlock()
	a = cgHeartbeat(t, c, "a", 2, owns(a), nil)
	if a.MemberEpoch != 3 || countParts(owns(a)) != 5 {
		t.Errorf("a after orders-eu was created: epoch %d with %d partitions, want 3 with 5", a.MemberEpoch, countParts(owns(a)))
	}
}
