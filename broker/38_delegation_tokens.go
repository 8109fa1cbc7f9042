package broker

// CreateDelegationToken v1-3 (key 38), RenewDelegationToken v1-2 (39),
// ExpireDelegationToken v1-2 (40) and DescribeDelegationToken v1-3 (41):
// KIP-48 delegation tokens, with KIP-373's owner (v3: a token created for
// another principal, which needs CreateTokens on that User). v2:
// flexible. v3 of Create and Describe: the token requester.
//
// Tokens are kept in etcd (controller/tokens.go), so every broker
// authenticates them; their HMAC, the password a client authenticates
// with (SCRAM with tokenauth=true), is derived from the id with
// delegation.token.secret.key on each broker, as in Kafka. Without the key
// the APIs answer DELEGATION_TOKEN_AUTH_DISABLED. As KafkaApis, none is
// served on a PLAINTEXT listener, to an anonymous SSL client, or on a
// connection that authenticated with a token:
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED. The checks come in Kafka's order
// (the broker's, then its controller's). Expired tokens are removed by
// the controller every delegation.token.expiry.check.interval.ms.

import (
	"context"
	"crypto/hmac"
	"errors"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/security"
)

// errorTimestamp is the expiry Kafka answers with a refused Renew or
// Expire (DelegationTokenManager.ErrorTimestamp).
const errorTimestamp = -1

// tokensEnabled: delegation.token.secret.key is set.
func (b *Broker) tokensEnabled() bool { return b.settings.DelegationTokenSecret != "" }

// tokenRequestsAllowed is KafkaApis' allowTokenRequests.
func (b *Broker) tokenRequestsAllowed(r *request) bool {
	proto := b.listenerProtocol(r.listener)
	return !r.tokenAuth && proto != "PLAINTEXT" && (proto != "SSL" || r.principal != security.Anonymous)
}

// listenerProtocol is the security protocol of the listener named name.
func (b *Broker) listenerProtocol(name string) string {
	for i, n := range b.lnNames {
		if n == name && b.lnSec[i] != nil {
			return b.lnSec[i].protocol
		}
	}
	return "PLAINTEXT"
}

// splitPrincipal splits "Type:name"; a principal without a type is a User.
func splitPrincipal(p string) (typ, name string) {
	if t, n, ok := strings.Cut(p, ":"); ok {
		return t, n
	}
	return "User", p
}

func (b *Broker) tokenHMAC(id string) []byte {
	return security.TokenHMAC(b.settings.DelegationTokenSecret, id)
}

// tokenByHMAC finds the token whose HMAC is mac.
func (b *Broker) tokenByHMAC(ctx context.Context, mac []byte) (controller.DelegationToken, bool, error) {
	tokens, err := b.store.DelegationTokens(ctx)
	if err != nil {
		return controller.DelegationToken{}, false, err
	}
	for _, t := range tokens {
		if hmac.Equal(b.tokenHMAC(t.TokenID), mac) {
			return t, true, nil
		}
	}
	return controller.DelegationToken{}, false, nil
}

func nowMillis() int64 { return time.Now().UnixMilli() }

// addMillis is now+d, saturating as Kafka's sum does.
func addMillis(now, d int64) int64 {
	if d > 0 && now > (1<<63-1)-d {
		return 1<<63 - 1
	}
	return now + d
}

