package groups

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/poll"
)

func topicInfo(name string, partitions int32) kmsg.TopicInfo {
	ti := kmsg.NewTopicInfo()
	ti.Topic, ti.NumPartitions = name, partitions
	return ti
}

// wordCountTopology is Kafka Streams' word count: subtopology 0 reads the
// input and writes the repartition topic, 1 reads it into a store.
func wordCountTopology() *kmsg.StreamsGroupHeartbeatRequestTopology {
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"in"}, []string{"app-words-repartition"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{topicInfo("app-words-repartition", 0)}
	s1.StateChangelogTopics = []kmsg.TopicInfo{topicInfo("app-counts-changelog", 0)}
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s0, s1}
	return &t
}

func metaOf(topics map[string]int32) map[string]TopicMeta {
	out := map[string]TopicMeta{}
	for name, n := range topics {
		out[name] = TopicMeta{Name: name, Partitions: n}
	}
	return out
}

func TestStreamsTopologyConfigure(t *testing.T) {
	copartitioned := func() *kmsg.StreamsGroupHeartbeatRequestTopology {
		s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		s.SubtopologyID, s.SourceTopics = "0", []string{"a", "b"}
		s.CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0, 1}}}
		t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s}
		return &t
	}
	neverSunk := func() *kmsg.StreamsGroupHeartbeatRequestTopology {
		t := wordCountTopology()
		t.Subtopologies[0].RepartitionSinkTopics = nil
		return t
	}
	tests := []struct {
		name     string
		topology *kmsg.StreamsGroupHeartbeatRequestTopology
		topics   map[string]int32
		status   int8 // -1: ready
		detail   string
		tasks    map[string]int32
		create   []string
		err      error
	}{
		{name: "source topic missing", topology: wordCountTopology(), topics: map[string]int32{},
			status: streamsStatusMissingSourceTopics, detail: "Source topics in are missing."},
		{name: "internal topics missing", topology: wordCountTopology(), topics: map[string]int32{"in": 3},
			status: streamsStatusMissingInternalTopics, detail: "Internal topics are missing: app-counts-changelog, app-words-repartition",
			create: []string{"app-counts-changelog/3", "app-words-repartition/3"}},
		{name: "ready", topology: wordCountTopology(), topics: map[string]int32{"in": 3, "app-words-repartition": 3, "app-counts-changelog": 3},
			status: -1, tasks: map[string]int32{"0": 3, "1": 3}},
		{name: "changelog partitioned otherwise", topology: wordCountTopology(), topics: map[string]int32{"in": 3, "app-words-repartition": 3, "app-counts-changelog": 5},
			status: streamsStatusIncorrectlyPartitioned, detail: "Existing topic app-counts-changelog has different number of partitions: expected 3, found 5"},
		{name: "copartition mismatch", topology: copartitioned(), topics: map[string]int32{"a": 2, "b": 3},
			status: streamsStatusIncorrectlyPartitioned, detail: "Following topics do not have the same number of partitions: [a=2, b=3]"},
		{name: "copartitioned", topology: copartitioned(), topics: map[string]int32{"a": 3, "b": 3},
			status: -1, tasks: map[string]int32{"0": 3}},
		{name: "repartition topic nobody writes", topology: neverSunk(), topics: map[string]int32{"in": 3}, err: kerr.StreamsInvalidTopology},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, err := configureTopology(topologyFromRequest(tt.topology), metaOf(tt.topics))
			if tt.err != nil || err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				return
			}
			if tt.status < 0 {
				if !ct.ready() {
					t.Fatalf("not ready: %+v", ct.status)
				}
				for sub, n := range tt.tasks {
					if ct.tasks[sub] != n {
						t.Errorf("subtopology %s: %d tasks, want %d", sub, ct.tasks[sub], n)
					}
				}
				return
			}
			if ct.status == nil || ct.status.code != tt.status || ct.status.detail != tt.detail {
				t.Fatalf("status %+v, want %d %q", ct.status, tt.status, tt.detail)
			}
			var create []string
			for _, c := range ct.create {
				create = append(create, fmt.Sprintf("%s/%d", c.Name, c.Partitions))
			}
			if !slices.Equal(create, tt.create) {
				t.Errorf("to create %v, want %v", create, tt.create)
			}
		})
	}
}

