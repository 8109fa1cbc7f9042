package security

import (
	"errors"
	"strings"
	"testing"
)

func TestPasswordEncoderRoundTrip(t *testing.T) {
	for _, alg := range []string{"AES/CBC/PKCS5Padding", "AES/GCM/NoPadding"} {
		for _, kl := range []int{128, 192, 256} {
			enc, err := NewPasswordEncoder("s3cret", "", "", alg, kl, 1024)
			if err != nil {
				t.Fatal(err)
			}
			for _, pw := range []string{"", "p", "exactly-16-bytes", strings.Repeat("x", 1000), "ünïcødé 🔑"} {
				s, err := enc.Encode(pw)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(s, pw) && pw != "" && pw != "p" {
					t.Errorf("%s: the encoded form holds the password: %s", alg, s)
				}
				if !IsEncodedPassword(s) {
					t.Errorf("IsEncodedPassword(%q) = false", s)
				}
				got, err := enc.Decode(s)
				if err != nil || got != pw {
					t.Errorf("%s/%d: %q decodes to %q, %v", alg, kl, pw, got, err)
				}
				again, _ := enc.Encode(pw)
				if again == s {
					t.Errorf("two encodings of %q are equal: no fresh salt and IV", pw)
				}
			}
		}
	}
	if IsEncodedPassword("plain-password") {
		t.Error("a plain password reads as encoded")
	}
}

// Another secret does not decode; the old secret named beside the new one
// does; a tampered or bounded-out stored value is refused, never a panic.
func TestPasswordEncoderSecrets(t *testing.T) {
	a, _ := NewPasswordEncoder("secret-a", "", "", "AES/GCM/NoPadding", 128, 1024)
	b, _ := NewPasswordEncoder("secret-b", "", "", "AES/GCM/NoPadding", 128, 1024)
	rotated, _ := NewPasswordEncoder("secret-b", "secret-a", "", "AES/CBC/PKCS5Padding", 128, 1024)
	s, err := a.Encode("hunter2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Decode(s); !errors.Is(err, ErrPasswordDecode) {
		t.Errorf("decoded under another secret: %v", err)
	}
	if got, err := rotated.Decode(s); err != nil || got != "hunter2" {
		t.Errorf("the old secret decodes %q, %v", got, err)
	}
	for _, bad := range []string{
		strings.Replace(s, "encryptedPassword:", "encryptedPassword:AA", 1),
		strings.Replace(s, "iterations:1024", "iterations:2000000000", 1),
		strings.Replace(s, "keyLength:128", "keyLength:100", 1),
		strings.Replace(s, "passwordLength:7", "passwordLength:8", 1),
		strings.Replace(s, "cipherAlgorithm:AES/GCM/NoPadding", "cipherAlgorithm:DES", 1),
		"encryptedPassword:", "encryptedPassword:!!,salt:,iterations:1,keyLength:128,passwordLength:0", "",
	} {
		if _, err := a.Decode(bad); !errors.Is(err, ErrPasswordDecode) {
			t.Errorf("Decode(%.60q…) = %v, want ErrPasswordDecode", bad, err)
		}
	}
	for _, c := range []struct {
		secret, kf, alg string
		kl, it          int
	}{
		{"", "", "AES/CBC/PKCS5Padding", 128, 4096},
		{"x", "MD5", "AES/CBC/PKCS5Padding", 128, 4096},
		{"x", "", "AES/ECB/PKCS5Padding", 128, 4096},
		{"x", "", "AES/CBC/PKCS5Padding", 64, 4096},
		{"x", "", "AES/CBC/PKCS5Padding", 128, 0},
	} {
		if _, err := NewPasswordEncoder(c.secret, "", c.kf, c.alg, c.kl, c.it); err == nil {
			t.Errorf("NewPasswordEncoder(%+v) accepted", c)
		}
	}
}

func FuzzPasswordDecode(f *testing.F) {
	enc, _ := NewPasswordEncoder("fuzz", "", "", "AES/CBC/PKCS5Padding", 128, 1024)
	s, _ := enc.Encode("seed")
	f.Add(s)
	f.Add("encryptedPassword:AAAA,salt:AAAA,iterations:1024,keyLength:128,passwordLength:1,cipherAlgorithm:AES/GCM/NoPadding,authenticationTagLength:128,initializationVector:")
	f.Fuzz(func(t *testing.T, in string) {
		_, _ = enc.Decode(in)
	})
}