func (b *Broker) handleCreateDelegationToken(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.CreateDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	owner := r.principal
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		typ := "User"
		if req.OwnerPrincipalType != nil {
			typ = *req.OwnerPrincipalType
		}
		owner = typ + ":" + *req.OwnerPrincipalName
	}
	resp.PrincipalType, resp.PrincipalName = splitPrincipal(owner)
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = splitPrincipal(r.principal)
	refuse := func(err *kerr.Error) (kmsg.Response, error) {
		resp.ErrorCode = err.Code
		resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = errorTimestamp, errorTimestamp, errorTimestamp
		return resp, nil
	}
	var renewers []string
	for _, rn := range req.Renewers {
		renewers = append(renewers, rn.PrincipalType+":"+rn.PrincipalName)
	}
	switch {
	case !b.tokenRequestsAllowed(r):
		return refuse(kerr.DelegationTokenRequestNotAllowed)
	case owner != r.principal && !b.allowed(r, security.OpCreateTokens, security.ResourceUser, owner):
		return refuse(kerr.DelegationTokenAuthorizationFailed)
	}
	for _, rn := range req.Renewers {
		if rn.PrincipalType != "User" {
			return refuse(kerr.InvalidPrincipalType)
		}
	}
	// The controller's checks: its errors leave the timestamps at 0.
	if !b.tokensEnabled() {
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	}
	now := nowMillis()
	lifetime := b.settings.DelegationTokenMaxLifetime.Milliseconds()
	if req.MaxLifetimeMillis > 0 {
		lifetime = min(lifetime, req.MaxLifetimeMillis)
	}
	maxTS := addMillis(now, lifetime)
	t := controller.DelegationToken{
		TokenID:         controller.EncodeUUID(controller.NewUUID()),
		Owner:           owner,
		TokenRequester:  r.principal,
		Renewers:        renewers,
		IssueTimestamp:  now,
		MaxTimestamp:    maxTS,
		ExpiryTimestamp: min(maxTS, addMillis(now, b.settings.DelegationTokenExpiry.Milliseconds())),
	}
	if err := b.store.CreateDelegationToken(ctx, t); err != nil {
		b.log.Warn("CreateDelegationToken", "err", err)
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = t.IssueTimestamp, t.ExpiryTimestamp, t.MaxTimestamp
	resp.TokenID, resp.HMAC = t.TokenID, b.tokenHMAC(t.TokenID)
	return resp, nil
}

// mayRenew: the owner and the renewers may renew and expire a token
// (Kafka's allowedToRenew; not the requester).
func mayRenew(t *controller.DelegationToken, principal string) bool {
	if t.Owner == principal {
		return true
	}
	for _, r := range t.Renewers {
		if r == principal {
			return true
		}
	}
	return false
}

// changeToken runs a Renew or an Expire (change) on the token whose HMAC
// is mac, and returns the error code and the new expiry.
func (b *Broker) changeToken(ctx context.Context, r *request, mac []byte, change func(t *controller.DelegationToken, now int64) (*controller.DelegationToken, int64, *kerr.Error)) (int16, int64) {
	if !b.tokenRequestsAllowed(r) {
		return kerr.DelegationTokenRequestNotAllowed.Code, errorTimestamp
	}
	if !b.tokensEnabled() {
		return kerr.DelegationTokenAuthDisabled.Code, 0
	}
	t, found, err := b.tokenByHMAC(ctx, mac)
	if err != nil {
		return errCode(err), 0
	}
	if !found {
		return kerr.DelegationTokenNotFound.Code, 0
	}
	var expiry int64
	var refused *kerr.Error
	err = b.store.UpdateDelegationToken(ctx, t.TokenID, func(cur *controller.DelegationToken) (*controller.DelegationToken, error) {
		refused = nil // a retry after a lost race decides afresh
		if cur == nil {
			refused = kerr.DelegationTokenNotFound
			return nil, refused
		}
		next, exp, kerrV := change(cur, nowMillis())
		if kerrV != nil {
			refused = kerrV
			return nil, kerrV
		}
		expiry = exp
		return next, nil
	})
	switch {
	case refused != nil:
		return refused.Code, 0
	case err != nil:
		b.log.Warn("delegation token change failed", "token", t.TokenID, "err", err)
		return kerr.UnknownServerError.Code, 0
	}
	return 0, expiry
}

func (b *Broker) handleRenewDelegationToken(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.RenewDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	resp.ErrorCode, resp.ExpiryTimestamp = b.changeToken(ctx, r, req.HMAC, func(t *controller.DelegationToken, now int64) (*controller.DelegationToken, int64, *kerr.Error) {
		if t.Expired(now) {
			return nil, 0, kerr.DelegationTokenExpired
		}
		if !mayRenew(t, r.principal) {
			return nil, 0, kerr.DelegationTokenOwnerMismatch
		}
		period := b.settings.DelegationTokenExpiry.Milliseconds()
		if req.RenewTimeMillis > 0 {
			period = min(period, req.RenewTimeMillis)
		}
		t.ExpiryTimestamp = min(t.MaxTimestamp, addMillis(now, period))
		return t, t.ExpiryTimestamp, nil
	})
	return resp, nil
}

