package groups

// KIP-848 consumer groups: the coordinator assigns partitions itself.
//
// Each member heartbeats (ConsumerGroupHeartbeat) with its member epoch,
// its subscription and the partitions it owns. A change of membership, of
// a subscription or of the subscribed topics' metadata bumps the group
// epoch; the target assignment is then recomputed by the server-side
// assignor (consumer_assign.go) for that epoch. Every member reconciles
// towards its target one heartbeat at a time, as Kafka's
// CurrentAssignmentBuilder does: partitions it must give up are revoked
// first (the member keeps its epoch until it reports them released), and
// partitions still owned by another member are withheld (unreleased) until
// that member has released them, so that a partition never has two owners.
//
// A consumer group is a group whose cg is set; its offsets are the
// group's, and are committed under member-epoch checks. Its state is
// written to __consumer_offsets in Kafka's records (consumer_records.go)
// before a heartbeat is answered, and reloaded by a new coordinator.

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicMeta is a topic as the consumer-group assignors see it.
type TopicMeta struct {
	Name       string
	ID         [16]byte
	Partitions int32
	// Racks are the racks of each partition's replicas (nil when the
	// brokers have none), for rack-aware assignment.
	Racks [][]string
	// Internal marks __consumer_offsets, __transaction_state and
	// __share_group_state: a consumer group's subscriptions (its regexes
	// too) take them, as Kafka's do; share and streams groups leave them
	// out.
	Internal bool
}

// onRack reports whether a replica of partition p is on rack.
func (t TopicMeta) onRack(p int32, rack string) bool {
	return rack != "" && int(p) < len(t.Racks) && slices.Contains(t.Racks[p], rack)
}

// firstGroupEpoch is the epoch of a new consumer or share group, whose
// target assignment has epoch 0: Kafka 4.4's ModernGroup starts at 1, so
// that the first member's join bumps the group and its own epoch to 2.
const firstGroupEpoch = 1

// Member epochs with a meaning of their own in ConsumerGroupHeartbeat.
const (
	epochJoin        = 0
	epochLeave       = -1
	epochStaticLeave = -2
)

// member reconciliation states, as Kafka's MemberState.
type reconcileState int

const (
	memberStable               reconcileState = iota
	memberUnrevokedPartitions                 // waiting for the member to revoke
	memberUnreleasedPartitions                // waiting for others to release
)

func (s reconcileState) String() string {
	return [...]string{"stable", "unrevoked_partitions", "unreleased_partitions"}[s]
}

// partitionSet is a set of partitions by topic name, each with the member
// epoch at which it was assigned (offset commits of an older epoch are
// accepted for partitions assigned at or before it).
type partitionSet map[topicPartition]int32

