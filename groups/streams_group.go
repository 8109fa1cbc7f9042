package groups

// KIP-1071 streams groups: the coordinator assigns the tasks of a Kafka
// Streams application itself (group.protocol=streams).
//
// The first member to join declares the topology (streams_topology.go);
// the coordinator configures it against the topics that exist, asks the
// broker to create the internal topics that are missing, and once every
// topic is there computes the target assignment of the group epoch with
// the sticky task assignor (streams_assign.go): active tasks, and standby
// tasks on other processes per streams.num.standby.replicas. Each member
// reconciles towards its target one heartbeat at a time, as Kafka's
// streams CurrentAssignmentBuilder does: tasks it must give up are revoked
// first (it keeps its epoch until it reports them gone), and an active
// task another member still owns is withheld until that member has let it
// go, so that a task is never active in two places.
//
// The group's state is written to __consumer_offsets in Kafka's records
// (streams_records.go) before a heartbeat is answered, and reloaded by a
// new coordinator; its offsets are the group's, committed under
// member-epoch checks (validateStreamsCommit).

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsTasks are tasks by role; an active task carries the member epoch
// at which it was assigned (offset commits of an older epoch are accepted
// for tasks assigned at or before it).
type streamsTasks struct {
	active  map[taskID]int32
	standby map[taskID]bool
	warmup  map[taskID]bool
}

func newStreamsTasks() streamsTasks {
	return streamsTasks{active: map[taskID]int32{}, standby: map[taskID]bool{}, warmup: map[taskID]bool{}}
}

func (t streamsTasks) empty() bool {
	return len(t.active) == 0 && len(t.standby) == 0 && len(t.warmup) == 0
}

// sameTasks reports whether two task sets hold the same tasks in the same
// roles.
func (t streamsTasks) sameTasks(o streamsTasks) bool {
	return slices.Equal(sortedTasks(t.active), sortedTasks(o.active)) &&
		slices.Equal(sortedTasks(t.standby), sortedTasks(o.standby)) &&
		slices.Equal(sortedTasks(t.warmup), sortedTasks(o.warmup))
}

func (t streamsTasks) clone() streamsTasks {
	return streamsTasks{active: maps.Clone(t.active), standby: maps.Clone(t.standby), warmup: maps.Clone(t.warmup)}
}

func sortedTasks[V any](m map[taskID]V) []taskID {
	out := slices.Collect(maps.Keys(m))
	slices.SortFunc(out, compareTask)
	return out
}

// streamsMember is one member of a streams group: a stream thread of a
// Kafka Streams instance (its process).
type streamsMember struct {
	id, instanceID, rack string
	clientID, clientHost string
	processID            string
	rebalanceTimeout     time.Duration
	topologyEpoch        int32
	endpoint             *kmsg.Endpoint
	clientTags           map[string]string
	taskOffsets          []kmsg.TaskOffset
	taskEndOffsets       []kmsg.TaskOffset

	epoch, prevEpoch int32
	leftStatic       bool  // left with epoch -2: its instance id may come back
	leftEpoch        int32 // its epoch when it left so
	state            reconcileState
	assigned         streamsTasks // the member's current assignment
	revoking         streamsTasks // assigned before, to be revoked
	owned            streamsTasks // what the member last said it owns

	timers memberTimers
}

// streamsGroup is a KIP-1071 streams group. Guarded by the shard's mu.
type streamsGroup struct {
	*groupCore
	emptySince // for the offsets retention

	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	topology        *streamsTopology
	configured      *configuredTopology
	topicsHash      string // what configured was computed from
	validatedEpoch  int32  // the topology epoch configured ready, -1 if none
	standbys        int    // streams.num.standby.replicas the target was computed with
	members         map[string]*streamsMember
	static          map[string]string // instance id -> member id
	target          map[string]streamsTasks
	// activeOwner is the member that holds each active task now
	// (assigned or still revoking).
	activeOwner   map[taskID]string
	endpointEpoch int32
	shutdownBy    string // the member that asked the application to shut down
	stateLog             // what the log holds of the group (streams_records.go)
	// delayUntil ends the initial rebalance delay of a new group
	// (streams.initial.rebalance.delay.ms): until then its target
	// assignment is empty; delayed is cleared when it ends.
	delayUntil time.Time
	delayed    bool
}

