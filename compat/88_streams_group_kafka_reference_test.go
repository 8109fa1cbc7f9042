package compat

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// streamsProps are the broker settings the streams group tests run with,
// on samsa and on Apache Kafka 4.4 alike: members time out in 6 s and
// heartbeat every second, and assignments are not delayed (samsa
// computes each at once: it does not implement the assignment interval).
var streamsProps = map[string]string{
	"group.streams.assignment.interval.ms":     "0",
	"group.streams.min.session.timeout.ms":     "1000",
	"group.streams.session.timeout.ms":         "6000",
	"group.streams.min.heartbeat.interval.ms":  "500",
	"group.streams.heartbeat.interval.ms":      "1000",
	"group.streams.initial.rebalance.delay.ms": "0",
}

// TestStreamsGroupKafkaReference runs the same StreamsGroupHeartbeat,
// StreamsGroupDescribe and StreamsGroupTopologyDescriptionUpdate
// exchange against Apache Kafka 4.4 and samsa and compares the answers:
// the statuses of a topology whose source topic is missing, then whose
// changelog topic is missing (until the broker has created it), the tasks
// of one member, then of two (the second gets its task only once the
// first has revoked it), and the errors of bad heartbeats: a fenced
// member epoch, an unknown member, an unknown group, a changed topology,
// a changelog topic with a partition count, and the request checks.
func TestStreamsGroupKafkaReference(t *testing.T) {
	t.Parallel()
	probeKafkaAndSamsa(t, streamsProps, streamsProbe)
}

func streamsTopology(in string, changelogPartitions int32) *kmsg.StreamsGroupHeartbeatRequestTopology {
	sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub.SubtopologyID = "0"
	sub.SourceTopics = []string{in}
	cl := kmsg.NewTopicInfo()
	cl.Topic, cl.NumPartitions = "sprobe-store-changelog", changelogPartitions
	cl.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
	sub.StateChangelogTopics = []kmsg.TopicInfo{cl}
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}
	return &top
}

// streamsHeartbeat is a StreamsGroupHeartbeat v1 of member in group
// sprobe; join adds the topology and what a join carries.
func streamsHeartbeat(member string, epoch int32, join bool, in string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "sprobe", member, epoch
	if join {
		req.RebalanceTimeoutMillis = 30000
		req.Topology = streamsTopology(in, 0)
		req.ProcessID = kmsg.StringPtr("process-" + member)
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	return req
}

func ownsTasks(req *kmsg.StreamsGroupHeartbeatRequest, active ...int32) *kmsg.StreamsGroupHeartbeatRequest {
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	if len(active) > 0 {
		req.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: active}}
	}
	return req
}

