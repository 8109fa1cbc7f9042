package security

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// OAUTHBEARER's client side, as a Kafka broker logs in to the others
// through a SASL inter-broker listener. Two of Kafka's login callback
// handlers:
//
//   - the default, OAuthBearerUnsecuredLoginCallbackHandler: an unsecured
//     JWS (alg "none") minted from the JAAS config's options
//     unsecuredLoginStringClaim_<claim>, unsecuredLoginNumberClaim_<claim>,
//     unsecuredLoginListClaim_<claim> (the value's first character is the
//     separator), unsecuredLoginExtension_<key>,
//     unsecuredLoginPrincipalClaimName (sub), unsecuredLoginScopeClaimName
//     (scope) and unsecuredLoginLifetimeSeconds (3600);
//   - with sasl.login.callback.handler.class naming
//     OAuthBearerLoginCallbackHandler: the token at
//     sasl.oauthbearer.token.endpoint.url, a file:// holding a JWT (read
//     at every login) or an http(s):// token endpoint asked with the
//     client-credentials grant (the JAAS options clientId, clientSecret
//     and scope), kept until four fifths of its expires_in have passed.
//     The URL must be one of AllowedURLsProperty's, as in Kafka 4.

// loginHandlerClasses name Kafka's OIDC login callback handler (the second
// is the name Kafka 3.1 to 3.x documented).
var loginHandlerClasses = []string{
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
	"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",
}

// OAuthLoginConfig configures an OAuthLogin.
type OAuthLoginConfig struct {
	JAAS        string                  // the oauthbearer sasl.jaas.config
	Prop        func(key string) string // a broker property, with the listener's and mechanism's overrides
	AllowedURLs []string                // AllowedURLsProperty
	HTTP        *http.Client            // nil: a client with a 30 s timeout
}

// OAuthLogin mints or fetches the tokens a broker authenticates with.
type OAuthLogin struct {
	token func(ctx context.Context, now time.Time) (string, error)
	ext   map[string]string // SASL extensions (unsecuredLoginExtension_*)
}