// newStreamsGroup is an empty streams group over core, empty since.
func newStreamsGroup(core *groupCore, since time.Time) *streamsGroup {
	return &streamsGroup{groupCore: core, emptySince: emptySince{since: since}, members: map[string]*streamsMember{}, static: map[string]string{}, target: map[string]streamsTasks{},
		activeOwner: map[taskID]string{}, validatedEpoch: -1, stateLog: newStateLog()}
}

// stateName is the group state StreamsGroupDescribe and ListGroups show,
// as Kafka's StreamsGroupState.
func (sg *streamsGroup) stateName() string {
	switch {
	case len(sg.members) == 0:
		return "Empty"
	case !sg.configured.ready():
		return "NotReady"
	case sg.assignmentEpoch < sg.epoch:
		return "Assigning"
	}
	for _, m := range sg.members {
		if m.epoch != sg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// StreamsHeartbeatResult is the answer to a StreamsGroupHeartbeat, and the
// internal topics the broker must create for the group.
type StreamsHeartbeatResult struct {
	Response *kmsg.StreamsGroupHeartbeatResponse
	Create   []StreamsTopicToCreate
}

// StreamsGroupHeartbeat serves StreamsGroupHeartbeat v0-v1.
func (c *Coordinator) StreamsGroupHeartbeat(cl Client, req *kmsg.StreamsGroupHeartbeatRequest) StreamsHeartbeatResult {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	fail := func(err error, msg string) StreamsHeartbeatResult {
		resp.ErrorCode = errorCode(err)
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return StreamsHeartbeatResult{Response: resp}
	}
	if msg := validateStreamsHeartbeat(req); msg != "" {
		return fail(kerr.InvalidRequest, msg)
	}
	if req.Topology != nil {
		if msg := validateStreamsTopology(req.Topology); msg != "" {
			return fail(kerr.StreamsInvalidTopology, msg)
		}
	}
	s, err := c.groupShard(req.Group)
	if err != nil {
		return fail(err, "")
	}
	s.mu.Lock()
	g, create, err := c.streamsHeartbeatLocked(s, cl, req, resp)
	if err != nil {
		s.mu.Unlock()
		return fail(err, errorMessage(err))
	}
	// The answer waits until the group's new state is in the log, as
	// Kafka's does.
	done := make(chan error, 1)
	g.persistStreams(func(err error) { done <- err })
	s.mu.Unlock()
	if err := <-done; err != nil {
		return fail(err, "")
	}
	return StreamsHeartbeatResult{Response: resp, Create: create}
}

// validateStreamsHeartbeat is Kafka's throwIfStreamsGroupHeartbeatRequestIsInvalid:
// the message of the INVALID_REQUEST it answers, or "".
func validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) string {
	someTasks := req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil
	switch {
	case req.MemberID == "":
		return "MemberId can't be empty."
	case req.Group == "":
		return "GroupId can't be empty."
	case req.InstanceID != nil && *req.InstanceID == "":
		return "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return "RackId can't be empty."
	case req.MemberEpoch == epochJoin && req.RebalanceTimeoutMillis == -1:
		return "RebalanceTimeoutMs must be provided in first request."
	case req.MemberEpoch == epochJoin && len(req.ActiveTasks) > 0:
		return "ActiveTasks must be empty when (re-)joining."
	case req.MemberEpoch == epochJoin && len(req.StandbyTasks) > 0:
		return "StandbyTasks must be empty when (re-)joining."
	case req.MemberEpoch == epochJoin && len(req.WarmupTasks) > 0:
		return "WarmupTasks must be empty when (re-)joining."
	case req.MemberEpoch == epochJoin && req.Topology == nil:
		return "Topology must be non-null when (re-)joining."
	case req.MemberEpoch == epochStaticLeave && req.InstanceID == nil:
		return "InstanceId can't be null."
	case req.MemberEpoch < epochStaticLeave:
		return fmt.Sprintf("MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch)
	case someTasks && (req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil):
		return "If one task-type is non-null, all must be non-null."
	case req.MemberEpoch != epochJoin && req.Topology != nil:
		return "Topology can only be provided when (re-)joining."
	}
	return ""
}

// streamsHeartbeatLocked is StreamsGroupHeartbeat under the shard's mu: it
// fills resp and returns the group and the topics to create, or the error
// to answer.
func (c *Coordinator) streamsHeartbeatLocked(s *shard, cl Client, req *kmsg.StreamsGroupHeartbeatRequest, resp *kmsg.StreamsGroupHeartbeatResponse) (*streamsGroup, []StreamsTopicToCreate, error) {
	if !s.active() {
		return nil, nil, kerr.NotCoordinator
	}
	found := s.groups[req.Group]
	sg, isStreams := found.(*streamsGroup)
	// Only an empty classic group (offsets at most) becomes a streams
	// group, keeping its offsets.
	classic, isClassic := found.(*classicGroup)
	convertible := found == nil || isClassic && len(classic.members) == 0 && classic.state == stateEmpty
	switch {
	case found == nil && req.MemberEpoch != epochJoin:
		return nil, nil, kafkaErrorf(kerr.GroupIDNotFound, "Streams group %s not found.", req.Group)
	case !isStreams && (!convertible || req.MemberEpoch != epochJoin):
		return nil, nil, kafkaErrorf(kerr.GroupIDNotFound, "Group %s is not a streams group.", req.Group)
	}
	// The topology is checked before anything changes.
	var t *streamsTopology
	if req.Topology != nil {
		t = topologyFromRequest(req.Topology)
		switch {
		case isStreams && sg.topology != nil:
			// A member with an older topology may join; it is told so below.
			if old := sg.topology; old.epoch <= t.epoch && !old.equal(t) {
				return nil, nil, kafkaErrorf(kerr.InvalidRequest, "Topology updates are not supported yet.")
			}
		default:
			if _, err := configureTopology(t, c.topicMeta()); err != nil {
				return nil, nil, err
			}
		}
	}
	if !isStreams {
		core, since := newCore(s, req.Group), time.Now()
		if isClassic {
			core, since = classic.groupCore, classic.stateTime
		}
		sg = newStreamsGroup(core, since)
		sg.delayed, sg.delayUntil = true, time.Now().Add(c.settings(req.Group).StreamsInitialDelay)
		s.groups[req.Group] = sg
	}
	g := sg
	m, bump, err := g.streamsMemberFor(req)
	if err != nil {
		return nil, nil, err
	}
	if m == nil { // left
		resp.MemberID, resp.MemberEpoch = req.MemberID, req.MemberEpoch
		return g, nil, nil
	}
	if sg.topology == nil {
		sg.topology, sg.configured = t, nil
	}
	if g.updateStreamsMember(m, cl, req) {
		bump = true
	}
	var statuses []kmsg.StreamsGroupHeartbeatResponseStatus
	if m.topologyEpoch < sg.topology.epoch {
		statuses = append(statuses, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsStatusStaleTopology,
			StatusDetail: fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", m.topologyEpoch, sg.topology.epoch)})
	}
	if changed, err := c.refreshStreamsTopology(sg); err != nil {
		return nil, nil, err
	} else if changed {
		bump = true
	}
	st := c.settings(g.id)
	if sg.standbys != st.StreamsNumStandbys {
		bump = true
	}
	if bump {
		sg.epoch++
	}
	if sg.delayed {
		// A new group's first assignment waits for more members: the
		// target is empty until the delay ends, which moves the epoch.
		if time.Now().Before(sg.delayUntil) {
			statuses = append(statuses, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsStatusAssignmentDelayed,
				StatusDetail: "Assignment delayed due to the configured initial rebalance delay."})
		} else {
			sg.delayed = false
			sg.epoch++
		}
	}
	c.refreshStreamsTarget(sg, st.StreamsNumStandbys)
	if req.ActiveTasks != nil {
		m.owned = tasksOf(req.ActiveTasks, req.StandbyTasks, req.WarmupTasks)
	}
	before := m.assigned.clone()
	g.reconcileStreams(m)
	g.setStreamsState()
	g.scheduleStreamsTimers(m)
	if req.ShutdownApplication {
		sg.shutdownBy = m.id
	}

	resp.MemberID, resp.MemberEpoch = m.id, m.epoch
	resp.HeartbeatIntervalMillis = int32(st.StreamsHeartbeatInterval.Milliseconds())
	resp.AcceptableRecoveryLagLegacy = int32(st.StreamsAcceptableRecoveryLag)
	resp.AcceptableRecoveryLag = st.StreamsAcceptableRecoveryLag
	resp.TaskOffsetIntervalMillis = int32(st.StreamsTaskOffsetInterval.Milliseconds())
	if req.MemberEpoch == epochJoin || !before.sameTasks(m.assigned) {
		resp.ActiveTasks = taskIDsOf(sortedTasks(m.assigned.active))
		resp.StandbyTasks = taskIDsOf(sortedTasks(m.assigned.standby))
		resp.WarmupTasks = taskIDsOf(sortedTasks(m.assigned.warmup))
		if m.endpoint != nil {
			sg.endpointEpoch++
		}
	}
	if sg.endpointEpoch != req.EndpointInformationEpoch {
		resp.PartitionsByUserEndpoint = c.streamsEndpoints(sg, m)
	}
	resp.EndpointInformationEpoch = sg.endpointEpoch
	var create []StreamsTopicToCreate
	if ct := sg.configured; ct != nil && ct.status != nil {
		statuses = append(statuses, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: ct.status.code, StatusDetail: ct.status.detail})
		create = ct.create
	}
	if sg.shutdownBy != "" {
		statuses = append(statuses, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsStatusShutdownApplication,
			StatusDetail: fmt.Sprintf("Streams group member %s encountered a fatal error and requested a shutdown for the entire application.", sg.shutdownBy)})
	}
	resp.Status = statuses
	return g, create, nil
}

