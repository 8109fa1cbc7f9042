package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/samsa-io/samsa/protocol"
	"github.com/samsa-io/samsa/security"
)

// SASL on a connection, as Kafka's SaslServerAuthenticator runs it:
//
//	ApiVersions*  SaslHandshake(mechanism)  then
//	  v1: SaslAuthenticate(token)...        tokens in Kafka requests (KIP-152)
//	  v0: raw tokens                        size-prefixed, no request header
//
// Until the exchange ends a connection may send only ApiVersions and the
// SASL requests, each frame at most sasl.server.max.receive.size. Any
// other request, a SaslAuthenticate before the handshake or a mechanism
// not enabled ends the connection, after an answer where Kafka gives one;
// a failed authentication gets SASL_AUTHENTICATION_FAILED and a closed
// connection; each leaves a log line with the peer's address.

// saslConn is a connection's SASL state.
type saslConn struct {
	sasl *security.SASL
	ex   security.Exchange // after the handshake
	mech string
	raw  bool // handshake v0: the tokens come raw
	done bool // authenticated

	// KIP-368: with connections.max.reauth.ms a session lasts lifetime;
	// the client authenticates again on the same connection before it
	// ends, as the same principal, or the connection is closed.
	// An expiring credential (OAUTHBEARER's token) bounds the session
	// too, as Kafka's SaslServerAuthenticator bounds it: session is the
	// lifetime SaslAuthenticate tells, expires zero when sessions never end.
	lifetime time.Duration
	session  time.Duration
	expires  time.Time
	was      string // the principal before a re-authentication
}

// saslSession checks an authenticated connection's session before a
// request: a SaslHandshake starts a re-authentication (reauth true); any
// other request after the session expired closes the connection, as
// Kafka closes it.
func (b *Broker) saslSession(cs *connState, hdr protocol.Header) (reauth bool, err error) {
	s := cs.sasl
	if kmsg.Key(hdr.Key) == kmsg.SASLHandshake {
		s.ex, s.done, s.raw, s.was = nil, false, false, cs.principal
		return true, nil
	}
	if time.Now().After(s.expires) {
		b.log.Info("closing connection: SASL session expired (connections.max.reauth.ms)", "remote", cs.c.RemoteAddr().String(), "listener", cs.listener, "principal", cs.principal)
		return false, fmt.Errorf("%w: SASL session expired", errCloseConn)
	}
	return false, nil
}

// startSession sets the session's lifetime at the end of an exchange:
// connections.max.reauth.ms, the credential's expiry, or the sooner of
// the two; none, and the session never ends.
func (s *saslConn) startSession(now time.Time) {
	var credential time.Time
	if e, ok := s.ex.(security.ExpiringExchange); ok {
		credential = e.Expires()
	}
	switch {
	case credential.IsZero() && s.lifetime == 0:
		s.session, s.expires = 0, time.Time{}
		return
	case credential.IsZero():
		s.session = s.lifetime
	case s.lifetime == 0:
		s.session = credential.Sub(now)
	default:
		s.session = min(credential.Sub(now), s.lifetime)
	}
	s.session = max(s.session, 0)
	s.expires = now.Add(s.session)
}

// errAuthFailed closes a connection whose authentication failed.
var errAuthFailed = errors.New("broker: SASL authentication failed")

// serveSASL serves one frame of a connection not yet authenticated.
func (b *Broker) serveSASL(ctx context.Context, cs *connState, frame []byte) error {
	s := cs.sasl
	remote := cs.c.RemoteAddr().String()
	if s.raw {
		resp, err := b.saslStep(ctx, cs, frame)
		if err != nil {
			return err
		}
		out := binary.BigEndian.AppendUint32(cs.out[:0], uint32(len(resp)))
		cs.out = append(out, resp...)
		_, err = cs.c.Write(cs.out)
		return err
	}
	hdr, body, err := protocol.ParseHeader(frame)
	if err != nil {
		b.log.Info("failed authentication: not a Kafka request before SASL authentication", "remote", remote, "listener", cs.listener, "err", err)
		return fmt.Errorf("bad request header before SASL authentication: %w", err)
	}
	switch kmsg.Key(hdr.Key) {
	case kmsg.ApiVersions:
		r := &request{hdr: hdr, conn: cs.c, listener: cs.listener, principal: security.Anonymous}
		resp, err := b.dispatch(ctx, r, body)
		if err != nil {
			return err
		}
		return b.writeResponse(ctx, cs, r.hdr, resp)
	case kmsg.SASLHandshake, kmsg.SASLAuthenticate:
	default:
		b.log.Info("failed authentication: request before SASL authentication", "remote", remote, "listener", cs.listener, "api", kmsg.NameForKey(hdr.Key))
		return fmt.Errorf("%w: unexpected %s during SASL handshake", errCloseConn, kmsg.NameForKey(hdr.Key))
	}
	h := handlers[kmsg.Key(hdr.Key)]
	if hdr.Version < h.serveMin || hdr.Version > h.max {
		return fmt.Errorf("%w: %s v%d outside v%d-v%d", errCloseConn, kmsg.NameForKey(hdr.Key), hdr.Version, h.serveMin, h.max)
	}
	req, err := protocol.DecodeBody(hdr, body)
	if err != nil {
		return err
	}
	switch req := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = s.sasl.Mechanisms()
		if s.ex != nil {
			resp.ErrorCode = kerr.IllegalSaslState.Code
			b.writeResponse(ctx, cs, hdr, resp)
			b.log.Info("failed authentication: a second SaslHandshake", "remote", remote, "listener", cs.listener)
			return errAuthFailed
		}
		ex, ok := s.sasl.Start(req.Mechanism)
		if !ok {
			resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
			b.writeResponse(ctx, cs, hdr, resp)
			b.log.Info("failed authentication: SASL mechanism not enabled", "remote", remote, "listener", cs.listener, "mechanism", req.Mechanism)
			return errAuthFailed
		}
		s.ex, s.mech, s.raw = ex, req.Mechanism, hdr.Version == 0
		return b.writeResponse(ctx, cs, hdr, resp)
	case *kmsg.SASLAuthenticateRequest:
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		if s.ex == nil {
			resp.ErrorCode = kerr.IllegalSaslState.Code
			resp.ErrorMessage = kmsg.StringPtr("Unexpected SaslAuthenticate request before SaslHandshake")
			b.writeResponse(ctx, cs, hdr, resp)
			b.log.Info("failed authentication: SaslAuthenticate before SaslHandshake", "remote", remote, "listener", cs.listener)
			return errAuthFailed
		}
		tok, err := b.saslStep(ctx, cs, req.SASLAuthBytes)
		if err != nil {
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := security.AuthMessage(err)
			if security.IsSaslException(err) {
				// Kafka keeps a SaslException's reason from the client.
				what := "authentication"
				if s.was != "" {
					what = "re-authentication"
				}
				msg = fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", what, s.mech)
			}
			resp.ErrorMessage = kmsg.StringPtr(msg)
			b.writeResponse(ctx, cs, hdr, resp)
			return err
		}
		resp.SASLAuthBytes = tok
		if s.done && !s.expires.IsZero() {
			resp.SessionLifetimeMillis = s.session.Milliseconds()
		}
		return b.writeResponse(ctx, cs, hdr, resp)
	}
	return fmt.Errorf("%w: unexpected request during SASL handshake", errCloseConn)
}

