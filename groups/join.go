package groups

import (
	"bytes"
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client is who sent a request: its client id and address as Kafka shows
// them ("/127.0.0.1"), and, with an authorizer, whether its principal may
// describe a topic: a consumer group member's regex takes only those, as
// Kafka's coordinator filters what a regex resolves to.
type Client struct {
	ID, Host    string
	MayDescribe func(topic string) bool // nil: every topic
}

// newMemberJoinTimeout bounds how long a new member's JoinGroup may wait in
// a rebalance (Kafka's group.classic.new.member.join.timeout).
const newMemberJoinTimeout = 5 * time.Minute

func ms(v int32) time.Duration { return time.Duration(v) * time.Millisecond }

func instanceOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// JoinGroup serves JoinGroup v0-v9. It waits, as Kafka's does, until the
// join phase of the rebalance completes.
func (c *Coordinator) JoinGroup(ctx context.Context, cl Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	fail := func(err error) *kmsg.JoinGroupResponse {
		r := failedJoin(req.MemberID, err)
		r.Version = req.Version
		return r
	}
	s, err := c.groupShard(req.Group)
	if err != nil {
		return fail(err)
	}
	session := ms(req.SessionTimeoutMillis)
	rebalance := ms(req.RebalanceTimeoutMillis)
	if req.Version == 0 || req.RebalanceTimeoutMillis <= 0 {
		rebalance = session
	}
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return fail(kerr.InvalidSessionTimeout)
	}
	protocols := make([]protocol, len(req.Protocols))
	for i, p := range req.Protocols {
		// The request's bytes alias the connection's read buffer: keep a
		// copy.
		protocols[i] = protocol{p.Name, bytes.Clone(p.Metadata)}
	}
	j := joinArgs{
		memberID: req.MemberID, instanceID: instanceOf(req.InstanceID), client: cl,
		protocolType: req.ProtocolType, protocols: protocols,
		session: session, rebalance: rebalance, version: req.Version,
	}

	s.mu.Lock()
	if !s.active() {
		s.mu.Unlock()
		return fail(kerr.NotCoordinator)
	}
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	if err := c.joinLocked(s, req.Group, j, ch); err != nil {
		s.mu.Unlock()
		return fail(err)
	}
	s.mu.Unlock()

	var r *kmsg.JoinGroupResponse
	start := time.Now()
	select {
	case r = <-ch:
	case <-ctx.Done():
		return fail(kerr.CoordinatorNotAvailable)
	}
	waited(ctx, start)
	r.Version = req.Version
	if req.Version < 9 {
		r.SkipAssignment = false
	}
	return r
}

// joinLocked dispatches a JoinGroup by the kind of its group, under the
// shard's mu: the answer goes to ch, or the error is returned.
func (c *Coordinator) joinLocked(s *shard, id string, j joinArgs, ch chan *kmsg.JoinGroupResponse) error {
	var g *classicGroup
	switch found := s.groups[id].(type) {
	case nil:
		if j.memberID != "" {
			return kerr.UnknownMemberID
		}
		g = newClassicGroup(newCore(s, id), time.Now())
		s.groups[id] = g
	case *classicGroup:
		g = found
	case *consumerGroup:
		if len(found.members) > 0 {
			found.classicJoinToConsumer(j, ch) // consumer_classic.go
			return nil
		}
		// An empty consumer group becomes classic.
		s.enqueue(found.stateTombstones(), func(error) {})
		g = newClassicGroup(found.groupCore, time.Now())
		s.groups[id] = g
	case *streamsGroup:
		if len(found.members) > 0 {
			return kerr.InconsistentGroupProtocol
		}
		// An empty streams group makes way for a classic one, as in
		// Kafka 4.4.
		s.enqueue(found.stateTombstones(), func(error) {})
		g = newClassicGroup(found.groupCore, time.Now())
		s.groups[id] = g
	default:
		return kerr.InconsistentGroupProtocol
	}
	g.join(j, ch)
	return nil
}