// streamsMemberFor applies the request's membership change: it returns
// the member (nil when it left) and whether the group epoch must move.
func (sg *streamsGroup) streamsMemberFor(req *kmsg.StreamsGroupHeartbeatRequest) (*streamsMember, bool, error) {
	m := sg.members[req.MemberID]
	instance := instanceOf(req.InstanceID)
	switch req.MemberEpoch {
	case epochLeave, epochStaticLeave:
		if m == nil && instance != "" {
			m = sg.members[sg.static[instance]]
		}
		if m == nil {
			return nil, false, kafkaErrorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, sg.id)
		}
		if req.MemberEpoch == epochStaticLeave {
			// The instance may come back under a new member id and take
			// the assignment over; until its session ends it stays.
			m.leftStatic, m.leftEpoch, m.epoch = true, m.epoch, epochStaticLeave
			sg.scheduleStreamsTimers(m)
			return nil, false, nil
		}
		sg.removeStreamsMember(m)
		return nil, false, nil
	case epochJoin:
		if old := sg.members[sg.static[instance]]; instance != "" && old != nil && old.id != req.MemberID {
			if !old.leftStatic {
				return nil, false, kafkaErrorf(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", req.MemberID, instance, old.id)
			}
			// The new incarnation takes the old one's place, its tasks
			// and its epoch, without a rebalance.
			sg.stopStreamsTimers(old)
			delete(sg.members, old.id)
			for t, id := range sg.activeOwner {
				if id == old.id {
					sg.activeOwner[t] = req.MemberID
				}
			}
			if tgt, ok := sg.target[old.id]; ok {
				delete(sg.target, old.id)
				sg.target[req.MemberID] = tgt
			}
			old.id, old.leftStatic, old.epoch = req.MemberID, false, old.leftEpoch
			sg.members[old.id] = old
			sg.static[instance] = old.id
			return old, false, nil
		}
		if m != nil {
			// A member rejoining owns nothing: what it had is free.
			sg.releaseStreams(m)
			m.epoch, m.prevEpoch, m.state = 0, 0, memberStable
			return m, true, nil
		}
		if len(sg.members) >= sg.s.c.cfg.StreamsMaxSize {
			return nil, false, kafkaErrorf(kerr.GroupMaxSizeReached, "The streams group has reached its maximum capacity of %d members.", sg.s.c.cfg.StreamsMaxSize)
		}
		m = &streamsMember{id: req.MemberID, instanceID: instance, assigned: newStreamsTasks(), revoking: newStreamsTasks(), owned: newStreamsTasks()}
		sg.members[m.id] = m
		if instance != "" {
			sg.static[instance] = m.id
		}
		return m, true, nil
	}
	if m == nil {
		return nil, false, kafkaErrorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, sg.id)
	}
	switch {
	case req.MemberEpoch > m.epoch:
		return nil, false, kafkaErrorf(kerr.FencedMemberEpoch, "The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)
	case req.MemberEpoch < m.epoch:
		// A lost response: the member may still be one epoch behind,
		// owning nothing it should not.
		ok := req.MemberEpoch == m.prevEpoch && req.ActiveTasks != nil
		if ok {
			owned := tasksOf(req.ActiveTasks, req.StandbyTasks, req.WarmupTasks)
			for t := range owned.active {
				_, held := m.assigned.active[t]
				ok = ok && held
			}
			for t := range owned.standby {
				ok = ok && m.assigned.standby[t]
			}
			for t := range owned.warmup {
				ok = ok && m.assigned.warmup[t]
			}
		}
		if !ok {
			return nil, false, kafkaErrorf(kerr.FencedMemberEpoch, "The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)
		}
	}
	return m, false, nil
}

// updateStreamsMember takes the request's member fields; it reports a
// change that moves the group epoch.
func (sg *streamsGroup) updateStreamsMember(m *streamsMember, cl Client, req *kmsg.StreamsGroupHeartbeatRequest) bool {
	m.clientID, m.clientHost = cl.ID, cl.Host
	changed := false
	if req.RackID != nil && *req.RackID != m.rack {
		m.rack, changed = *req.RackID, true
	}
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalanceTimeout = ms(req.RebalanceTimeoutMillis)
	}
	if req.Topology != nil && req.Topology.Epoch != m.topologyEpoch {
		m.topologyEpoch, changed = req.Topology.Epoch, true
	}
	if req.ProcessID != nil && *req.ProcessID != m.processID {
		m.processID, changed = *req.ProcessID, true
	}
	if req.UserEndpoint != nil {
		e := kmsg.Endpoint{Host: req.UserEndpoint.Host, Port: req.UserEndpoint.Port}
		if m.endpoint == nil || m.endpoint.Host != e.Host || m.endpoint.Port != e.Port {
			m.endpoint, changed = &e, true
		}
	}
	if req.ClientTags != nil {
		tags := map[string]string{}
		for _, t := range req.ClientTags {
			tags[t.Key] = t.Value
		}
		if !maps.Equal(tags, m.clientTags) {
			m.clientTags, changed = tags, true
		}
	}
	if req.TaskOffsets != nil {
		m.taskOffsets = slices.Clone(req.TaskOffsets)
	}
	if req.TaskEndOffsets != nil {
		m.taskEndOffsets = slices.Clone(req.TaskEndOffsets)
	}
	return changed
}

