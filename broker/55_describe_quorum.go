package broker

// DescribeQuorum v0-v2 (v1: the voters' fetch times, v2: directory ids
// and the voters' endpoints). samsa's metadata quorum is its etcd cluster
// (controller.Store.Quorum): the voters are the etcd members (a KRaft
// voter's member is named node-<id>), the leader is etcd's raft leader,
// the leader epoch its raft term, the high watermark the leader's raft
// index and each voter's log end offset its own; a voter that answers is
// caught up as of now, one that does not reports -1. The brokers that are
// not voters are the observers, at the high watermark (they follow etcd
// through watches). Only __cluster_metadata-0 is described
// (UNKNOWN_TOPIC_OR_PARTITION otherwise, as Kafka answers); it needs
// Describe on the cluster.

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/security"
)

const metadataTopic = "__cluster_metadata"

func (b *Broker) handleDescribeQuorum(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if err := b.clusterRefusal(r, security.OpDescribe); err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	if len(req.Topics) != 1 || req.Topics[0].Topic != metadataTopic || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		t := kmsg.NewDescribeQuorumResponseTopic()
		t.Topic = metadataTopic
		p := kmsg.NewDescribeQuorumResponseTopicPartition()
		p.ErrorCode = kerr.UnknownTopicOrPartition.Code
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp, nil
	}
	q, err := b.store.Quorum(ctx)
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	now := time.Now().UnixMilli()
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = q.LeaderID, int32(q.Term), q.CommitIndex
	voters := map[int32]bool{}
	for _, v := range q.Voters {
		voters[v.ID] = true
		rv := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rv.ReplicaID, rv.ReplicaDirectoryID, rv.LogEndOffset = v.ID, v.DirectoryID(), v.RaftIndex
		rv.LastFetchTimestamp, rv.LastCaughtUpTimestamp = -1, -1
		if v.Reachable {
			rv.LastFetchTimestamp, rv.LastCaughtUpTimestamp = now, now
		}
		p.CurrentVoters = append(p.CurrentVoters, rv)
		if host, port, ok := peerHostPort(v.PeerURL); ok {
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = v.ID
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = "CONTROLLER", host, port
			n.Listeners = append(n.Listeners, l)
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	for _, br := range brokers {
		if voters[br.ID] {
			continue
		}
		ro := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		ro.ReplicaID, ro.LogEndOffset = br.ID, q.CommitIndex
		ro.LastFetchTimestamp, ro.LastCaughtUpTimestamp = now, now
		p.Observers = append(p.Observers, ro)
	}
	t := kmsg.NewDescribeQuorumResponseTopic()
	t.Topic = metadataTopic
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp, nil
}

// peerHostPort splits an etcd peer URL (http://host:port).
func peerHostPort(u string) (string, uint16, bool) {
	pu, err := url.Parse(u)
	if err != nil {
		return "", 0, false
	}
	host, port, err := net.SplitHostPort(pu.Host)
	if err != nil {
		return "", 0, false
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, false
	}
	return host, uint16(n), true
}
