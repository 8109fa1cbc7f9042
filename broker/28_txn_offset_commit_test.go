package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnOffsetCommitRequest commits offset of topic's partition 0 for group
// in txnID's transaction, outside any generation.
func txnOffsetCommitRequest(v int16, txnID string, pid int64, epoch int16, group, topic string, offset int64) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = v, txnID, pid, epoch, group
	req.Generation = -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TxnOffsetCommit holds a transaction's offsets pending: a stable
// OffsetFetch is UNSTABLE_OFFSET_COMMIT and a plain one the offset from
// before, until the commit's marker makes it the group's offset; alice (no
// ACLs) gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func TestTxnOffsetCommitHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"to": 1})
	b.waitGroupCoordinator("g")
	pid, epoch := b.initTxn("tx")
	wantCode(t, "AddOffsetsToTxn", b.do(addOffsetsRequest(3, "tx", pid, epoch, "g")).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, nil)
	code := func(resp kmsg.Response) int16 {
		return resp.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	for _, v := range []int16{0, 2, 3} {
		wantCode(t, fmt.Sprintf("v%d", v), code(b.do(txnOffsetCommitRequest(v, "tx", pid, epoch, "g", "to", 5))), nil)
	}
	wantCode(t, "as alice", code(b.as("alice", txnOffsetCommitRequest(3, "tx", pid, epoch, "g", "to", 9))), kerr.TransactionalIDAuthorizationFailed)

	stable := offsetFetchRequest(9, "g", "to", [16]byte{})
	stable.RequireStable = true
	if _, c := fetchedOffset(b.do(stable)); c != kerr.UnstableOffsetCommit.Code {
		t.Errorf("stable fetch while pending: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(c))
	}
	if off, _ := fetchedOffset(b.do(offsetFetchRequest(9, "g", "to", [16]byte{}))); off != -1 {
		t.Errorf("fetch while pending: offset %d, want -1", off)
	}

	wantCode(t, "EndTxn commit", b.do(endTxnRequest(3, "tx", pid, epoch, true)).(*kmsg.EndTxnResponse).ErrorCode, nil)
	b.eventually(func() error {
		off, c := fetchedOffset(b.do(stable))
		if c != 0 || off != 5 {
			return fmt.Errorf("offset %d, %v; want 5", off, kerr.ErrorForCode(c))
		}
		return nil
	})
}
