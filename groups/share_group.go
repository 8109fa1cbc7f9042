package groups

// KIP-932 share groups, as the group coordinator serves them:
// ShareGroupHeartbeat v1 (member epochs and the server-side "simple"
// assignment, where members may share a partition) and ShareGroupDescribe
// v1. The records themselves are handed out by the partition leaders
// (package share); the coordinator only says which member fetches which
// partitions. The group's state is in __consumer_offsets as Kafka writes it
// (share_records.go), so a new coordinator knows the group and its members.

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareMember is one member of a share group. Guarded by the shard's mu.
type shareMember struct {
	id                   string
	epoch, previousEpoch int32
	clientID, clientHost string
	rack                 string
	topics               []string // subscribed topic names, sorted
	assigned             []topicPartition
	sessionTimer         *time.Timer
	timerSeq             uint64
}

// shareGroup is a KIP-932 share group. Guarded by the shard's mu.
type shareGroup struct {
	*groupCore

	epoch           int32 // group epoch
	assignmentEpoch int32
	members         map[string]*shareMember
	target          map[string][]topicPartition
	metaHash        string
	// initialized are the partitions the group has been assigned: their
	// share-partitions have state (share_records.go).
	initialized map[topicPartition]bool
	// startAtZero are partitions newly initialized on topics the group
	// had partitions with state of, for Config.ShareInitialize.
	startAtZero []topicPartition
	stateLog          // what the log holds of the group (share_records.go)
	loadedHash  int64 // the metadata hash of the group read from the log
}

// newShareGroup is an empty share group over core.
func newShareGroup(core *groupCore) *shareGroup {
	return &shareGroup{groupCore: core, epoch: firstGroupEpoch, members: map[string]*shareMember{}, target: map[string][]topicPartition{},
		initialized: map[topicPartition]bool{}, stateLog: newStateLog()}
}

