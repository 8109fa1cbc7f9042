package compat

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestLeaderHintsOnNotLeader: a Produce or Fetch sent to a broker that does
// not lead the partition is answered NOT_LEADER_OR_FOLLOWER with the
// leader, its epoch and its endpoint (KIP-951), which the Java client
// follows without asking Metadata again.
func TestLeaderHintsOnNotLeader(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, 2, map[string]string{"auto.create.topics.enable": "false"})
	adm := newAdmin(t, c.Node(1).Addr())
	topic := admTopic("hint")
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)
	var leader, epoch int32 = -1, -1
	testutil.Eventually(t, 20*time.Second, func() error {
		md, err := adm.Metadata(testCtx(t, 5*time.Second), topic)
		if err != nil {
			return err
		}
		p := md.Topics[topic].Partitions[0]
		if p.Leader < 0 {
			return fmt.Errorf("no leader yet")
		}
		leader, epoch = p.Leader, p.LeaderEpoch
		return nil
	})
	other := c.Node(3 - leader)
	leaderNode := c.Node(leader)
	_, port, err := net.SplitHostPort(leaderNode.Addr())
	if err != nil {
		t.Fatal(err)
	}
	wp, _ := strconv.Atoi(port)
	wantPort := int32(wp)
	conn := admDial(t, other.Addr())
	// The follower learns the leader from etcd's watch: wait until it
	// reports the same one.
	testutil.Eventually(t, 20*time.Second, func() error {
		req := admProduceReq(topic, 0, -1, rawBatch(-1, -1, -1, time.Now().UnixMilli(), []byte("v")))
		req.Topics[0].TopicID = id
		resp := conn.roundTrip(req, 13).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.NotLeaderForPartition.Code {
			return fmt.Errorf("produce to the follower: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		if p.CurrentLeader.LeaderID != leader || p.CurrentLeader.LeaderEpoch != epoch {
			return fmt.Errorf("produce: current leader %+v, want %d epoch %d", p.CurrentLeader, leader, epoch)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != leader || resp.Brokers[0].Port != wantPort {
			return fmt.Errorf("produce: node endpoints %+v, want broker %d on port %d", resp.Brokers, leader, wantPort)
		}
		return nil
	})
	for _, v := range []int16{12, 16, 18} {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = -1, 0, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := conn.roundTrip(req, v).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != leader || p.CurrentLeader.LeaderEpoch != epoch {
			t.Errorf("Fetch v%d from the follower: %v, current leader %+v, want %d epoch %d", v, kerr.ErrorForCode(p.ErrorCode), p.CurrentLeader, leader, epoch)
		}
		wantBrokers := 0
		if v >= 16 {
			wantBrokers = 1
		}
		if len(resp.Brokers) != wantBrokers || wantBrokers == 1 && (resp.Brokers[0].NodeID != leader || resp.Brokers[0].Port != wantPort) {
			t.Errorf("Fetch v%d: node endpoints %+v, want %d (broker %d port %d)", v, resp.Brokers, wantBrokers, leader, wantPort)
		}
	}
}
