package compat

// Bad input to the share group APIs gets Kafka's error codes: a fenced
// member epoch, an unknown member, a first heartbeat without topics, a
// share session that does not exist or is at another epoch, and an
// acknowledgement of a record the member has not acquired.

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

func TestShareGroupErrors(t *testing.T) {
	addr, _ := shareBroker(t, nil)
	adm := newAdmin(t, addr)
	const topic, group = "share-bad", "sb"
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)
	c := admDial(t, addr)
	heartbeat := func(member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
		return c.roundTrip(req, 1).(*kmsg.ShareGroupHeartbeatResponse)
	}
	// FindCoordinator makes __consumer_offsets; the first heartbeat
	// waits for its coordinator to load.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group}
	c.roundTrip(fc, 4)
	var joined *kmsg.ShareGroupHeartbeatResponse
	testutil.Eventually(t, 60*time.Second, func() error {
		joined = heartbeat("m1", 0, []string{topic})
		if joined.ErrorCode != 0 || joined.MemberEpoch <= 0 || joined.Assignment == nil {
			return fmt.Errorf("join: error %d epoch %d assignment %v", joined.ErrorCode, joined.MemberEpoch, joined.Assignment)
		}
		return nil
	})
	for _, tc := range []struct {
		what   string
		member string
		epoch  int32
		topics []string
		want   *kerr.Error
	}{
		{"a greater epoch", "m1", joined.MemberEpoch + 5, nil, kerr.FencedMemberEpoch},
		{"an unknown member", "nobody", 3, nil, kerr.UnknownMemberID},
		{"a join without topics", "m2", 0, nil, kerr.InvalidRequest},
		{"an epoch below -1", "m1", -2, nil, kerr.InvalidRequest},
		{"no member id", "", 1, nil, kerr.InvalidRequest},
	} {
		if got := heartbeat(tc.member, tc.epoch, tc.topics).ErrorCode; got != tc.want.Code {
			t.Errorf("heartbeat with %s: error %d, want %s", tc.what, got, tc.want.Message)
		}
	}

	fetch := func(epoch int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr("m1"), epoch
		req.MaxRecords, req.BatchSize = 10, 10
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID = id
		fp := kmsg.NewShareFetchRequestTopicPartition()
		fp.AcknowledgementBatches = acks
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		return c.roundTrip(req, 1).(*kmsg.ShareFetchResponse)
	}
	if got := fetch(4).ErrorCode; got != kerr.ShareSessionNotFound.Code {
		t.Errorf("ShareFetch at epoch 4 without a session: error %d, want SHARE_SESSION_NOT_FOUND", got)
	}
	if got := fetch(0).ErrorCode; got != 0 {
		t.Fatalf("ShareFetch opening a session: error %d", got)
	}
	if got := fetch(7).ErrorCode; got != kerr.InvalidShareSessionEpoch.Code {
		t.Errorf("ShareFetch at epoch 7, the session expecting 1: error %d, want INVALID_SHARE_SESSION_EPOCH", got)
	}
	resp := fetch(1, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}})
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ShareFetch with an acknowledgement: %+v", resp)
	}
	if got := resp.Topics[0].Partitions[0].AcknowledgeErrorCode; got != kerr.InvalidRecordState.Code {
		t.Errorf("acknowledging offset 0, never acquired: error %d, want INVALID_RECORD_STATE", got)
	}

	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr("m1"), 0
	if got := c.roundTrip(ack, 1).(*kmsg.ShareAcknowledgeResponse).ErrorCode; got != kerr.InvalidShareSessionEpoch.Code {
		t.Errorf("ShareAcknowledge at epoch 0: error %d, want INVALID_SHARE_SESSION_EPOCH", got)
	}
	ack.ShareSessionEpoch = 2
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = id
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ap.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 5, LastOffset: 3, AcknowledgeTypes: []int8{1}}}
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	ar := c.roundTrip(ack, 1).(*kmsg.ShareAcknowledgeResponse)
	if ar.ErrorCode != 0 || len(ar.Topics) != 1 || len(ar.Topics[0].Partitions) != 1 || ar.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("ShareAcknowledge of offsets 5-3: %+v, want INVALID_REQUEST on the partition", ar)
	}
}
