package security

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
)

// SASL on a listener (SASL_PLAINTEXT, SASL_SSL): the mechanisms of
// sasl.enabled.mechanisms, each a server exchange that ends with the
// connection's principal.
//
//	PLAIN          users from the listener's JAAS config, as Kafka's
//	               PlainLoginModule reads them: user_<name>="<password>"
//	SCRAM-SHA-256  credentials from a ScramStore (etcd)
//	SCRAM-SHA-512
//	OAUTHBEARER    a JWT, unsecured or checked against a JWKS (oauth.go)

// ErrAuthentication is a failed authentication; its message is the one
// the client is told (SaslAuthenticate's error message).
var ErrAuthentication = errors.New("authentication failed")

type authError struct{ msg string }

func (e *authError) Error() string { return e.msg }
func (e *authError) Unwrap() error { return ErrAuthentication }

func authFailed(format string, args ...any) error {
	return &authError{msg: fmt.Sprintf(format, args...)}
}

// AuthMessage is what a client is told of a failed authentication: the
// exchange's message, or a generic one for the broker's own errors.
func AuthMessage(err error) string {
	var ae *authError
	if errors.As(err, &ae) {
		return ae.msg
	}
	return "Authentication failed"
}

// Exchange is the server's side of one SASL authentication.
type Exchange interface {
	// Next takes the client's token and returns the server's answer;
	// done once the client is authenticated. An error wrapping
	// ErrAuthentication is a failed authentication, whose message is
	// for the client unless IsSaslException; an error for which
	// IsChallenge holds comes with an answer to send, the exchange going
	// on; another error is the broker's (etcd unreachable).
	Next(ctx context.Context, token []byte) (resp []byte, done bool, err error)
	// Principal is the authenticated principal ("User:name").
	Principal() string
}

// SASLConfig is one listener's SASL settings.
type SASLConfig struct {
	Mechanisms []string // sasl.enabled.mechanisms
	// JAAS returns the listener's sasl.jaas.config for a mechanism
	// (listener.name.<l>.<mechanism lower-cased>.sasl.jaas.config).
	JAAS func(mechanism string) string
	// Prop looks up a broker property for a mechanism, with Kafka's
	// listener.name.<l>.<mechanism>. and listener.name.<l>. overrides
	// (OAUTHBEARER's sasl.oauthbearer.* settings).
	Prop  func(mechanism, key string) string
	Scram ScramStore
	// Tokens finds delegation tokens for SCRAM's tokenauth extension;
	// nil when delegation.token.secret.key is not set.
	Tokens TokenStore
	Log    *slog.Logger
	// HTTP fetches OAUTHBEARER's JWKS; nil: a client with a 10 s timeout.
	HTTP *http.Client
	// AllowedURLs are the URLs sasl.oauthbearer.jwks.endpoint.url may
	// name (Kafka 4's org.apache.kafka.sasl.oauthbearer.allowed.urls):
	// none when empty.
	AllowedURLs []string
}

// SASL serves one listener's mechanisms.
type SASL struct {
	mechanisms []string
	plainUsers map[string]string // PLAIN: user → password
	scram      ScramStore
	tokens     TokenStore
	oauth      tokenValidator
}

// NewSASL checks a listener's SASL settings: every mechanism is one samsa
// serves, and PLAIN has a JAAS config.
func NewSASL(c SASLConfig) (*SASL, error) {
	s := &SASL{scram: c.Scram, tokens: c.Tokens}
	for _, m := range c.Mechanisms {
		m = strings.ToUpper(strings.TrimSpace(m))
		switch m {
		case "PLAIN":
			jaas := c.JAAS(m)
			if jaas == "" {
				return nil, errors.New("sasl.enabled.mechanisms has PLAIN but the listener has no sasl.jaas.config for it (listener.name.<listener>.plain.sasl.jaas.config)")
			}
			opts, err := ParseJAAS(jaas)
			if err != nil {
				return nil, fmt.Errorf("plain.sasl.jaas.config: %w", err)
			}
			s.plainUsers = map[string]string{}
			for k, v := range opts {
				if u, ok := strings.CutPrefix(k, "user_"); ok {
					s.plainUsers[u] = v
				}
			}
		case ScramSHA256, ScramSHA512:
			if c.Scram == nil {
				return nil, fmt.Errorf("%s: no credential store", m)
			}
		case OAuthBearer:
			prop := func(key string) string { return c.Prop(m, key) }
			v, err := newOAuthValidator(prop, c.JAAS(m), oauthOptions{log: c.Log, client: c.HTTP, allowedURLs: c.AllowedURLs})
			if err != nil {
				return nil, fmt.Errorf("OAUTHBEARER: %w", err)
			}
			s.oauth = v
		default:
			return nil, fmt.Errorf("sasl.enabled.mechanisms: samsa does not serve %s (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)", m)
		}
		if !slices.Contains(s.mechanisms, m) {
			s.mechanisms = append(s.mechanisms, m)
		}
	}
	if len(s.mechanisms) == 0 {
		return nil, errors.New("sasl.enabled.mechanisms is empty")
	}
	return s, nil
}

