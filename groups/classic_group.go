package groups

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type groupState int

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

// String is the state as DescribeGroups and ListGroups name it.
func (s groupState) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

type protocol struct {
	name     string
	metadata []byte
}

// member is one member of a classic group.
type member struct {
	id, instanceID       string
	clientID, clientHost string
	protocolType         string
	protocols            []protocol
	sessionTimeout       time.Duration
	rebalanceTimeout     time.Duration
	assignment           []byte

	joinCh chan *kmsg.JoinGroupResponse // set while a JoinGroup waits
	syncCh chan syncResult              // set while a SyncGroup waits
	isNew  bool

	hbTimer *time.Timer
	hbSeq   uint64 // the current heartbeat deadline; older timers do nothing
}

type syncResult struct {
	err        error
	assignment []byte
	protocol   string // the protocol name to answer, when not the group's
}

func (m *member) awaitingJoin() bool { return m.joinCh != nil }
func (m *member) awaitingSync() bool { return m.syncCh != nil }

// matches reports whether protocols are the member's, in the same order.
func (m *member) matches(ps []protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b protocol) bool {
		return a.name == b.name && bytes.Equal(a.metadata, b.metadata)
	})
}

// metadataFor is the member's metadata of the named protocol.
func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// classicGroup is a group of the classic protocol (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup; join.go), and a group that only stores offsets.
// Every field is guarded by its shard's mu.
type classicGroup struct {
	*groupCore

	state, prevState groupState
	stateTime        time.Time
	protocolType     string
	protocolName     string
	generation       int32
	leader           string

	members     map[string]*member
	static      map[string]string      // group.instance.id → member id
	pending     map[string]*time.Timer // member ids given out with MEMBER_ID_REQUIRED
	pendingSync map[string]bool        // members expected to SyncGroup this generation

	joinTimer      *time.Timer
	joinSeq        uint64
	syncTimer      *time.Timer
	newMemberAdded bool // a member joined during the initial rebalance delay
}

// newClassicGroup is an empty classic group over core.
func newClassicGroup(core *groupCore, now time.Time) *classicGroup {
	return &classicGroup{groupCore: core, stateTime: now,
		members: make(map[string]*member), static: make(map[string]string),
		pending: make(map[string]*time.Timer), pendingSync: make(map[string]bool)}
}

func (g *classicGroup) transition(to groupState) {
	g.prevState, g.state = g.state, to
	g.stateTime = time.Now()
}

func (g *classicGroup) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *member) int { return strings.Compare(a.id, b.id) })
	return ms
}

