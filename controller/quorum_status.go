package controller

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// QuorumVoter is one member of the etcd cluster, the quorum that stands
// for Kafka's KRaft controllers.
type QuorumVoter struct {
	// ID is the node id of a member named node-<id> (a KRaft voter);
	// members named otherwise are numbered from 1 in member-id order.
	ID        int32
	MemberID  uint64
	PeerURL   string // its first peer URL
	RaftIndex int64  // the last raft index it reported; -1 when unreachable
	Reachable bool
}

// QuorumStatus is the etcd cluster as Kafka's DescribeQuorum describes the
// metadata quorum: the raft leader, its term, the commit index, and the
// members.
type QuorumStatus struct {
	LeaderID    int32 // -1 when no member reports a leader
	Term        int64
	CommitIndex int64
	Voters      []QuorumVoter
}

// Quorum asks every etcd member for its status.
func (s *Store) Quorum(ctx context.Context) (QuorumStatus, error) {
	if err := s.checkOpen(); err != nil {
		return QuorumStatus{}, err
	}
	ml, err := s.cli.MemberList(ctx)
	if err != nil {
		return QuorumStatus{}, fmt.Errorf("controller: listing etcd members: %w", err)
	}
	members := slices.Clone(ml.Members)
	slices.SortFunc(members, func(a, b *etcdserverpb.Member) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	st := QuorumStatus{LeaderID: -1}
	var leader uint64
	next := int32(1)
	for _, m := range members {
		v := QuorumVoter{MemberID: m.ID, RaftIndex: -1}
		if id, ok := strings.CutPrefix(m.Name, "node-"); ok {
			if n, err := strconv.ParseInt(id, 10, 32); err == nil {
				v.ID = int32(n)
			}
		}
		if v.ID == 0 {
			v.ID = next
		}
		next = max(next, v.ID) + 1
		if len(m.PeerURLs) > 0 {
			v.PeerURL = m.PeerURLs[0]
		}
		if len(m.ClientURLs) > 0 {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			resp, err := s.cli.Status(sctx, m.ClientURLs[0])
			cancel()
			if err == nil {
				v.Reachable, v.RaftIndex = true, int64(resp.RaftIndex)
				if resp.Leader != 0 && int64(resp.RaftTerm) >= st.Term {
					leader, st.Term = resp.Leader, int64(resp.RaftTerm)
				}
				if resp.Header != nil && resp.Header.MemberId == resp.Leader {
					st.CommitIndex = int64(resp.RaftIndex)
				}
			}
		}
		st.Voters = append(st.Voters, v)
	}
	for _, v := range st.Voters {
		if v.MemberID == leader {
			st.LeaderID = v.ID
		}
		if st.CommitIndex == 0 {
			st.CommitIndex = max(st.CommitIndex, v.RaftIndex)
		}
	}
	return st, nil
}

// DirectoryID is a voter's Kafka directory id: its etcd member id in the
// last eight bytes.
func (v QuorumVoter) DirectoryID() [16]byte {
	var id [16]byte
	binary.BigEndian.PutUint64(id[8:], v.MemberID)
	return id
}
