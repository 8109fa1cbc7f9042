package security

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OAUTHBEARER (RFC 7628, KIP-255, KIP-768) as Kafka's OAuthBearerSaslServer
// serves it. The client's one message is
//
//	n,[a=<authzid>],\x01auth=Bearer <token>\x01[<key>=<value>\x01]...\x01
//
// and the token is a JWT checked by one of two validators:
//
//   - Kafka's default, OAuthBearerUnsecuredValidatorCallbackHandler: an
//     unsecured JWS (alg "none", no signature) whose options come from the
//     listener's oauthbearer JAAS config (unsecuredValidatorPrincipalClaimName,
//     unsecuredValidatorScopeClaimName, unsecuredValidatorRequiredScope,
//     unsecuredValidatorAllowableClockSkewMs);
//   - with sasl.server.callback.handler.class naming Kafka's
//     OAuthBearerValidatorCallbackHandler: a signed JWT (RS*, PS*, ES*)
//     verified with a key of the JWKS at sasl.oauthbearer.jwks.endpoint.url
//     (jwks.go), with sasl.oauthbearer.expected.audience and
//     .expected.issuer, the principal from sasl.oauthbearer.sub.claim.name.
//
// A token refused gets Kafka's server challenge, {"status":"invalid_token"}
// ("insufficient_scope" with the scope wanted), and the client's %x01
// answer gets SASL_AUTHENTICATION_FAILED with that challenge as the
// message: why the token was refused is logged, never told. The token's
// exp bounds the session (KIP-368), whatever connections.max.reauth.ms is.

// OAuthBearer is the mechanism's name.
const OAuthBearer = "OAUTHBEARER"

// The server callback handler classes that select the JWKS validator
// (the second is the name Kafka 3.1 to 3.x documented).
var securedValidatorClasses = []string{
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
	"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
}

// ExpiringExchange is an exchange whose credential expires (OAUTHBEARER's
// token): once done, the session ends no later than Expires.
type ExpiringExchange interface {
	Expires() time.Time
}

// oauthToken is a validated token.
type oauthToken struct {
	principal string
	expires   time.Time
}

// tokenError is a token refused; scope is the scope the validator wanted
// when that was what was missing.
type tokenError struct{ msg, scope string }

func (e *tokenError) Error() string { return e.msg }

func badToken(format string, args ...any) error {
	return &tokenError{msg: fmt.Sprintf(format, args...)}
}

// tokenValidator checks a token as one of Kafka's validator callback
// handlers does.
type tokenValidator interface {
	validate(ctx context.Context, token string, now time.Time) (oauthToken, error)
}

// newOAuthValidator builds a listener's validator from its settings: prop
// looks up a broker property with the listener's and mechanism's prefix
// overrides, jaas is the mechanism's JAAS config.
func newOAuthValidator(prop func(key string) string, jaas string, opt oauthOptions) (tokenValidator, error) {
	if jaas == "" {
		return nil, errors.New("sasl.enabled.mechanisms has OAUTHBEARER but the listener has no sasl.jaas.config for it (listener.name.<listener>.oauthbearer.sasl.jaas.config)")
	}
	opts, err := ParseJAAS(jaas)
	if err != nil {
		return nil, fmt.Errorf("oauthbearer.sasl.jaas.config: %w", err)
	}
	class := strings.TrimSpace(prop("sasl.server.callback.handler.class"))
	switch {
	case class == "" || class == "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler":
		return newUnsecuredValidator(opts)
	case slices.Contains(securedValidatorClasses, class):
		return newJWKSValidator(prop, opt)
	}
	return nil, fmt.Errorf("sasl.server.callback.handler.class %s: samsa runs no Java callback handler (OAUTHBEARER validates with Kafka's unsecured validator, or with %s)", class, securedValidatorClasses[0])
}

// oauthServer is the server side of one OAUTHBEARER exchange.
type oauthServer struct {
	v      tokenValidator
	now    func() time.Time
	errMsg string // the challenge sent for a refused token
	token  oauthToken
}

func (o *oauthServer) Next(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if len(msg) == 1 && msg[0] == 0x01 && o.errMsg != "" {
		return nil, false, authFailed("%s", o.errMsg)
	}
	o.errMsg = ""
	token, authzid, err := parseOAuthInitial(msg)
	if err != nil {
		// Kafka's SaslException: the reason stays in the log.
		return nil, false, &saslError{err: err}
	}
	t, err := o.v.validate(ctx, token, o.now())
	if err != nil {
		var te *tokenError
		if !errors.As(err, &te) {
			return nil, false, err
		}
		status := `{"status":"invalid_token"}`
		if te.scope != "" {
			status = fmt.Sprintf(`{"status":"insufficient_scope", "scope":"%s"}`, te.scope)
		}
		o.errMsg = status
		return []byte(status), false, &challengeError{reason: te.msg}
	}
	if authzid != "" && authzid != t.principal {
		return nil, false, authFailed("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", authzid, t.principal)
	}
	o.token = t
	return nil, true, nil
}