func (ps partitionSet) sorted() []topicPartition {
	out := slices.Collect(maps.Keys(ps))
	slices.SortFunc(out, func(a, b topicPartition) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	return out
}

// consumerMember is one member of a consumer group.
type consumerMember struct {
	id, instanceID       string
	rack                 string
	clientID, clientHost string
	rebalanceTimeout     time.Duration
	topics               []string // subscribed topic names, sorted
	regex                string   // subscribed regular expression (v1), "" if none
	re                   *regexp.Regexp
	mayDescribe          func(topic string) bool // the topics re may take (Client.MayDescribe, as of its last heartbeat); nil: all
	assignor             string                  // server assignor asked for, "" if none

	epoch, prevEpoch int32
	state            reconcileState
	assigned         partitionSet // the member's current assignment
	revoking         partitionSet // assigned before, to be revoked
	owned            []topicPartition
	leftStatic       bool         // left with epoch -2: its instance id may come back
	leftEpoch        int32        // its epoch when it left so
	sent             bool         // the current assignment was sent to the member
	classic          *classicInfo // set for a member speaking the classic protocol (consumer_classic.go)

	timers memberTimers
}

// consumerGroup is a KIP-848 consumer group. Guarded by the shard's mu.
type consumerGroup struct {
	*groupCore
	emptySince // for the offsets retention

	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	assignorName    string
	members         map[string]*consumerMember
	static          map[string]string // instance id -> member id
	target          map[string][]topicPartition
	metaHash        string // subscribed topics' metadata the target was computed from
	changed         bool   // membership or a subscription changed: bump the epoch
	// owner is the member that holds each partition now (assigned or
	// still revoking), the "current partition epoch" of Kafka.
	owner    map[topicPartition]string
	stateLog // what the log holds of the group (consumer_records.go)
}

// newConsumerGroup is an empty consumer group over core, empty since.
func newConsumerGroup(core *groupCore, since time.Time) *consumerGroup {
	return &consumerGroup{groupCore: core, epoch: firstGroupEpoch, emptySince: emptySince{since: since}, members: map[string]*consumerMember{}, static: map[string]string{},
		target: map[string][]topicPartition{}, owner: map[topicPartition]string{}, stateLog: newStateLog()}
}

// stateName is the group state ConsumerGroupDescribe and ListGroups show.
func (cg *consumerGroup) stateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.assignmentEpoch < cg.epoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// ConsumerGroupHeartbeat serves ConsumerGroupHeartbeat v0-v1.
func (c *Coordinator) ConsumerGroupHeartbeat(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(err error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = errorCode(err)
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp
	}
	if msg := validateConsumerHeartbeat(req); msg != "" {
		return fail(kerr.InvalidRequest, msg)
	}
	var re *regexp.Regexp
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		var err error
		if re, err = compileSubscription(*req.SubscribedTopicRegex); err != nil {
			return fail(kerr.InvalidRegularExpression, fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *req.SubscribedTopicRegex, err))
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(c.consumerAssignors(), *req.ServerAssignor) {
		return fail(kerr.UnsupportedAssignor, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s.", *req.ServerAssignor, strings.Join(c.consumerAssignors(), ", ")))
	}
	s, err := c.groupShard(req.Group)
	if err != nil {
		return fail(err, "")
	}
	s.mu.Lock()
	g, err := c.consumerHeartbeatLocked(s, cl, req, re, resp)
	if err != nil {
		s.mu.Unlock()
		return fail(err, err.Error())
	}
	// The answer waits until the group's new state is in the log, as
	// Kafka's does.
	done := make(chan error, 1)
	g.persistConsumer(func(err error) { done <- err })
	if req.MemberEpoch == epochLeave {
		g.maybeDowngrade()
	}
	s.mu.Unlock()
	if err := <-done; err != nil {
		return fail(err, "")
	}
	return resp
}

// consumerHeartbeatLocked is ConsumerGroupHeartbeat under the shard's mu:
// it fills resp and returns the group, or the error to answer.
func (c *Coordinator) consumerHeartbeatLocked(s *shard, cl Client, req *kmsg.ConsumerGroupHeartbeatRequest, re *regexp.Regexp, resp *kmsg.ConsumerGroupHeartbeatResponse) (*consumerGroup, error) {
	if !s.active() {
		return nil, kerr.NotCoordinator
	}
	g, err := c.consumerGroupFor(s, req)
	if err != nil {
		return nil, err
	}
	m, err := g.consumerMemberFor(cl, req, re)
	if err != nil {
		return nil, err
	}
	if m == nil { // left
		resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(req.MemberID), req.MemberEpoch
		return g, nil
	}
	g.refreshTarget()
	if req.Topics != nil {
		m.owned = c.ownedPartitions(req.Topics)
	}
	before := m.assigned.sorted()
	g.reconcile(m)
	if !slices.Equal(before, m.assigned.sorted()) {
		m.sent = false
	}
	g.scheduleConsumerTimers(m)
	resp.MemberID = kmsg.StringPtr(m.id)
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(c.settings(g.id).ConsumerHeartbeatInterval.Milliseconds())
	// The assignment goes out when it changed, and on a join or a full
	// request (one that reports its owned partitions).
	if !m.sent || req.MemberEpoch == epochJoin || req.Topics != nil {
		resp.Assignment = c.assignmentOf(m.assigned)
		m.sent = true
	}
	return g, nil
}

// consumerGroupFor is the consumer group a ConsumerGroupHeartbeat names:
// one joined creates it, an empty classic group (offsets only) becomes
// one, a classic group in use is upgraded (consumer_classic.go).
func (c *Coordinator) consumerGroupFor(s *shard, req *kmsg.ConsumerGroupHeartbeatRequest) (*consumerGroup, error) {
	notConsumer := kafkaErrorf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", req.Group)
	switch g := s.groups[req.Group].(type) {
	case nil:
		if req.MemberEpoch != epochJoin {
			return nil, kafkaErrorf(kerr.GroupIDNotFound, "Consumer group %s not found.", req.Group)
		}
		cg := newConsumerGroup(newCore(s, req.Group), time.Now())
		s.groups[req.Group] = cg
		return cg, nil
	case *consumerGroup:
		return g, nil
	case *classicGroup:
		if req.MemberEpoch != epochJoin {
			return nil, notConsumer
		}
		if len(g.members) > 0 || g.state != stateEmpty {
			return g.upgradeToConsumer()
		}
		cg := newConsumerGroup(g.groupCore, g.stateTime)
		s.groups[req.Group] = cg
		return cg, nil
	}
	return nil, notConsumer
}

// validateConsumerHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid:
// the message of the INVALID_REQUEST it answers, or "".
func validateConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) string {
	switch {
	case req.Group == "":
		return "GroupId can't be empty."
	case req.Version >= 1 && req.MemberID == "":
		return "MemberId can't be empty."
	case req.Version == 0 && req.MemberID == "" && req.MemberEpoch != epochJoin:
		return "MemberId can't be empty."
	case req.InstanceID != nil && *req.InstanceID == "":
		return "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return "RackId can't be empty."
	case req.MemberEpoch == epochStaticLeave && req.InstanceID == nil:
		return "InstanceId can't be null."
	case req.MemberEpoch < epochStaticLeave:
		return fmt.Sprintf("MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch)
	case req.MemberEpoch == epochJoin:
		if req.RebalanceTimeoutMillis == -1 {
			return "RebalanceTimeoutMs must be provided in first request."
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return "TopicPartitions must be empty when (re-)joining."
		}
		if req.SubscribedTopicNames == nil && (req.SubscribedTopicRegex == nil || *req.SubscribedTopicRegex == "") {
			return "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	}
	return ""
}

// consumerMemberFor applies the request's membership change and returns
// the member, or nil when it left.
func (cg *consumerGroup) consumerMemberFor(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest, re *regexp.Regexp) (*consumerMember, error) {
	c := cg.s.c
	instance := instanceOf(req.InstanceID)
	m := cg.members[req.MemberID]
	switch req.MemberEpoch {
	case epochLeave, epochStaticLeave:
		if m == nil && instance != "" {
			m = cg.members[cg.static[instance]]
		}
		if m == nil {
			return nil, kafkaErrorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, cg.id)
		}
		if req.MemberEpoch == epochStaticLeave {
			// The instance may come back under a new member id and take
			// the assignment over; until its session ends it stays.
			m.leftStatic, m.leftEpoch, m.epoch = true, m.epoch, epochStaticLeave
			cg.scheduleConsumerTimers(m)
			return nil, nil
		}
		cg.removeConsumerMember(m)
		return nil, nil
	case epochJoin:
		if instance != "" {
			if old := cg.members[cg.static[instance]]; old != nil && old.id != req.MemberID {
				if !old.leftStatic {
					return nil, fmt.Errorf("%w: static member %s with instance id %s is still active", kerr.UnreleasedInstanceID, old.id, instance)
				}
				// The new incarnation takes the old one's place, its
				// assignment and its epoch, without a rebalance.
				m = old
				cg.stopConsumerTimers(m)
				delete(cg.members, m.id)
				m.id = req.MemberID
				if m.id == "" {
					m.id = newMemberUUID()
				}
				for tp, id := range cg.owner {
					if id == old.id {
						cg.owner[tp] = m.id
					}
				}
				m.leftStatic, m.sent = false, false
				m.epoch = m.leftEpoch
				cg.members[m.id] = m
				cg.static[instance] = m.id
				cg.updateConsumerMember(m, cl, req, re)
				return m, nil
			}
		}
		if m != nil {
			// A member rejoining owns nothing: what it had is free.
			cg.releaseAll(m)
			m.epoch, m.prevEpoch, m.state = 0, 0, memberStable
		} else {
			if len(cg.members) >= c.cfg.ConsumerMaxSize {
				return nil, fmt.Errorf("%w: the consumer group has reached its maximum capacity of %d members", kerr.GroupMaxSizeReached, c.cfg.ConsumerMaxSize)
			}
			id := req.MemberID
			if id == "" {
				id = newMemberUUID()
			}
			m = &consumerMember{id: id, instanceID: instance, assigned: partitionSet{}, revoking: partitionSet{}}
			cg.members[id] = m
			if instance != "" {
				cg.static[instance] = id
			}
		}
		cg.changed = true
		cg.updateConsumerMember(m, cl, req, re)
		cg.setConsumerState()
		return m, nil
	default:
		if m == nil {
			return nil, kafkaErrorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, cg.id)
		}
		if req.MemberEpoch > m.epoch {
			return nil, kafkaErrorf(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)
		}
		if req.MemberEpoch < m.epoch {
			// A lost response: the member may still be one epoch behind
			// with nothing it should not own.
			owned := c.ownedPartitions(req.Topics)
			if !(req.MemberEpoch == m.prevEpoch && req.Topics != nil && m.assigned.containsAll(owned)) {
				return nil, kafkaErrorf(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)
			}
		}
		cg.updateConsumerMember(m, cl, req, re)
		return m, nil
	}
}

func (ps partitionSet) containsAll(tps []topicPartition) bool {
	for _, tp := range tps {
		if _, ok := ps[tp]; !ok {
			return false
		}
	}
	return true
}

// updateConsumerMember takes the request's member fields; a change of
// subscription bumps the group epoch.
func (cg *consumerGroup) updateConsumerMember(m *consumerMember, cl Client, req *kmsg.ConsumerGroupHeartbeatRequest, re *regexp.Regexp) {
	m.clientID, m.clientHost, m.mayDescribe = cl.ID, cl.Host, cl.MayDescribe
	if req.RackID != nil {
		m.rack = *req.RackID
	}
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalanceTimeout = ms(req.RebalanceTimeoutMillis)
	}
	if req.ServerAssignor != nil {
		m.assignor = *req.ServerAssignor
	}
	changed := false
	if req.SubscribedTopicNames != nil {
		topics := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(topics)
		topics = slices.Compact(topics)
		if !slices.Equal(topics, m.topics) {
			m.topics, changed = topics, true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex, m.re, changed = *req.SubscribedTopicRegex, re, true
	}
	if changed {
		cg.changed = true
	}
}

// removeConsumerMember drops a member that left or failed: its partitions
// are free at once (it is gone), and the group rebalances.
func (cg *consumerGroup) removeConsumerMember(m *consumerMember) {
	cg.stopConsumerTimers(m)
	cg.releaseAll(m)
	delete(cg.members, m.id)
	if m.instanceID != "" && cg.static[m.instanceID] == m.id {
		delete(cg.static, m.instanceID)
	}
	cg.changed = true
	cg.setConsumerState()
	cg.refreshTarget()
}

// releaseAll frees every partition the member holds.
func (cg *consumerGroup) releaseAll(m *consumerMember) {
	for tp := range m.assigned {
		if cg.owner[tp] == m.id {
			delete(cg.owner, tp)
		}
	}
	for tp := range m.revoking {
		if cg.owner[tp] == m.id {
			delete(cg.owner, tp)
		}
	}
	m.assigned, m.revoking = partitionSet{}, partitionSet{}
}

// setConsumerState notes whether the group has members, for the offsets
// retention.
func (cg *consumerGroup) setConsumerState() { cg.set(len(cg.members)) }

// subscribedTopicMeta returns the topics the group's members subscribe to
// (by name or by regex) that exist.
func (cg *consumerGroup) subscribedTopicMeta() map[string]TopicMeta {
	all := cg.s.c.cfg.Topics()
	out := map[string]TopicMeta{}
	for _, m := range cg.members {
		for _, t := range all {
			if m.subscribes(t.Name) {
				out[t.Name] = t
			}
		}
	}
	return out
}

// compileSubscription compiles a member's SubscribedTopicRegex to match
// whole topic names, as Kafka's coordinator matches it (RE2/J's
// matches(), not find()): "orders" takes orders, not orders-eu.
func compileSubscription(regex string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(regex); err != nil {
		return nil, err // the error names the client's regex as it sent it
	}
	return regexp.Compile("^(?:" + regex + ")$")
}

func metaHash(meta map[string]TopicMeta) string {
	var sb strings.Builder
	for _, name := range slices.Sorted(maps.Keys(meta)) {
		t := meta[name]
		fmt.Fprintf(&sb, "%s:%x:%d:%v;", name, t.ID, t.Partitions, t.Racks)
	}
	return sb.String()
}

// refreshTarget bumps the group epoch once for what changed (membership,
// a subscription, or the subscribed topics' metadata: a topic created,
// deleted or grown, as Kafka's metadata refresh sees), and recomputes the
// target assignment for it.
func (cg *consumerGroup) refreshTarget() {
	meta := cg.subscribedTopicMeta()
	if h := metaHash(meta); h != cg.metaHash {
		cg.metaHash, cg.changed = h, true
	}
	if cg.changed {
		// One bump for whatever changed in this step, as in Kafka.
		cg.epoch++
		cg.changed = false
	}
	if cg.assignmentEpoch >= cg.epoch {
		return
	}
	cg.assignorName = cg.s.c.chooseAssignor(cg)
	cg.target = assign(cg.assignorName, cg, meta)
	cg.assignmentEpoch = cg.epoch
}

// reconcile moves the member towards its target assignment, as Kafka's
// CurrentAssignmentBuilder does.
func (cg *consumerGroup) reconcile(m *consumerMember) {
	switch m.state {
	case memberUnrevokedPartitions:
		for _, tp := range m.owned {
			if _, ok := m.revoking[tp]; ok {
				return // still owns a partition to revoke
			}
		}
		// Revoked: the partitions are free for their new owners.
		for tp := range m.revoking {
			if cg.owner[tp] == m.id {
				delete(cg.owner, tp)
			}
		}
		m.revoking = partitionSet{}
		cg.nextAssignment(m)
	case memberUnreleasedPartitions:
		cg.nextAssignment(m)
	case memberStable:
		if m.epoch != cg.assignmentEpoch {
			cg.nextAssignment(m)
		}
	}
}

// nextAssignment is CurrentAssignmentBuilder.computeNextAssignment.
func (cg *consumerGroup) nextAssignment(m *consumerMember) {
	target := map[topicPartition]bool{}
	for _, tp := range cg.target[m.id] {
		target[tp] = true
	}
	keep, revoke := partitionSet{}, partitionSet{}
	for tp, e := range m.assigned {
		if target[tp] {
			keep[tp] = e
		} else {
			revoke[tp] = e
		}
	}
	if len(revoke) > 0 {
		// Revoke first, keeping the epoch: the member must acknowledge.
		m.assigned, m.revoking = keep, revoke
		m.state = memberUnrevokedPartitions
		return
	}
	unreleased := false
	for tp := range target {
		if _, ok := keep[tp]; ok {
			continue
		}
		if owner, held := cg.owner[tp]; held && owner != m.id {
			unreleased = true
			continue
		}
		keep[tp] = cg.assignmentEpoch
		cg.owner[tp] = m.id
	}
	m.prevEpoch, m.epoch = m.epoch, cg.assignmentEpoch
	m.assigned = keep
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleasedPartitions
	}
}

// ownedPartitions maps a heartbeat's owned partitions to topic names;
// topics this broker does not know are left out.
func (c *Coordinator) ownedPartitions(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) []topicPartition {
	byID := map[[16]byte]string{}
	for _, t := range c.cfg.Topics() {
		byID[t.ID] = t.Name
	}
	var out []topicPartition
	for _, t := range topics {
		name, ok := byID[t.TopicID]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			out = append(out, topicPartition{name, p})
		}
	}
	return out
}