// refreshStreamsTopology configures the group's topology again when the
// topics it names changed (created, deleted, grown); it reports a change
// of the configuration that moves the group epoch.
func (c *Coordinator) refreshStreamsTopology(sg *streamsGroup) (bool, error) {
	meta := c.topicMeta()
	h := sg.topology.topicsHash(meta)
	if sg.configured != nil && sg.configured.epoch == sg.topology.epoch && h == sg.topicsHash {
		return false, nil
	}
	ct, err := configureTopology(sg.topology, meta)
	if err != nil {
		return false, err
	}
	changed := sg.configured == nil || h != sg.topicsHash
	sg.configured, sg.topicsHash = ct, h
	validated := int32(-1)
	if ct.ready() {
		validated = sg.topology.epoch
	}
	if validated != sg.validatedEpoch {
		sg.validatedEpoch, changed = validated, true
	}
	return changed, nil
}

// topicMeta are the topics that exist, by name, but the internal ones.
func (c *Coordinator) topicMeta() map[string]TopicMeta {
	meta := map[string]TopicMeta{}
	for _, t := range c.cfg.Topics() {
		if !t.Internal {
			meta[t.Name] = t
		}
	}
	return meta
}

// refreshStreamsTarget computes the target assignment of the group epoch
// when it has not been.
func (c *Coordinator) refreshStreamsTarget(sg *streamsGroup, standbys int) {
	if sg.assignmentEpoch >= sg.epoch {
		return
	}
	var tasks []taskID
	if sg.configured.ready() && !sg.delayed {
		tasks = sg.configured.allTasks()
	}
	sg.target = assignStreamsTasks(sg.members, sg.target, tasks, standbys)
	sg.standbys = standbys
	sg.assignmentEpoch = sg.epoch
}