func (b *Broker) handleExpireDelegationToken(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ExpireDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	resp.ErrorCode, resp.ExpiryTimestamp = b.changeToken(ctx, r, req.HMAC, func(t *controller.DelegationToken, now int64) (*controller.DelegationToken, int64, *kerr.Error) {
		switch {
		case !mayRenew(t, r.principal):
			return nil, 0, kerr.DelegationTokenOwnerMismatch
		case req.ExpiryPeriodMillis < 0: // at once: the token goes
			return nil, now, nil
		case t.Expired(now):
			return nil, 0, kerr.DelegationTokenExpired
		}
		t.ExpiryTimestamp = min(t.MaxTimestamp, addMillis(now, req.ExpiryPeriodMillis))
		return t, t.ExpiryTimestamp, nil
	})
	return resp, nil
}

// ownerOrRenewer is Kafka's TokenInformation.ownerOrRenewer: the owner,
// the requester or a renewer.
func ownerOrRenewer(t *controller.DelegationToken, principal string) bool {
	return t.TokenRequester == principal || mayRenew(t, principal)
}

func (b *Broker) handleDescribeDelegationToken(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	switch {
	case !b.tokenRequestsAllowed(r):
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return resp, nil
	case !b.tokensEnabled():
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	case req.Owners != nil && len(req.Owners) == 0: // an empty list asks for none
		return resp, nil
	}
	tokens, err := b.store.DelegationTokens(ctx)
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	// DelegationTokenManager.filterToken: the tokens of the owners asked
	// for (all when null) that the requester owns, renews or requested,
	// or may describe (Describe on the token, DescribeTokens on its owner).
	eligible := func(t *controller.DelegationToken) bool {
		if req.Owners != nil {
			asked := false
			for _, o := range req.Owners {
				asked = asked || ownerOrRenewer(t, o.PrincipalType+":"+o.PrincipalName)
			}
			if !asked {
				return false
			}
		}
		return ownerOrRenewer(t, r.principal) ||
			b.allowed(r, security.OpDescribe, security.ResourceDelegationToken, t.TokenID) ||
			b.allowed(r, security.OpDescribeTokens, security.ResourceUser, t.Owner)
	}
	for i := range tokens {
		t := &tokens[i]
		if !eligible(t) {
			continue
		}
		d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		d.PrincipalType, d.PrincipalName = splitPrincipal(t.Owner)
		d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = splitPrincipal(t.TokenRequester)
		d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.IssueTimestamp, t.ExpiryTimestamp, t.MaxTimestamp
		d.TokenID, d.HMAC = t.TokenID, b.tokenHMAC(t.TokenID)
		for _, rn := range t.Renewers {
			dr := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
			dr.PrincipalType, dr.PrincipalName = splitPrincipal(rn)
			d.Renewers = append(d.Renewers, dr)
		}
		resp.TokenDetails = append(resp.TokenDetails, d)
	}
	return resp, nil
}

// tokenStore is the brokers' delegation tokens for SCRAM's tokenauth
// extension, read from etcd at each authentication.
type tokenStore struct{ b *Broker }

func (s tokenStore) DelegationToken(ctx context.Context, id string) (security.Token, bool, error) {
	t, found, err := s.b.store.DelegationToken(ctx, id)
	if err != nil || !found {
		return security.Token{}, false, err
	}
	_, owner := splitPrincipal(t.Owner)
	return security.Token{Owner: owner, HMAC: s.b.tokenHMAC(t.TokenID), Expires: time.UnixMilli(t.ExpiryTimestamp)}, true, nil
}

// tokenExpiryLoop removes expired delegation tokens every
// delegation.token.expiry.check.interval.ms, on the controller, as Kafka's
// controller sweeps them.
func (b *Broker) tokenExpiryLoop(ctx context.Context) {
	t := time.NewTicker(max(b.settings.DelegationTokenCheck, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if b.store.ControllerDone() == nil {
			continue
		}
		removed, err := b.store.RemoveExpiredDelegationTokens(ctx, nowMillis())
		if err != nil && !errors.Is(err, context.Canceled) {
			b.log.Warn("removing expired delegation tokens", "err", err)
		}
		for _, tok := range removed {
			b.log.Info("delegation token expired", "token", tok.TokenID, "owner", tok.Owner)
		}
	}
}
