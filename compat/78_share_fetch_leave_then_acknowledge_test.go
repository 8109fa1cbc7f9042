package compat

// A share consumer's close may leave the group (ShareGroupHeartbeat at
// epoch -1) before its last acknowledgements reach the partition leader
// (librdkafka sends both at once): the leader still has the member's share
// session and the records it holds, so the final ShareAcknowledge is
// applied and answered per partition, as Kafka 4.4 does.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// shareLeaveThenAck runs the sequence against a one-broker cluster at addr
// and returns what each step answered.
func shareLeaveThenAck(t *testing.T, addr string) []string {
	e := newShareEnv(t, addr)
	const topic, group, member = "share-leave-ack", "share-leave-ack-group", "leaving-member"
	e.createTopic(t, topic, 1)
	setGroupConfig(t, e.cl, group, "share.auto.offset.reset", "earliest")
	produceShare(t, e.cl, topic, 10, 10)
	id := topicID(t, e.adm, topic)
	var out []string
	note := noter(t, &out)

	coord := admDialCoordinator(t, addr, group)
	shareJoinAssigned(t, coord, group, member, topic)

	leader := admDial(t, addr)
	var acquired []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	sessionEpoch := int32(0)
	testutil.Eventually(t, 60*time.Second, func() error {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), sessionEpoch
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 500, 1, 1<<20, 100, 100
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID = id
		ft.Partitions = append(ft.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		req.Topics = append(req.Topics, ft)
		resp := leader.roundTrip(req, 1).(*kmsg.ShareFetchResponse)
		if resp.ErrorCode != 0 {
			return fmt.Errorf("ShareFetch: error %d", resp.ErrorCode)
		}
		sessionEpoch++
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				acquired = append(acquired, rp.AcquiredRecords...)
			}
		}
		if n := acquiredCount(acquired); n < 10 {
			return fmt.Errorf("%d records acquired", n)
		}
		return nil
	})
	note("acquired %d records", acquiredCount(acquired))

	hb := shareHeartbeat(coord, group, member, topic, -1)
	note("leave: error %d, epoch %d", hb.ErrorCode, hb.MemberEpoch)

	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), -1
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = id
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for _, a := range acquired {
		ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
			FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, AcknowledgeTypes: []int8{1}})
	}
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	ar := leader.roundTrip(ack, 1).(*kmsg.ShareAcknowledgeResponse)
	var parts []string
	for _, rt := range ar.Topics {
		for _, rp := range rt.Partitions {
			parts = append(parts, fmt.Sprintf("%d:%d", rp.Partition, rp.ErrorCode))
		}
	}
	slices.Sort(parts)
	note("final ShareAcknowledge after the leave: error %d, partitions %v", ar.ErrorCode, parts)

	lag := int64(-2)
	testutil.Eventually(t, 30*time.Second, func() error {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = group
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(testCtx(t, 10*time.Second), e.cl)
		if err != nil || len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
			return fmt.Errorf("DescribeShareGroupOffsets: %v %+v", err, resp)
		}
		lag = resp.Groups[0].Topics[0].Partitions[0].Lag
		if lag != 0 {
			return fmt.Errorf("lag %d", lag)
		}
		return nil
	})
	note("lag %d", lag)
	return out
}

// noter returns note, which logs a line of what a step of a scenario
// answered and keeps it in *out, to be compared with Kafka's.
func noter(t *testing.T, out *[]string) func(format string, args ...any) {
	return func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		*out = append(*out, line)
	}
}

// sameAnswers fails t unless got, what a scenario's steps answered on who
// (samsa, or Kafka 4.4 in the test that checks the record), is kafka,
// what Apache Kafka 4.4 answered when recorded.
func sameAnswers(t *testing.T, who string, got, kafka []string) {
	t.Helper()
	if !slices.Equal(got, kafka) {
		t.Errorf("%s answered\n\t%s\nKafka 4.4 answered when recorded\n\t%s", who, strings.Join(got, "\n\t"), strings.Join(kafka, "\n\t"))
	}
}

func acquiredCount(as []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord) int64 {
	var n int64
	for _, a := range as {
		n += a.LastOffset - a.FirstOffset + 1
	}
	return n
}

// shareLeaveThenAckKafka is what Apache Kafka 4.4 answered
// (TestShareLeaveThenAcknowledgeKafkaReference).
var shareLeaveThenAckKafka = []string{
	"acquired 10 records",
	"leave: error 0, epoch -1",
	"final ShareAcknowledge after the leave: error 0, partitions [0:0]",
	"lag 0",
}

func TestShareLeaveThenAcknowledge(t *testing.T) {
	sameAnswers(t, "samsa", shareLeaveThenAck(t, shareBrokerAddr(t)), shareLeaveThenAckKafka)
}

func shareBrokerAddr(t *testing.T) string {
	t.Helper()
	addr, _ := shareBroker(t, nil)
	return addr
}

func TestShareLeaveThenAcknowledgeKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	sameAnswers(t, "Kafka 4.4", shareLeaveThenAck(t, kb.Addr), shareLeaveThenAckKafka)
}

// shareHeartbeat sends one ShareGroupHeartbeat v1 of member at epoch
// (0 joins, subscribing to topic; -1 leaves) on coord.
func shareHeartbeat(coord *admConn, group, member, topic string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{topic}
	}
	return coord.roundTrip(req, 1).(*kmsg.ShareGroupHeartbeatResponse)
}

// shareJoinAssigned joins member to the share group and heartbeats until
// it is assigned one partition (the coordinator may still be loading).
func shareJoinAssigned(t *testing.T, coord *admConn, group, member, topic string) {
	t.Helper()
	var hb *kmsg.ShareGroupHeartbeatResponse
	testutil.Eventually(t, 60*time.Second, func() error {
		if hb = shareHeartbeat(coord, group, member, topic, 0); hb.ErrorCode != 0 {
			return fmt.Errorf("join: error %d %s", hb.ErrorCode, derefStr(hb.ErrorMessage))
		}
		return nil
	})
	epoch := hb.MemberEpoch
	testutil.Eventually(t, 60*time.Second, func() error {
		if hb.Assignment != nil && len(hb.Assignment.TopicPartitions) == 1 {
			return nil
		}
		hb = shareHeartbeat(coord, group, member, topic, epoch)
		if hb.ErrorCode != 0 {
			return fmt.Errorf("heartbeat: error %d", hb.ErrorCode)
		}
		epoch = hb.MemberEpoch
		return fmt.Errorf("not assigned yet")
	})
}
