package controller

import (
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// PartitionState is the leader and ISR of one partition, stored under
// /brokers/topics/<topic>/partitions/<p>/state.
type PartitionState struct {
	Leader      int32 // -1: none
	LeaderEpoch int32
	ISR         []int32
	// ELR are the eligible leader replicas (KIP-966, internal/elr): out of
	// the ISR since it fell below min.insync.replicas, each holding every
	// committed record; one may lead once the ISR is empty.
	ELR []int32
	// LastKnownELR is, while the ISR is empty, the last leader (Kafka's
	// last known leader in balanced recovery): elected when it returns and
	// neither the ISR nor the ELR has a replica, even after an unclean
	// shutdown.
	LastKnownELR    []int32
	ControllerEpoch int32 // epoch of the controller that last elected a leader
	// Version is the etcd mod revision of the state key: the compare value
	// for UpdatePartitionState (ZooKeeper's znode version).
	Version int64
}

// stateValue is the JSON Kafka wrote to ZooKeeper for a partition state.
type stateValue struct {
	ControllerEpoch int32   `json:"controller_epoch"`
	Leader          int32   `json:"leader"`
	Version         int     `json:"version"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	ISR             []int32 `json:"isr"`
	// samsa's own, as Kafka's PartitionRecord has them.
	ELR          []int32 `json:"eligible_leader_replicas,omitempty"`
	LastKnownELR []int32 `json:"last_known_elr,omitempty"`
}

func encodeState(st PartitionState) ([]byte, error) {
	isr := st.ISR
	if isr == nil {
		isr = []int32{}
	}
	return json.Marshal(stateValue{
		ControllerEpoch: st.ControllerEpoch,
		Leader:          st.Leader,
		Version:         1,
		LeaderEpoch:     st.LeaderEpoch,
		ISR:             isr,
		ELR:             st.ELR,
		LastKnownELR:    st.LastKnownELR,
	})
}

func decodeState(data []byte) (PartitionState, error) {
	var v stateValue
	if err := json.Unmarshal(data, &v); err != nil {
		return PartitionState{}, err
	}
	return PartitionState{
		Leader:          v.Leader,
		LeaderEpoch:     v.LeaderEpoch,
		ISR:             v.ISR,
		ELR:             v.ELR,
		LastKnownELR:    v.LastKnownELR,
		ControllerEpoch: v.ControllerEpoch,
	}, nil
}

// StateUpdate is one partition state for UpdatePartitionStates.
type StateUpdate struct {
	Topic     string
	Partition int32
	State     PartitionState
}

// UpdatePartitionStates writes the states of several partitions in one
// transaction, each conditioned on its key's mod revision as
// UpdatePartitionState (at most 100: etcd's default --max-txn-ops is 128).
// When one of them lost its race nothing is written and the error is
// ErrStale: the caller writes them one by one to learn which.
func (s *Store) UpdatePartitionStates(ctx context.Context, us []StateUpdate) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	if len(us) == 0 || len(us) > 100 {
		return 0, fmt.Errorf("controller: %d partition states in one transaction, want 1 to 100", len(us))
	}
	cmps := make([]clientv3.Cmp, 0, len(us))
	ops := make([]clientv3.Op, 0, len(us))
	for _, u := range us {
		if err := validTopicName(u.Topic); err != nil {
			return 0, err
		}
		if u.Partition < 0 || u.State.Version <= 0 {
			return 0, fmt.Errorf("%w: %s-%d: state version %d", ErrStale, u.Topic, u.Partition, u.State.Version)
		}
		val, err := encodeState(u.State)
		if err != nil {
			return 0, err
		}
		key := s.stateKey(u.Topic, u.Partition)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", u.State.Version))
		ops = append(ops, clientv3.OpPut(key, string(val)))
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return 0, fmt.Errorf("controller: updating %d partition states: %w", len(us), err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w: one of %d partition states changed", ErrStale, len(us))
	}
	return resp.Header.Revision, nil
}

// UpdatePartitionState writes st as the state of partition p of topic if
// the state key's mod revision is still st.Version (a compare-and-set, as
// ZooKeeper's versioned setData). It returns the new Version. A lost race
// returns ErrStale: re-read, decide again, never overwrite blindly. A
// missing topic returns ErrUnknownTopic, a missing partition
// ErrUnknownPartition.
func (s *Store) UpdatePartitionState(ctx context.Context, topic string, p int32, st PartitionState) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	if err := validTopicName(topic); err != nil {
		return 0, err
	}
	if p < 0 {
		return 0, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, p)
	}
	if st.Version <= 0 {
		return 0, fmt.Errorf("%w: %s-%d: state version %d (read it first)", ErrStale, topic, p, st.Version)
	}
	val, err := encodeState(st)
	if err != nil {
		return 0, err
	}
	key := s.stateKey(topic, p)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", st.Version)).
		Then(clientv3.OpPut(key, string(val))).
		Else(clientv3.OpGet(s.topicKey(topic), clientv3.WithCountOnly()), clientv3.OpGet(key, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("controller: updating %s-%d: %w", topic, p, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	switch {
	case resp.Responses[0].GetResponseRange().Count == 0:
		return 0, fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	case resp.Responses[1].GetResponseRange().Count == 0:
		return 0, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, topic, p)
	}
	return 0, fmt.Errorf("%w: %s-%d changed since version %d", ErrStale, topic, p, st.Version)
}