// saslStep runs one token of the exchange; the error of a failed
// authentication wraps the exchange's, whose message is for the client.
func (b *Broker) saslStep(ctx context.Context, cs *connState, token []byte) ([]byte, error) {
	s := cs.sasl
	resp, done, err := s.ex.Next(ctx, token)
	if security.IsChallenge(err) {
		// OAUTHBEARER's refused token: the challenge goes to the client,
		// whose %x01 answer ends the exchange.
		b.log.Info("failed authentication", "remote", cs.c.RemoteAddr().String(), "listener", cs.listener, "mechanism", s.mech, "err", err)
		return resp, nil
	}
	if err != nil {
		b.log.Info("failed authentication", "remote", cs.c.RemoteAddr().String(), "listener", cs.listener, "mechanism", s.mech, "err", err)
		return nil, fmt.Errorf("%w: %w", errAuthFailed, err)
	}
	if done {
		p := s.ex.Principal()
		if s.was != "" && p != s.was {
			err := fmt.Errorf("re-authentication as %s on a connection of %s", p, s.was)
			b.log.Info("failed authentication", "remote", cs.c.RemoteAddr().String(), "listener", cs.listener, "mechanism", s.mech, "err", err)
			return nil, fmt.Errorf("%w: %w", errAuthFailed, err)
		}
		s.done, cs.principal = true, p
		te, ok := s.ex.(security.TokenExchange)
		cs.tokenAuth = ok && te.TokenAuthenticated()
		s.startSession(time.Now())
		b.log.Debug("authenticated", "remote", cs.c.RemoteAddr().String(), "listener", cs.listener, "mechanism", s.mech, "principal", cs.principal)
	}
	return resp, nil
}

// handleSaslHandshake answers a SaslHandshake that is not part of an
// authentication (on a listener without SASL, or after it): Kafka answers
// ILLEGAL_SASL_STATE.
func (b *Broker) handleSaslHandshake(_ context.Context, r *request) (kmsg.Response, error) {
	resp := r.body.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}

// handleSaslAuthenticate: as handleSaslHandshake.
func (b *Broker) handleSaslAuthenticate(_ context.Context, r *request) (kmsg.Response, error) {
	resp := r.body.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate request received after successful authentication")
	return resp, nil
}

// saslClient authenticates a connection this broker dialled to another
// (peer_dial.go) with SaslHandshake v1 and SaslAuthenticate v1, and
// returns the session's lifetime (zero: it never ends). first bounds the
// exchange by ctx's deadline (30 s without one); a re-authentication
// runs under the deadline the connection's user set for its request.
func saslClient(ctx context.Context, c net.Conn, m sasl.Mechanism, clientID string, first bool) (time.Duration, error) {
	if first {
		if dl, ok := ctx.Deadline(); ok {
			c.SetDeadline(dl)
		} else {
			c.SetDeadline(time.Now().Add(30 * time.Second))
		}
		defer c.SetDeadline(time.Time{})
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	var corr int32
	roundTrip := func(req kmsg.Request, resp kmsg.Response) error {
		corr++
		if _, err := c.Write(f.AppendRequest(nil, req, corr)); err != nil {
			return err
		}
		frame, err := protocol.ReadFrame(c, nil, 1<<20)
		if err != nil {
			return err
		}
		return protocol.DecodeResponse(frame, req, corr, resp)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, m.Name()
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	if err := roundTrip(hs, hsResp); err != nil {
		return 0, err
	}
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return 0, fmt.Errorf("SaslHandshake: %w", err)
	}
	sess, tok, err := m.Authenticate(ctx, c.RemoteAddr().String())
	if err != nil {
		return 0, err
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, tok
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		if err := roundTrip(req, resp); err != nil {
			return 0, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if resp.ErrorMessage != nil {
				return 0, fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
			}
			return 0, err
		}
		done, next, err := sess.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return 0, err
		}
		if done {
			return time.Duration(resp.SessionLifetimeMillis) * time.Millisecond, nil
		}
		tok = next
	}
}
