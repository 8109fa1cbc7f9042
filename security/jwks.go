package security

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	_ "crypto/sha256" // the hashes of RS256, PS256, ES256
	_ "crypto/sha512" // and of the 384 and 512 variants
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The JWKS validator: Kafka's OAuthBearerValidatorCallbackHandler
// (BrokerJwtValidator over jose4j) with crypto/* directly. A token is a
// JWS compact serialization signed with RS256/384/512, PS256/384/512 or
// ES256/384/512 by a key of the JWKS (RFC 7517) at
// sasl.oauthbearer.jwks.endpoint.url; its claims must have exp and iat
// (nbf checked when present, each within sasl.oauthbearer.clock.skew.seconds),
// an aud among sasl.oauthbearer.expected.audience and the iss of
// sasl.oauthbearer.expected.issuer (Kafka 4.4 refuses to start without
// them unless sasl.oauthbearer.allow.unverified.audience / .issuer), and a
// non-blank sasl.oauthbearer.sub.claim.name, the principal's name.
//
// The key set: a file:// URL is read once, at start, as Kafka reads it.
// An http(s) one is fetched at start and again once it is
// sasl.oauthbearer.jwks.endpoint.refresh.ms old, when a token needs it;
// a token naming a kid the set lacks fetches it at once (key rotation),
// at most once a minute per kid, as RefreshingHttpsJwks does. A failed
// fetch keeps the keys it had. Fetches happen in the authenticating
// connection's goroutine, so the broker runs no goroutine of its own.

// oauthOptions are the broker's hooks for the JWKS validator.
type oauthOptions struct {
	log         *slog.Logger
	client      *http.Client
	allowedURLs []string
}

// AllowedURLsProperty is the Java system property with which Kafka 4
// allows OAUTHBEARER's URLs (CVE-2025-27817): a JWKS URL not in its list
// stops the broker, and the default allows none.
const AllowedURLsProperty = "org.apache.kafka.sasl.oauthbearer.allowed.urls"

// missingKidInterval is how soon a kid not found may fetch the set again
// (Kafka's MISSING_KEY_ID_CACHE_IN_FLIGHT_MS).
const missingKidInterval = time.Minute

type jwksValidator struct {
	keys       *jwkSet
	audiences  []string
	issuer     string
	subClaim   string
	scopeClaim string
	skew       time.Duration
}

