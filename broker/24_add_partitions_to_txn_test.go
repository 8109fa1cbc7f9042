package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// addPartitionsRequest adds partition 0 of each topic to txnID's
// transaction (the v0-v3 form, a client's).
func addPartitionsRequest(v int16, txnID string, pid int64, epoch int16, topics ...string) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = v, txnID, pid, epoch
	for _, topic := range topics {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// addToTxn adds partition 0 of topic to txnID's transaction.
func (b *handlerBroker) addToTxn(txnID string, pid int64, epoch int16, topic string) {
	b.t.Helper()
	wantCode(b.t, "adding "+topic+" to "+txnID, addCodes(b.do(addPartitionsRequest(3, txnID, pid, epoch, topic)))[topic], nil)
}

// beginTxn initializes txnID and adds partition 0 of topic to its
// transaction; it returns the producer id and epoch.
func (b *handlerBroker) beginTxn(txnID, topic string) (int64, int16) {
	b.t.Helper()
	pid, epoch := b.initTxn(txnID)
	b.addToTxn(txnID, pid, epoch, topic)
	return pid, epoch
}

// addCodes is each topic's partition 0 code in an AddPartitionsToTxn
// answer, by topic.
func addCodes(resp kmsg.Response) map[string]int16 {
	codes := map[string]int16{}
	for _, rt := range resp.(*kmsg.AddPartitionsToTxnResponse).Topics {
		for _, rp := range rt.Partitions {
			codes[rt.Topic] = rp.ErrorCode
		}
	}
	return codes
}

// AddPartitionsToTxn v0-v3 adds partitions (again is fine); a producer id
// that is not the transactional id's is INVALID_PRODUCER_ID_MAPPING, as is
// an id never initialized; a fenced epoch PRODUCER_FENCED from v2 and
// INVALID_PRODUCER_EPOCH before; a topic that does not exist fails the
// whole request (UNKNOWN_TOPIC_OR_PARTITION, the others
// OPERATION_NOT_ATTEMPTED); alice (no ACLs) gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED at v3 and, since v4 is for brokers,
// CLUSTER_AUTHORIZATION_FAILED there.
func TestAddPartitionsToTxnHandler(t *testing.T) {
	b, pid, epoch := startTxnBroker(t, "at", "at2")
	for v := int16(0); v <= 3; v++ {
		codes := addCodes(b.do(addPartitionsRequest(v, "tx", pid, epoch, "at", "at2")))
		wantCode(t, fmt.Sprintf("v%d at", v), codes["at"], nil)
		wantCode(t, fmt.Sprintf("v%d at2", v), codes["at2"], nil)
	}
	wantCode(t, "another producer id", addCodes(b.do(addPartitionsRequest(3, "tx", pid+1000, epoch, "at")))["at"], kerr.InvalidProducerIDMapping)
	b.waitTxnPartition("never")
	wantCode(t, "an id never initialized", addCodes(b.do(addPartitionsRequest(3, "never", pid, epoch, "at")))["at"], kerr.InvalidProducerIDMapping)
	codes := addCodes(b.do(addPartitionsRequest(3, "tx", pid, epoch, "at", "nope")))
	wantCode(t, "unknown topic", codes["nope"], kerr.UnknownTopicOrPartition)
	wantCode(t, "beside an unknown topic", codes["at"], kerr.OperationNotAttempted)

	// A second InitProducerId fences the first epoch.
	fpid, fepoch := b.initTxn("fenced")
	if p2, e2 := b.initTxn("fenced"); p2 != fpid || e2 != fepoch+1 {
		t.Fatalf("second init: producer %d epoch %d, want %d epoch %d", p2, e2, fpid, fepoch+1)
	}
	wantCode(t, "v2 fenced epoch", addCodes(b.do(addPartitionsRequest(2, "fenced", fpid, fepoch, "at")))["at"], kerr.ProducerFenced)
	wantCode(t, "v1 fenced epoch", addCodes(b.do(addPartitionsRequest(1, "fenced", fpid, fepoch, "at")))["at"], kerr.InvalidProducerEpoch)

	wantCode(t, "v3 as alice", addCodes(b.as("alice", addPartitionsRequest(3, "tx", pid, epoch, "at")))["at"], kerr.TransactionalIDAuthorizationFailed)
	v4 := kmsg.NewPtrAddPartitionsToTxnRequest()
	v4.Version = 4
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = "tx", pid, epoch, true
	v4.Transactions = append(v4.Transactions, tr)
	wantCode(t, "v4 as alice", b.as("alice", v4).(*kmsg.AddPartitionsToTxnResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
}