// Mechanisms are the enabled mechanisms, as SaslHandshake lists them.
func (s *SASL) Mechanisms() []string { return slices.Clone(s.mechanisms) }

// Start begins an exchange of mechanism; false when it is not enabled.
func (s *SASL) Start(mechanism string) (Exchange, bool) {
	if !slices.Contains(s.mechanisms, mechanism) {
		return nil, false
	}
	switch mechanism {
	case "PLAIN":
		return &plainServer{users: s.plainUsers}, true
	case ScramSHA256, ScramSHA512:
		h, _ := scramHash(mechanism)
		return &scramServer{mechanism: mechanism, h: h, store: s.scram, tokens: s.tokens}, true
	case OAuthBearer:
		return &oauthServer{v: s.oauth, now: time.Now}, true
	}
	return nil, false
}

// plainServer is PLAIN (RFC 4616): one message, authzid NUL user NUL
// password.
type plainServer struct {
	users map[string]string
	user  string
}

func (p *plainServer) Next(_ context.Context, token []byte) ([]byte, bool, error) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return nil, false, authFailed("Invalid SASL/PLAIN response: expected 3 tokens")
	}
	authzid, user, pass := string(parts[0]), string(parts[1]), string(parts[2])
	if user == "" {
		return nil, false, authFailed("Authentication failed: username not specified")
	}
	if pass == "" {
		return nil, false, authFailed("Authentication failed: password not specified")
	}
	if authzid != "" && authzid != user {
		return nil, false, authFailed("Authentication failed: Client requested an authorization id that is different from username")
	}
	want, ok := p.users[user]
	if !ok || subtle.ConstantTimeCompare([]byte(want), []byte(pass)) != 1 {
		return nil, false, authFailed("Authentication failed: Invalid username or password")
	}
	p.user = user
	return nil, true, nil
}

func (p *plainServer) Principal() string { return UserPrefix + p.user }

// ParseJAAS reads the options of a sasl.jaas.config value:
//
//	<LoginModule class> <required|requisite|sufficient|optional> key="value" key=value ... ;
//
// Values may be quoted (with \" and \\ escapes) or bare.
func ParseJAAS(v string) (map[string]string, error) {
	v = strings.TrimSpace(v)
	if !strings.HasSuffix(v, ";") {
		return nil, errors.New("JAAS config must end with ';'")
	}
	v = strings.TrimSpace(strings.TrimSuffix(v, ";"))
	fields := strings.Fields(v)
	if len(fields) < 2 {
		return nil, errors.New("JAAS config: expected <LoginModule> <flag> options;")
	}
	switch strings.ToLower(fields[1]) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return nil, fmt.Errorf("JAAS config: invalid control flag %q", fields[1])
	}
	rest := strings.TrimSpace(v[strings.Index(v, fields[1])+len(fields[1]):])
	out := map[string]string{}
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("JAAS config: expected key=value at %q", rest)
		}
		key := strings.TrimSpace(rest[:eq])
		rest = strings.TrimLeft(rest[eq+1:], " \t\n")
		var val string
		if strings.HasPrefix(rest, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				b.WriteByte(rest[i])
			}
			if i >= len(rest) {
				return nil, fmt.Errorf("JAAS config: unterminated quote in the value of %s", key)
			}
			val, rest = b.String(), rest[i+1:]
		} else {
			end := strings.IndexAny(rest, " \t\n")
			if end < 0 {
				end = len(rest)
			}
			val, rest = rest[:end], rest[end:]
		}
		out[key] = val
		rest = strings.TrimSpace(rest)
	}
	return out, nil
}
