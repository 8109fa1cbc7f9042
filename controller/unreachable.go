package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A leader cut off from all its followers but not from etcd keeps its
// registration, so the controller sees nothing wrong, and Kafka's answer
// (the leader shrinks the ISR to itself and refuses acks=all until the
// network heals) leaves the partition without acknowledged writes for as
// long as the partition lasts. samsa's followers say what they see: a
// broker whose liveness probe cannot connect to a peer's port for
// samsa.replica.leader.unreachable.ms writes an unreachability report of
// that peer's registration, bound to its own lease, listing where it stands
// in each partition it follows from that peer (the leader epoch it follows,
// its log end, the high watermark of the last fetch answered). The
// controller moves a partition's leadership away from a live leader only
// when every other live member of the ISR reports that registration
// unreachable under the partition's current leader epoch, and elects one of
// them that was caught up (log end >= the high watermark it last saw): a
// clean election from the ISR, the epoch bumped, the old leader dropped
// from the ISR and fenced by the epoch (its ISR writes are conditioned on
// the state's revision, its followers' fetches on the epoch). A slow or
// paused leader is never moved this way: its kernel still completes the
// probes' handshakes.

// FollowerPosition is where a follower stands in one partition it fetches
// from a leader.
type FollowerPosition struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	LeaderEpoch int32  `json:"leader_epoch"`
	LogEnd      int64  `json:"log_end"`
	// HighWatermark is the leader's high watermark in the last fetch it
	// answered; -1 when none was answered under LeaderEpoch.
	HighWatermark int64 `json:"hw"`
}

// caughtUp reports whether the follower held everything below the high
// watermark it last saw.
func (p FollowerPosition) caughtUp() bool { return p.HighWatermark >= 0 && p.LogEnd >= p.HighWatermark }

// unreachableReport is one broker's report of a peer's registration.
type unreachableReport struct {
	BrokerEpoch int64              `json:"broker_epoch"`
	Positions   []FollowerPosition `json:"positions"`
}

func (s *Store) unreachablePrefix() string { return s.root + "/samsa/unreachable/" }

// unreachableKey is observer's report of broker target.
func (s *Store) unreachableKey(target, observer int32) string {
	return s.unreachablePrefix() + strconv.Itoa(int(target)) + "/" + strconv.Itoa(int(observer))
}

// ReportUnreachable records that this broker cannot connect to the
// registration of broker target with epoch, and where it stands in the
// partitions it follows from it. The record is bound to this broker's lease.
func (s *Store) ReportUnreachable(ctx context.Context, target int32, epoch int64, pos []FollowerPosition) error {
	sess, err := s.liveSession(ctx)
	if err != nil {
		return err
	}
	val, err := json.Marshal(unreachableReport{BrokerEpoch: epoch, Positions: pos})
	if err != nil {
		return err
	}
	_, err = s.cli.Put(ctx, s.unreachableKey(target, s.cfg.NodeID), string(val), clientv3.WithLease(sess.Lease()))
	if err != nil {
		s.leaseLost(sess, err)
		return fmt.Errorf("controller: reporting broker %d unreachable: %w", target, err)
	}
	return nil
}

// WithdrawUnreachable withdraws this broker's report of broker target.
func (s *Store) WithdrawUnreachable(ctx context.Context, target int32) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if _, err := s.cli.Delete(ctx, s.unreachableKey(target, s.cfg.NodeID)); err != nil {
		return fmt.Errorf("controller: withdrawing the report of broker %d: %w", target, err)
	}
	return nil
}

// WatchUnreachable is WatchTopics for the unreachability reports.
func (s *Store) WatchUnreachable(ctx context.Context, onChange func()) {
	s.watch(ctx, 0, onChange, s.unreachablePrefix())
}

// unreachableReports maps each reported broker to its observers' reports.
func (s *Store) unreachableReports(ctx context.Context) (map[int32]map[int32]unreachableReport, error) {
	pfx := s.unreachablePrefix()
	resp, err := s.cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("controller: reading unreachability reports: %w", err)
	}
	var out map[int32]map[int32]unreachableReport
	for _, kv := range resp.Kvs {
		t, o, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), pfx), "/")
		target, err1 := strconv.ParseInt(t, 10, 32)
		observer, err2 := strconv.ParseInt(o, 10, 32)
		var r unreachableReport
		if !ok || err1 != nil || err2 != nil || json.Unmarshal(kv.Value, &r) != nil {
			continue
		}
		if out == nil {
			out = map[int32]map[int32]unreachableReport{}
		}
		if out[int32(target)] == nil {
			out[int32(target)] = map[int32]unreachableReport{}
		}
		out[int32(target)][int32(observer)] = r
	}
	return out, nil
}

// moveFromUnreachable is the state of partition p of topic when its live
// leader is to move because every other live ISR member reports it
// unreachable (see the comment at the top of this file), and whether it
// moves. epochs are the live brokers' registration epochs; reports those
// of the leader's registration.
func moveFromUnreachable(topic string, p int32, st PartitionState, replicas []int32, live map[int32]bool, epochs map[int32]int64, reports map[int32]unreachableReport) (PartitionState, bool) {
	if st.Leader < 0 || len(reports) == 0 {
		return st, false
	}
	var followers, caught []int32
	for _, r := range st.ISR {
		if r == st.Leader || !live[r] {
			continue
		}
		followers = append(followers, r)
		rep, ok := reports[r]
		if !ok || rep.BrokerEpoch != epochs[st.Leader] {
			return st, false
		}
		i := slices.IndexFunc(rep.Positions, func(fp FollowerPosition) bool { return fp.Topic == topic && fp.Partition == p })
		if i < 0 || rep.Positions[i].LeaderEpoch != st.LeaderEpoch {
			return st, false
		}
		if rep.Positions[i].caughtUp() {
			caught = append(caught, r)
		}
	}
	r, ok := firstReplica(replicas, caught, nil)
	if !ok {
		return st, false
	}
	next := st
	next.Leader, next.LeaderEpoch, next.ISR = r, st.LeaderEpoch+1, followers
	return next, true
}