func newJWKSValidator(prop func(string) string, opt oauthOptions) (*jwksValidator, error) {
	v := &jwksValidator{
		issuer:     strings.TrimSpace(prop("sasl.oauthbearer.expected.issuer")),
		subClaim:   strings.TrimSpace(prop("sasl.oauthbearer.sub.claim.name")),
		scopeClaim: strings.TrimSpace(prop("sasl.oauthbearer.scope.claim.name")),
	}
	for _, a := range strings.Split(prop("sasl.oauthbearer.expected.audience"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			v.audiences = append(v.audiences, a)
		}
	}
	if len(v.audiences) == 0 && prop("sasl.oauthbearer.allow.unverified.audience") != "true" {
		return nil, kafkaText(`The OAuth validator for the broker requires "sasl.oauthbearer.expected.audience" to be configured so that the token's audience ("aud") claim can be verified, but it was not set. Set "sasl.oauthbearer.expected.audience" to the audience(s) that identify this cluster, or set "sasl.oauthbearer.allow.unverified.audience" to true to accept tokens regardless of their audience.`)
	}
	if v.issuer == "" && prop("sasl.oauthbearer.allow.unverified.issuer") != "true" {
		return nil, kafkaText(`The OAuth validator for the broker requires "sasl.oauthbearer.expected.issuer" to be configured so that the token's issuer ("iss") claim can be verified, but it was not set. Set "sasl.oauthbearer.expected.issuer" to the issuer URL of the OAuth/OIDC provider that signs the tokens, or set "sasl.oauthbearer.allow.unverified.issuer" to true to accept tokens regardless of their issuer.`)
	}
	if v.subClaim == "" {
		v.subClaim = "sub"
	}
	if v.scopeClaim == "" {
		v.scopeClaim = "scope"
	}
	skew, err := strconv.Atoi(strings.TrimSpace(prop("sasl.oauthbearer.clock.skew.seconds")))
	if err != nil || skew < 0 {
		return nil, fmt.Errorf("sasl.oauthbearer.clock.skew.seconds: %q is not a number of seconds", prop("sasl.oauthbearer.clock.skew.seconds"))
	}
	v.skew = time.Duration(skew) * time.Second
	refresh, err := strconv.ParseInt(strings.TrimSpace(prop("sasl.oauthbearer.jwks.endpoint.refresh.ms")), 10, 64)
	if err != nil || refresh < 0 {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.refresh.ms: %q", prop("sasl.oauthbearer.jwks.endpoint.refresh.ms"))
	}
	if v.keys, err = newJWKSet(prop("sasl.oauthbearer.jwks.endpoint.url"), time.Duration(refresh)*time.Millisecond, opt); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *jwksValidator) validate(ctx context.Context, token string, now time.Time) (oauthToken, error) {
	parts := strings.Split(token, ".")
	if token == "" || len(parts) != 3 {
		return oauthToken{}, badToken("Malformed JWT provided; expected three sections (header, payload, and signature), but %d sections provided", len(parts))
	}
	hb, err := b64url(parts[0])
	if err != nil {
		return oauthToken{}, badToken("Malformed JWT provided; the header section is not Base64URL")
	}
	header, err := jsonObject(hb)
	if err != nil {
		return oauthToken{}, badToken("the JWS header is %v", err)
	}
	alg, _ := header["alg"].(string)
	kid, _ := header["kid"].(string)
	if _, ok := header["crit"]; ok {
		return oauthToken{}, badToken("the JWS header has critical extensions (crit), which are not understood")
	}
	if _, ok := jwsHash(alg); !ok {
		return oauthToken{}, badToken("the JWS algorithm %q is not allowed (none is never; RS, PS and ES 256/384/512 are)", alg)
	}
	sig, err := b64url(parts[2])
	if err != nil {
		return oauthToken{}, badToken("Malformed JWT provided; the signature section is not Base64URL")
	}
	keys, err := v.keys.lookup(ctx, kid, alg, now)
	if err != nil {
		return oauthToken{}, err
	}
	signed := []byte(parts[0] + "." + parts[1])
	verified := false
	for _, k := range keys {
		if verifyJWS(alg, k.key, signed, sig) {
			verified = true
			break
		}
	}
	if !verified {
		return oauthToken{}, badToken("JWS signature is invalid (kid %q, alg %s, %d candidate keys)", kid, alg, len(keys))
	}
	pb, err := b64url(parts[1])
	if err != nil {
		return oauthToken{}, badToken("Malformed JWT provided; the payload section is not Base64URL")
	}
	claims, err := jsonObject(pb)
	if err != nil {
		return oauthToken{}, badToken("the JWT claims are %v", err)
	}
	return v.checkClaims(claims, now)
}

func (v *jwksValidator) checkClaims(claims map[string]any, now time.Time) (oauthToken, error) {
	exp, ok, err := claimSeconds(claims, "exp")
	if err != nil {
		return oauthToken{}, err
	}
	if !ok {
		return oauthToken{}, badToken("No Expiration Time (exp) claim present.")
	}
	if _, ok, err := claimSeconds(claims, "iat"); err != nil || !ok {
		if err != nil {
			return oauthToken{}, err
		}
		return oauthToken{}, badToken("No Issued At (iat) claim present.")
	}
	if !now.Before(secondsToTime(exp).Add(v.skew)) {
		return oauthToken{}, badToken("The JWT is no longer valid - the evaluation time %s is on or after the Expiration Time (exp=%v) claim value (even when providing %s of leeway to account for clock skew).", now.UTC().Format(time.RFC3339), exp, v.skew)
	}
	if nbf, ok, err := claimSeconds(claims, "nbf"); err != nil {
		return oauthToken{}, err
	} else if ok && now.Add(v.skew).Before(secondsToTime(nbf)) {
		return oauthToken{}, badToken("The JWT is not yet valid as the evaluation time %s is before the Not Before (nbf=%v) claim time (even when providing %s of leeway to account for clock skew).", now.UTC().Format(time.RFC3339), nbf, v.skew)
	}
	if len(v.audiences) > 0 {
		var aud []string
		switch a := claims["aud"].(type) {
		case string:
			aud = []string{a}
		case []any:
			for _, e := range a {
				s, ok := e.(string)
				if !ok {
					return oauthToken{}, badToken("The value of the 'aud' claim is not an array of strings")
				}
				aud = append(aud, s)
			}
		case nil:
			return oauthToken{}, badToken("No Audience (aud) claim present.")
		default:
			return oauthToken{}, badToken("The value of the 'aud' claim is not a string or an array of strings")
		}
		if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.audiences, a) }) {
			return oauthToken{}, badToken("Audience (aud) claim %v doesn't contain an acceptable identifier. Expected one of %v as an aud value.", aud, v.audiences)
		}
	}
	if v.issuer != "" {
		iss, _ := claims["iss"].(string)
		if iss != v.issuer {
			return oauthToken{}, badToken("Issuer (iss) claim value (%s) doesn't match expected value of %s", iss, v.issuer)
		}
	}
	sub, isString := claims[v.subClaim].(string)
	if !isString && claims[v.subClaim] != nil {
		return oauthToken{}, badToken("Could not extract the '%s' claim from the access token", v.subClaim)
	}
	if sub = strings.TrimSpace(sub); sub == "" {
		return oauthToken{}, badToken("%s value must be non-null, non-empty and not only whitespace", v.subClaim)
	}
	var scopes []string
	switch s := claims[v.scopeClaim].(type) {
	case string:
		scopes = []string{s}
	case []any:
		for _, e := range s {
			str, _ := e.(string)
			scopes = append(scopes, str)
		}
	}
	seen := map[string]bool{}
	for _, s := range scopes {
		if s = strings.TrimSpace(s); s == "" {
			return oauthToken{}, badToken("%s value must be non-empty and not only whitespace", v.scopeClaim)
		}
		if seen[s] {
			return oauthToken{}, badToken("%s value must not contain duplicates - %s already present", v.scopeClaim, s)
		}
		seen[s] = true
	}
	return oauthToken{principal: sub, expires: secondsToTime(exp)}, nil
}

