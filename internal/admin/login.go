package admin

// Logins: the console and the REST proxy talk to a SASL listener as the
// HTTP request's Basic user, each user with a client of its own.

import (
	"crypto/sha256"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL is the franz-go mechanism named (PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512) with a user's credentials.
func SASL(mechanism, user, pass string) (sasl.Mechanism, error) {
	switch mechanism {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, errors.New("unsupported SASL mechanism " + mechanism)
}

// LoginKey names a user's client by the user and a digest of the
// password: a new password is a new client.
func LoginKey(user, pass string) string {
	sum := sha256.Sum256([]byte(pass))
	return user + "\x00" + string(sum[:])
}

// Oldest is the key of m's least recently used value ("" for an empty m).
func Oldest[V any](m map[string]V, used func(V) time.Time) string {
	var oldest string
	for k, v := range m {
		if oldest == "" || used(v).Before(used(m[oldest])) {
			oldest = k
		}
	}
	return oldest
}
