package security

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// SCRAM (RFC 5802, RFC 7677) as Kafka serves it: SCRAM-SHA-256 and
// SCRAM-SHA-512, credentials kept per user and mechanism as Kafka kept
// them in ZooKeeper (/config/users/<user>):
//
//	"SCRAM-SHA-256": "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=4096"

// The SCRAM mechanisms, by the names SASL uses.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Kafka's bounds on a SCRAM credential's iterations.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramCredential is what the broker keeps of a SCRAM password.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// ErrUnknownMechanism is a SCRAM mechanism name samsa does not know.
var ErrUnknownMechanism = errors.New("security: unknown SASL mechanism")

func scramHash(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownMechanism, mechanism)
}

func hmacOf(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// NewScramCredential derives the stored credential from a salted password
// (what AlterUserScramCredentials carries: the client salts and hashes).
func NewScramCredential(mechanism string, salt, saltedPassword []byte, iterations int32) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	clientKey := hmacOf(h, saltedPassword, "Client Key")
	sum := h()
	sum.Write(clientKey)
	return ScramCredential{
		Salt:       salt,
		StoredKey:  sum.Sum(nil),
		ServerKey:  hmacOf(h, saltedPassword, "Server Key"),
		Iterations: iterations,
	}, nil
}

var b64 = base64.StdEncoding

// String is the credential in Kafka's ZooKeeper form.
func (c ScramCredential) String() string {
	return fmt.Sprintf("salt=%s,stored_key=%s,server_key=%s,iterations=%d",
		b64.EncodeToString(c.Salt), b64.EncodeToString(c.StoredKey), b64.EncodeToString(c.ServerKey), c.Iterations)
}

// ParseScramCredential reads a credential in Kafka's ZooKeeper form.
func ParseScramCredential(s string) (ScramCredential, error) {
	var c ScramCredential
	var err error
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=") // the first '=': base64 ends in more
		switch k {
		case "salt":
			c.Salt, err = b64.DecodeString(v)
		case "stored_key":
			c.StoredKey, err = b64.DecodeString(v)
		case "server_key":
			c.ServerKey, err = b64.DecodeString(v)
		case "iterations":
			var n int64
			n, err = strconv.ParseInt(v, 10, 32)
			c.Iterations = int32(n)
		}
		if err != nil {
			return c, fmt.Errorf("SCRAM credential %s: %w", k, err)
		}
	}
	if len(c.Salt) == 0 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 || c.Iterations <= 0 {
		return c, errors.New("SCRAM credential: incomplete")
	}
	return c, nil
}

// ScramStore finds a user's SCRAM credential for a mechanism; found is
// false for a user (or a mechanism of the user) with none.
type ScramStore interface {
	ScramCredential(ctx context.Context, user, mechanism string) (c ScramCredential, found bool, err error)
}

// scramServer is the server's side of one SCRAM exchange.
type scramServer struct {
	mechanism string
	h         func() hash.Hash
	store     ScramStore
	tokens    TokenStore // nil: delegation tokens are disabled

	step        int
	user        string
	cred        ScramCredential
	gs2         string // the client's GS2 header, as sent
	nonce       string // client nonce + server nonce
	clientBare  string // client-first-message-bare
	serverFirst string

	// tokenauth=true: the user is a delegation token's id, and the
	// principal its owner's.
	token   bool
	owner   string
	expires time.Time
}

func (s *scramServer) failed() error {
	return authFailed("Authentication failed during authentication due to invalid credentials with SASL mechanism %s", s.mechanism)
}

func (s *scramServer) Next(ctx context.Context, token []byte) ([]byte, bool, error) {
	msg := string(token)
	switch s.step {
	case 0:
		s.step++
		return s.first(ctx, msg)
	case 1:
		s.step++
		return s.final(msg)
	}
	return nil, false, authFailed("SCRAM: unexpected message after the exchange ended")
}