// assignmentOf is a member's assignment as the heartbeat answer carries it.
func (c *Coordinator) assignmentOf(ps partitionSet) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	ids := map[string][16]byte{}
	for _, t := range c.cfg.Topics() {
		ids[t.Name] = t.ID
	}
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, tp := range ps.sorted() {
		id, ok := ids[tp.topic]
		if !ok {
			continue
		}
		n := len(a.Topics)
		if n == 0 || a.Topics[n-1].TopicID != id {
			at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			at.TopicID = id
			a.Topics = append(a.Topics, at)
			n++
		}
		a.Topics[n-1].Partitions = append(a.Topics[n-1].Partitions, tp.partition)
	}
	return &a
}

// scheduleConsumerTimers restarts the member's session timer and, while
// it has partitions to revoke, keeps its rebalance timer: a member that
// does not revoke within its rebalance timeout is removed, as in Kafka.
func (cg *consumerGroup) scheduleConsumerTimers(m *consumerMember) {
	s := cg.s
	session := s.c.settings(cg.id).ConsumerSessionTimeout
	if m.classic != nil {
		session = m.classic.session
	}
	m.timers.arm(s, session, m.rebalanceTimeout, m.state == memberUnrevokedPartitions, func(why string) {
		if s.groups[cg.id] != group(cg) || cg.members[m.id] != m {
			return
		}
		s.c.log.Info("consumer group member removed", "group", cg.id, "member", m.id, "reason", why)
		cg.removeConsumerMember(m)
		cg.persistConsumer(nil)
		cg.maybeDowngrade()
	})
}