// tasksOf is a heartbeat's owned tasks.
func tasksOf(active, standby, warmup []kmsg.TaskIDs) streamsTasks {
	t := newStreamsTasks()
	for _, ids := range active {
		for _, p := range ids.Partitions {
			t.active[taskID{ids.SubtopologyID, p}] = 0
		}
	}
	for _, ids := range standby {
		for _, p := range ids.Partitions {
			t.standby[taskID{ids.SubtopologyID, p}] = true
		}
	}
	for _, ids := range warmup {
		for _, p := range ids.Partitions {
			t.warmup[taskID{ids.SubtopologyID, p}] = true
		}
	}
	return t
}

// taskIDsOf groups sorted tasks by subtopology, as the wire carries them.
func taskIDsOf(tasks []taskID) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, t := range tasks {
		if n := len(out); n > 0 && out[n-1].SubtopologyID == t.sub {
			out[n-1].Partitions = append(out[n-1].Partitions, t.part)
			continue
		}
		ids := kmsg.NewTaskIDs()
		ids.SubtopologyID, ids.Partitions = t.sub, []int32{t.part}
		out = append(out, ids)
	}
	return out
}

// reconcileStreams moves the member towards its target, as Kafka's
// streams CurrentAssignmentBuilder does.
func (sg *streamsGroup) reconcileStreams(m *streamsMember) {
	switch m.state {
	case memberUnrevokedPartitions:
		for t := range m.revoking.active {
			if _, still := m.owned.active[t]; still {
				return
			}
		}
		for t := range m.revoking.standby {
			if m.owned.standby[t] {
				return
			}
		}
		for t := range m.revoking.warmup {
			if m.owned.warmup[t] {
				return
			}
		}
		for t := range m.revoking.active {
			if sg.activeOwner[t] == m.id {
				delete(sg.activeOwner, t)
			}
		}
		m.revoking = newStreamsTasks()
		sg.nextStreamsAssignment(m)
	case memberUnreleasedPartitions:
		sg.nextStreamsAssignment(m)
	case memberStable:
		if m.epoch != sg.assignmentEpoch {
			sg.nextStreamsAssignment(m)
		}
	}
}

