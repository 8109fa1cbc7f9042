package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/security"
)

// Listener security: TLS on SSL listeners (security.TLS), the principal of
// each connection, and the dialer replication uses to reach the leaders
// through inter.broker.listener.name.

// tlsHandshakeTimeout bounds a TLS handshake on an accepted connection:
// a peer that connects and sends nothing holds no goroutine longer.
const tlsHandshakeTimeout = 10 * time.Second

// listenerTLS loads the TLS settings of a listener whose security
// protocol needs them; nil for PLAINTEXT.
func (b *Broker) listenerTLS(ln config.Listener) (*security.TLS, error) {
	if ln.Protocol != "SSL" && ln.Protocol != "SASL_SSL" {
		return nil, nil
	}
	get := func(key string) string { return b.props.ListenerString(ln.Name, key) }
	t, err := security.NewTLS(security.TLSConfigFrom(get), b.log.With("listener", ln.Name))
	if err != nil {
		return nil, fmt.Errorf("broker: listener %s: %w", ln.Name, err)
	}
	return t, nil
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

// interBrokerDial wraps dial (nil: a plain dialer) with the security of
// the inter-broker listener: TLS with that listener's settings on SSL.
func (b *Broker) interBrokerDial(listener string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var t *security.TLS
	for i, name := range b.lnNames {
		if name == listener {
			t = b.lnTLS[i]
		}
	}
	if t == nil {
		return dial
	}
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(addr)
		tc := tls.Client(c, t.ClientConfig(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("TLS to %s: %w", addr, err)
		}
		return tc, nil
	}
}