// restore applies a group metadata record read from the log.
func (g *classicGroup) restore(value []byte) error {
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return err
	}
	g.protocolType, g.generation = v.ProtocolType, v.Generation
	g.protocolName, g.leader = "", ""
	if v.Protocol != nil {
		g.protocolName = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	if v.CurrentStateTimestamp > 0 {
		g.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
	g.members = make(map[string]*member, len(v.Members))
	g.static = make(map[string]string)
	for _, mv := range v.Members {
		m := &member{id: mv.MemberID, clientID: mv.ClientID, clientHost: mv.ClientHost,
			protocolType:   v.ProtocolType,
			sessionTimeout: time.Duration(mv.SessionTimeoutMillis) * time.Millisecond,
			assignment:     bytes.Clone(mv.Assignment), // not the whole read buffer
		}
		m.rebalanceTimeout = m.sessionTimeout
		if mv.RebalanceTimeoutMillis > 0 {
			m.rebalanceTimeout = time.Duration(mv.RebalanceTimeoutMillis) * time.Millisecond
		}
		if mv.InstanceID != nil {
			m.instanceID = *mv.InstanceID
			g.static[m.instanceID] = m.id
		}
		m.protocols = []protocol{{g.protocolName, bytes.Clone(mv.Subscription)}}
		g.members[m.id] = m
	}
	g.state = stateEmpty
	if len(g.members) > 0 {
		g.state = stateStable
	}
	return nil
}

// afterLoad starts the session timers of a group loaded from the log.
func (g *classicGroup) afterLoad() {
	for _, m := range g.members {
		g.scheduleHeartbeat(m, m.sessionTimeout)
	}
}

// shutdown answers every waiting request NOT_COORDINATOR and stops the
// group's timers (the shard is being unloaded).
func (g *classicGroup) shutdown() {
	for _, m := range g.members {
		g.completeJoin(m, failedJoin(m.id, kerr.NotCoordinator))
		g.completeSync(m, syncResult{err: kerr.NotCoordinator})
		if m.hbTimer != nil {
			m.hbTimer.Stop()
		}
	}
	for _, t := range g.pending {
		t.Stop()
	}
	g.stopJoinTimer()
	g.stopSyncTimer()
	g.state = stateDead
}

// newMemberID is Kafka's: the client id (or group.instance.id) and a UUID.
func newMemberID(prefix string) string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return prefix + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// supportsProtocols reports whether a member with this protocol type and
// protocols may join: an empty group takes any non-empty pair; otherwise
// the type must be the group's and one protocol supported by every member.
func (g *classicGroup) supportsProtocols(protocolType string, ps []protocol) bool {
	if g.state == stateEmpty {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		if g.supportedByAll(p.name) {
			return true
		}
	}
	return false
}

func (g *classicGroup) supportedByAll(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p protocol) bool { return p.name == name }) {
			return false
		}
	}
	return true
}

// selectProtocol picks the protocol of the next generation: among those
// every member supports, the one most members list first (Kafka's vote);
// ties go to the protocol the leader prefers.
func (g *classicGroup) selectProtocol() string {
	votes := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.supportedByAll(p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	order := g.sortedMembers()
	if l := g.members[g.leader]; l != nil {
		order = append([]*member{l}, order...)
	}
	for _, m := range order {
		for _, p := range m.protocols {
			if n, ok := votes[p.name]; ok && n > bestVotes {
				best, bestVotes = p.name, n
			}
		}
	}
	return best
}

// validateMember is Kafka's ClassicGroup.validateMember: a static member
// must be the current holder of its instance id, a dynamic one a member.
func (g *classicGroup) validateMember(memberID, instanceID string) error {
	if instanceID != "" {
		cur, ok := g.static[instanceID]
		if !ok {
			return kerr.UnknownMemberID
		}
		if cur != memberID {
			return kerr.FencedInstanceID
		}
		return nil
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID
	}
	return nil
}

func (g *classicGroup) numAwaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.awaitingJoin() {
			n++
		}
	}
	return n
}

func (g *classicGroup) hasAllMembersJoined() bool {
	return len(g.members) == g.numAwaitingJoin() && len(g.pending) == 0
}

func (g *classicGroup) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// add adds a member, making it the leader of a leaderless group.
func (g *classicGroup) add(m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.members[m.id] = m
	if g.leader == "" {
		g.leader = m.id
	}
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
	if t := g.pending[m.id]; t != nil {
		t.Stop()
		delete(g.pending, m.id)
	}
}

// remove drops a member (or a pending member id), moving leadership to
// another member if it led.
func (g *classicGroup) remove(id string) {
	if t := g.pending[id]; t != nil {
		t.Stop()
		delete(g.pending, id)
	}
	m := g.members[id]
	if m == nil {
		return
	}
	if m.hbTimer != nil {
		m.hbTimer.Stop()
	}
	m.hbSeq++
	delete(g.members, id)
	delete(g.pendingSync, id)
	if m.instanceID != "" && g.static[m.instanceID] == id {
		delete(g.static, m.instanceID)
	}
	if g.leader == id {
		g.leader = ""
		for _, o := range g.sortedMembers() {
			g.leader = o.id
			break
		}
	}
}

