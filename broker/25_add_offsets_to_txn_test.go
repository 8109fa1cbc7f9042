package broker_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// addOffsetsRequest adds group's offsets partition to txnID's transaction.
func addOffsetsRequest(v int16, txnID string, pid int64, epoch int16, group string) *kmsg.AddOffsetsToTxnRequest {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = v, txnID, pid, epoch, group
	return req
}

// AddOffsetsToTxn v0-v4 adds a group's offsets to the transaction; another
// producer id is INVALID_PRODUCER_ID_MAPPING, a fenced epoch
// PRODUCER_FENCED (v2+) or INVALID_PRODUCER_EPOCH (v0-v1); alice (no ACLs)
// gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func TestAddOffsetsToTxnHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	b.waitGroupCoordinator("g")
	pid, epoch := b.initTxn("tx")
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }
	for v := int16(0); v <= 4; v++ {
		wantCode(t, fmt.Sprintf("v%d", v), code(b.do(addOffsetsRequest(v, "tx", pid, epoch, "g"))), nil)
	}
	wantCode(t, "another producer id", code(b.do(addOffsetsRequest(3, "tx", pid+1000, epoch, "g"))), kerr.InvalidProducerIDMapping)
	wantCode(t, "as alice", code(b.as("alice", addOffsetsRequest(3, "tx", pid, epoch, "g"))), kerr.TransactionalIDAuthorizationFailed)

	fpid, fepoch := b.initTxn("fenced")
	b.initTxn("fenced")
	wantCode(t, "v2 fenced", code(b.do(addOffsetsRequest(2, "fenced", fpid, fepoch, "g"))), kerr.ProducerFenced)
	wantCode(t, "v1 fenced", code(b.do(addOffsetsRequest(1, "fenced", fpid, fepoch, "g"))), kerr.InvalidProducerEpoch)
}