func TestStreamsTopologyValidation(t *testing.T) {
	top := wordCountTopology()
	top.Subtopologies[1].StateChangelogTopics[0].NumPartitions = 4
	if msg := validateStreamsTopology(top); msg != "Changelog topic app-counts-changelog must have an undefined partition count, but it is set to 4." {
		t.Errorf("changelog with partitions: %q", msg)
	}
	top = wordCountTopology()
	top.Subtopologies[0].CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{7}}}
	if msg := validateStreamsTopology(top); msg == "" {
		t.Error("a copartition group's index past the source topics is accepted")
	}
	if msg := validateStreamsTopology(wordCountTopology()); msg != "" {
		t.Errorf("word count refused: %s", msg)
	}
}

func streamsMembers(procs ...string) map[string]*streamsMember {
	out := map[string]*streamsMember{}
	for i, p := range procs {
		id := string(rune('a' + i))
		out[id] = &streamsMember{id: id, processID: p}
	}
	return out
}

func countActive(as map[string]streamsTasks) map[string]int {
	out := map[string]int{}
	for id, t := range as {
		out[id] = len(t.active)
	}
	return out
}

// The sticky assignor: balanced, a new member takes tasks without moving
// any between the others, and standbys sit on other processes than their
// active task.
func TestStreamsAssignSticky(t *testing.T) {
	var tasks []taskID
	for _, sub := range []string{"0", "1"} {
		for p := range int32(6) {
			tasks = append(tasks, taskID{sub, p})
		}
	}
	two := assignStreamsTasks(streamsMembers("p1", "p2"), nil, tasks, 0)
	if c := countActive(two); c["a"] != 6 || c["b"] != 6 {
		t.Fatalf("two members: %v", c)
	}
	three := assignStreamsTasks(streamsMembers("p1", "p2", "p3"), two, tasks, 0)
	if c := countActive(three); c["a"] != 4 || c["b"] != 4 || c["c"] != 4 {
		t.Fatalf("three members: %v", c)
	}
	for _, id := range []string{"a", "b"} {
		for task := range three[id].active {
			if _, ok := two[id].active[task]; !ok {
				t.Errorf("task %v moved to %s, which did not have it", task, id)
			}
		}
	}
	ms := streamsMembers("p1", "p1", "p2")
	withStandby := assignStreamsTasks(ms, nil, tasks, 1)
	proc := func(id string) string { return ms[id].processID }
	standbys := 0
	for _, task := range tasks {
		var active, standby []string
		for id, a := range withStandby {
			if _, ok := a.active[task]; ok {
				active = append(active, id)
			}
			if a.standby[task] {
				standby = append(standby, id)
			}
		}
		if len(active) != 1 || len(standby) != 1 || proc(active[0]) == proc(standby[0]) {
			t.Errorf("task %v: active on %v, standby on %v", task, active, standby)
		}
		standbys += len(standby)
	}
	if standbys != len(tasks) {
		t.Errorf("%d standbys, want %d", standbys, len(tasks))
	}
}

func sgHeartbeat(t *testing.T, c *Coordinator, member string, epoch int32, owned []int32, f func(*kmsg.StreamsGroupHeartbeatRequest)) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = "sg", member, epoch
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	if len(owned) > 0 {
		req.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: owned}}
	}
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.ProcessID = kmsg.StringPtr("process-" + member)
		req.Topology = sgJoinTopology()
	}
	if f != nil {
		f(req)
	}
	resp := c.StreamsGroupHeartbeat(Client{ID: member, Host: "/127.0.0.1"}, req).Response
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat %s epoch %d: error %d %v", member, epoch, resp.ErrorCode, deref(resp.ErrorMessage))
	}
	return resp
}

func activeOf(resp *kmsg.StreamsGroupHeartbeatResponse) []int32 {
	var out []int32
	for _, ts := range resp.ActiveTasks {
		out = append(out, ts.Partitions...)
	}
	slices.Sort(out)
	return out
}