// nextStreamsAssignment is the streams CurrentAssignmentBuilder's
// computeNextAssignment.
func (sg *streamsGroup) nextStreamsAssignment(m *streamsMember) {
	target := sg.target[m.id]
	if target.active == nil {
		target = newStreamsTasks()
	}
	keep, revoke := newStreamsTasks(), newStreamsTasks()
	for t, e := range m.assigned.active {
		if _, ok := target.active[t]; ok {
			keep.active[t] = e
		} else {
			revoke.active[t] = e
		}
	}
	for t := range m.assigned.standby {
		if target.standby[t] {
			keep.standby[t] = true
		} else {
			revoke.standby[t] = true
		}
	}
	for t := range m.assigned.warmup {
		if target.warmup[t] {
			keep.warmup[t] = true
		} else {
			revoke.warmup[t] = true
		}
	}
	if !revoke.empty() {
		// Revoke first, keeping the epoch: the member must acknowledge.
		m.assigned, m.revoking = keep, revoke
		m.state = memberUnrevokedPartitions
		return
	}
	unreleased := false
	for t := range target.active {
		if _, ok := keep.active[t]; ok {
			continue
		}
		if owner, held := sg.activeOwner[t]; held && owner != m.id {
			unreleased = true
			continue
		}
		keep.active[t] = sg.assignmentEpoch
		sg.activeOwner[t] = m.id
	}
	// A standby or warm-up task waits while its process still runs it
	// as active in another member.
	for _, role := range []struct{ want, got map[taskID]bool }{{target.standby, keep.standby}, {target.warmup, keep.warmup}} {
		for t := range role.want {
			if role.got[t] {
				continue
			}
			if owner, held := sg.activeOwner[t]; held && owner != m.id && sg.members[owner] != nil && sg.members[owner].processID == m.processID {
				unreleased = true
				continue
			}
			role.got[t] = true
		}
	}
	m.prevEpoch, m.epoch = m.epoch, sg.assignmentEpoch
	m.assigned = keep
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleasedPartitions
	}
}