// stateName is the state ShareGroupDescribe and ListGroups show.
func (sg *shareGroup) stateName() string {
	if len(sg.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// ShareGroupHeartbeat serves ShareGroupHeartbeat v1.
func (c *Coordinator) ShareGroupHeartbeat(cl Client, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(err error, msg string) *kmsg.ShareGroupHeartbeatResponse {
		resp.ErrorCode = errorCode(err)
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	if msg := validateShareHeartbeat(req); msg != "" {
		return fail(kerr.InvalidRequest, msg)
	}
	s, err := c.groupShard(req.GroupID)
	if err != nil {
		return fail(err, "")
	}
	s.mu.Lock()
	g, err := c.shareHeartbeatLocked(s, cl, req, resp)
	if err != nil {
		s.mu.Unlock()
		return fail(err, err.Error())
	}
	atZero := g.startAtZero
	g.startAtZero = nil
	// The answer waits until the group's new state is in the log.
	done := make(chan error, 1)
	g.persistShare(func(err error) { done <- err })
	s.mu.Unlock()
	if err := <-done; err != nil {
		return fail(err, "")
	}
	c.shareInitialize(req.GroupID, atZero)
	return resp
}

// shareInitialize has the share-partitions of tps start at offset 0
// (Config.ShareInitialize), topic by topic.
func (c *Coordinator) shareInitialize(group string, tps []topicPartition) {
	if len(tps) == 0 || c.cfg.ShareInitialize == nil {
		return
	}
	slices.SortFunc(tps, compareTP)
	for len(tps) > 0 {
		n := 1
		for n < len(tps) && tps[n].topic == tps[0].topic {
			n++
		}
		parts := make([]int32, n)
		for i, tp := range tps[:n] {
			parts[i] = tp.partition
		}
		if err := c.cfg.ShareInitialize(group, tps[0].topic, parts); err != nil {
			c.log.Warn("share-partitions not started at offset 0", "group", group, "topic", tps[0].topic, "err", err)
		}
		tps = tps[n:]
	}
}

// validateShareHeartbeat is Kafka's throwIfShareGroupHeartbeatRequestIsInvalid
// for v1, where the member makes its own id: the message of the
// INVALID_REQUEST it answers, or "".
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) string {
	switch {
	case req.GroupID == "":
		return "GroupId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return "RackId can't be empty."
	case req.MemberID == "":
		return "MemberId can't be empty."
	case req.MemberEpoch < epochLeave:
		return "MemberEpoch is invalid."
	case req.MemberEpoch == epochJoin && len(req.SubscribedTopicNames) == 0:
		return "SubscribedTopicNames must be set in first request."
	}
	return ""
}

func (c *Coordinator) shareHeartbeatLocked(s *shard, cl Client, req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) (*shareGroup, error) {
	if !s.active() {
		return nil, kerr.NotCoordinator
	}
	if s.groups[req.GroupID] == nil && req.MemberEpoch != epochJoin {
		return nil, kafkaErrorf(kerr.GroupIDNotFound, "Share group %s not found.", req.GroupID)
	}
	sg, ok := asShareGroup(s, req.GroupID)
	if !ok {
		return nil, kafkaErrorf(kerr.GroupIDNotFound, "Group %s is not a share group.", req.GroupID)
	}
	m := sg.members[req.MemberID]
	bump := false // a new member or subscription: one epoch bump, as Kafka's
	switch {
	case req.MemberEpoch == epochLeave:
		if m != nil {
			// Its share sessions stay: a closing consumer may send its
			// last acknowledgements after it left (librdkafka sends both
			// at once), and the leaders answer them as Kafka's do. The
			// session's end releases what it still holds.
			sg.removeShareMember(m, false)
		}
		resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(req.MemberID), epochLeave
		return sg, nil
	case m == nil && req.MemberEpoch != epochJoin:
		return nil, kafkaErrorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.GroupID)
	case m == nil:
		if len(sg.members) >= c.cfg.ShareMaxSize {
			return nil, fmt.Errorf("%w: the share group has reached its maximum capacity of %d members", kerr.GroupMaxSizeReached, c.cfg.ShareMaxSize)
		}
		m = &shareMember{id: req.MemberID}
		sg.members[m.id] = m
		bump = true
	case req.MemberEpoch != epochJoin && req.MemberEpoch > m.epoch:
		return nil, kafkaErrorf(kerr.FencedMemberEpoch, "The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)
	case req.MemberEpoch != epochJoin && req.MemberEpoch < m.epoch && req.MemberEpoch != m.previousEpoch:
		return nil, kafkaErrorf(kerr.FencedMemberEpoch, "The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch, m.previousEpoch)
	}
	m.clientID, m.clientHost = cl.ID, cl.Host
	if req.RackID != nil {
		m.rack = *req.RackID
	}
	if req.SubscribedTopicNames != nil {
		topics := slices.Sorted(slices.Values(req.SubscribedTopicNames))
		topics = slices.Compact(topics)
		if !slices.Equal(topics, m.topics) {
			m.topics = topics
			bump = true
		}
	}
	before := m.assigned
	c.refreshShareTarget(sg, bump)
	if m.epoch != sg.assignmentEpoch {
		m.previousEpoch, m.epoch = m.epoch, sg.assignmentEpoch
		m.assigned = sg.target[m.id]
	}
	sg.scheduleShareTimer(m)
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(c.cfg.ShareHeartbeatInterval.Milliseconds())
	if req.MemberEpoch == epochJoin || !slices.Equal(before, m.assigned) {
		resp.Assignment = c.shareAssignmentOf(m.assigned)
	}
	return sg, nil
}

// asShareGroup returns group id as a share group: a new one where no
// group has the id, as a classic group with no members and no offsets
// does; false for a group of another kind.
func asShareGroup(s *shard, id string) (*shareGroup, bool) {
	switch g := s.groups[id].(type) {
	case nil:
		sg := newShareGroup(newCore(s, id))
		s.groups[id] = sg
		return sg, true
	case *shareGroup:
		return g, true
	case *classicGroup:
		if len(g.members) == 0 && g.state == stateEmpty && len(g.offsets) == 0 {
			sg := newShareGroup(g.groupCore)
			s.groups[id] = sg
			return sg, true
		}
	}
	return nil, false
}

// refreshShareTarget bumps the group epoch once for what changed in this
// heartbeat (bump: membership or a subscription; or the subscribed topics'
// partitions), as Kafka 4.4 does, and recomputes the target assignment
// when the epoch moved.
func (c *Coordinator) refreshShareTarget(sg *shareGroup, bump bool) {
	subscribed := c.shareSubscribed(sg)
	if h := metaHash(subscribed); h != sg.metaHash {
		sg.metaHash, bump = h, true
	}
	if bump {
		sg.epoch++
	}
	if sg.assignmentEpoch == sg.epoch {
		return
	}
	sg.target = assignShare(sg.members, subscribed)
	sg.assignmentEpoch = sg.epoch
	known := map[string]bool{}
	for tp := range sg.initialized {
		known[tp.topic] = true
	}
	for _, tps := range sg.target {
		for _, tp := range tps {
			if !sg.initialized[tp] && known[tp.topic] {
				sg.startAtZero = append(sg.startAtZero, tp)
			}
			sg.initialized[tp] = true
		}
	}
}

// shareSubscribed is the metadata of the topics the group's members
// subscribe to.
func (c *Coordinator) shareSubscribed(sg *shareGroup) map[string]TopicMeta {
	meta := map[string]TopicMeta{}
	for _, t := range c.cfg.Topics() {
		if !t.Internal {
			meta[t.Name] = t
		}
	}
	subscribed := map[string]TopicMeta{}
	for _, m := range sg.members {
		for _, t := range m.topics {
			if tm, ok := meta[t]; ok {
				subscribed[t] = tm
			}
		}
	}
	return subscribed
}

// assignShare is the "simple" share assignor: each subscribed topic's
// partitions go round-robin over its subscribers (sorted by id); when a
// topic has more subscribers than partitions, every subscriber still gets
// one partition, so several members share it.
func assignShare(members map[string]*shareMember, topics map[string]TopicMeta) map[string][]topicPartition {
	out := map[string][]topicPartition{}
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		n := topics[name].Partitions
		var subs []string
		for _, id := range slices.Sorted(maps.Keys(members)) {
			if slices.Contains(members[id].topics, name) {
				subs = append(subs, id)
			}
		}
		if n <= 0 || len(subs) == 0 {
			continue
		}
		if int(n) >= len(subs) {
			for p := range n {
				id := subs[int(p)%len(subs)]
				out[id] = append(out[id], topicPartition{name, p})
			}
			continue
		}
		for i, id := range subs {
			out[id] = append(out[id], topicPartition{name, int32(i) % n})
		}
	}
	for id := range out {
		slices.SortFunc(out[id], compareTP)
	}
	return out
}

func (c *Coordinator) shareAssignmentOf(tps []topicPartition) *kmsg.ShareGroupHeartbeatResponseAssignment {
	ids := map[string][16]byte{}
	for _, t := range c.cfg.Topics() {
		ids[t.Name] = t.ID
	}
	a := kmsg.NewShareGroupHeartbeatResponseAssignment()
	a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, tp := range tps {
		id, ok := ids[tp.topic]
		if !ok {
			continue
		}
		n := len(a.TopicPartitions)
		if n == 0 || a.TopicPartitions[n-1].TopicID != id {
			at := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			at.TopicID = id
			a.TopicPartitions = append(a.TopicPartitions, at)
			n++
		}
		a.TopicPartitions[n-1].Partitions = append(a.TopicPartitions[n-1].Partitions, tp.partition)
	}
	return &a
}

// removeShareMember takes m out of the group: the others' target changes,
// and with release (m stopped heartbeating) the partition leaders release
// what m still holds.
func (sg *shareGroup) removeShareMember(m *shareMember, release bool) {
	sg.stopShareTimer(m)
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	sg.epoch++
	if len(sg.members) == 0 {
		// The last member gone: Kafka 4.4 writes the empty target at
		// the new epoch at once.
		sg.assignmentEpoch = sg.epoch
	}
	if f := sg.s.c.cfg.ShareMemberLeft; f != nil && release {
		f(sg.id, m.id)
	}
}

func (sg *shareGroup) scheduleShareTimer(m *shareMember) {
	s := sg.s
	sg.stopShareTimer(m)
	seq := m.timerSeq
	m.sessionTimer = time.AfterFunc(s.c.cfg.ShareSessionTimeout, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.active() || s.groups[sg.id] != group(sg) || sg.members[m.id] != m || m.timerSeq != seq {
			return
		}
		s.c.log.Info("share group member removed", "group", sg.id, "member", m.id, "reason", "session timeout")
		sg.removeShareMember(m, true)
		sg.persistShare(nil)
	})
}

func (sg *shareGroup) stopShareTimer(m *shareMember) {
	m.timerSeq++
	if m.sessionTimer != nil {
		m.sessionTimer.Stop()
		m.sessionTimer = nil
	}
}

// shutdown stops the timers of a share group being unloaded or deleted.
func (sg *shareGroup) shutdown() {
	for _, m := range sg.members {
		sg.stopShareTimer(m)
	}
}

// ShareGroupDescribe serves ShareGroupDescribe v1.
func (c *Coordinator) ShareGroupDescribe(req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		resp.Groups = append(resp.Groups, c.describeShare(id, req.IncludeAuthorizedOperations))
	}
	return resp
}