func (cg *consumerGroup) stopConsumerTimers(m *consumerMember) { m.timers.stop() }

// shutdown stops the timers of a consumer group being unloaded or
// deleted.
func (cg *consumerGroup) shutdown() {
	for _, m := range cg.members {
		cg.stopConsumerTimers(m)
	}
}

// validateConsumerCommit checks an offset commit of tps (or a fetch of
// committed offsets) against the member epochs: Kafka's
// ConsumerGroup.validateOffsetCommit. A commit with epoch -1 and no member
// is an admin's, allowed only while the group is empty. A member one or
// more epochs behind may still commit the partitions it had at that epoch
// (KIP-1251); anything else older is STALE_MEMBER_EPOCH.
func (cg *consumerGroup) validateConsumerCommit(memberID string, epoch int32, tps []topicPartition, fetch bool) error {
	if epoch < 0 && memberID == "" {
		if !fetch && len(cg.members) > 0 {
			return kerr.UnknownMemberID
		}
		return nil // an admin's commit to an empty group, or its read
	}
	m := cg.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if m.classic != nil {
		// A classic member commits under its generation, its member epoch.
		if !fetch && epoch != m.epoch {
			return kerr.IllegalGeneration
		}
		return nil
	}
	switch {
	case epoch > m.epoch:
		return kerr.StaleMemberEpoch // as Kafka 4.4 answers it
	case epoch < m.epoch:
		if fetch {
			return kerr.StaleMemberEpoch
		}
		for _, tp := range tps {
			e, ok := m.assigned[tp]
			if !ok {
				e, ok = m.revoking[tp]
			}
			if !ok || e > epoch {
				return kerr.StaleMemberEpoch
			}
		}
	}
	return nil
}

