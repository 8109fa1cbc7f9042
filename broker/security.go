package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/security"
)

// Listener security: TLS on SSL and SASL_SSL listeners (security.TLS),
// SASL on SASL_PLAINTEXT and SASL_SSL ones (security.SASL; the exchange
// per connection is in sasl.go) and the principal of each connection. The
// dialer of connections to the other brokers is in peer_dial.go.

// tlsHandshakeTimeout bounds a TLS handshake on an accepted connection:
// a peer that connects and sends nothing holds no goroutine longer.
const tlsHandshakeTimeout = 10 * time.Second

// listenerSecurity is what a listener's security protocol needs.
type listenerSecurity struct {
	protocol string
	tls      *security.TLS  // SSL, SASL_SSL
	sasl     *security.SASL // SASL_PLAINTEXT, SASL_SSL
	reauth   time.Duration  // connections.max.reauth.ms of the listener; 0: sessions never end
}

// saslConn is a new connection's SASL state; nil when the listener has no
// SASL.
func (s *listenerSecurity) saslConn() *saslConn {
	if s == nil || s.sasl == nil {
		return nil
	}
	return &saslConn{sasl: s.sasl, lifetime: s.reauth}
}

// listenerSecurity loads a listener's TLS and SASL settings.
func (b *Broker) listenerSecurity(ln config.Listener) (*listenerSecurity, error) {
	sec := &listenerSecurity{protocol: ln.Protocol}
	if ln.Protocol == "SSL" || ln.Protocol == "SASL_SSL" {
		get := func(key string) string { return b.props.ListenerString(ln.Name, key) }
		t, err := security.NewTLS(security.TLSConfigFrom(get), b.log.With("listener", ln.Name))
		if err != nil {
			return nil, fmt.Errorf("broker: listener %s: %w", ln.Name, err)
		}
		sec.tls = t
	}
	if ln.Protocol == "SASL_PLAINTEXT" || ln.Protocol == "SASL_SSL" {
		jaas := func(mech string) string { return b.props.MechanismString(ln.Name, mech, "sasl.jaas.config") }
		s, err := security.NewSASL(security.SASLConfig{
			Mechanisms: strings.Split(b.props.ListenerString(ln.Name, "sasl.enabled.mechanisms"), ","),
			JAAS:       jaas,
			Prop:       func(mech, key string) string { return b.props.MechanismString(ln.Name, mech, key) },
			Scram:      scramStore{b},
			Tokens:     b.saslTokens(),
			// Kafka's system property (internal/config reads it from
			// KAFKA_OPTS too).
			AllowedURLs: b.props.List(security.AllowedURLsProperty),
			Log:         b.log.With("listener", ln.Name),
		})
		if err != nil {
			return nil, fmt.Errorf("broker: listener %s: %w", ln.Name, err)
		}
		sec.sasl = s
		if ms, err := strconv.ParseInt(b.props.ListenerString(ln.Name, "connections.max.reauth.ms"), 10, 64); err == nil && ms > 0 {
			sec.reauth = time.Duration(ms) * time.Millisecond
		}
	}
	return sec, nil
}

// saslTokens is what SCRAM authenticates delegation tokens with; nil
// (none authenticates) without delegation.token.secret.key.
func (b *Broker) saslTokens() security.TokenStore {
	if !b.tokensEnabled() {
		return nil
	}
	return tokenStore{b}
}

// scramStore reads SCRAM credentials from the users' entity configs in
// etcd, where AlterUserScramCredentials writes them.
type scramStore struct{ b *Broker }

func (s scramStore) ScramCredential(ctx context.Context, user, mechanism string) (security.ScramCredential, bool, error) {
	cfg, err := s.b.store.EntityConfig(ctx, controller.EntityUsers, user)
	if err != nil {
		return security.ScramCredential{}, false, err
	}
	v, ok := cfg[mechanism]
	if !ok {
		return security.ScramCredential{}, false, nil
	}
	c, err := security.ParseScramCredential(v)
	if err != nil {
		return c, false, fmt.Errorf("user %q: %w", user, err)
	}
	return c, true, nil
}

// secureConn runs the TLS handshake of an accepted connection on a TLS
// listener and returns the connection to serve and its principal. A
// failed handshake (garbage, an untrusted or expired client certificate)
// closes the connection with a log line naming the peer, as Kafka logs a
// failed authentication.
func (b *Broker) secureConn(ctx context.Context, c net.Conn, t *security.TLS, listener string) (net.Conn, string, error) {
	if t == nil {
		return c, security.Anonymous, nil
	}
	tc := tls.Server(c, t.ServerConfig())
	hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		// A peer that closes before sending a byte (a port probe, a load
		// balancer's health check, samsa's liveness probe) did not try.
		if !errors.Is(err, io.EOF) {
			b.log.Info("failed authentication: TLS handshake failed", "remote", c.RemoteAddr().String(), "listener", listener, "err", err)
		}
		return nil, "", err
	}
	p, err := t.Principal(tc.ConnectionState())
	if err != nil {
		b.log.Info("failed authentication: no principal for the client certificate", "remote", c.RemoteAddr().String(), "listener", listener, "err", err)
		return nil, "", err
	}
	return tc, p, nil
}
