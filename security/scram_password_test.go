package security

import (
	"crypto/pbkdf2"
	"crypto/sha512"
	"testing"
)

// TestScramPasswordMatches: a password matches the credential made from
// it, and no other.
func TestScramPasswordMatches(t *testing.T) {
	salt := []byte("0123456789abcdef")
	salted, err := pbkdf2.Key(sha512.New, "s3cret", salt, ScramMinIterations, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewScramCredential(ScramSHA512, salt, salted, ScramMinIterations)
	if err != nil {
		t.Fatal(err)
	}
	for pw, want := range map[string]bool{"s3cret": true, "s3cret ": false, "": false} {
		if got, err := ScramPasswordMatches(ScramSHA512, c, pw); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", pw, got, err, want)
		}
	}
}