// scheduleHeartbeat (re)arms the member's session deadline.
func (g *classicGroup) scheduleHeartbeat(m *member, d time.Duration) {
	if m.hbTimer != nil {
		m.hbTimer.Stop()
	}
	m.hbSeq++
	seq := m.hbSeq
	s := g.s
	m.hbTimer = time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.active() || s.groups[g.id] != g || g.members[m.id] != m || m.hbSeq != seq {
			return
		}
		g.expireHeartbeat(m)
	})
}

// expireHeartbeat removes a member whose session timed out, unless it is
// waiting in a rebalance (which keeps it alive, unless it is new).
func (g *classicGroup) expireHeartbeat(m *member) {
	if !m.isNew && (m.awaitingJoin() || m.awaitingSync()) {
		return
	}
	g.s.c.log.Info("group member session expired", "group", g.id, "member", m.id)
	g.removeMemberAndUpdate(m)
}

// removeMemberAndUpdate removes a member that failed or left, answering a
// JoinGroup it has waiting with UNKNOWN_MEMBER_ID, and rebalances.
func (g *classicGroup) removeMemberAndUpdate(m *member) {
	g.completeJoin(m, failedJoin("", kerr.UnknownMemberID))
	g.remove(m.id)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		g.maybePrepareRebalanceOrCompleteJoin("member removed")
	case statePreparingRebalance:
		if g.hasAllMembersJoined() {
			g.completeJoinPhase()
		}
	}
}

func (g *classicGroup) canRebalance() bool {
	return g.state == stateStable || g.state == stateCompletingRebalance || g.state == stateEmpty
}

func (g *classicGroup) maybePrepareRebalanceOrCompleteJoin(reason string) {
	if g.canRebalance() {
		g.prepareRebalance(reason)
		return
	}
	g.maybeCompleteJoinPhase()
}

// maybeCompleteJoinPhase completes the join phase once every member has
// joined, except during a new group's initial delay, which runs out.
func (g *classicGroup) maybeCompleteJoinPhase() {
	if g.state == statePreparingRebalance && g.hasAllMembersJoined() && g.prevState != stateEmpty {
		g.completeJoinPhase()
	}
}

// prepareRebalance starts a rebalance: members waiting in SyncGroup are
// told REBALANCE_IN_PROGRESS, and the join phase runs until every member
// rejoins or the rebalance timeout passes (for a new group, at least
// group.initial.rebalance.delay.ms).
func (g *classicGroup) prepareRebalance(reason string) {
	if g.state == stateCompletingRebalance {
		g.resetAndPropagateAssignment(kerr.RebalanceInProgress)
	}
	g.stopSyncTimer()
	initial := g.state == stateEmpty
	g.transition(statePreparingRebalance)
	g.s.c.log.Debug("preparing to rebalance group", "group", g.id, "generation", g.generation, "reason", reason)
	if initial {
		delay := g.s.c.cfg.InitialRebalanceDelay
		remaining := max(g.rebalanceTimeout()-delay, 0)
		g.scheduleInitialJoin(delay, remaining)
		return
	}
	if g.hasAllMembersJoined() {
		g.completeJoinPhase()
		return
	}
	g.scheduleJoin(g.rebalanceTimeout(), g.completeJoinPhase)
}

func (g *classicGroup) scheduleInitialJoin(delay, remaining time.Duration) {
	g.scheduleJoin(delay, func() {
		if g.newMemberAdded && remaining > 0 {
			g.newMemberAdded = false
			g.scheduleInitialJoin(min(delay, remaining), max(remaining-delay, 0))
			return
		}
		g.completeJoinPhase()
	})
}

// scheduleJoin arms the group's join timer; f runs under the shard lock.
func (g *classicGroup) scheduleJoin(d time.Duration, f func()) {
	g.stopJoinTimer()
	seq := g.joinSeq
	s := g.s
	g.joinTimer = time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.active() || s.groups[g.id] != g || g.joinSeq != seq {
			return
		}
		f()
	})
}

