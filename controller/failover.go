package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/samsa-io/samsa/internal/elr"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ControllerConfig configures RunController.
type ControllerConfig struct {
	// MinISR is the min.insync.replicas of a topic with these overrides
	// (the broker default under them); nil: the override, else 1.
	MinISR func(configs map[string]string) int
	// NoELR turns KIP-966's eligible leader replicas off (the behaviour
	// before it): an offline partition keeps its ISR. For tests.
	NoELR bool
	// UncleanElection is the broker default of
	// unclean.leader.election.enable; a topic's override wins.
	UncleanElection bool
	// AutoRebalance moves leadership back to each partition's preferred
	// replica (the first of its assignment) once it is live and in sync,
	// every RebalanceInterval (auto.leader.rebalance.enable,
	// leader.imbalance.check.interval.seconds).
	AutoRebalance     bool
	RebalanceInterval time.Duration
	// Resync is the period of a full check besides the watches; default 1s.
	Resync time.Duration
}

// RunController campaigns for the controllership and, while this broker
// holds it, keeps every partition led: when a leader's registration goes
// (broker dead or cut off from etcd), a new leader is chosen from the live
// members of the ISR, the leader epoch bumped and the dead replicas dropped
// from the ISR; a live leader's dead followers leave the ISR at once.
// Without a live ISR member the partition stays leaderless (leader -1, ISR
// kept) unless unclean election is enabled for the topic, which takes any
// live replica. Every write is a transaction conditioned on the election
// key (fencing a paused ex-controller) and on the state's revision. It
// campaigns again after losing the election and returns when ctx ends.
func (s *Store) RunController(ctx context.Context, cfg ControllerConfig) {
	if cfg.Resync <= 0 {
		cfg.Resync = time.Second
	}
	if cfg.RebalanceInterval <= 0 {
		cfg.RebalanceInterval = 300 * time.Second
	}
	s.mu.Lock()
	s.ctrlCfg = cfg
	s.mu.Unlock()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		epoch, err := s.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			if errors.Is(err, errLeaseLost) {
				// The next Campaign waits for the new lease itself.
				s.log.Warn("controller: campaign ended with the lease", "node", s.cfg.NodeID, "err", err)
				backoff = 100 * time.Millisecond
				continue
			}
			s.log.Warn("controller: campaign failed", "node", s.cfg.NodeID, "err", err)
			if !sleepCtx(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		s.log.Info("elected controller", "node", s.cfg.NodeID, "controller_epoch", epoch)
		s.lead(ctx, cfg, epoch)
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.Resign(rctx)
		cancel()
		s.log.Info("controllership ended", "node", s.cfg.NodeID, "controller_epoch", epoch)
	}
}

