package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/samsa-io/samsa/internal/elr"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// KIP-966, eligible leader replicas. The rules of the ELR itself are in
// internal/elr; here are the controller's parts: the election from the
// ELR (decideState), the last known leader, and the unclean shutdowns.
//
// A broker registers with the epoch its previous process shut down
// cleanly in (BrokerInfo.PreviousEpoch, from the log directories'
// .kafka_cleanshutdown), or -1. The controller accepts each registration
// once, writing its epoch to /brokers/accepted/<id>: at once when the
// previous epoch is the accepted one or later (a clean shutdown, or the
// same process registering again after a lost lease) or unknown (0: a
// registration that does not say, as before KIP-966); after an unclean
// shutdown, only once the broker is in no partition's ISR or ELR. Until
// then the broker counts as down for its partitions, so the pass that
// sees it takes it out of them, and leaders do not take it back into an
// ISR (Store.AcceptedEpochs): a replica that may have lost an unflushed
// tail is not elected while one that has every committed record is in
// the ELR, as Kafka's handleBrokerUncleanShutdown.

// elrRules are what decideState needs of KIP-966 for one partition: its
// effective min.insync.replicas (0: the ELR is off, samsa before KIP-966)
// and the brokers whose unclean shutdown is being handled.
type elrRules struct {
	minISR  int
	unclean map[int32]bool
}

func (e elrRules) on() bool               { return e.minISR > 0 }
func (e elrRules) isUnclean(r int32) bool { return e.unclean[r] }

// withELR is next with the ELR and last known leader that follow from st
// (Kafka's PartitionChangeBuilder with its default, the last known leader
// in balanced recovery): the ELR by elr.Next, empty after an unclean
// election; the last known leader set when the ISR first goes empty, to
// the leader it had, kept while the partition has no leader, cleared
// once it has one.
func withELR(st, next PartitionState, rules elrRules, uncleanElected bool) PartitionState {
	if !rules.on() {
		return next
	}
	if uncleanElected {
		next.ELR, next.LastKnownELR = nil, nil
		return next
	}
	next.ELR = elr.Next(st.ISR, st.ELR, next.ISR, rules.minISR, rules.isUnclean)
	switch {
	case next.Leader >= 0:
		next.LastKnownELR = nil
	case len(next.ISR) == 0 && st.Leader >= 0:
		next.LastKnownELR = []int32{st.Leader}
	default:
		next.LastKnownELR = slices.Clone(st.LastKnownELR)
	}
	return next
}

// sameState reports whether a and b hold the same leader, epoch, ISR,
// ELR and last known leader.
func sameState(a, b PartitionState) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && slices.Equal(a.ISR, b.ISR) &&
		slices.Equal(a.ELR, b.ELR) && slices.Equal(a.LastKnownELR, b.LastKnownELR)
}

// topicMinISR is the min.insync.replicas of a topic: its override, else
// def (the broker default; 1 when def is nil).
func topicMinISR(t *Topic, def func(configs map[string]string) int) int {
	if def != nil {
		return def(t.Configs)
	}
	if v, err := strconv.Atoi(t.Configs["min.insync.replicas"]); err == nil {
		return v
	}
	return 1
}

func (s *Store) acceptedPrefix() string { return s.root + "/brokers/accepted/" }

// AcceptedEpochs maps each broker to the epoch of its registration the
// controller last accepted (see above). A leader takes a follower into
// the ISR only while the follower's live registration is the accepted one.
func (s *Store) AcceptedEpochs(ctx context.Context) (map[int32]int64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	pfx := s.acceptedPrefix()
	resp, err := s.cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("controller: reading accepted broker epochs: %w", err)
	}
	out := make(map[int32]int64, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		id, err1 := strconv.ParseInt(strings.TrimPrefix(string(kv.Key), pfx), 10, 32)
		e, err2 := strconv.ParseInt(string(kv.Value), 10, 64)
		if err1 != nil || err2 != nil || id < 0 {
			s.log.Warn("etcd: skipping malformed accepted broker epoch", "key", string(kv.Key))
			continue
		}
		out[int32(id)] = e
	}
	return out, nil
}

// acceptBroker records b's registration as accepted, conditioned on the
// election key and on the registration being still the one of b.Epoch.
func (s *Store) acceptBroker(ctx context.Context, b BrokerInfo) error {
	s.mu.Lock()
	e := s.election
	s.mu.Unlock()
	if e == nil {
		return ErrNotController
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev()),
			clientv3.Compare(clientv3.CreateRevision(s.brokerKey(b.ID)), "=", b.Epoch)).
		Then(clientv3.OpPut(s.acceptedPrefix()+strconv.Itoa(int(b.ID)), strconv.FormatInt(b.Epoch, 10))).
		Else(clientv3.OpGet(e.Key(), clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return fmt.Errorf("controller: accepting broker %d: %w", b.ID, err)
	}
	if !resp.Succeeded && resp.Responses[0].GetResponseRange().Count == 0 {
		return ErrNotController
	}
	return nil // or registered anew meanwhile: judged on the next pass
}

// acceptBrokers accepts the registrations of brokers that can be, and
// returns the brokers whose unclean shutdown is still being handled: not
// live for their partitions in this pass.
func (s *Store) acceptBrokers(ctx context.Context, brokers []BrokerInfo, topics map[string]*Topic) (map[int32]bool, error) {
	accepted, err := s.AcceptedEpochs(ctx)
	if err != nil {
		return nil, err
	}
	var unclean map[int32]bool
	for _, b := range brokers {
		acc, ok := accepted[b.ID]
		if ok && acc == b.Epoch {
			continue
		}
		clean := !ok || b.PreviousEpoch == 0 || b.PreviousEpoch >= acc
		if !clean && namedInISROrELR(topics, b.ID) {
			if unclean == nil {
				unclean = map[int32]bool{}
			}
			unclean[b.ID] = true
			s.log.Warn("controller: broker shut down uncleanly; taking it out of every ISR and ELR before it may lead",
				"broker", b.ID, "broker_epoch", b.Epoch, "previous_epoch", b.PreviousEpoch, "accepted_epoch", acc)
			continue
		}
		if err := s.acceptBroker(ctx, b); err != nil {
			return nil, err
		}
	}
	return unclean, nil
}

// namedInISROrELR reports whether broker id is in the ISR or ELR of a
// partition of topics.
func namedInISROrELR(topics map[string]*Topic, id int32) bool {
	for _, t := range topics {
		for _, st := range t.Partitions {
			if slices.Contains(st.ISR, id) || slices.Contains(st.ELR, id) {
				return true
			}
		}
	}
	return false
}