func (g *classicGroup) stopJoinTimer() {
	g.joinSeq++
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
}

func (g *classicGroup) stopSyncTimer() {
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
}

// completeJoinPhase ends the join phase: dynamic members that did not
// rejoin are removed, a leader is chosen among those that did, and the
// next generation starts (Empty when nobody is left).
func (g *classicGroup) completeJoinPhase() {
	if g.state != statePreparingRebalance {
		return
	}
	g.stopJoinTimer()
	for _, m := range g.sortedMembers() {
		if !m.awaitingJoin() && m.instanceID == "" {
			g.remove(m.id)
		}
	}
	if !g.electJoinedLeader() && len(g.members) > 0 {
		// Only static members that have not rejoined are left: wait for
		// them (or for their sessions to expire).
		g.scheduleJoin(g.rebalanceTimeout(), g.completeJoinPhase)
		return
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocolName = ""
		g.transition(stateEmpty)
		g.s.enqueue([]Record{{groupKey(g.id), groupValue(g)}}, func(err error) {
			if err != nil {
				g.s.c.log.Warn("writing empty group metadata failed", "group", g.id, "err", err)
			}
		})
		return
	}
	g.protocolName = g.selectProtocol()
	g.transition(stateCompletingRebalance)
	for _, m := range g.sortedMembers() {
		resp := g.joinResponse(m, m.id == g.leader)
		g.completeJoin(m, resp)
		g.scheduleHeartbeat(m, m.sessionTimeout)
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	g.schedulePendingSync()
}

// electJoinedLeader keeps the leader if it rejoined, or makes another
// member that rejoined the leader; false if no member rejoined.
func (g *classicGroup) electJoinedLeader() bool {
	if l := g.members[g.leader]; l != nil && l.awaitingJoin() {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.awaitingJoin() {
			g.leader = m.id
			return true
		}
	}
	return false
}

// schedulePendingSync removes, after the rebalance timeout, the members
// that never sent SyncGroup for this generation, and rebalances.
func (g *classicGroup) schedulePendingSync() {
	g.stopSyncTimer()
	gen := g.generation
	s := g.s
	g.syncTimer = time.AfterFunc(g.rebalanceTimeout(), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.active() || s.groups[g.id] != g || g.generation != gen {
			return
		}
		if (g.state != stateCompletingRebalance && g.state != stateStable) || len(g.pendingSync) == 0 {
			return
		}
		for id := range g.pendingSync {
			g.remove(id)
		}
		g.prepareRebalance("members did not sync in time")
	})
}

// joinResponse is the JoinGroup answer of the current generation; the
// leader gets every member's metadata.
func (g *classicGroup) joinResponse(m *member, withMembers bool) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Generation = g.generation
	r.MemberID = m.id
	r.LeaderID = g.leader
	if g.protocolType != "" {
		r.ProtocolType = kmsg.StringPtr(g.protocolType)
	}
	if g.protocolName != "" {
		r.Protocol = kmsg.StringPtr(g.protocolName)
	}
	if withMembers {
		for _, o := range g.sortedMembers() {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID = o.id
			if o.instanceID != "" {
				rm.InstanceID = kmsg.StringPtr(o.instanceID)
			}
			rm.ProtocolMetadata = o.metadataFor(g.protocolName)
			r.Members = append(r.Members, rm)
		}
	}
	return r
}

func failedJoin(memberID string, err error) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.ErrorCode = errorCode(err)
	r.Generation = -1
	r.MemberID = memberID
	return r
}

// completeJoin answers the member's waiting JoinGroup, if any.
func (g *classicGroup) completeJoin(m *member, r *kmsg.JoinGroupResponse) {
	if m.joinCh == nil {
		return
	}
	m.joinCh <- r
	m.joinCh = nil
}