// releaseStreams frees every active task the member holds.
func (sg *streamsGroup) releaseStreams(m *streamsMember) {
	for t, id := range sg.activeOwner {
		if id == m.id {
			delete(sg.activeOwner, t)
		}
	}
	m.assigned, m.revoking, m.owned = newStreamsTasks(), newStreamsTasks(), newStreamsTasks()
}

// removeStreamsMember drops a member that left or failed: its tasks are
// free at once, and the group epoch moves.
func (sg *streamsGroup) removeStreamsMember(m *streamsMember) {
	sg.stopStreamsTimers(m)
	sg.releaseStreams(m)
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	if m.instanceID != "" && sg.static[m.instanceID] == m.id {
		delete(sg.static, m.instanceID)
	}
	sg.epoch++
	if len(sg.members) == 0 {
		// The last member gone: Kafka 4.4 writes the empty target at
		// the new epoch at once.
		sg.shutdownBy, sg.assignmentEpoch = "", sg.epoch
	}
	sg.setStreamsState()
}

// setStreamsState notes whether the group has members, for the offsets
// retention.
func (sg *streamsGroup) setStreamsState() { sg.set(len(sg.members)) }

// scheduleStreamsTimers restarts the member's session timer and, while
// it has tasks to revoke, keeps its rebalance timer: a member that does
// not revoke within its rebalance timeout is removed, as in Kafka.
func (sg *streamsGroup) scheduleStreamsTimers(m *streamsMember) {
	s := sg.s
	m.timers.arm(s, s.c.settings(sg.id).StreamsSessionTimeout, m.rebalanceTimeout, m.state == memberUnrevokedPartitions, func(why string) {
		if s.groups[sg.id] != group(sg) || sg.members[m.id] != m {
			return
		}
		s.c.log.Info("streams group member removed", "group", sg.id, "member", m.id, "reason", why)
		sg.removeStreamsMember(m)
		sg.persistStreams(nil)
	})
}

func (sg *streamsGroup) stopStreamsTimers(m *streamsMember) { m.timers.stop() }

// shutdown stops the timers of a streams group being unloaded or
// deleted.
func (sg *streamsGroup) shutdown() {
	for _, m := range sg.members {
		sg.stopStreamsTimers(m)
	}
}

