package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/security"
)

// peerDialer is how this broker connects to the others: every
// broker-to-broker connection (the follower fetchers, the coordinators'
// peer connections of txn.go) is dialled by the one peerDialer built when
// the listeners are bound, so each speaks the protocol of
// inter.broker.listener.name as Kafka's brokers do:
//
//	PLAINTEXT       TCP
//	SSL             TLS with that listener's ssl.* settings (its keystore is
//	                the client certificate when the others require one)
//	SASL_PLAINTEXT  SASL with sasl.mechanism.inter.broker.protocol
//	SASL_SSL        TLS, then SASL
//
// SASL's credentials come from the listener's JAAS config for the
// mechanism: PLAIN's and SCRAM's username and password, OAUTHBEARER's
// login (security.OAuthLogin). When the server gives the session a
// lifetime (KIP-368), the connection authenticates again before its next
// request once most of it has passed, as Kafka's clients do.
type peerDialer struct {
	nodeID int32
	dial   func(ctx context.Context, network, addr string) (net.Conn, error) // the transport
	tls    *security.TLS                                                     // nil: no TLS
	mech   sasl.Mechanism                                                    // nil: no SASL
}

// reauthFraction is how much of a session passes before the connection
// authenticates again (Kafka's clients pick 85-95%).
const reauthFraction = 0.85

// newPeerDialer builds the dialer from the inter-broker listener's
// security; a SASL mechanism samsa cannot log in with, or a login
// misconfigured, stops the broker as it stops Kafka's.
func (b *Broker) newPeerDialer() (*peerDialer, error) {
	d := &peerDialer{nodeID: b.nodeID, dial: b.dial}
	if d.dial == nil {
		d.dial = (&net.Dialer{}).DialContext
	}
	listener := b.interBrokerListener()
	i := slices.Index(b.lnNames, listener)
	if i < 0 {
		return d, nil
	}
	sec := b.lnSec[i]
	d.tls = sec.tls
	if sec.sasl == nil {
		return d, nil
	}
	mech := b.settings.SaslInterBrokerMechanism
	fail := func(err error) (*peerDialer, error) {
		return nil, fmt.Errorf("broker: inter-broker listener %s, sasl.mechanism.inter.broker.protocol %s: %w", listener, mech, err)
	}
	if !slices.Contains(sec.sasl.Mechanisms(), mech) {
		return fail(fmt.Errorf("not among the listener's sasl.enabled.mechanisms %v", sec.sasl.Mechanisms()))
	}
	jaas := b.props.MechanismString(listener, mech, "sasl.jaas.config")
	switch mech {
	case "PLAIN", security.ScramSHA256, security.ScramSHA512:
		opts, err := security.ParseJAAS(jaas)
		if err != nil {
			return fail(err)
		}
		user, pass := opts["username"], opts["password"]
		switch mech {
		case "PLAIN":
			d.mech = plain.Auth{User: user, Pass: pass}.AsMechanism()
		case security.ScramSHA256:
			d.mech = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
		default:
			d.mech = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
		}
	case security.OAuthBearer:
		login, err := security.NewOAuthLogin(security.OAuthLoginConfig{
			JAAS:        jaas,
			Prop:        func(key string) string { return b.props.MechanismString(listener, mech, key) },
			AllowedURLs: b.props.List(security.AllowedURLsProperty),
		})
		if err != nil {
			return fail(err)
		}
		d.mech = oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
			tok, err := login.Token(ctx)
			return oauth.Auth{Token: tok, Extensions: login.Extensions()}, err
		})
	default:
		return fail(fmt.Errorf("samsa logs in with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"))
	}
	return d, nil
}

// DialContext connects to the broker at addr through the inter-broker
// listener's security.
func (d *peerDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if d.tls != nil {
		host, _, _ := net.SplitHostPort(addr)
		tc := tls.Client(c, d.tls.ClientConfig(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("TLS to %s: %w", addr, err)
		}
		c = tc
	}
	if d.mech == nil {
		return c, nil
	}
	s := &peerSession{Conn: c, d: d}
	if err := s.authenticate(ctx, true); err != nil {
		c.Close()
		return nil, fmt.Errorf("SASL %s to %s: %w", d.mech.Name(), addr, err)
	}
	return s, nil
}

// peerSession is a SASL-authenticated connection to another broker. Its
// users send one request at a time and read its whole answer before the
// next, so a Write starts a request: the moment to authenticate again.
type peerSession struct {
	net.Conn
	d        *peerDialer
	reauthAt time.Time // zero: the session never ends
}

func (s *peerSession) authenticate(ctx context.Context, first bool) error {
	start := time.Now()
	lifetime, err := saslClient(ctx, s.Conn, s.d.mech, fmt.Sprintf("samsa-broker-%d", s.d.nodeID), first)
	if err != nil {
		return err
	}
	s.reauthAt = time.Time{}
	if lifetime > 0 {
		s.reauthAt = start.Add(time.Duration(float64(lifetime) * reauthFraction))
	}
	return nil
}

// Write authenticates again first when the session is near its end; the
// caller's deadline bounds the exchange.
func (s *peerSession) Write(p []byte) (int, error) {
	if !s.reauthAt.IsZero() && time.Now().After(s.reauthAt) {
		if err := s.authenticate(context.Background(), false); err != nil {
			return 0, fmt.Errorf("SASL re-authentication: %w", err)
		}
	}
	return s.Conn.Write(p)
}
