package groups

// Classic members of consumer groups, and the online migration between
// the protocols (KIP-848's group.consumer.migration.policy), as Kafka's
// GroupMetadataManager does them:
//
//   - Upgrade: a ConsumerGroupHeartbeat joining a non-empty classic group
//     that uses the consumer embedded protocol turns it into a consumer
//     group (the policy allowing): each classic member becomes a member of
//     the consumer group at the classic generation, with its last
//     assignment as both its current and its target assignment; offsets
//     stay. Waiting JoinGroups and SyncGroups are told to rejoin.
//   - Classic members of a consumer group go on with JoinGroup, SyncGroup,
//     Heartbeat and LeaveGroup: a JoinGroup is the member's heartbeat with
//     its subscription and the partitions it still owns (answered at once,
//     generation = member epoch, no leader); SyncGroup hands it its
//     current assignment; Heartbeat answers REBALANCE_IN_PROGRESS while it
//     is behind the group epoch, has partitions to revoke, or may now take
//     partitions others released. Its session timeout is the one it joined
//     with.
//   - Downgrade: when a member leaves or is fenced and only classic
//     members remain, the group becomes a classic group again at the group
//     epoch, each member with its target assignment, and rebalances.
//
// An empty group converts either way whatever the policy.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicInfo is what a member of a consumer group that speaks the classic
// protocol joined with (Kafka's ClassicMemberMetadata).
type classicInfo struct {
	session   time.Duration
	protocols []protocol
}

// migration reads group.consumer.migration.policy.
func (c *Coordinator) migration() (upgrade, downgrade bool) {
	switch strings.ToLower(c.cfg.ConsumerMigrationPolicy) {
	case "disabled":
		return false, false
	case "upgrade":
		return true, false
	case "downgrade":
		return false, true
	}
	return true, true
}

// upgradeToConsumer turns the non-empty classic group g into a consumer
// group, which takes its place, or says why it cannot (GROUP_ID_NOT_FOUND,
// as Kafka answers).
func (g *classicGroup) upgradeToConsumer() (*consumerGroup, error) {
	c := g.s.c
	notConsumer := kafkaErrorf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", g.id)
	if up, _ := c.migration(); !up {
		c.log.Info("cannot upgrade classic group to consumer group: the online upgrade is disabled", "group", g.id)
		return nil, notConsumer
	}
	if g.protocolType != "consumer" {
		c.log.Info("cannot upgrade classic group to consumer group: it does not use the consumer embedded protocol", "group", g.id)
		return nil, notConsumer
	}
	if len(g.members) > c.cfg.ConsumerMaxSize {
		return nil, notConsumer
	}
	type classic struct {
		m   *member
		sub kmsg.ConsumerMemberMetadata
		asg kmsg.ConsumerMemberAssignment
	}
	var ms []classic
	for _, m := range g.sortedMembers() {
		cm := classic{m: m}
		err := cm.sub.ReadFrom(m.metadataFor(g.protocolName))
		if err == nil && len(m.assignment) > 0 {
			err = cm.asg.ReadFrom(m.assignment)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: cannot upgrade the classic group %s to consumer group because the embedded consumer protocol is malformed", kerr.GroupIDNotFound, g.id)
		}
		ms = append(ms, cm)
	}
	for _, m := range g.members {
		g.completeJoin(m, failedJoin(m.id, kerr.RebalanceInProgress))
		g.completeSync(m, syncResult{err: kerr.RebalanceInProgress})
		if m.hbTimer != nil {
			m.hbTimer.Stop()
		}
		m.hbSeq++
	}
	for _, t := range g.pending {
		t.Stop()
	}
	g.stopJoinTimer()
	g.stopSyncTimer()
	g.s.enqueue([]Record{{Key: groupKey(g.id)}}, func(error) {})

	gen := g.generation
	cg := newConsumerGroup(g.groupCore, g.stateTime)
	cg.epoch, cg.assignmentEpoch = gen, gen
	for _, x := range ms {
		topics := slices.Clone(x.sub.Topics)
		slices.Sort(topics)
		m := &consumerMember{id: x.m.id, instanceID: x.m.instanceID, rack: deref(x.sub.Rack),
			clientID: x.m.clientID, clientHost: x.m.clientHost, rebalanceTimeout: x.m.rebalanceTimeout,
			topics: slices.Compact(topics), epoch: gen, prevEpoch: gen, state: memberStable,
			assigned: partitionSet{}, revoking: partitionSet{},
			classic: &classicInfo{session: x.m.sessionTimeout, protocols: x.m.protocols}}
		for _, t := range x.asg.Topics {
			for _, p := range t.Partitions {
				tp := topicPartition{t.Topic, p}
				m.assigned[tp] = gen
				cg.owner[tp] = m.id
			}
		}
		cg.target[m.id] = m.assigned.sorted()
		cg.members[m.id] = m
		if m.instanceID != "" {
			cg.static[m.instanceID] = m.id
		}
	}
	g.s.groups[g.id] = cg
	cg.metaHash = metaHash(cg.subscribedTopicMeta())
	cg.setConsumerState()
	for _, m := range cg.members {
		cg.scheduleConsumerTimers(m)
	}
	c.log.Info("upgraded classic group to consumer group", "group", g.id, "epoch", gen, "members", len(cg.members))
	return cg, nil
}