// streamsEndpoints is the Interactive Queries information of the answer:
// for each member with an endpoint, the partitions its active and standby
// tasks read.
func (c *Coordinator) streamsEndpoints(sg *streamsGroup, self *streamsMember) []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if !sg.configured.ready() {
		return out
	}
	counts := map[string]int32{}
	for _, t := range c.cfg.Topics() {
		counts[t.Name] = t.Partitions
	}
	partitionsOf := func(tasks []taskID) map[string][]int32 {
		byTopic := map[string][]int32{}
		for _, t := range tasks {
			for _, topic := range sg.configured.inputs[t.sub] {
				if t.part < counts[topic] {
					byTopic[topic] = append(byTopic[topic], t.part)
				}
			}
		}
		return byTopic
	}
	ids := slices.Sorted(maps.Keys(sg.members))
	// The member asking comes last, as in Kafka.
	ids = append(slices.DeleteFunc(ids, func(id string) bool { return id == self.id }), self.id)
	for _, id := range ids {
		m := sg.members[id]
		if m.endpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint = *m.endpoint
		active := partitionsOf(sortedTasks(m.assigned.active))
		for _, topic := range slices.Sorted(maps.Keys(active)) {
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: topic, Partitions: active[topic]})
		}
		standby := partitionsOf(sortedTasks(m.assigned.standby))
		for _, topic := range slices.Sorted(maps.Keys(standby)) {
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: topic, Partitions: standby[topic]})
		}
		out = append(out, e)
	}
	return out
}

// validateStreamsCommit checks an offset commit of tps (or a fetch of
// committed offsets) against the member epochs, as for consumer groups
// (validateConsumerCommit): a member behind may still commit the
// partitions of active tasks it had at that epoch.
func (sg *streamsGroup) validateStreamsCommit(memberID string, epoch int32, tps []topicPartition, fetch bool) error {
	if epoch < 0 && memberID == "" {
		if !fetch && len(sg.members) > 0 {
			return kerr.UnknownMemberID
		}
		return nil
	}
	m := sg.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	switch {
	case epoch > m.epoch:
		return kerr.StaleMemberEpoch
	case epoch < m.epoch:
		if fetch || sg.configured == nil {
			return kerr.StaleMemberEpoch
		}
		for _, tp := range tps {
			found := false
			for sub, inputs := range sg.configured.inputs {
				if !slices.Contains(inputs, tp.topic) {
					continue
				}
				t := taskID{sub, tp.partition}
				e, ok := m.assigned.active[t]
				if !ok {
					e, ok = m.revoking.active[t]
				}
				if ok && e <= epoch {
					found = true
					break
				}
			}
			if !found {
				return kerr.StaleMemberEpoch
			}
		}
	}
	return nil
}

func (sg *streamsGroup) listing() (typ, protocolType, state string, dead bool) {
	return "streams", "streams", sg.stateName(), false
}

func (sg *streamsGroup) empty() bool               { return len(sg.members) == 0 }
func (sg *streamsGroup) expiry() (time.Time, bool) { return sg.since, sg.empty() }

// subscribedTo: while the group has members, its topology reads the topic
// (a source topic, by name or regex, or a repartition source topic).
func (sg *streamsGroup) subscribedTo() (func(topic string) bool, bool) {
	return func(topic string) bool {
		if len(sg.members) == 0 || sg.topology == nil {
			return false
		}
		for _, sub := range sg.topology.subs {
			if slices.Contains(sub.sources, topic) || slices.ContainsFunc(sub.repartitionSources, func(t streamsTopic) bool { return t.name == topic }) {
				return true
			}
			for _, re := range sub.sourceRegex {
				if r, err := compileSubscription(re); err == nil && r.MatchString(topic) {
					return true
				}
			}
		}
		return false
	}, true
}

// memberCount and isMember are none, as before groups had a type each:
// commitConnection keeps at most 16 members' connections of a streams
// group, and forgets them all past that.
func (sg *streamsGroup) memberCount() int     { return 0 }
func (sg *streamsGroup) isMember(string) bool { return false }

func (sg *streamsGroup) validateCommit(memberID, _ string, epoch int32, tps []topicPartition, txn bool) error {
	return epochCommit(sg.validateStreamsCommit, memberID, epoch, tps, txn)
}

func (sg *streamsGroup) validateFetch(memberID string, epoch int32) error {
	return sg.validateStreamsCommit(memberID, epoch, nil, true)
}