func showTasks(ts []kmsg.TaskIDs) string {
	if ts == nil {
		return "null"
	}
	var parts []string
	for _, t := range ts {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		parts = append(parts, fmt.Sprintf("%s:%v", t.SubtopologyID, ps))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func showHeartbeat(r *kmsg.StreamsGroupHeartbeatResponse) string {
	var st []string
	for _, s := range r.Status {
		st = append(st, fmt.Sprintf("%d %q", s.StatusCode, s.StatusDetail))
	}
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	return fmt.Sprintf("error %d %q epoch %d status %v active %s standby %s warmup %s",
		r.ErrorCode, msg, r.MemberEpoch, st, showTasks(r.ActiveTasks), showTasks(r.StandbyTasks), showTasks(r.WarmupTasks))
}

// streamsProbe is the exchange TestStreamsGroupKafkaReference compares.
func streamsProbe(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	c := admDial(t, addr)
	adm, _ := admAdmin(t, addr)
	testutil.Eventually(t, time.Minute, func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = "sprobe"
		r := c.roundTrip(fc, 3).(*kmsg.FindCoordinatorResponse)
		if r.ErrorCode != 0 {
			return kerr.ErrorForCode(r.ErrorCode)
		}
		return nil
	})
	// hb sends a heartbeat, again while the coordinator is not ready yet.
	hb := func(req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
		var r *kmsg.StreamsGroupHeartbeatResponse
		testutil.Eventually(t, time.Minute, func() error {
			r = c.roundTrip(req, 1).(*kmsg.StreamsGroupHeartbeatResponse)
			switch r.ErrorCode {
			case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
				return kerr.ErrorForCode(r.ErrorCode)
			}
			return nil
		})
		return r
	}
	const in = "sprobe-in"

	r := hb(streamsHeartbeat("m1", 0, true, in))
	out["01 join, source topic missing"] = showHeartbeat(r)
	admCreate(t, adm, in, 2, 1, nil)
	// The coordinator sees the topic at its next heartbeat, asks for the
	// changelog topic, and assigns both tasks once it exists.
	epoch := r.MemberEpoch
	var statuses []string
	testutil.Eventually(t, time.Minute, func() error {
		// A member still at epoch 0 joins again.
		r = hb(ownsTasks(streamsHeartbeat("m1", epoch, epoch == 0, in)))
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat: %s", showHeartbeat(r))
		}
		epoch = r.MemberEpoch
		for _, s := range r.Status {
			// Kafka's coordinator may see the new topic a heartbeat late.
			if s.StatusCode == 1 {
				continue
			}
			if st := fmt.Sprintf("%d %q", s.StatusCode, s.StatusDetail); !slices.Contains(statuses, st) {
				statuses = append(statuses, st)
			}
		}
		if r.ActiveTasks == nil {
			return fmt.Errorf("no tasks yet: %s", showHeartbeat(r))
		}
		return nil
	})
	out["02 statuses while the topics appear"] = fmt.Sprint(statuses)
	out["03 one member"] = showHeartbeat(r)
	m1 := epoch

	r = hb(streamsHeartbeat("m2", 0, true, in))
	out["04 second member joins"] = showHeartbeat(r)
	m2 := r.MemberEpoch
	r = hb(ownsTasks(streamsHeartbeat("m1", m1, false, in), 0, 1))
	out["05 first member told to revoke"] = showHeartbeat(r)
	kept := []int32{0, 1}
	if r.ActiveTasks != nil {
		kept = nil
		for _, ts := range r.ActiveTasks {
			kept = append(kept, ts.Partitions...)
		}
	}
	r = hb(ownsTasks(streamsHeartbeat("m2", m2, false, in)))
	out["06 second member before the revocation"] = showHeartbeat(r)
	m2 = r.MemberEpoch
	r = hb(ownsTasks(streamsHeartbeat("m1", m1, false, in), kept...))
	out["07 first member revoked"] = showHeartbeat(r)
	m1 = r.MemberEpoch
	r = hb(ownsTasks(streamsHeartbeat("m2", m2, false, in)))
	out["08 second member after the revocation"] = showHeartbeat(r)

	bad := map[string]*kmsg.StreamsGroupHeartbeatRequest{
		"fenced epoch":   ownsTasks(streamsHeartbeat("m1", m1+10, false, in), kept...),
		"older epoch":    ownsTasks(streamsHeartbeat("m1", m1-1, false, in), 0, 1),
		"unknown member": streamsHeartbeat("nobody", 3, false, in),
		"unknown group": func() *kmsg.StreamsGroupHeartbeatRequest {
			q := streamsHeartbeat("m1", 3, false, in)
			q.Group = "sprobe-none"
			return q
		}(),
		"empty member id": streamsHeartbeat("", 0, true, in),
		"join without topology": func() *kmsg.StreamsGroupHeartbeatRequest {
			q := streamsHeartbeat("m3", 0, true, in)
			q.Topology = nil
			return q
		}(),
		"topology on heartbeat": func() *kmsg.StreamsGroupHeartbeatRequest {
			q := ownsTasks(streamsHeartbeat("m1", m1, false, in), kept...)
			q.Topology = streamsTopology(in, 0)
			return q
		}(),
		"join with owned tasks": ownsTasks(streamsHeartbeat("m3", 0, true, in), 1),
		"join without timeout": func() *kmsg.StreamsGroupHeartbeatRequest {
			q := streamsHeartbeat("m3", 0, true, in)
			q.RebalanceTimeoutMillis = -1
			return q
		}(),
		"epoch -3": streamsHeartbeat("m1", -3, false, in),
		"one task type null": func() *kmsg.StreamsGroupHeartbeatRequest {
			q := ownsTasks(streamsHeartbeat("m1", m1, false, in), kept...)
			q.StandbyTasks = nil
			return q
		}(),
		"changed topology": func() *kmsg.StreamsGroupHeartbeatRequest {
			q := streamsHeartbeat("m3", 0, true, in)
			q.Topology = streamsTopology("sprobe-other", 0)
			return q
		}(),
		"changelog with partitions": func() *kmsg.StreamsGroupHeartbeatRequest {
			q := streamsHeartbeat("m3", 0, true, in)
			q.Topology = streamsTopology(in, 4)
			return q
		}(),
		"leave of an unknown member": streamsHeartbeat("nobody", -1, false, in),
		"task offsets": func() *kmsg.StreamsGroupHeartbeatRequest {
			q := ownsTasks(streamsHeartbeat("m1", m1, false, in), kept...)
			q.TaskOffsets = []kmsg.TaskOffset{}
			return q
		}(),
		"warm-up task owned": func() *kmsg.StreamsGroupHeartbeatRequest {
			q := ownsTasks(streamsHeartbeat("m1", m1, false, in), kept...)
			q.WarmupTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1}}}
			return q
		}(),
	}
	for _, name := range slices.Sorted(maps.Keys(bad)) {
		out["09 bad: "+name] = showHeartbeat(hb(bad[name]))
	}

	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups = []string{"sprobe", "sprobe-none"}
	d.IncludeTopologyDescription = true
	dr := c.roundTrip(d, 1).(*kmsg.StreamsGroupDescribeResponse)
	for _, g := range dr.Groups {
		msg := ""
		if g.ErrorMessage != nil {
			msg = *g.ErrorMessage
		}
		line := fmt.Sprintf("error %d %q state %s epoch %d assignment %d description status %d members %d",
			g.ErrorCode, msg, g.State, g.Epoch, g.AssignmentEpoch, g.TopologyDescriptionStatus, len(g.Members))
		slices.SortFunc(g.Members, func(a, b kmsg.StreamsGroupDescribeResponseGroupMember) int {
			return strings.Compare(a.MemberID, b.MemberID)
		})
		if g.Topology != nil {
			for _, s := range g.Topology.Subtopologies {
				var cls []string
				for _, cl := range s.StateChangelogTopics {
					cls = append(cls, fmt.Sprintf("%s/%d", cl.Topic, cl.NumPartitions))
				}
				line += fmt.Sprintf(" sub %s sources %v changelogs %v", s.SubtopologyID, s.SourceTopics, cls)
			}
		}
		for _, m := range g.Members {
			line += fmt.Sprintf(" member %s epoch %d process %s active %s target %s", m.MemberID, m.MemberEpoch, m.ProcessID,
				showTasks(m.Assignment.ActiveTasks), showTasks(m.TargetAssignment.ActiveTasks))
		}
		out["10 describe "+g.Group] = line
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"sprobe"}
	for _, v := range []int16{5, 6} {
		dgr := c.roundTrip(dg, v).(*kmsg.DescribeGroupsResponse)
		out[fmt.Sprintf("11 DescribeGroups v%d", v)] = fmt.Sprintf("error %d state %s", dgr.Groups[0].ErrorCode, dgr.Groups[0].State)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"streams"}
	lgr := c.roundTrip(lg, 5).(*kmsg.ListGroupsResponse)
	var listed []string
	for _, g := range lgr.Groups {
		listed = append(listed, fmt.Sprintf("%s %s %s %q", g.Group, g.GroupType, g.GroupState, g.ProtocolType))
	}
	out["12 ListGroups type streams"] = fmt.Sprint(listed)

	upd := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	upd.Group, upd.MemberID, upd.TopologyEpoch = "sprobe", "nobody", 0
	ur := c.roundTrip(upd, 0).(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	out["13 description update, unknown member"] = fmt.Sprintf("error %d", ur.ErrorCode)

	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Group, cg.MemberID, cg.MemberEpoch, cg.RebalanceTimeoutMillis = "sprobe", "c1", 0, 30000
	cg.SubscribedTopicNames, cg.Topics = []string{in}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	cgr := c.roundTrip(cg, 1).(*kmsg.ConsumerGroupHeartbeatResponse)
	out["14 consumer heartbeat to the streams group"] = fmt.Sprintf("error %d", cgr.ErrorCode)

	r = hb(streamsHeartbeat("m2", -1, false, in))
	out["15 leave"] = showHeartbeat(r)

	// A static member leaves with epoch -2, and its instance comes back
	// under a new member id; a third incarnation while that one lives is
	// refused.
	static := func(member string, epoch int32) *kmsg.StreamsGroupHeartbeatRequest {
		q := streamsHeartbeat(member, epoch, epoch == 0, in)
		q.InstanceID = kmsg.StringPtr("i3")
		return q
	}
	r = hb(static("m3", 0))
	out["16 static member joins"] = showHeartbeat(r)
	m3 := r.MemberEpoch
	r = hb(ownsTasks(static("m3", m3), activeTasks(r)...))
	out["17 static member's next heartbeat"] = showHeartbeat(r)
	r = hb(static("m3", -2))
	out["18 static member leaves for a while"] = showHeartbeat(r)
	r = hb(static("m4", 0))
	out["19 its instance rejoins as another member"] = showHeartbeat(r)
	r = hb(static("m5", 0))
	out["20 a third incarnation"] = showHeartbeat(r)
	return out
}

func activeTasks(r *kmsg.StreamsGroupHeartbeatResponse) []int32 {
	var ps []int32
	for _, ts := range r.ActiveTasks {
		ps = append(ps, ts.Partitions...)
	}
	return ps
}