func (s *scramServer) first(ctx context.Context, msg string) ([]byte, bool, error) {
	// gs2-header: "n," or "y," (no channel binding), then "a=authzid" or
	// nothing, then ","; the rest is the bare message.
	if !strings.HasPrefix(msg, "n,") && !strings.HasPrefix(msg, "y,") {
		return nil, false, authFailed("SCRAM: channel binding is not supported")
	}
	i := strings.IndexByte(msg[2:], ',')
	if i < 0 {
		return nil, false, authFailed("SCRAM: invalid client-first-message")
	}
	authzid := msg[2 : 2+i]
	s.gs2, s.clientBare = msg[:2+i+1], msg[2+i+1:]
	attrs := strings.Split(s.clientBare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) < 3 {
		return nil, false, authFailed("SCRAM: invalid client-first-message")
	}
	// Extensions (RFC 5802's reserved-mext, Kafka's ScramExtensions):
	// only tokenauth is known, others are ignored as Kafka ignores them.
	for _, ext := range attrs[2:] {
		if v, ok := strings.CutPrefix(ext, "tokenauth="); ok {
			s.token = strings.EqualFold(v, "true")
		}
	}
	user, ok := scramUnescape(attrs[0][2:])
	if !ok || user == "" {
		return nil, false, authFailed("SCRAM: invalid user name")
	}
	if authzid != "" {
		if a, _ := scramUnescape(strings.TrimPrefix(authzid, "a=")); a != user {
			return nil, false, authFailed("Authentication failed: Client requested an authorization id that is different from username")
		}
	}
	var cred ScramCredential
	if s.token {
		var err error
		if cred, err = s.tokenCredential(ctx, user); err != nil {
			return nil, false, err
		}
	} else {
		c, found, err := s.store.ScramCredential(ctx, user, s.mechanism)
		if err != nil {
			return nil, false, fmt.Errorf("SCRAM credential of %s: %w", user, err)
		}
		if !found {
			return nil, false, authFailed("Authentication failed: Invalid user credentials")
		}
		cred = c
	}
	s.user, s.cred = user, cred
	var r [24]byte
	rand.Read(r[:])
	s.nonce = attrs[1][2:] + base64.RawURLEncoding.EncodeToString(r[:])
	s.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", s.nonce, b64.EncodeToString(cred.Salt), cred.Iterations)
	return []byte(s.serverFirst), false, nil
}

func (s *scramServer) final(msg string) ([]byte, bool, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, false, authFailed("SCRAM: invalid client-final-message")
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || attrs[0] != "c="+b64.EncodeToString([]byte(s.gs2)) {
		return nil, false, authFailed("SCRAM: invalid channel binding")
	}
	if attrs[1] != "r="+s.nonce {
		return nil, false, authFailed("SCRAM: invalid nonce")
	}
	proof, err := b64.DecodeString(proofB64)
	if err != nil || len(proof) != len(s.cred.StoredKey) {
		return nil, false, s.failed()
	}
	authMessage := s.clientBare + "," + s.serverFirst + "," + withoutProof
	sig := hmacOf(s.h, s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for j := range proof {
		clientKey[j] = proof[j] ^ sig[j]
	}
	sum := s.h()
	sum.Write(clientKey)
	if subtle.ConstantTimeCompare(sum.Sum(nil), s.cred.StoredKey) != 1 {
		return nil, false, s.failed()
	}
	return []byte("v=" + b64.EncodeToString(hmacOf(s.h, s.cred.ServerKey, authMessage))), true, nil
}

// tokenCredential looks up the delegation token named by tokenID and
// derives the exchange's credential from its HMAC.
func (s *scramServer) tokenCredential(ctx context.Context, tokenID string) (ScramCredential, error) {
	var tok Token
	var found bool
	if s.tokens != nil {
		var err error
		if tok, found, err = s.tokens.DelegationToken(ctx, tokenID); err != nil {
			return ScramCredential{}, fmt.Errorf("delegation token %s: %w", tokenID, err)
		}
	}
	if !found {
		// A SaslException in Kafka: the client is not told why.
		return ScramCredential{}, &saslError{err: authFailed("Token Authentication failed: Invalid tokenId : %s", tokenID)}
	}
	s.owner, s.expires = tok.Owner, tok.Expires
	return tokenScramCredential(s.mechanism, tok.HMAC)
}

func (s *scramServer) Principal() string {
	if s.token {
		return UserPrefix + s.owner
	}
	return UserPrefix + s.user
}

// TokenAuthenticated reports whether the exchange authenticated with a
// delegation token.
func (s *scramServer) TokenAuthenticated() bool { return s.token }

// Expires is the token's expiry, which bounds the session (KIP-368); zero
// for a user's password.
func (s *scramServer) Expires() time.Time { return s.expires }

// scramUnescape decodes a SCRAM saslname: "=2C" is ",", "=3D" is "=".
func scramUnescape(n string) (string, bool) {
	if !strings.Contains(n, "=") {
		return n, true
	}
	var b strings.Builder
	for i := 0; i < len(n); i++ {
		if n[i] != '=' {
			b.WriteByte(n[i])
			continue
		}
		switch {
		case strings.HasPrefix(n[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(n[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// ScramPasswordMatches reports whether password is the one credential c
// was made from (salted with c's salt and iterations, as a SCRAM client
// salts it): how a password sent otherwise than by SCRAM, HTTP basic
// authentication's, is checked against a SCRAM user.
func ScramPasswordMatches(mechanism string, c ScramCredential, password string) (bool, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return false, err
	}
	if c.Iterations <= 0 || c.Iterations > ScramMaxIterations {
		return false, fmt.Errorf("SCRAM credential: %d iterations", c.Iterations)
	}
	salted, err := pbkdf2.Key(h, password, c.Salt, int(c.Iterations), h().Size())
	if err != nil {
		return false, err
	}
	want, err := NewScramCredential(mechanism, c.Salt, salted, c.Iterations)
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(want.StoredKey, c.StoredKey) == 1, nil
}