// A second member joining (a new group's first epoch is 2: its initial
// rebalance delay, 0 here, ends at once): the first revokes half its tasks first (its
// epoch stays until it reports them gone), the second gets them only
// then; new coordinators reload the group from the log; a fenced epoch
// and an unknown member get Kafka's errors.
func TestStreamsGroupReconcile(t *testing.T) {
	cfg := testConfig(newMemLog())
	cfg.Topics = func() []TopicMeta { return []TopicMeta{{Name: "in", ID: [16]byte{1}, Partitions: 4}} }
	c := New(cfg)
	defer c.Close()
	ownAll(t, c)

	a := sgHeartbeat(t, c, "a", 0, nil, nil)
	if a.MemberEpoch != 2 || !slices.Equal(activeOf(a), []int32{0, 1, 2, 3}) {
		t.Fatalf("a alone: epoch %d, tasks %v", a.MemberEpoch, activeOf(a))
	}
	b := sgHeartbeat(t, c, "b", 0, nil, nil)
	if b.MemberEpoch != 3 || len(activeOf(b)) != 0 {
		t.Fatalf("b before a revoked: epoch %d, tasks %v", b.MemberEpoch, activeOf(b))
	}
	a = sgHeartbeat(t, c, "a", 2, []int32{0, 1, 2, 3}, nil)
	kept := activeOf(a)
	if a.MemberEpoch != 2 || len(kept) != 2 {
		t.Fatalf("a revoking: epoch %d, tasks %v, want epoch 2 and two tasks", a.MemberEpoch, kept)
	}
	if b = sgHeartbeat(t, c, "b", 3, nil, nil); len(activeOf(b)) != 0 {
		t.Fatalf("b got %v while a still owns them", activeOf(b))
	}
	if a = sgHeartbeat(t, c, "a", 2, kept, nil); a.MemberEpoch != 3 {
		t.Fatalf("a after revoking: epoch %d", a.MemberEpoch)
	}
	if b = sgHeartbeat(t, c, "b", 3, nil, nil); len(activeOf(b)) != 2 || slices.ContainsFunc(activeOf(b), func(p int32) bool { return slices.Contains(kept, p) }) {
		t.Fatalf("b after a revoked: tasks %v, a kept %v", activeOf(b), kept)
	}

	// A new coordinator over the same log knows the group: its topology,
	// members, epochs and assignments.
	describe := func(c *Coordinator) kmsg.StreamsGroupDescribeResponseGroup {
		return c.StreamsGroupDescribe(&kmsg.StreamsGroupDescribeRequest{Groups: []string{"sg"}}).Groups[0]
	}
	show := func(g kmsg.StreamsGroupDescribeResponseGroup) string {
		top := fmt.Sprintf("%+v", g.Topology)
		if g.Topology != nil {
			top = fmt.Sprintf("%+v", *g.Topology)
		}
		g.Topology, g.AssignorName = nil, nil
		return fmt.Sprintf("%+v %s", g, top)
	}
	before := describe(c)
	c.Close()
	c = New(cfg)
	defer c.Close()
	ownAll(t, c)
	after := describe(c)
	if show(before) != show(after) {
		t.Errorf("reloaded group differs:\nbefore %+v\nafter  %+v", before, after)
	}
	if after.State != "Stable" || after.Epoch != 3 || len(after.Members) != 2 || after.Topology == nil {
		t.Errorf("reloaded: %s epoch %d with %d members, topology %v", after.State, after.Epoch, len(after.Members), after.Topology)
	}
	// The members go on with their epochs; one leaves and a third
	// coordinator loads the other alone.
	sgHeartbeat(t, c, "b", 3, activeOf(b), nil)
	sgHeartbeat(t, c, "a", -1, nil, nil)
	c.Close()
	c = New(cfg)
	defer c.Close()
	ownAll(t, c)
	if g := describe(c); len(g.Members) != 1 || g.Members[0].MemberID != "b" || g.Epoch != 4 {
		t.Errorf("after a left and a reload: epoch %d, members %+v", g.Epoch, g.Members)
	}

	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "sg", "b", 9
	if r := c.StreamsGroupHeartbeat(Client{}, req).Response; r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Errorf("epoch 9: error %d, want FENCED_MEMBER_EPOCH", r.ErrorCode)
	}
	req.MemberID = "nobody"
	if r := c.StreamsGroupHeartbeat(Client{}, req).Response; r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("unknown member: error %d, want UNKNOWN_MEMBER_ID", r.ErrorCode)
	}
	req.Group = "none"
	if r := c.StreamsGroupHeartbeat(Client{}, req).Response; r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("unknown group: error %d, want GROUP_ID_NOT_FOUND", r.ErrorCode)
	}
}

