package security

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"time"
)

// Delegation tokens (KIP-48) as Kafka authenticates them: a client sends
// SCRAM's client-first-message with the extension tokenauth=true, the
// token id as its user name, and the token's HMAC (base64) as its
// password. The broker derives a SCRAM credential from the HMAC for the
// exchange and authenticates the connection as the token's owner, its
// session ending when the token expires.

// Token is what SCRAM needs of a delegation token.
type Token struct {
	Owner   string // the owner's name: the connection's principal is User:<Owner>
	HMAC    []byte
	Expires time.Time
}

// TokenStore finds a delegation token by id; found is false for an id it
// does not know (or when tokens are disabled).
type TokenStore interface {
	DelegationToken(ctx context.Context, tokenID string) (t Token, found bool, err error)
}

// TokenHMAC is a token's HMAC, its password: HMAC-SHA512 of the token id
// keyed with delegation.token.secret.key, as Kafka computes it.
func TokenHMAC(secret, tokenID string) []byte {
	m := hmac.New(sha512.New, []byte(secret))
	m.Write([]byte(tokenID))
	return m.Sum(nil)
}

// TokenExchange is an exchange that may authenticate with a delegation
// token; such a connection may not create, renew, expire or describe
// tokens (Kafka's DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).
type TokenExchange interface {
	TokenAuthenticated() bool
}

// tokenScramCredential derives the SCRAM credential of a token for mechanism:
// the password is the HMAC in base64, salted afresh, at the mechanism's
// least iterations, as Kafka's DelegationTokenManager prepares it.
func tokenScramCredential(mechanism string, hmacBytes []byte) (ScramCredential, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	salt := make([]byte, 24)
	rand.Read(salt)
	password := base64.StdEncoding.EncodeToString(hmacBytes)
	salted, err := pbkdf2.Key(h, password, salt, ScramMinIterations, h().Size())
	if err != nil {
		return ScramCredential{}, fmt.Errorf("SCRAM credential of a token: %w", err)
	}
	return NewScramCredential(mechanism, salt, salted, ScramMinIterations)
}