type joinArgs struct {
	memberID, instanceID string
	client               Client
	protocolType         string
	protocols            []protocol
	session, rebalance   time.Duration
	version              int16
}

// join runs Kafka's classicGroupJoin; the answer goes to ch, now or when
// the join phase completes.
func (g *classicGroup) join(j joinArgs, ch chan *kmsg.JoinGroupResponse) {
	if !g.acceptJoiningMember(j.memberID) {
		ch <- failedJoin(j.memberID, kerr.GroupMaxSizeReached)
		return
	}
	if g.state == stateDead {
		ch <- failedJoin(j.memberID, kerr.CoordinatorNotAvailable)
		return
	}
	if !g.supportsProtocols(j.protocolType, j.protocols) {
		ch <- failedJoin(j.memberID, kerr.InconsistentGroupProtocol)
		return
	}
	if j.memberID == "" {
		g.joinNewMember(j, ch)
		return
	}
	g.joinExistingMember(j, ch)
}

func (g *classicGroup) acceptJoiningMember(id string) bool {
	max := g.s.c.cfg.MaxSize
	switch g.state {
	case statePreparingRebalance:
		m := g.members[id]
		return (m != nil && m.awaitingJoin()) || g.numAwaitingJoin() < max
	case stateCompletingRebalance, stateStable:
		return g.members[id] != nil || len(g.members) < max
	}
	return true
}

func (g *classicGroup) joinNewMember(j joinArgs, ch chan *kmsg.JoinGroupResponse) {
	if j.instanceID != "" {
		id := newMemberID(j.instanceID)
		if old, ok := g.static[j.instanceID]; ok {
			g.updateStaticMember(j, old, id, ch)
			return
		}
		g.addMemberAndRebalance(j, id, ch)
		return
	}
	id := newMemberID(j.client.ID)
	if j.version >= 4 {
		// KIP-394: the member must come back with the id it is given, so
		// that a client that never learns its id leaves no ghost member.
		s := g.s
		t := time.AfterFunc(j.session, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if !s.active() || s.groups[g.id] != g || g.pending[id] == nil {
				return
			}
			delete(g.pending, id)
			g.maybeCompleteJoinPhase()
		})
		g.pending[id] = t
		ch <- failedJoin(id, kerr.MemberIDRequired)
		return
	}
	g.addMemberAndRebalance(j, id, ch)
}

func (g *classicGroup) addMemberAndRebalance(j joinArgs, id string, ch chan *kmsg.JoinGroupResponse) {
	m := &member{
		id: id, instanceID: j.instanceID, clientID: j.client.ID, clientHost: j.client.Host,
		protocolType: j.protocolType, protocols: j.protocols,
		sessionTimeout: j.session, rebalanceTimeout: j.rebalance,
		joinCh: ch, isNew: true,
	}
	if g.state == statePreparingRebalance && g.prevState == stateEmpty {
		g.newMemberAdded = true
	}
	g.add(m)
	// A new member has no id to heartbeat with; its JoinGroup times out
	// instead, should the client be gone.
	g.scheduleHeartbeat(m, newMemberJoinTimeout)
	g.maybePrepareRebalanceOrCompleteJoin("adding member " + id)
}