func newStreamsCoordinator(t *testing.T, edit func(*Config)) *Coordinator {
	t.Helper()
	cfg := testConfig(newMemLog())
	cfg.Topics = func() []TopicMeta { return []TopicMeta{{Name: "in", ID: [16]byte{1}, Partitions: 4}} }
	if edit != nil {
		edit(&cfg)
	}
	return startCoordinator(t, cfg)
}

func sgTry(c *Coordinator, member string, epoch int32, f func(*kmsg.StreamsGroupHeartbeatRequest)) (*kmsg.StreamsGroupHeartbeatResponse, string) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = "sg", member, epoch
	if f != nil {
		f(req)
	}
	resp := c.StreamsGroupHeartbeat(Client{ID: member}, req).Response
	return resp, answer(resp.ErrorCode, resp.ErrorMessage)
}

func describeStreamsGroup(c *Coordinator) kmsg.StreamsGroupDescribeResponseGroup {
	return c.StreamsGroupDescribe(&kmsg.StreamsGroupDescribeRequest{Groups: []string{"sg"}}).Groups[0]
}

func statusCodes(r *kmsg.StreamsGroupHeartbeatResponse) []int8 {
	var out []int8
	for _, s := range r.Status {
		out = append(out, s.StatusCode)
	}
	return out
}

// TestStreamsGroupLeave is Kafka's streamsGroupLeave: epoch -1 removes the
// member and moves the group epoch; epoch -2 keeps a static member for its
// instance to come back to under a new member id, with its epoch and tasks
// and no new group epoch; while it is back, another member with its
// instance id is UNRELEASED_INSTANCE_ID with Kafka's message.
func TestStreamsGroupLeave(t *testing.T) {
	c := newStreamsCoordinator(t, nil)
	static := func(id string) func(*kmsg.StreamsGroupHeartbeatRequest) {
		return func(r *kmsg.StreamsGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr(id) }
	}
	s1 := sgHeartbeat(t, c, "s1", 0, nil, static("i1"))
	if s1.MemberEpoch != 2 || len(activeOf(s1)) != 4 {
		t.Fatalf("s1: epoch %d tasks %v", s1.MemberEpoch, activeOf(s1))
	}
	if r, got := sgTry(c, "s1", -2, static("i1")); got != "-" || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %s epoch %d", got, r.MemberEpoch)
	}
	s2 := sgHeartbeat(t, c, "s2", 0, nil, func(r *kmsg.StreamsGroupHeartbeatRequest) {
		r.InstanceID, r.ProcessID = kmsg.StringPtr("i1"), kmsg.StringPtr("process-s1") // the same process, restarted
	})
	if s2.MemberEpoch != 2 || len(activeOf(s2)) != 4 {
		t.Errorf("the instance back as s2: epoch %d tasks %v, want epoch 2 with all 4", s2.MemberEpoch, activeOf(s2))
	}
	if _, got := sgTry(c, "s3", 0, func(r *kmsg.StreamsGroupHeartbeatRequest) {
		r.InstanceID, r.RebalanceTimeoutMillis, r.Topology = kmsg.StringPtr("i1"), 30000, sgJoinTopology()
	}); got != "UNRELEASED_INSTANCE_ID: Static member s3 with instance id i1 cannot join the group because the instance id is owned by s2 member." {
		t.Errorf("another member with the instance id: %s", got)
	}
	b := sgHeartbeat(t, c, "b", 0, nil, nil)
	if d := describeStreamsGroup(c); d.Epoch != 3 || len(d.Members) != 2 {
		t.Fatalf("with b: epoch %d, %d members", d.Epoch, len(d.Members))
	}
	if r, got := sgTry(c, "b", -1, nil); got != "-" || r.MemberEpoch != -1 {
		t.Fatalf("b leaving: %s epoch %d", got, r.MemberEpoch)
	}
	if d := describeStreamsGroup(c); d.Epoch != 4 || len(d.Members) != 1 {
		t.Errorf("after b left: epoch %d, %d members, want 4 and 1", d.Epoch, len(d.Members))
	}
	if _, got := sgTry(c, "b", b.MemberEpoch, nil); got != "UNKNOWN_MEMBER_ID: Member b is not a member of group sg." {
		t.Errorf("b after leaving: %s", got)
	}
	if _, got := sgTry(c, "s2", -2, nil); got != "INVALID_REQUEST: InstanceId can't be null." {
		t.Errorf("epoch -2 without an instance id: %s", got)
	}
}