func (o *oauthServer) Principal() string  { return UserPrefix + o.token.principal }
func (o *oauthServer) Expires() time.Time { return o.token.expires }

// challengeError is a refused token whose challenge the exchange returns
// with it: the exchange goes on (the client answers %x01), and the reason
// is for the log only.
type challengeError struct{ reason string }

func (e *challengeError) Error() string { return "token refused: " + e.reason }

// IsChallenge reports whether err is a refused token that the server
// answers with a challenge rather than a failure.
func IsChallenge(err error) bool {
	var ce *challengeError
	return errors.As(err, &ce)
}

// saslError is Kafka's SaslException: a failed authentication whose
// reason is not told to the client, which gets "Authentication failed
// during authentication due to invalid credentials with SASL mechanism
// <mechanism>".
type saslError struct{ err error }

func (e *saslError) Error() string { return e.err.Error() }
func (e *saslError) Unwrap() error { return ErrAuthentication }

// IsSaslException reports whether err is a failure whose reason the
// client is not told.
func IsSaslException(err error) bool {
	var se *saslError
	return errors.As(err, &se)
}

// The client's first message, as OAuthBearerClientInitialResponse's
// pattern has it (its SASLNAME class, %x01-7F but "=" and ",", spelt out:
// RE2 has no class subtraction).
var (
	oauthInitialRE = regexp.MustCompile("^n,(?:a=((?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$")
	oauthAuthRE    = regexp.MustCompile(`^(\w+) +([-_~+/.a-zA-Z0-9]+=*)$`)
	oauthKeyRE     = regexp.MustCompile(`^[A-Za-z]+$`)
)

// parseOAuthInitial reads the client's first message as Kafka's
// OAuthBearerClientInitialResponse does: the token and the authzid; the
// extensions are accepted (Kafka's validators accept them all).
func parseOAuthInitial(msg []byte) (token, authzid string, err error) {
	m := oauthInitialRE.FindSubmatch(msg)
	if m == nil {
		return "", "", kafkaText("Invalid OAUTHBEARER client first message")
	}
	authzid = string(m[1])
	var auth string
	var found bool
	for _, kv := range bytes.Split(m[2], []byte{0x01}) {
		if len(kv) == 0 {
			continue
		}
		k, v, _ := strings.Cut(string(kv), "=")
		if !oauthKeyRE.MatchString(k) {
			return "", "", kafkaText("Extension name " + k + " is invalid")
		}
		if k == "auth" {
			auth, found = v, true
		}
	}
	if !found {
		return "", "", kafkaText("Invalid OAUTHBEARER client first message: 'auth' not specified")
	}
	am := oauthAuthRE.FindStringSubmatch(auth)
	if am == nil {
		return "", "", kafkaText("Invalid OAUTHBEARER client first message: invalid 'auth' format")
	}
	if !strings.EqualFold(am[1], "bearer") {
		return "", "", kafkaText("Invalid scheme in OAUTHBEARER client first message: " + am[1])
	}
	return am[2], authzid, nil
}

// kafkaText is an error whose text is Kafka's own message.
type kafkaText string

func (k kafkaText) Error() string { return string(k) }

// b64url decodes a JWT section: base64url, padded or not.
func b64url(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// jsonObject decodes a JWT section's JSON object, numbers as json.Number.
func jsonObject(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, errors.New("malformed JSON")
	}
	return m, nil
}

// claimSeconds is a NumericDate claim: ok false when absent, an error
// when not a number.
func claimSeconds(claims map[string]any, name string) (float64, bool, error) {
	v, ok := claims[name]
	if !ok || v == nil {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, false, badToken("The '%s' claim was not of type Number: %T", name, v)
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false, badToken("The '%s' claim is not a number: %s", name, n)
	}
	return f, true, nil
}

func secondsToTime(s float64) time.Time {
	return time.UnixMilli(int64(math.Round(s * 1000)))
}

// unsecuredValidator is Kafka's OAuthBearerUnsecuredValidatorCallbackHandler.
type unsecuredValidator struct {
	principalClaim, scopeClaim string
	requiredScope              []string
	skew                       time.Duration
}