// updateStaticMember handles a static member that rejoins with no member
// id (a restart): it takes over its old member id's place. In a Stable
// group whose protocol stays the same, that causes no rebalance (KIP-345).
func (g *classicGroup) updateStaticMember(j joinArgs, oldID, newID string, ch chan *kmsg.JoinGroupResponse) {
	currentLeader := g.leader
	m := g.members[oldID]
	// Fence whatever the old member id still has waiting.
	g.completeJoin(m, failedJoin(oldID, kerr.FencedInstanceID))
	g.completeSync(m, syncResult{err: kerr.FencedInstanceID})
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	g.static[j.instanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	oldProtocols, oldSession, oldRebalance := m.protocols, m.sessionTimeout, m.rebalanceTimeout
	m.protocols, m.sessionTimeout, m.rebalanceTimeout = j.protocols, j.session, j.rebalance
	m.clientID, m.clientHost = j.client.ID, j.client.Host
	g.scheduleHeartbeat(m, m.sessionTimeout)

	switch g.state {
	case stateStable:
		if g.selectProtocol() != g.protocolName {
			m.joinCh = ch
			g.prepareRebalance("static member " + j.instanceID + " changes the group protocol")
			return
		}
		gen := g.generation
		g.s.enqueue([]Record{{groupKey(g.id), groupValue(g)}}, func(err error) {
			s := g.s
			s.mu.Lock()
			defer s.mu.Unlock()
			if err != nil {
				// Not persisted: put the old member id back.
				if g.members[newID] == m {
					delete(g.members, newID)
					m.id = oldID
					m.protocols, m.sessionTimeout, m.rebalanceTimeout = oldProtocols, oldSession, oldRebalance
					g.members[oldID] = m
					g.static[j.instanceID] = oldID
					if g.leader == newID {
						g.leader = oldID
					}
					g.scheduleHeartbeat(m, m.sessionTimeout)
				}
				r := failedJoin("", err)
				r.Generation, r.LeaderID = gen, currentLeader
				ch <- r
				return
			}
			isLeader := g.leader == newID
			if j.version >= 9 {
				// KIP-814: the leader learns it leads, and that it need
				// not assign.
				r := g.joinResponse(m, isLeader)
				r.Generation = gen
				r.SkipAssignment = isLeader
				ch <- r
				return
			}
			// Older clients get the old leader id, so that a restarted
			// leader does not assign in a Stable group (whose SyncGroup
			// would not pass its assignment on).
			r := g.joinResponse(m, false)
			r.Generation = gen
			r.LeaderID = currentLeader
			ch <- r
		})
	case stateCompletingRebalance:
		m.joinCh = ch
		g.prepareRebalance("static member " + j.instanceID + " rejoined during CompletingRebalance")
	default: // PreparingRebalance
		m.joinCh = ch
		g.maybeCompleteJoinPhase()
	}
}

func (g *classicGroup) joinExistingMember(j joinArgs, ch chan *kmsg.JoinGroupResponse) {
	if _, ok := g.pending[j.memberID]; ok {
		g.addMemberAndRebalance(j, j.memberID, ch)
		return
	}
	if err := g.validateMember(j.memberID, j.instanceID); err != nil {
		ch <- failedJoin(j.memberID, err)
		return
	}
	m := g.members[j.memberID]
	update := func(reason string) {
		m.protocols, m.sessionTimeout, m.rebalanceTimeout = j.protocols, j.session, j.rebalance
		m.joinCh = ch
		g.maybePrepareRebalanceOrCompleteJoin(reason)
	}
	switch g.state {
	case statePreparingRebalance:
		update("member " + m.id + " joined during PreparingRebalance")
	case stateCompletingRebalance:
		if m.matches(j.protocols) {
			// The member lost the JoinGroup answer: send it again.
			ch <- g.joinResponse(m, m.id == g.leader)
			return
		}
		update("member " + m.id + " changed its metadata")
	case stateStable:
		if m.id == g.leader {
			// The leader rejoins to have the group reassigned (a topic's
			// partitions changed, say).
			update("leader " + m.id + " rejoined")
			return
		}
		if !m.matches(j.protocols) {
			update("member " + m.id + " changed its metadata")
			return
		}
		ch <- g.joinResponse(m, false)
	default:
		ch <- failedJoin(j.memberID, kerr.UnknownMemberID)
	}
}

// SyncGroup serves SyncGroup v0-v5: the leader's assignment is written to
// __consumer_offsets and then handed to every member.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	fail := func(err error) *kmsg.SyncGroupResponse {
		resp.ErrorCode = errorCode(err)
		return resp
	}
	s, err := c.groupShard(req.Group)
	if err != nil {
		return fail(err)
	}
	s.mu.Lock()
	if !s.active() {
		s.mu.Unlock()
		return fail(kerr.NotCoordinator)
	}
	g := s.groups[req.Group]
	ch := make(chan syncResult, 1)
	switch g := g.(type) {
	case *classicGroup:
		g.sync(req, ch)
	case *consumerGroup:
		ch <- g.classicSyncToConsumer(req) // consumer_classic.go
	default:
		ch <- syncResult{err: kerr.UnknownMemberID}
	}
	s.mu.Unlock()
	var r syncResult
	start := time.Now()
	select {
	case r = <-ch:
	case <-ctx.Done():
		return fail(kerr.CoordinatorNotAvailable)
	}
	waited(ctx, start)
	if r.err != nil {
		return fail(r.err)
	}
	s.mu.Lock()
	protocolType, protocolName := "consumer", ""
	if g, ok := g.(*classicGroup); ok {
		protocolType, protocolName = g.protocolType, g.protocolName
	}
	s.mu.Unlock()
	if protocolType != "" {
		resp.ProtocolType = kmsg.StringPtr(protocolType)
	}
	if protocolName != "" {
		resp.Protocol = kmsg.StringPtr(protocolName)
	}
	if r.protocol != "" {
		resp.Protocol = kmsg.StringPtr(r.protocol)
	}
	resp.MemberAssignment = r.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}