// sgJoinTopology is the topology sgHeartbeat joins with.
func sgJoinTopology() *kmsg.StreamsGroupHeartbeatRequestTopology {
	top := wordCountTopology()
	top.Subtopologies = top.Subtopologies[:1]
	top.Subtopologies[0].RepartitionSinkTopics = nil
	return top
}

// TestStreamsGroupSessionTimeout: a member that stops heartbeating for
// its group's streams.session.timeout.ms is removed and the group epoch
// moves on.
func TestStreamsGroupSessionTimeout(t *testing.T) {
	c := newStreamsCoordinator(t, func(cfg *Config) {
		cfg.GroupSettings = func(string) GroupSettings { return GroupSettings{StreamsSessionTimeout: 50 * time.Millisecond} }
	})
	a := sgHeartbeat(t, c, "a", 0, nil, nil)
	poll.Eventually(t, 10*time.Second, func() error {
		if d := describeStreamsGroup(c); d.State != "Empty" || d.Epoch != a.MemberEpoch+1 {
			return fmt.Errorf("group %s at epoch %d, want Empty at %d", d.State, d.Epoch, a.MemberEpoch+1)
		}
		return nil
	})
}

// TestStreamsGroupStatuses: the statuses KIP-1071 has a heartbeat carry:
// ASSIGNMENT_DELAYED (no tasks) during a new group's
// streams.initial.rebalance.delay.ms, MISSING_SOURCE_TOPICS (NotReady)
// while a source topic does not exist, STALE_TOPOLOGY for a member whose
// topology epoch is behind the group's, SHUTDOWN_APPLICATION once a member
// asked for it.
func TestStreamsGroupStatuses(t *testing.T) {
	delayed := newStreamsCoordinator(t, func(cfg *Config) {
		cfg.GroupSettings = func(string) GroupSettings { return GroupSettings{StreamsInitialDelay: time.Hour} }
	})
	if r := sgHeartbeat(t, delayed, "a", 0, nil, nil); len(activeOf(r)) != 0 || !slices.Equal(statusCodes(r), []int8{streamsStatusAssignmentDelayed}) {
		t.Errorf("during the initial delay: tasks %v statuses %v", activeOf(r), r.Status)
	}

	missing := newStreamsCoordinator(t, func(cfg *Config) { cfg.Topics = func() []TopicMeta { return nil } })
	r := sgHeartbeat(t, missing, "a", 0, nil, nil)
	if len(activeOf(r)) != 0 || !slices.Equal(statusCodes(r), []int8{streamsStatusMissingSourceTopics}) {
		t.Errorf("without its source topic: tasks %v statuses %v", activeOf(r), r.Status)
	}
	if d := describeStreamsGroup(missing); d.State != "NotReady" {
		t.Errorf("group %s without its source topic, want NotReady", d.State)
	}

	c := newStreamsCoordinator(t, nil)
	a := sgHeartbeat(t, c, "a", 0, nil, func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology.Epoch = 1 })
	old := sgHeartbeat(t, c, "old", 0, nil, nil) // topology epoch 0
	if !slices.Equal(statusCodes(old), []int8{streamsStatusStaleTopology}) {
		t.Errorf("member with an older topology: statuses %v", old.Status)
	}
	a = sgHeartbeat(t, c, "a", a.MemberEpoch, activeOf(a), func(r *kmsg.StreamsGroupHeartbeatRequest) { r.ShutdownApplication = true })
	if !slices.Equal(statusCodes(a), []int8{streamsStatusShutdownApplication}) {
		t.Errorf("after a asked to shut down: statuses %v", a.Status)
	}
	if r := sgHeartbeat(t, c, "old", old.MemberEpoch, nil, nil); !slices.Contains(statusCodes(r), streamsStatusShutdownApplication) {
		t.Errorf("another member after a asked to shut down: statuses %v", r.Status)
	}
}