func (c *Coordinator) describeShare(id string, ops bool) kmsg.ShareGroupDescribeResponseGroup {
	d := kmsg.NewShareGroupDescribeResponseGroup()
	d.GroupID = id
	d.AuthorizedOperations = -2147483648
	sg, unlock, err := describedGroup[*shareGroup](c, id, "share")
	if err != nil {
		d.ErrorCode, d.ErrorMessage = describeError(err)
		return d
	}
	defer unlock()
	d.GroupState, d.GroupEpoch, d.AssignmentEpoch, d.Assignor = sg.stateName(), sg.epoch, sg.assignmentEpoch, "simple"
	if ops {
		d.AuthorizedOperations = groupAuthorizedOps
	}
	ids := map[string][16]byte{}
	for _, t := range c.cfg.Topics() {
		ids[t.Name] = t.ID
	}
	for _, mid := range slices.Sorted(maps.Keys(sg.members)) {
		m := sg.members[mid]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.epoch, m.clientID, m.clientHost
		if m.rack != "" {
			dm.RackID = kmsg.StringPtr(m.rack)
		}
		dm.SubscribedTopicNames = slices.Clone(m.topics)
		if dm.SubscribedTopicNames == nil {
			dm.SubscribedTopicNames = []string{}
		}
		for _, tp := range m.assigned {
			n := len(dm.Assignment.TopicPartitions)
			if n == 0 || dm.Assignment.TopicPartitions[n-1].Topic != tp.topic {
				at := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				at.Topic, at.TopicID = tp.topic, ids[tp.topic]
				dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, at)
				n++
			}
			dm.Assignment.TopicPartitions[n-1].Partitions = append(dm.Assignment.TopicPartitions[n-1].Partitions, tp.partition)
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// ShareGroup is what the admin APIs of share groups (their offsets) need
// to know of one: whether it exists, is a share group, has members, which
// topics its members subscribe to, and which partitions have state.
type ShareGroup struct {
	Members     int
	Topics      []string
	Initialized map[string][]int32 // topic -> sorted partitions
}

// ShareGroupInfo returns the share group id, or the error Kafka answers:
// NOT_COORDINATOR, GROUP_ID_NOT_FOUND (ErrGroupNotFound when no group has
// the id, plain for a group of another type).
func (c *Coordinator) ShareGroupInfo(id string) (ShareGroup, error) {
	s, sg, err := c.lockedShareGroup(id)
	if err != nil {
		return ShareGroup{}, err
	}
	defer s.mu.Unlock()
	var topics []string
	for _, m := range sg.members {
		topics = append(topics, m.topics...)
	}
	slices.Sort(topics)
	init := map[string][]int32{}
	for _, tp := range slices.SortedFunc(maps.Keys(sg.initialized), compareTP) {
		init[tp.topic] = append(init[tp.topic], tp.partition)
	}
	return ShareGroup{Members: len(sg.members), Topics: slices.Compact(topics), Initialized: init}, nil
}

// CreateShareGroup makes id an empty share group when no group has that
// id, as Kafka 4.4's group coordinator does for an AlterShareGroupOffsets
// of a group it has never seen, and returns once the group is in the log.
// A share group already there is left as it is; a group of another type is
// GROUP_ID_NOT_FOUND, as ShareGroupInfo answers.
func (c *Coordinator) CreateShareGroup(id string) error {
	s, err := c.groupShard(id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if !s.active() {
		s.mu.Unlock()
		return kerr.NotCoordinator
	}
	if _, ok := s.groups[id].(*shareGroup); ok {
		s.mu.Unlock()
		return nil
	}
	g, ok := asShareGroup(s, id)
	if !ok {
		s.mu.Unlock()
		return kafkaErrorf(kerr.GroupIDNotFound, "Group %s is not a share group.", id)
	}
	done := make(chan error, 1)
	g.persistShare(func(err error) { done <- err })
	s.mu.Unlock()
	return <-done
}

// lockedShareGroup returns the share group id with its shard's mu held,
// or the error ShareGroupInfo answers (with mu released).
func (c *Coordinator) lockedShareGroup(id string) (*shard, *shareGroup, error) {
	s, err := c.groupShard(id)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	if !s.active() {
		s.mu.Unlock()
		return nil, nil, kerr.NotCoordinator
	}
	g := s.groups[id]
	sg, ok := g.(*shareGroup)
	switch {
	case !live(g):
		s.mu.Unlock()
		return nil, nil, &groupNotFoundError{id}
	case !ok:
		s.mu.Unlock()
		return nil, nil, kafkaErrorf(kerr.GroupIDNotFound, "Group %s is not a share group.", id)
	}
	return s, sg, nil
}

// SetShareInitialized records that the share-partitions of group on
// topic's partitions have state (initialized) or no longer have any (an
// admin altered or deleted their offsets), and returns once that is in
// the log.
func (c *Coordinator) SetShareInitialized(group, topic string, partitions []int32, initialized bool) error {
	s, g, err := c.lockedShareGroup(group)
	if err != nil {
		return err
	}
	for _, p := range partitions {
		if initialized {
			g.initialized[topicPartition{topic, p}] = true
		} else {
			delete(g.initialized, topicPartition{topic, p})
		}
	}
	done := make(chan error, 1)
	g.persistShare(func(err error) { done <- err })
	s.mu.Unlock()
	return <-done
}

func (sg *shareGroup) listing() (typ, protocolType, state string, dead bool) {
	return "share", "share", sg.stateName(), false
}

func (sg *shareGroup) empty() bool { return len(sg.members) == 0 }

// expiry: the offsets retention is not for share groups.
func (sg *shareGroup) expiry() (time.Time, bool) { return time.Time{}, false }

// memberCount and isMember are none: share members commit no offsets
// (and every commit to a share group is refused, GROUP_ID_NOT_FOUND).
func (sg *shareGroup) memberCount() int                  { return 0 }
func (sg *shareGroup) isMember(string) bool              { return false }
func (sg *shareGroup) validateFetch(string, int32) error { return nil }

// subscribedTo is never asked: OffsetDelete refuses a share group.
func (sg *shareGroup) subscribedTo() (func(string) bool, bool) {
	return func(string) bool { return false }, true
}

// validateCommit refuses every commit, an admin's (no generation) and a
// transactional one too, as Kafka 4.4 does: GROUP_ID_NOT_FOUND.
func (sg *shareGroup) validateCommit(string, string, int32, []topicPartition, bool) error {
	return kerr.GroupIDNotFound
}