func (g *classicGroup) sync(req *kmsg.SyncGroupRequest, ch chan syncResult) {
	if g.state == stateDead {
		ch <- syncResult{err: kerr.CoordinatorNotAvailable}
		return
	}
	if err := g.validateMember(req.MemberID, instanceOf(req.InstanceID)); err != nil {
		ch <- syncResult{err: err}
		return
	}
	if req.Generation != g.generation {
		ch <- syncResult{err: kerr.IllegalGeneration}
		return
	}
	if inconsistent(req.ProtocolType, g.protocolType) || inconsistent(req.Protocol, g.protocolName) {
		ch <- syncResult{err: kerr.InconsistentGroupProtocol}
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case stateEmpty:
		ch <- syncResult{err: kerr.UnknownMemberID}
	case statePreparingRebalance:
		ch <- syncResult{err: kerr.RebalanceInProgress}
	case stateStable:
		delete(g.pendingSync, m.id)
		g.scheduleHeartbeat(m, m.sessionTimeout)
		ch <- syncResult{assignment: m.assignment}
	case stateCompletingRebalance:
		m.syncCh = ch
		delete(g.pendingSync, m.id)
		if m.id != g.leader {
			return
		}
		assignment := make(map[string][]byte, len(g.members))
		for _, a := range req.GroupAssignment {
			assignment[a.MemberID] = bytes.Clone(a.MemberAssignment) // see JoinGroup
		}
		for id := range g.members {
			if _, ok := assignment[id]; !ok {
				assignment[id] = []byte{}
			}
		}
		gen := g.generation
		// The record carries the new assignment; the members get it once
		// it is committed.
		saved := make(map[string][]byte, len(g.members))
		for id, mm := range g.members {
			saved[id] = mm.assignment
			mm.assignment = assignment[id]
		}
		value := groupValue(g)
		for id, mm := range g.members {
			mm.assignment = saved[id]
		}
		s := g.s
		s.enqueue([]Record{{groupKey(g.id), value}}, func(err error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.groups[g.id] != g || g.state != stateCompletingRebalance || g.generation != gen {
				return
			}
			if err != nil {
				g.resetAndPropagateAssignment(err)
				g.maybePrepareRebalanceOrCompleteJoin("storing the assignment failed")
				return
			}
			for id, mm := range g.members {
				mm.assignment = assignment[id]
			}
			g.propagateAssignment(nil)
			g.transition(stateStable)
		})
	}
}

func inconsistent(p *string, ours string) bool {
	return p != nil && ours != "" && *p != ours
}