// NewOAuthLogin checks the login's configuration as Kafka checks it when
// the broker starts.
func NewOAuthLogin(c OAuthLoginConfig) (*OAuthLogin, error) {
	opts, err := ParseJAAS(c.JAAS)
	if err != nil {
		return nil, fmt.Errorf("OAUTHBEARER login: %w", err)
	}
	handler := strings.TrimSpace(c.Prop("sasl.login.callback.handler.class"))
	switch {
	case handler == "":
		u, err := newUnsecuredLogin(opts)
		if err != nil {
			return nil, fmt.Errorf("OAUTHBEARER login: %w", err)
		}
		return &OAuthLogin{token: u.mint, ext: u.ext}, nil
	case isLoginHandler(handler):
	default:
		return nil, fmt.Errorf("OAUTHBEARER login: sasl.login.callback.handler.class %s: samsa logs in with Kafka's unsecured login or %s", handler, loginHandlerClasses[0])
	}
	raw := strings.TrimSpace(c.Prop("sasl.oauthbearer.token.endpoint.url"))
	if raw == "" {
		return nil, errors.New("OAUTHBEARER login: sasl.oauthbearer.token.endpoint.url is required with " + handler)
	}
	if err := urlAllowed(raw, c.AllowedURLs); err != nil {
		return nil, fmt.Errorf("OAUTHBEARER login: %w", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("OAUTHBEARER login: sasl.oauthbearer.token.endpoint.url: %w", err)
	}
	switch u.Scheme {
	case "file":
		path := u.Path
		return &OAuthLogin{token: func(context.Context, time.Time) (string, error) {
			b, err := os.ReadFile(path)
			if err != nil {
				return "", err
			}
			return strings.TrimSpace(string(b)), nil
		}}, nil
	case "http", "https":
		cc := &clientCredentials{url: raw, id: opts["clientId"], secret: opts["clientSecret"], scope: opts["scope"], client: c.HTTP}
		if cc.id == "" || cc.secret == "" {
			return nil, errors.New("OAUTHBEARER login: the JAAS config's clientId and clientSecret are required with a token endpoint")
		}
		if cc.client == nil {
			cc.client = &http.Client{Timeout: 30 * time.Second}
		}
		return &OAuthLogin{token: cc.get}, nil
	}
	return nil, fmt.Errorf("OAUTHBEARER login: sasl.oauthbearer.token.endpoint.url %q: the scheme must be https, http or file", raw)
}

func isLoginHandler(class string) bool {
	for _, c := range loginHandlerClasses {
		if class == c {
			return true
		}
	}
	return false
}

// Token returns the token to authenticate with now.
func (l *OAuthLogin) Token(ctx context.Context) (string, error) {
	return l.token(ctx, time.Now())
}

// Extensions are the SASL extensions sent with the token.
func (l *OAuthLogin) Extensions() map[string]string { return l.ext }

// unsecuredLogin is OAuthBearerUnsecuredLoginCallbackHandler.
type unsecuredLogin struct {
	claims    map[string]any // without iat and exp
	lifetime  time.Duration
	ext       map[string]string
	principal string
}

func newUnsecuredLogin(opts map[string]string) (*unsecuredLogin, error) {
	u := &unsecuredLogin{claims: map[string]any{}, lifetime: time.Hour}
	principalClaim, scopeClaim := "sub", "scope"
	if s := strings.TrimSpace(opts["unsecuredLoginPrincipalClaimName"]); s != "" {
		principalClaim = s
	}
	if s := strings.TrimSpace(opts["unsecuredLoginScopeClaimName"]); s != "" {
		scopeClaim = s
	}
	if s := strings.TrimSpace(opts["unsecuredLoginLifetimeSeconds"]); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("unsecuredLoginLifetimeSeconds: not a positive number of seconds: %s", s)
		}
		u.lifetime = time.Duration(n) * time.Second
	}
	for k, v := range opts {
		name, kind := "", ""
		for _, p := range []string{"unsecuredLoginStringClaim_", "unsecuredLoginNumberClaim_", "unsecuredLoginListClaim_", "unsecuredLoginExtension_"} {
			if strings.HasPrefix(k, p) {
				name, kind = strings.TrimPrefix(k, p), p
			}
		}
		if kind == "" {
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("%s: a claim name is required", k)
		}
		if kind != "unsecuredLoginExtension_" && (name == "iat" || name == "exp") {
			return nil, fmt.Errorf("%s: the %s claim is set by the login", k, name)
		}
		switch kind {
		case "unsecuredLoginStringClaim_":
			u.claims[name] = v
		case "unsecuredLoginNumberClaim_":
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, fmt.Errorf("%s: not a number: %s", k, v)
			}
			u.claims[name] = n
		case "unsecuredLoginListClaim_":
			if v == "" {
				return nil, fmt.Errorf("%s: a list claim starts with its separator", k)
			}
			list := []string{}
			for _, e := range strings.Split(v[1:], v[:1]) {
				if e != "" {
					list = append(list, e)
				}
			}
			u.claims[name] = list
		case "unsecuredLoginExtension_":
			if u.ext == nil {
				u.ext = map[string]string{}
			}
			u.ext[name] = v
		}
	}
	p, ok := u.claims[principalClaim].(string)
	if !ok || strings.TrimSpace(p) == "" {
		return nil, fmt.Errorf("the principal claim %q is required (unsecuredLoginStringClaim_%s)", principalClaim, principalClaim)
	}
	if s, ok := u.claims[scopeClaim]; ok {
		if _, isList := s.([]string); !isList {
			if _, isString := s.(string); !isString {
				return nil, fmt.Errorf("the scope claim %q must be a string or a list", scopeClaim)
			}
		}
	}
	u.principal = p
	return u, nil
}

// mint returns a token issued now.
func (u *unsecuredLogin) mint(_ context.Context, now time.Time) (string, error) {
	claims := make(map[string]any, len(u.claims)+2)
	for k, v := range u.claims {
		claims[k] = v
	}
	iat := float64(now.UnixMilli()) / 1000
	claims["iat"], claims["exp"] = iat, iat+u.lifetime.Seconds()
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(body) + ".", nil
}

// clientCredentials asks a token endpoint for a token with the
// client-credentials grant (RFC 6749 section 4.4), as Kafka's
// HttpAccessTokenRetriever does.
type clientCredentials struct {
	url, id, secret, scope string
	client                 *http.Client

	mu      sync.Mutex
	token   string    // guarded by mu
	refresh time.Time // guarded by mu: when token is fetched again
}

func (c *clientCredentials) get(ctx context.Context, now time.Time) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && now.Before(c.refresh) {
		return c.token, nil
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	if c.scope != "" {
		form.Set("scope", c.scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(c.id), url.QueryEscape(c.secret))
	resp, err := c.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("token endpoint: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("token endpoint: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("token endpoint: %s: %.200s", resp.Status, body)
	}
	var out struct {
		AccessToken string  `json:"access_token"`
		ExpiresIn   float64 `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return "", fmt.Errorf("token endpoint: %w", err)
	}
	if out.AccessToken == "" {
		return "", errors.New("token endpoint: no access_token in the answer")
	}
	c.token = out.AccessToken
	c.refresh = now.Add(time.Duration(out.ExpiresIn * 0.8 * float64(time.Second)))
	return c.token, nil
}