func (s *Store) lead(ctx context.Context, cfg ControllerConfig, epoch int32) {
	done := s.ControllerDone()
	if done == nil {
		return
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kick := make(chan struct{}, 1)
	notify := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	s.WatchBrokers(lctx, 0, notify)
	if err := s.WatchCachedTopics(lctx, 0, notify); err != nil {
		s.log.Warn("controller: cannot watch topics", "err", err)
		return
	}
	s.WatchUnreachable(lctx, notify)
	tick := time.NewTicker(cfg.Resync)
	defer tick.Stop()
	lastRebalance := time.Now()
	notify()
	for {
		select {
		case <-lctx.Done():
			return
		case <-done:
			return
		case <-kick:
		case <-tick.C:
		}
		rebalance := cfg.AutoRebalance && time.Since(lastRebalance) >= cfg.RebalanceInterval
		err := s.reconcile(lctx, cfg, epoch, rebalance)
		if errors.Is(err, ErrNotController) {
			s.log.Warn("controller: fenced: another controller was elected", "node", s.cfg.NodeID, "controller_epoch", epoch)
			return
		}
		if err != nil && lctx.Err() == nil {
			s.log.Warn("controller: reconcile failed", "err", err)
			continue
		}
		if rebalance {
			lastRebalance = time.Now()
		}
	}
}

// reconcile reads every broker and topic and writes the partition states
// that need a new leader or a smaller ISR. The topics come from the topic
// cache (a full read of 10,000 states took a fifth of a failover's CPU);
// a decision made on a state the cache has not caught up with fails its
// revision check, and is made again. Before it returns, it waits for the
// cache to show its own writes, so that the next pass does not decide
// them again.
func (s *Store) reconcile(ctx context.Context, cfg ControllerConfig, epoch int32, rebalance bool) error {
	var written int64 // the revision of the last state written
	defer func() {
		if written > 0 {
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_ = s.AwaitTopics(actx, written)
			cancel()
		}
	}()
	brokers, err := s.Brokers(ctx)
	if err != nil {
		return err
	}
	topics, _, err := s.CachedTopics(ctx)
	if err != nil {
		return err
	}
	var uncleanShutdown map[int32]bool
	if !cfg.NoELR {
		if uncleanShutdown, err = s.acceptBrokers(ctx, brokers, topics); err != nil {
			return err
		}
	}
	live := make(map[int32]bool, len(brokers))
	for _, b := range brokers {
		live[b.ID] = !uncleanShutdown[b.ID]
	}
	liveFor := liveReplicas(brokers, live)
	epochs := make(map[int32]int64, len(brokers))
	var draining map[int32]bool
	for _, b := range brokers {
		epochs[b.ID] = b.Epoch
		if b.ShuttingDown {
			if draining == nil {
				draining = map[int32]bool{}
			}
			draining[b.ID] = true
		}
	}
	reports, err := s.unreachableReports(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	var elections, others []stateWrite // the writes that move a leader, and the rest
	for _, name := range names {
		t := topics[name]
		unclean := cfg.UncleanElection
		if v, ok := t.Configs["unclean.leader.election.enable"]; ok {
			unclean = v == "true"
		}
		minISR := topicMinISR(t, cfg.MinISR)
		for p, st := range t.Partitions {
			if st.Version == 0 || p >= len(t.Assignment) {
				continue // being created
			}
			var rules elrRules
			if !cfg.NoELR {
				rules = elrRules{minISR: elr.EffectiveMinISR(minISR, len(t.Assignment[p])), unclean: uncleanShutdown}
			}
			live := liveFor(name, int32(p))
			if strays(st, t.Assignment[p]) {
				// A cancelled reassignment left replicas outside the
				// assignment in the ISR (or leading): they count as dead.
				live = onlyAssigned(live, t.Assignment[p])
			}
			if done, target, ok := completeReassignment(t, int32(p), st, live, draining); ok {
				done = withELR(st, done, rules, false)
				done.ControllerEpoch = epoch
				err := s.writeReassignmentDone(ctx, t, int32(p), done, target)
				switch {
				case err == nil, errors.Is(err, ErrStale):
				case errors.Is(err, ErrNotController):
					return err
				default:
					errs = append(errs, err)
				}
				continue
			}
			var next PartitionState
			var ok bool
			if st.Leader >= 0 && live[st.Leader] && epochs[st.Leader] > st.Version {
				next, ok = withELR(st, reelectBounced(st, t.Assignment[p], live), rules, false), true
			} else {
				next, ok = decideState(st, t.Assignment[p], live, draining, unclean, rebalance, rules)
			}
			if !ok && st.Leader >= 0 && live[st.Leader] && reports[st.Leader] != nil {
				if next, ok = moveFromUnreachable(name, int32(p), st, t.Assignment[p], live, epochs, reports[st.Leader]); ok {
					next = withELR(st, next, rules, false)
					s.log.Warn("controller: every follower in the ISR reports the leader unreachable; moving leadership",
						"topic", name, "partition", p, "old_leader", st.Leader, "leader", next.Leader, "leader_epoch", next.LeaderEpoch, "isr", next.ISR)
				}
			}
			if !ok {
				continue
			}
			next.ControllerEpoch = epoch
			if next.Leader != st.Leader {
				s.log.Info("controller: electing leader", "topic", name, "partition", p,
					"old_leader", st.Leader, "leader", next.Leader, "leader_epoch", next.LeaderEpoch, "isr", next.ISR)
			}
			w := stateWrite{name, int32(p), next}
			if next.Leader != st.Leader {
				elections = append(elections, w)
			} else {
				others = append(others, w)
			}
		}
	}
	// New leaders first: until then their partitions take no writes,
	// while an ISR that still names a dead follower only waits for it.
	for _, ws := range [][]stateWrite{elections, others} {
		rev, err := s.writeStates(ctx, ws)
		written = max(written, rev)
		if errors.Is(err, ErrNotController) {
			return err
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stateBatch is how many partition states the controller writes in one
// etcd transaction (etcd's default --max-txn-ops is 128): a broker that
// dies or drains moves thousands of leaders in a few writes, not one each.
const stateBatch = 100

type stateWrite struct {
	topic string
	p     int32
	st    PartitionState
}

// writeStatesFenced writes states in one transaction conditioned on the
// election key and on each state's revision. When some of them changed
// meanwhile (a leader wrote its ISR), the failed transaction also read
// their revisions: the others are written again in one transaction, and
// the lost races are decided again on the next pass. It returns the etcd
// revision of the last write that went through, 0 when none did.
func (s *Store) writeStatesFenced(ctx context.Context, ws []stateWrite) (int64, error) {
	for len(ws) > 1 {
		s.mu.Lock()
		e := s.election
		s.mu.Unlock()
		if e == nil {
			return 0, ErrNotController
		}
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev())}
		ops := make([]clientv3.Op, 0, len(ws))
		reads := []clientv3.Op{clientv3.OpGet(e.Key(), clientv3.WithCountOnly())}
		ok := true
		for _, w := range ws {
			val, err := encodeState(w.st)
			if err != nil || w.st.Version <= 0 {
				ok = false
				break
			}
			key := s.stateKey(w.topic, w.p)
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", w.st.Version))
			ops = append(ops, clientv3.OpPut(key, string(val)))
			reads = append(reads, clientv3.OpGet(key, clientv3.WithKeysOnly()))
		}
		if !ok {
			break // written one by one below, which reports the error
		}
		resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Else(reads...).Commit()
		if err != nil {
			return 0, fmt.Errorf("controller: updating %d partition states: %w", len(ws), err)
		}
		if resp.Succeeded {
			return resp.Header.Revision, nil
		}
		if resp.Responses[0].GetResponseRange().Count == 0 {
			return 0, ErrNotController
		}
		current := ws[:0:0]
		for i, w := range ws {
			kvs := resp.Responses[i+1].GetResponseRange().Kvs
			if len(kvs) == 1 && kvs[0].ModRevision == w.st.Version {
				current = append(current, w)
			}
		}
		if len(current) == len(ws) {
			break // nothing changed that the reads show: one by one
		}
		ws = current
	}
	var errs []error
	var last int64
	for _, w := range ws {
		rev, err := s.writeStateFenced(ctx, w.topic, w.p, w.st)
		switch {
		case err == nil:
			last = rev
		case errors.Is(err, ErrStale), errors.Is(err, ErrUnknownTopic), errors.Is(err, ErrUnknownPartition):
			// A lost race is decided again on the next event.
		case errors.Is(err, ErrNotController):
			return last, err
		default:
			errs = append(errs, err)
		}
	}
	return last, errors.Join(errs...)
}

// strays reports whether st's leader or ISR names a broker outside
// replicas.
func strays(st PartitionState, replicas []int32) bool {
	if st.Leader >= 0 && !slices.Contains(replicas, st.Leader) {
		return true
	}
	for _, id := range st.ISR {
		if !slices.Contains(replicas, id) {
			return true
		}
	}
	return false
}

// onlyAssigned is live without the brokers outside replicas.
func onlyAssigned(live map[int32]bool, replicas []int32) map[int32]bool {
	out := make(map[int32]bool, len(replicas))
	for _, id := range replicas {
		if live[id] {
			out[id] = true
		}
	}
	return out
}

// OfflineReplicas maps each partition to the brokers whose replica of it
// is offline (BrokerInfo.OfflineReplicas); nil when none is.
func OfflineReplicas(brokers []BrokerInfo) map[TopicPartition][]int32 {
	var out map[TopicPartition][]int32
	for _, b := range brokers {
		for _, tp := range b.OfflineReplicas {
			if out == nil {
				out = map[TopicPartition][]int32{}
			}
			out[tp] = append(out[tp], b.ID)
		}
	}
	return out
}

// liveReplicas returns, for a partition, the brokers whose replica of it
// is live: registered, and not among their offline replicas (a failed log
// directory).
func liveReplicas(brokers []BrokerInfo, live map[int32]bool) func(topic string, p int32) map[int32]bool {
	offline := OfflineReplicas(brokers)
	return func(topic string, p int32) map[int32]bool {
		ids := offline[TopicPartition{topic, p}]
		if len(ids) == 0 {
			return live
		}
		l := maps.Clone(live)
		for _, id := range ids {
			delete(l, id)
		}
		return l
	}
}

// reelectBounced is the state of a partition whose leader is live but
// registered anew after st was written (it restarted, or lost its lease
// and took a new one): it must not go on leading from its previous
// incarnation's state. As Kafka's controller handles a bounced broker, a
// leader is elected with a new epoch: another live ISR member when there
// is one (the bounced broker leaves the ISR and rejoins once caught up),
// else the bounced broker itself.
func reelectBounced(st PartitionState, replicas []int32, live map[int32]bool) PartitionState {
	var others []int32
	for _, r := range st.ISR {
		if live[r] && r != st.Leader {
			others = append(others, r)
		}
	}
	next := st
	next.LeaderEpoch = st.LeaderEpoch + 1
	for _, r := range replicas {
		if slices.Contains(others, r) {
			next.Leader, next.ISR = r, others
			return next
		}
	}
	next.ISR = append([]int32{st.Leader}, others...)
	return next
}

// decideState returns the state partition st should have, and whether it
// differs: see RunController. A broker in controlled shutdown (draining)
// is elected only when no other in-sync replica is live, and loses the
// leadership it holds to one that is.
//
// With rules on (KIP-966), the ISR keeps only live replicas, and may go
// empty; the ELR and last known leader follow (withELR). A partition
// without a live ISR member elects the first live replica of its ELR
// (its ISR then that replica alone), else, with both empty, its last
// known leader once it is back, before an unclean election is tried.
func decideState(st PartitionState, replicas []int32, live, draining map[int32]bool, unclean, preferred bool, rules elrRules) (PartitionState, bool) {
	next, changed, uncleanElected := decide(st, replicas, live, draining, unclean, preferred, rules)
	if !rules.on() {
		return next, changed
	}
	if !changed {
		next = st
	}
	next = withELR(st, next, rules, uncleanElected)
	return next, changed || !sameState(st, next)
}

func decide(st PartitionState, replicas []int32, live, draining map[int32]bool, unclean, preferred bool, rules elrRules) (next PartitionState, changed, uncleanElected bool) {
	var isrLive []int32
	for _, r := range st.ISR {
		if live[r] {
			isrLive = append(isrLive, r)
		}
	}
	next = st
	next.ISR = slices.Clone(st.ISR)
	if st.Leader >= 0 && live[st.Leader] {
		if len(isrLive) != len(st.ISR) && slices.Contains(isrLive, st.Leader) {
			next.ISR, changed = isrLive, true
		}
		if draining[st.Leader] {
			if r, ok := firstReplica(replicas, isrLive, draining); ok {
				next.Leader, next.LeaderEpoch, changed = r, st.LeaderEpoch+1, true
			}
			return next, changed, false
		}
		if preferred && len(replicas) > 0 && replicas[0] != st.Leader && live[replicas[0]] && !draining[replicas[0]] && slices.Contains(next.ISR, replicas[0]) {
			next.Leader, next.LeaderEpoch, changed = replicas[0], st.LeaderEpoch+1, true
		}
		return next, changed, false
	}
	r, ok := firstReplica(replicas, isrLive, draining)
	if !ok {
		r, ok = firstReplica(replicas, isrLive, nil)
	}
	if ok {
		next.Leader, next.LeaderEpoch, next.ISR = r, st.LeaderEpoch+1, isrLive
		return next, true, false
	}
	if rules.on() && len(isrLive) == 0 {
		eligible := elr.Next(st.ISR, st.ELR, nil, rules.minISR, rules.isUnclean)
		var liveELR []int32
		for _, r := range eligible {
			if live[r] {
				liveELR = append(liveELR, r)
			}
		}
		r, ok := firstReplica(replicas, liveELR, draining)
		if !ok {
			r, ok = firstReplica(replicas, liveELR, nil)
		}
		if ok {
			next.Leader, next.LeaderEpoch, next.ISR = r, st.LeaderEpoch+1, []int32{r}
			return next, true, false
		}
		if len(eligible) == 0 && len(st.LastKnownELR) == 1 && live[st.LastKnownELR[0]] {
			// Neither the ISR nor the ELR has a replica left: the last
			// leader leads again (Kafka's balanced recovery), whatever
			// its shutdown was; it is the one that had every record.
			next.Leader, next.LeaderEpoch, next.ISR = st.LastKnownELR[0], st.LeaderEpoch+1, []int32{st.LastKnownELR[0]}
			return next, true, false
		}
	}
	if unclean {
		for _, r := range replicas {
			if live[r] {
				next.Leader, next.LeaderEpoch, next.ISR = r, st.LeaderEpoch+1, []int32{r}
				return next, true, true
			}
		}
	}
	if rules.on() {
		// No eligible leader: the partition goes offline, its ISR keeping
		// only live replicas (none); the ELR holds the replicas that left.
		next.ISR = isrLive
		if st.Leader != -1 {
			next.Leader, next.LeaderEpoch = -1, st.LeaderEpoch+1
		}
		return next, !sameState(st, next), false
	}
	if st.Leader == -1 {
		return st, false, false
	}
	// No eligible leader: the partition goes offline, keeping its ISR so
	// that the first of them to return leads again.
	next.Leader, next.LeaderEpoch = -1, st.LeaderEpoch+1
	return next, true, false
}

// firstReplica is the first of replicas (the assignment's order: the
// preferred leader first) that is in isr and not draining.
func firstReplica(replicas, isr []int32, draining map[int32]bool) (int32, bool) {
	for _, r := range replicas {
		if slices.Contains(isr, r) && !draining[r] {
			return r, true
		}
	}
	return -1, false
}

// writeStateFenced is UpdatePartitionState for the controller: the
// transaction also requires this store's election key, so that a controller
// that lost its lease (paused, cut off) changes nothing.
func (s *Store) writeStateFenced(ctx context.Context, topic string, p int32, st PartitionState) (int64, error) {
	s.mu.Lock()
	e := s.election
	s.mu.Unlock()
	if e == nil {
		return 0, ErrNotController
	}
	if st.Version <= 0 {
		return 0, fmt.Errorf("%w: %s-%d: state version %d", ErrStale, topic, p, st.Version)
	}
	val, err := encodeState(st)
	if err != nil {
		return 0, err
	}
	key := s.stateKey(topic, p)
	resp, err := s.cli.Txn(ctx).
		If(
			clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev()),
			clientv3.Compare(clientv3.ModRevision(key), "=", st.Version),
		).
		Then(clientv3.OpPut(key, string(val))).
		Else(clientv3.OpGet(e.Key(), clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("controller: updating %s-%d: %w", topic, p, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	if resp.Responses[0].GetResponseRange().Count == 0 {
		return 0, ErrNotController
	}
	return 0, fmt.Errorf("%w: %s-%d changed since version %d", ErrStale, topic, p, st.Version)
}

// IsController reports whether this store holds the controllership.
func (s *Store) IsController() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.election != nil
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ElectLeaders runs leader elections for parts (every partition when nil)
// on behalf of the ElectLeaders API: preferred elections move leadership to
// the first replica of the assignment when it is live and in the ISR;
// unclean ones (unclean=true) elect, for a partition without a live
// leader, a live ISR member or else any live replica. Only the controller
// runs them (else ErrNotController). Each partition's outcome is nil,
// ErrElectionNotNeeded, ErrPreferredLeaderNotAvailable,
// ErrEligibleLeadersNotAvailable, ErrUnknownTopic, ErrUnknownPartition or
// ErrStale.
func (s *Store) ElectLeaders(ctx context.Context, unclean bool, parts []TopicPartition) (map[TopicPartition]error, error) {
	s.mu.Lock()
	e, epoch, cfg := s.election, s.epoch, s.ctrlCfg
	s.mu.Unlock()
	if e == nil {
		return nil, ErrNotController
	}
	brokers, err := s.Brokers(ctx)
	if err != nil {
		return nil, err
	}
	live := make(map[int32]bool, len(brokers))
	for _, b := range brokers {
		live[b.ID] = true
	}
	liveFor := liveReplicas(brokers, live)
	topics, _, err := s.Topics(ctx)
	if err != nil {
		return nil, err
	}
	if parts == nil {
		for name, t := range topics {
			for p := range t.Partitions {
				parts = append(parts, TopicPartition{name, int32(p)})
			}
		}
	}
	out := make(map[TopicPartition]error, len(parts))
	for _, tp := range parts {
		t := topics[tp.Topic]
		switch {
		case t == nil:
			out[tp] = ErrUnknownTopic
			continue
		case tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) || int(tp.Partition) >= len(t.Assignment):
			out[tp] = ErrUnknownPartition
			continue
		}
		st, replicas := t.Partitions[tp.Partition], t.Assignment[tp.Partition]
		live := liveFor(tp.Topic, tp.Partition)
		var rules elrRules
		if !cfg.NoELR {
			rules.minISR = elr.EffectiveMinISR(topicMinISR(t, cfg.MinISR), len(replicas))
		}
		next := st
		if !unclean {
			pref := replicas[0]
			switch {
			case st.Leader == pref:
				out[tp] = ErrElectionNotNeeded
				continue
			case !live[pref] || !slices.Contains(st.ISR, pref):
				out[tp] = ErrPreferredLeaderNotAvailable
				continue
			}
			next.Leader = pref
			next = withELR(st, next, rules, false)
		} else {
			if st.Leader >= 0 && live[st.Leader] {
				out[tp] = ErrElectionNotNeeded
				continue
			}
			cand, ok := decideState(st, replicas, live, nil, true, false, rules)
			if !ok || cand.Leader < 0 {
				out[tp] = ErrEligibleLeadersNotAvailable
				continue
			}
			next = cand
		}
		next.LeaderEpoch = st.LeaderEpoch + 1
		next.ControllerEpoch = epoch
		_, err := s.writeStateFenced(ctx, tp.Topic, tp.Partition, next)
		if errors.Is(err, ErrNotController) {
			return nil, err
		}
		out[tp] = err
	}
	return out, nil
}