// Heartbeat serves Heartbeat v0-v4.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = errorCode(c.heartbeat(req))
	return resp
}

func (c *Coordinator) heartbeat(req *kmsg.HeartbeatRequest) error {
	s, err := c.groupShard(req.Group)
	if err == kerr.CoordinatorLoadInProgress {
		// As Kafka: the member keeps its session while the coordinator loads.
		return nil
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch g := s.groups[req.Group].(type) {
	case *classicGroup:
		return g.heartbeat(req)
	case *consumerGroup:
		return g.classicHeartbeatToConsumer(req) // consumer_classic.go
	}
	return kerr.UnknownMemberID
}

// heartbeat is a Heartbeat of a member of the classic group.
func (g *classicGroup) heartbeat(req *kmsg.HeartbeatRequest) error {
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable
	}
	if err := g.validateMember(req.MemberID, instanceOf(req.InstanceID)); err != nil {
		return err
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	m := g.members[req.MemberID]
	switch g.state {
	case stateEmpty:
		return kerr.UnknownMemberID
	case statePreparingRebalance:
		g.scheduleHeartbeat(m, m.sessionTimeout)
		return kerr.RebalanceInProgress
	default:
		g.scheduleHeartbeat(m, m.sessionTimeout)
		return nil
	}
}

// LeaveGroup serves LeaveGroup v0-v5 (v3+ removes several members, by
// member id or by group.instance.id).
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	members := req.Members
	if req.Version < 3 {
		members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	top := c.leave(req.Group, members, resp)
	resp.ErrorCode = errorCode(top)
	if req.Version < 3 {
		if top == nil && len(resp.Members) == 1 {
			resp.ErrorCode = resp.Members[0].ErrorCode
		}
		resp.Members = nil
	}
	return resp
}

func (c *Coordinator) leave(groupID string, members []kmsg.LeaveGroupRequestMember, resp *kmsg.LeaveGroupResponse) error {
	s, err := c.groupShard(groupID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	answer := func(lm kmsg.LeaveGroupRequestMember, err error) {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = lm.MemberID, lm.InstanceID, errorCode(err)
		resp.Members = append(resp.Members, rm)
	}
	switch g := s.groups[groupID].(type) {
	case *classicGroup:
		return g.leave(members, answer)
	case *consumerGroup:
		g.classicLeaveFromConsumer(members, answer) // consumer_classic.go
		return nil
	}
	for _, lm := range members {
		answer(lm, kerr.UnknownMemberID)
	}
	return nil
}

// leave removes the leaving members of the classic group, each answered.
func (g *classicGroup) leave(members []kmsg.LeaveGroupRequestMember, answer func(kmsg.LeaveGroupRequestMember, error)) error {
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable
	}
	left := 0
	for _, lm := range members {
		instance := instanceOf(lm.InstanceID)
		switch {
		case lm.MemberID == "":
			id, ok := g.static[instance]
			if instance == "" || !ok {
				answer(lm, kerr.UnknownMemberID)
				continue
			}
			g.removeLeaving(g.members[id])
		case g.pending[lm.MemberID] != nil:
			g.remove(lm.MemberID)
		default:
			if err := g.validateMember(lm.MemberID, instance); err != nil {
				answer(lm, err)
				continue
			}
			g.removeLeaving(g.members[lm.MemberID])
		}
		left++
		answer(lm, nil)
	}
	if left > 0 {
		switch g.state {
		case stateStable, stateCompletingRebalance:
			g.maybePrepareRebalanceOrCompleteJoin("members left")
		case statePreparingRebalance:
			g.maybeCompleteJoinPhase()
		}
	}
	return nil
}

func (g *classicGroup) removeLeaving(m *member) {
	g.s.c.log.Debug("member left group", "group", g.id, "member", m.id)
	g.completeJoin(m, failedJoin("", kerr.UnknownMemberID))
	g.remove(m.id)
}