// maybeDowngrade turns a consumer group whose members all speak the
// classic protocol back into a classic group (the policy allowing), which
// takes its place, after a member left or was fenced; it rebalances at
// once.
func (cg *consumerGroup) maybeDowngrade() {
	c := cg.s.c
	if len(cg.members) == 0 {
		return
	}
	for _, m := range cg.members {
		if m.classic == nil {
			return
		}
	}
	if _, down := c.migration(); !down {
		c.log.Info("cannot downgrade consumer group to classic group: the online downgrade is disabled", "group", cg.id)
		return
	}
	if len(cg.members) > c.cfg.MaxSize {
		return
	}
	recs := cg.stateTombstones()
	cg.shutdown()
	g := newClassicGroup(cg.groupCore, time.Now())
	g.generation, g.protocolType = cg.epoch, "consumer"
	cms := slices.SortedFunc(maps.Values(cg.members), func(a, b *consumerMember) int { return strings.Compare(a.id, b.id) })
	for _, cm := range cms {
		g.add(&member{id: cm.id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			protocolType: "consumer", protocols: cm.classic.protocols,
			sessionTimeout: cm.classic.session, rebalanceTimeout: cm.rebalanceTimeout})
	}
	g.protocolName = g.selectProtocol()
	cg.s.groups[cg.id] = g
	for _, cm := range cms {
		m := g.members[cm.id]
		m.assignment = classicAssignment(cg.target[cm.id], m.metadataFor(g.protocolName))
		g.scheduleHeartbeat(m, m.sessionTimeout)
	}
	g.transition(stateStable)
	recs = append(recs, Record{groupKey(g.id), groupValue(g)})
	g.s.enqueue(recs, func(err error) {
		if err != nil {
			c.log.Warn("writing the downgraded group failed", "group", g.id, "err", err)
		}
	})
	c.log.Info("downgraded consumer group to classic group", "group", g.id, "generation", g.generation, "members", len(g.members))
	g.prepareRebalance("downgrade from consumer to classic")
}

// classicAssignment encodes partitions as the consumer embedded protocol's
// assignment, in the version of the member's subscription (3 at most).
func classicAssignment(tps []topicPartition, subscription []byte) []byte {
	var sub kmsg.ConsumerMemberMetadata
	_ = sub.ReadFrom(subscription)
	a := kmsg.NewConsumerMemberAssignment()
	a.Version = min(max(sub.Version, 0), 3)
	sorted := slices.Clone(tps)
	slices.SortFunc(sorted, func(x, y topicPartition) int {
		if c := strings.Compare(x.topic, y.topic); c != 0 {
			return c
		}
		return int(x.partition - y.partition)
	})
	for _, tp := range sorted {
		if n := len(a.Topics); n == 0 || a.Topics[n-1].Topic != tp.topic {
			a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: tp.topic})
		}
		t := &a.Topics[len(a.Topics)-1]
		t.Partitions = append(t.Partitions, tp.partition)
	}
	return a.AppendTo(nil)
}

