package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// upsertScram sets user's SCRAM-SHA-256 credential.
func upsertScram(user string, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = user, 1, iterations
	u.Salt, u.SaltedPassword = []byte("salt-salt-salt"), make([]byte, 32)
	return u
}

// Alter and DescribeUserScramCredentials: a credential set is described
// with its mechanism and iterations; an unknown user is RESOURCE_NOT_FOUND,
// too few iterations UNACCEPTABLE_CREDENTIAL, a user changed twice in one
// request DUPLICATE_RESOURCE; alice (no ACLs) gets
// CLUSTER_AUTHORIZATION_FAILED.
func TestUserScramCredentialsHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	alter := func(ups ...kmsg.AlterUserSCRAMCredentialsRequestUpsertion) *kmsg.AlterUserSCRAMCredentialsRequest {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Upsertions = ups
		return req
	}
	codes := func(resp kmsg.Response) map[string]int16 {
		got := map[string]int16{}
		for _, r := range resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			got[r.User] = r.ErrorCode
		}
		return got
	}
	wantCode(t, "upsert carol", codes(b.do(alter(upsertScram("carol", 8192))))["carol"], nil)
	wantCode(t, "4096 is the minimum", codes(b.do(alter(upsertScram("dave", 100))))["dave"], kerr.UnacceptableCredential)
	wantCode(t, "twice in a request", codes(b.do(alter(upsertScram("erin", 8192), upsertScram("erin", 9000))))["erin"], kerr.DuplicateResource)

	describe := func(users ...string) *kmsg.DescribeUserSCRAMCredentialsRequest {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, u := range users {
			d := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			d.Name = u
			req.Users = append(req.Users, d)
		}
		return req
	}
	dr := b.do(describe("carol", "nobody")).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	wantCode(t, "describe", dr.ErrorCode, nil)
	byUser := map[string]kmsg.DescribeUserSCRAMCredentialsResponseResult{}
	for _, r := range dr.Results {
		byUser[r.User] = r
	}
	carol := byUser["carol"]
	wantCode(t, "carol", carol.ErrorCode, nil)
	if len(carol.CredentialInfos) != 1 || carol.CredentialInfos[0].Mechanism != 1 || carol.CredentialInfos[0].Iterations != 8192 {
		t.Errorf("carol: %+v, want SCRAM-SHA-256 with 8192 iterations", carol.CredentialInfos)
	}
	wantCode(t, "nobody", byUser["nobody"].ErrorCode, kerr.ResourceNotFound)

	wantCode(t, "describe as alice", b.as("alice", describe("carol")).(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
	wantCode(t, "alter as alice", codes(b.as("alice", alter(upsertScram("alice", 8192))))["alice"], kerr.ClusterAuthorizationFailed)
}