// jwsHash is the hash of a JWS algorithm samsa verifies.
func jwsHash(alg string) (crypto.Hash, bool) {
	if len(alg) != 5 || !strings.Contains("RS PS ES", alg[:2]) {
		return 0, false
	}
	switch alg[2:] {
	case "256":
		return crypto.SHA256, true
	case "384":
		return crypto.SHA384, true
	case "512":
		return crypto.SHA512, true
	}
	return 0, false
}

// verifyJWS checks a JWS signature (RFC 7518 section 3).
func verifyJWS(alg string, key crypto.PublicKey, signed, sig []byte) bool {
	h, _ := jwsHash(alg)
	d := h.New()
	d.Write(signed)
	digest := d.Sum(nil)
	switch k := key.(type) {
	case *rsa.PublicKey:
		switch alg[:2] {
		case "RS":
			return rsa.VerifyPKCS1v15(k, h, digest, sig) == nil
		case "PS":
			return rsa.VerifyPSS(k, h, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
	case *ecdsa.PublicKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		if alg[:2] != "ES" || len(sig) != 2*size || ecCurveFor(alg) != k.Curve {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(k, digest, r, s)
	}
	return false
}

func ecCurveFor(alg string) elliptic.Curve {
	switch alg {
	case "ES256":
		return elliptic.P256()
	case "ES384":
		return elliptic.P384()
	case "ES512":
		return elliptic.P521()
	}
	return nil
}

// jwk is one verification key of a set.
type jwk struct {
	kid, alg string
	key      crypto.PublicKey
}

// fits reports whether the key may verify a JWS of alg.
func (k jwk) fits(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch k.key.(type) {
	case *rsa.PublicKey:
		return alg[:2] == "RS" || alg[:2] == "PS"
	case *ecdsa.PublicKey:
		return alg[:2] == "ES"
	}
	return false
}

// jwkSet is the key set of sasl.oauthbearer.jwks.endpoint.url.
type jwkSet struct {
	url     string
	file    bool
	refresh time.Duration
	log     *slog.Logger
	client  *http.Client

	mu      sync.Mutex // held over a fetch: authentications wait for it
	keys    []jwk
	fetched time.Time
	missing map[string]time.Time // kid → when its absence last fetched the set
}

func newJWKSet(raw string, refresh time.Duration, opt oauthOptions) (*jwkSet, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %q: a JWKS URL (https://, http:// or file://) is required with Kafka's OAuthBearerValidatorCallbackHandler", raw)
	}
	switch strings.ToLower(u.Scheme) {
	case "file", "http", "https":
		if err := urlAllowed(raw, opt.allowedURLs); err != nil {
			return nil, err
		}
	}
	s := &jwkSet{url: u.String(), refresh: refresh, log: opt.log, client: opt.client, missing: map[string]time.Time{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.client == nil {
		s.client = &http.Client{Timeout: 10 * time.Second}
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		s.file = true
		b, err := os.ReadFile(u.Path)
		if err != nil {
			return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
		}
		if s.keys, err = parseJWKS(b); err != nil {
			return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s: %w", raw, err)
		}
	case "http", "https":
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.fetch(ctx, time.Now()); err != nil {
			// Kafka retries at start; samsa starts and fetches again
			// when a token needs a key.
			s.log.Warn("OAUTHBEARER: could not fetch the JWKS at start; fetching again when a token needs it", "url", s.url, "err", err)
		}
	default:
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %q: the scheme must be https, http or file", raw)
	}
	return s, nil
}

// urlAllowed is Kafka's throwIfURLIsNotAllowed: the URL, as configured,
// must be one of AllowedURLsProperty's.
func urlAllowed(raw string, allowed []string) error {
	raw = strings.TrimSpace(raw)
	for _, a := range allowed {
		if strings.TrimSpace(a) == raw {
			return nil
		}
	}
	return fmt.Errorf("%s is not allowed. Update system property '%s' to allow %s", raw, AllowedURLsProperty, raw)
}

// lookup returns the keys that may verify a JWS with kid and alg,
// fetching the set again when it is old or lacks kid.
func (s *jwkSet) lookup(ctx context.Context, kid, alg string, now time.Time) ([]jwk, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.file && now.Sub(s.fetched) >= s.refresh {
		if err := s.fetch(ctx, now); err != nil {
			s.log.Warn("OAUTHBEARER: JWKS refresh failed; keeping the keys it had", "url", s.url, "err", err)
		}
	}
	out := s.candidates(kid, alg)
	if len(out) == 0 && !s.file && now.Sub(s.missing[kid]) >= missingKidInterval {
		if len(s.missing) >= 16 {
			clear(s.missing)
		}
		s.missing[kid] = now
		if err := s.fetch(ctx, now); err != nil {
			s.log.Warn("OAUTHBEARER: JWKS fetch for an unknown key id failed", "url", s.url, "kid", kid, "err", err)
		}
		out = s.candidates(kid, alg)
	}
	if len(out) == 0 {
		return nil, badToken("Unable to find a suitable verification key for JWS w/ header kid %q alg %s from the %d keys obtained from %s", kid, alg, len(s.keys), s.url)
	}
	return out, nil
}

func (s *jwkSet) candidates(kid, alg string) []jwk {
	var out []jwk
	for _, k := range s.keys {
		if (kid == "" || k.kid == kid) && k.fits(alg) {
			out = append(out, k)
		}
	}
	return out
}

// maxJWKS bounds the key set read from the endpoint.
const maxJWKS = 1 << 20

func (s *jwkSet) fetch(ctx context.Context, now time.Time) error {
	s.fetched = now // a failure waits a refresh interval too
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	if err != nil {
		return err
	}
	if len(b) > maxJWKS {
		return fmt.Errorf("the key set is larger than %d bytes", maxJWKS)
	}
	keys, err := parseJWKS(b)
	if err != nil {
		return err
	}
	s.keys = keys
	s.log.Debug("OAUTHBEARER: JWKS fetched", "url", s.url, "keys", len(keys))
	return nil
}

// parseJWKS reads a JWK Set's RSA and EC signature keys; keys of other
// types or uses are left out, as jose4j's selector leaves them.
func parseJWKS(b []byte) ([]jwk, error) {
	var set struct {
		Keys []struct {
			Kty, Kid, Use, Alg, Crv string
			N, E, X, Y              string
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JWK Set: %w", err)
	}
	var out []jwk
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		var key crypto.PublicKey
		switch k.Kty {
		case "RSA":
			n, errN := b64url(k.N)
			e, errE := b64url(k.E)
			if errN != nil || errE != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
				return nil, fmt.Errorf("RSA key %q: bad n or e", k.Kid)
			}
			key = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		case "EC":
			var c elliptic.Curve
			switch k.Crv {
			case "P-256":
				c = elliptic.P256()
			case "P-384":
				c = elliptic.P384()
			case "P-521":
				c = elliptic.P521()
			default:
				continue
			}
			x, errX := b64url(k.X)
			y, errY := b64url(k.Y)
			size := (c.Params().BitSize + 7) / 8
			if errX != nil || errY != nil || len(x) != size || len(y) != size {
				return nil, fmt.Errorf("EC key %q: bad x or y", k.Kid)
			}
			raw := append(append([]byte{4}, x...), y...)
			pk, err := ecdsa.ParseUncompressedPublicKey(c, raw)
			if err != nil {
				return nil, fmt.Errorf("EC key %q: %w", k.Kid, err)
			}
			key = pk
		default:
			continue
		}
		out = append(out, jwk{kid: k.Kid, alg: k.Alg, key: key})
	}
	return out, nil
}