// completeSync answers the member's waiting SyncGroup, if any; true if
// there was one.
func (g *classicGroup) completeSync(m *member, r syncResult) bool {
	if m.syncCh == nil {
		return false
	}
	m.syncCh <- r
	m.syncCh = nil
	return true
}

// resetAndPropagateAssignment clears every assignment and answers the
// waiting SyncGroups with err.
func (g *classicGroup) resetAndPropagateAssignment(err error) {
	for _, m := range g.members {
		m.assignment = nil
	}
	g.propagateAssignment(err)
}

func (g *classicGroup) propagateAssignment(err error) {
	for _, m := range g.members {
		if g.completeSync(m, syncResult{err: err, assignment: m.assignment}) {
			g.scheduleHeartbeat(m, m.sessionTimeout)
		}
	}
}

func (g *classicGroup) listing() (typ, protocolType, state string, dead bool) {
	return "classic", g.protocolType, g.state.String(), g.state == stateDead
}

func (g *classicGroup) empty() bool { return g.state == stateEmpty }

// expiry: the offsets of an empty group expire; those of a group that
// only stores offsets (no protocol type) by their commit time.
func (g *classicGroup) expiry() (time.Time, bool) {
	if g.protocolType == "" {
		return time.Time{}, g.state == stateEmpty
	}
	return g.stateTime, g.state == stateEmpty
}

func (g *classicGroup) stateTombstones() []Record { return nil }

func (g *classicGroup) memberCount() int        { return len(g.members) }
func (g *classicGroup) isMember(id string) bool { return g.members[id] != nil }

func (g *classicGroup) validateFetch(string, int32) error { return nil }

// committed keeps the session of a member that commits in its generation.
func (g *classicGroup) committed(memberID string, generation int32) {
	if m := g.members[memberID]; m != nil && generation >= 0 {
		g.scheduleHeartbeat(m, m.sessionTimeout)
	}
}

// validateCommit is Kafka's ClassicGroup.validateOffsetCommit; a
// transactional commit (TxnOffsetCommit) from a member that does not name
// itself, or during a rebalance, is let through as Kafka lets it.
func (g *classicGroup) validateCommit(memberID, instanceID string, generation int32, _ []topicPartition, isTxn bool) error {
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable
	}
	if generation < 0 && g.state == stateEmpty {
		return nil // a simple commit: the admin client, or a consumer without a group
	}
	if generation >= 0 || memberID != "" || instanceID != "" {
		if err := g.validateMember(memberID, instanceID); err != nil {
			return err
		}
		if generation != g.generation {
			return kerr.IllegalGeneration
		}
	} else if !isTxn && g.state != stateEmpty {
		return kerr.UnknownMemberID
	}
	if !isTxn && g.state == stateCompletingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// subscribedTo is the union of the members' subscriptions for a
// consumer-protocol group; known is false for another protocol type,
// whose metadata the coordinator cannot read.
func (g *classicGroup) subscribedTo() (func(topic string) bool, bool) {
	topics, known := g.subscribedTopics()
	return func(topic string) bool { return topics[topic] }, known
}

func (g *classicGroup) subscribedTopics() (topics map[string]bool, known bool) {
	topics = make(map[string]bool)
	if g.protocolType != "consumer" {
		return topics, len(g.members) == 0
	}
	for _, m := range g.members {
		md := m.metadataFor(g.protocolName)
		if md == nil && len(m.protocols) > 0 {
			md = m.protocols[0].metadata
		}
		var cm kmsg.ConsumerMemberMetadata
		if err := cm.ReadFrom(md); err != nil {
			return topics, false
		}
		for _, t := range cm.Topics {
			topics[t] = true
		}
	}
	return topics, true
}

// unused reports whether a group read from the log has nothing: no
// members, offsets, protocol or pending transactional offsets.
func (g *classicGroup) unused() bool {
	return len(g.members) == 0 && len(g.offsets) == 0 && g.protocolType == "" && len(g.txnOffsets) == 0
}