// supportsClassic is Kafka's ConsumerGroup.supportsClassicProtocols: the
// consumer embedded protocol, with a protocol every classic member has.
func (cg *consumerGroup) supportsClassic(protocolType string, ps []protocol) bool {
	if protocolType != "consumer" || len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		all := true
		for _, m := range cg.members {
			if m.classic != nil && !slices.ContainsFunc(m.classic.protocols, func(q protocol) bool { return q.name == p.name }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// classicJoinToConsumer is a JoinGroup to a consumer group (Kafka's
// classicGroupJoinToConsumerGroup); the answer goes to ch once the
// group's new state is in the log.
func (cg *consumerGroup) classicJoinToConsumer(j joinArgs, ch chan *kmsg.JoinGroupResponse) {
	c := cg.s.c
	fail := func(err error) { ch <- failedJoin(j.memberID, err) }
	if !cg.supportsClassic(j.protocolType, j.protocols) {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	var sub kmsg.ConsumerMemberMetadata
	if err := sub.ReadFrom(j.protocols[0].metadata); err != nil {
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	id := j.memberID
	if id == "" {
		id = newMemberUUID()
		if j.instanceID == "" && j.version >= 4 {
			ch <- failedJoin(id, kerr.MemberIDRequired)
			return
		}
	}
	m := cg.members[id]
	if j.instanceID != "" {
		if old := cg.members[cg.static[j.instanceID]]; old != nil && old.id != id {
			if j.memberID != "" {
				fail(kerr.FencedInstanceID)
				return
			}
			// A new incarnation of the static member takes its place.
			cg.stopConsumerTimers(old)
			delete(cg.members, old.id)
			for tp, o := range cg.owner {
				if o == old.id {
					cg.owner[tp] = id
				}
			}
			if t, ok := cg.target[old.id]; ok {
				delete(cg.target, old.id)
				cg.target[id] = t
			}
			old.id, old.leftStatic = id, false
			cg.members[id] = old
			cg.static[j.instanceID] = id
			m = old
		}
	}
	// A member of the consumer protocol that joins so goes on as a
	// classic member, as in Kafka 4.4.
	if m == nil {
		if len(cg.members) >= c.cfg.ConsumerMaxSize {
			fail(kerr.GroupMaxSizeReached)
			return
		}
		m = &consumerMember{id: id, instanceID: j.instanceID, assigned: partitionSet{}, revoking: partitionSet{}}
		cg.members[id] = m
		if j.instanceID != "" {
			cg.static[j.instanceID] = id
		}
		cg.changed = true
	}
	topics := slices.Clone(sub.Topics)
	slices.Sort(topics)
	if topics = slices.Compact(topics); !slices.Equal(topics, m.topics) {
		m.topics, cg.changed = topics, true
	}
	m.rack = deref(sub.Rack)
	m.rebalanceTimeout = j.rebalance
	m.clientID, m.clientHost = j.client.ID, j.client.Host
	m.classic = &classicInfo{session: j.session, protocols: j.protocols}
	cg.setConsumerState()
	cg.refreshTarget()
	m.owned = m.owned[:0]
	for _, op := range sub.OwnedPartitions {
		for _, p := range op.Partitions {
			m.owned = append(m.owned, topicPartition{op.Topic, p})
		}
	}
	cg.reconcile(m)
	cg.scheduleConsumerTimers(m)
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.MemberID, resp.Generation = m.id, m.epoch
	resp.ProtocolType, resp.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr(j.protocols[0].name)
	cg.persistConsumer(func(err error) {
		if err != nil {
			ch <- failedJoin(m.id, err)
			return
		}
		ch <- resp
	})
}

// classicMember finds the classic member a SyncGroup, Heartbeat or
// LeaveGroup to a consumer group names (Kafka's validateConsumerGroupMember
// and throwIfMemberDoesNotUseClassicProtocol).
func (cg *consumerGroup) classicMember(memberID, instanceID string) (*consumerMember, error) {
	m, err := cg.namedMember(memberID, instanceID)
	if err != nil {
		return nil, err
	}
	if m.classic == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// namedMember is the member of either protocol a classic request names.
func (cg *consumerGroup) namedMember(memberID, instanceID string) (*consumerMember, error) {
	if instanceID != "" {
		id, ok := cg.static[instanceID]
		if !ok {
			return nil, kerr.UnknownMemberID
		}
		if id != memberID {
			return nil, kerr.FencedInstanceID
		}
	}
	m := cg.members[memberID]
	if m == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// classicSyncToConsumer is a SyncGroup to a consumer group: the member's
// current assignment.
func (cg *consumerGroup) classicSyncToConsumer(req *kmsg.SyncGroupRequest) syncResult {
	m, err := cg.classicMember(req.MemberID, instanceOf(req.InstanceID))
	switch {
	case err != nil:
		return syncResult{err: err}
	case req.Generation != m.epoch:
		return syncResult{err: kerr.IllegalGeneration}
	case inconsistent(req.ProtocolType, "consumer") || inconsistent(req.Protocol, m.classic.protocols[0].name):
		return syncResult{err: kerr.InconsistentGroupProtocol}
	case cg.epoch > m.epoch && m.state != memberUnrevokedPartitions:
		return syncResult{err: kerr.RebalanceInProgress}
	}
	cg.scheduleConsumerTimers(m)
	name := m.classic.protocols[0].name
	return syncResult{assignment: classicAssignment(m.assigned.sorted(), m.classic.protocols[0].metadata), protocol: name}
}

// classicHeartbeatToConsumer is a Heartbeat to a consumer group: it keeps
// the session, and asks the member to rejoin when there is something to
// reconcile.
func (cg *consumerGroup) classicHeartbeatToConsumer(req *kmsg.HeartbeatRequest) error {
	m, err := cg.classicMember(req.MemberID, instanceOf(req.InstanceID))
	if err != nil {
		return err
	}
	if req.Generation != m.epoch {
		return kerr.IllegalGeneration
	}
	cg.scheduleConsumerTimers(m)
	if m.epoch < cg.epoch || m.state == memberUnrevokedPartitions ||
		(m.state == memberUnreleasedPartitions && !cg.waitingOnUnreleased(m)) {
		return kerr.RebalanceInProgress
	}
	return nil
}

// waitingOnUnreleased reports whether a partition of the member's target
// is still held by another member.
func (cg *consumerGroup) waitingOnUnreleased(m *consumerMember) bool {
	for _, tp := range cg.target[m.id] {
		if _, ok := m.assigned[tp]; ok {
			continue
		}
		if o, held := cg.owner[tp]; held && o != m.id {
			return true
		}
	}
	return false
}

// classicLeaveFromConsumer is a LeaveGroup to a consumer group: it
// removes members of either protocol, as Kafka 4.4's does (the admin
// client removes KIP-848 members with it).
func (cg *consumerGroup) classicLeaveFromConsumer(members []kmsg.LeaveGroupRequestMember, answer func(kmsg.LeaveGroupRequestMember, error)) {
	left := false
	for _, lm := range members {
		instance := instanceOf(lm.InstanceID)
		id := lm.MemberID
		if id == "" {
			id = cg.static[instance]
		}
		m, err := cg.namedMember(id, instance)
		if err != nil {
			answer(lm, err)
			continue
		}
		cg.s.c.log.Debug("member left consumer group through LeaveGroup", "group", cg.id, "member", m.id)
		cg.removeConsumerMember(m)
		left = true
		answer(lm, nil)
	}
	if left {
		cg.persistConsumer(nil)
		cg.maybeDowngrade()
	}
}