// newMemberUUID is a member id for a v0 member, which lets the coordinator
// choose it: 22 characters as Kafka's Uuid.toString (URL-safe base64 of
// 16 random bytes).
func newMemberUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func (cg *consumerGroup) listing() (typ, protocolType, state string, dead bool) {
	return "consumer", "consumer", cg.stateName(), false
}

func (cg *consumerGroup) empty() bool               { return len(cg.members) == 0 }
func (cg *consumerGroup) expiry() (time.Time, bool) { return cg.since, cg.empty() }
func (cg *consumerGroup) memberCount() int          { return len(cg.members) }
func (cg *consumerGroup) isMember(id string) bool   { return cg.members[id] != nil }

// subscribedTo: a member subscribes to the topic by name or by regex.
func (cg *consumerGroup) subscribedTo() (func(topic string) bool, bool) {
	return func(topic string) bool {
		for _, m := range cg.members {
			if m.subscribes(topic) {
				return true
			}
		}
		return false
	}, true
}

func (cg *consumerGroup) validateCommit(memberID, _ string, epoch int32, tps []topicPartition, txn bool) error {
	return epochCommit(cg.validateConsumerCommit, memberID, epoch, tps, txn)
}

func (cg *consumerGroup) validateFetch(memberID string, epoch int32) error {
	return cg.validateConsumerCommit(memberID, epoch, nil, true)
}

// epochCommit is validateCommit of a group whose members commit at their
// member epoch (consumer and streams groups), validate the kind's check:
// a transactional commit that names no member is let through.
func epochCommit(validate func(string, int32, []topicPartition, bool) error, memberID string, epoch int32, tps []topicPartition, txn bool) error {
	if txn && epoch < 0 && memberID == "" {
		return nil
	}
	return validate(memberID, epoch, tps, false)
}
