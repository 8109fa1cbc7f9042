package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTokenRequest creates a token for the requester (v3: for owner when
// set).
func createTokenRequest(v int16, owner string) *kmsg.CreateDelegationTokenRequest {
	req := kmsg.NewPtrCreateDelegationTokenRequest()
	req.Version, req.MaxLifetimeMillis = v, -1
	if owner != "" {
		req.OwnerPrincipalType, req.OwnerPrincipalName = kmsg.StringPtr("User"), kmsg.StringPtr(owner)
	}
	return req
}

// Delegation tokens: without delegation.token.secret.key every API is
// DELEGATION_TOKEN_AUTH_DISABLED; with it, none is served on a PLAINTEXT
// listener (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); over SASL a user
// creates a token for herself at v1-v3 and describes it, and a token for
// another user needs CreateTokens on that user
// (DELEGATION_TOKEN_AUTHORIZATION_FAILED).
func TestDelegationTokensHandler(t *testing.T) {
	off := startHandlerTest(t, nil)
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.CreateDelegationTokenResponse).ErrorCode }
	wantCode(t, "no secret key", code(off.as("admin", createTokenRequest(3, ""))), kerr.DelegationTokenAuthDisabled)

	b := startHandlerBroker(t, map[string]string{"delegation.token.secret.key": "handler-test-secret"})
	wantCode(t, "on PLAINTEXT", code(b.do(createTokenRequest(3, ""))), kerr.DelegationTokenRequestNotAllowed)
	for v := int16(1); v <= 3; v++ {
		resp := b.as("alice", createTokenRequest(v, "")).(*kmsg.CreateDelegationTokenResponse)
		wantCode(t, "alice's own", resp.ErrorCode, nil)
		if resp.TokenID == "" || len(resp.HMAC) == 0 || resp.PrincipalName != "alice" {
			t.Errorf("v%d: token %q for %s:%s, %d bytes of HMAC", v, resp.TokenID, resp.PrincipalType, resp.PrincipalName, len(resp.HMAC))
		}
	}
	describe := kmsg.NewPtrDescribeDelegationTokenRequest()
	describe.Version = 3
	dr := b.as("alice", describe).(*kmsg.DescribeDelegationTokenResponse)
	wantCode(t, "describe as alice", dr.ErrorCode, nil)
	if len(dr.TokenDetails) != 3 {
		t.Errorf("alice describes %d tokens, want her 3", len(dr.TokenDetails))
	}
	wantCode(t, "for bob as alice", code(b.as("alice", createTokenRequest(3, "bob"))), kerr.DelegationTokenAuthorizationFailed)
}