var scopeItemRE = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E]+$`)

func newUnsecuredValidator(opts map[string]string) (*unsecuredValidator, error) {
	v := &unsecuredValidator{principalClaim: "sub", scopeClaim: "scope"}
	if s := strings.TrimSpace(opts["unsecuredValidatorPrincipalClaimName"]); s != "" {
		v.principalClaim = s
	}
	if s := strings.TrimSpace(opts["unsecuredValidatorScopeClaimName"]); s != "" {
		v.scopeClaim = s
	}
	for _, s := range strings.Split(strings.TrimSpace(opts["unsecuredValidatorRequiredScope"]), " ") {
		if s == "" {
			continue
		}
		if !scopeItemRE.MatchString(s) {
			return nil, fmt.Errorf("unsecuredValidatorRequiredScope: Invalid scope value: %s", s)
		}
		v.requiredScope = append(v.requiredScope, s)
	}
	if s := strings.TrimSpace(opts["unsecuredValidatorAllowableClockSkewMs"]); s != "" {
		ms, err := strconv.Atoi(s)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("unsecuredValidatorAllowableClockSkewMs: Allowable clock skew millis must not be negative: %s", s)
		}
		v.skew = time.Duration(ms) * time.Millisecond
	}
	return v, nil
}

func (v *unsecuredValidator) validate(_ context.Context, token string, now time.Time) (oauthToken, error) {
	if strings.Contains(token, "..") {
		return oauthToken{}, badToken("Malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return oauthToken{}, badToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	var sections [2]map[string]any
	for i := range sections {
		b, err := b64url(parts[i])
		if err != nil {
			return oauthToken{}, badToken("malformed Base64 URL encoded value")
		}
		if sections[i], err = jsonObject(b); err != nil {
			return oauthToken{}, badToken("%v", err)
		}
	}
	header, claims := sections[0], sections[1]
	if alg, _ := header["alg"].(string); alg != "none" {
		return oauthToken{}, badToken("Unsecured JWS must have 'none' for an algorithm")
	}
	if parts[2] != "" {
		return oauthToken{}, badToken("Unsecured JWS must not contain a digital signature")
	}
	scope, err := unsecuredScope(claims, v.scopeClaim)
	if err != nil {
		return oauthToken{}, err
	}
	exp, ok, err := claimSeconds(claims, "exp")
	if err != nil {
		return oauthToken{}, err
	}
	if !ok {
		return oauthToken{}, badToken("No expiration time in JWT")
	}
	principal, isString := claims[v.principalClaim].(string)
	if claims[v.principalClaim] != nil && !isString {
		return oauthToken{}, badToken("The '%s' claim was not of type String", v.principalClaim)
	}
	if strings.TrimSpace(principal) == "" {
		return oauthToken{}, badToken("No principal name in JWT claim: %s", v.principalClaim)
	}
	iat, hasIat, err := claimSeconds(claims, "iat")
	if err != nil {
		return oauthToken{}, err
	}
	nowMs, skewMs := now.UnixMilli(), v.skew.Milliseconds()
	if hasIat && 1000*iat > float64(nowMs+skewMs) {
		return oauthToken{}, badToken("The Issued At value (%f seconds) was after the indicated time (%d ms) plus allowable clock skew (%d ms)", iat, nowMs, skewMs)
	}
	if float64(nowMs-skewMs) >= 1000*exp {
		return oauthToken{}, badToken("The indicated time (%d ms) minus allowable clock skew (%d ms) was on or after the Expiration Time value (%f seconds)", nowMs, skewMs, exp)
	}
	if hasIat && exp <= iat {
		return oauthToken{}, badToken("The Expiration Time time (%f seconds) was not after the Issued At time (%f seconds)", exp, iat)
	}
	for _, want := range v.requiredScope {
		if !slices.Contains(scope, want) {
			return oauthToken{}, &tokenError{
				msg:   fmt.Sprintf("The provided scope (%v) was missing a required scope (%s).  All required scope elements: %v", scope, want, v.requiredScope),
				scope: "[" + strings.Join(v.requiredScope, ", ") + "]",
			}
		}
	}
	return oauthToken{principal: principal, expires: secondsToTime(exp)}, nil
}

// unsecuredScope is the scope claim as OAuthBearerUnsecuredJws reads it:
// a string is one scope (trimmed), a list its non-blank elements.
func unsecuredScope(claims map[string]any, name string) ([]string, error) {
	switch v := claims[name].(type) {
	case nil:
		return nil, nil
	case string:
		if s := strings.TrimSpace(v); s != "" {
			return []string{s}, nil
		}
		return nil, nil
	case []any:
		var out []string
		for _, e := range v {
			s := strings.TrimSpace(fmt.Sprint(e))
			if s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out, nil
	default:
		return nil, badToken("The '%s' claim was not of type List: %T", name, v)
	}
}
