package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterQuotaRequest sets user's producer_byte_rate (remove: deletes it).
func alterQuotaRequest(user string, rate float64, remove bool) *kmsg.AlterClientQuotasRequest {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Version = 1
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type, ent.Name = "user", kmsg.StringPtr(user)
	e.Entity = append(e.Entity, ent)
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = "producer_byte_rate", rate, remove
	e.Ops = append(e.Ops, op)
	req.Entries = append(req.Entries, e)
	return req
}

// describeQuotaRequest describes user's quotas.
func describeQuotaRequest(user string) *kmsg.DescribeClientQuotasRequest {
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Version = 1
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = "user", 0, kmsg.StringPtr(user)
	req.Components = append(req.Components, c)
	return req
}

// Alter and DescribeClientQuotas v1: a user's quota set is described and,
// removed, gone; an unknown quota key is INVALID_REQUEST; alice (no ACLs)
// gets CLUSTER_AUTHORIZATION_FAILED for both.
func TestClientQuotasHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	alterCode := func(resp kmsg.Response) int16 { return resp.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode }
	wantCode(t, "set", alterCode(b.do(alterQuotaRequest("carol", 1024, false))), nil)
	quotas := func() map[string]float64 {
		resp := b.do(describeQuotaRequest("carol")).(*kmsg.DescribeClientQuotasResponse)
		wantCode(t, "describe", resp.ErrorCode, nil)
		got := map[string]float64{}
		for _, e := range resp.Entries {
			for _, v := range e.Values {
				got[v.Key] = v.Value
			}
		}
		return got
	}
	if got := quotas(); len(got) != 1 || got["producer_byte_rate"] != 1024 {
		t.Errorf("carol's quotas %v, want producer_byte_rate 1024", got)
	}
	wantCode(t, "remove", alterCode(b.do(alterQuotaRequest("carol", 0, true))), nil)
	if got := quotas(); len(got) != 0 {
		t.Errorf("after the removal: %v", got)
	}
	bad := alterQuotaRequest("carol", 1, false)
	bad.Entries[0].Ops[0].Key = "no_such_quota"
	wantCode(t, "unknown key", alterCode(b.do(bad)), kerr.InvalidRequest)

	wantCode(t, "alter as alice", alterCode(b.as("alice", alterQuotaRequest("alice", 1e9, false))), kerr.ClusterAuthorizationFailed)
	wantCode(t, "describe as alice", b.as("alice", describeQuotaRequest("carol")).(*kmsg.DescribeClientQuotasResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
}
