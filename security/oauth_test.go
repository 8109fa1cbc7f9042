package security

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The client's first message as Kafka's OAuthBearerClientInitialResponse
// reads it.
func TestParseOAuthInitial(t *testing.T) {
	tests := []struct {
		msg, token, authzid, err string
	}{
		{"n,,\x01auth=Bearer abc.def.\x01\x01", "abc.def.", "", ""},
		{"n,a=alice,\x01auth=Bearer t0k3n\x01\x01", "t0k3n", "alice", ""},
		{"n,,\x01auth=bearer x\x01traceId=42\x01\x01", "x", "", ""},
		{"n,,\x01auth=Basic x\x01\x01", "", "", "Invalid scheme"},
		{"n,,\x01traceId=42\x01\x01", "", "", "'auth' not specified"},
		{"n,,\x01auth=Bearer\x01\x01", "", "", "invalid 'auth' format"},
		{"n,,\x01auth=Bearer a b\x01\x01", "", "", "invalid 'auth' format"},
		{"y,,\x01auth=Bearer x\x01\x01", "", "", "Invalid OAUTHBEARER client first message"},
		{"n,,\x01auth=Bearer x\x01", "", "", "Invalid OAUTHBEARER client first message"},
		{"n,a=a,b,\x01auth=Bearer x\x01\x01", "", "", "Invalid OAUTHBEARER client first message"},
		{"", "", "", "Invalid OAUTHBEARER client first message"},
	}
	for _, tt := range tests {
		tok, az, err := parseOAuthInitial([]byte(tt.msg))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want %q", tt.msg, err, tt.err)
			}
			continue
		}
		if err != nil || tok != tt.token || az != tt.authzid {
			t.Errorf("%q: %q %q %v", tt.msg, tok, az, err)
		}
	}
}

func unsecured(header, claims string) string {
	e := base64.RawURLEncoding.EncodeToString
	return e([]byte(header)) + "." + e([]byte(claims)) + "."
}

// Kafka's unsecured validator: what it accepts and refuses.
func TestUnsecuredValidator(t *testing.T) {
	v, err := newUnsecuredValidator(map[string]string{"unsecuredValidatorRequiredScope": "a b", "unsecuredValidatorAllowableClockSkewMs": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_000_000, 0)
	none := `{"alg":"none"}`
	claims := func(s string) string {
		return fmt.Sprintf(`{"sub":"alice","iat":999990,"exp":1000100,"scope":["a","b"]%s}`, s)
	}
	tests := []struct {
		name, token, err string
	}{
		{"good", unsecured(none, claims("")), ""},
		{"within the skew", unsecured(none, `{"sub":"alice","exp":999999.5,"scope":["a","b"]}`), ""},
		{"expired", unsecured(none, `{"sub":"alice","exp":999999,"scope":["a","b"]}`), "on or after the Expiration Time"},
		{"no exp", unsecured(none, `{"sub":"alice","scope":["a","b"]}`), "No expiration time"},
		{"issued in the future", unsecured(none, `{"sub":"alice","iat":1000002,"exp":1000100,"scope":["a","b"]}`), "Issued At"},
		{"exp before iat", unsecured(none, `{"sub":"alice","iat":1000000.5,"exp":1000000.2,"scope":["a","b"]}`), "was not after the Issued At time"},
		{"no sub", unsecured(none, `{"exp":1000100,"scope":["a","b"]}`), "No principal name"},
		{"sub a number", unsecured(none, `{"sub":7,"exp":1000100,"scope":["a","b"]}`), "not of type String"},
		{"a scope missing", unsecured(none, `{"sub":"alice","exp":1000100,"scope":"a"}`), "missing a required scope (b)"},
		{"signed", unsecured(`{"alg":"RS256"}`, claims("")) + "c2ln", "'none'"},
		{"a signature", unsecured(none, claims("")) + "c2ln", "must not contain a digital signature"},
		{"two parts", "e30.e30", "3 dot-separated"},
		{"..", "e30..", "contains '..'"},
		{"not base64", "!!!.e30.", "Base64"},
		{"not JSON", unsecured(none, "[1]"), "malformed JSON"},
	}
	for _, tt := range tests {
		tok, err := v.validate(context.Background(), tt.token, now)
		if tt.err == "" {
			if err != nil || tok.principal != "alice" {
				t.Errorf("%s: %+v %v", tt.name, tok, err)
			}
			continue
		}
		var te *tokenError
		if !errors.As(err, &te) || !strings.Contains(te.msg, tt.err) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.err)
		}
		if tt.name == "a scope missing" && te != nil && te.scope != "[a, b]" {
			t.Errorf("the missing scope's challenge names %q", te.scope)
		}
	}
}

// An exchange refusing a token answers with Kafka's challenge, then
// fails on the client's %x01 with the challenge as the message.
func TestOAuthExchangeChallenge(t *testing.T) {
	v, _ := newUnsecuredValidator(nil)
	o := &oauthServer{v: v, now: time.Now}
	resp, done, err := o.Next(context.Background(), []byte("n,,\x01auth=Bearer "+unsecured(`{"alg":"none"}`, `{"sub":"a","exp":1}`)+"\x01\x01"))
	if string(resp) != `{"status":"invalid_token"}` || done || !IsChallenge(err) {
		t.Fatalf("%q %v %v", resp, done, err)
	}
	_, _, err = o.Next(context.Background(), []byte{1})
	if !errors.Is(err, ErrAuthentication) || AuthMessage(err) != `{"status":"invalid_token"}` {
		t.Fatalf("%%x01: %v", err)
	}
	_, _, err = o.Next(context.Background(), []byte("garbage"))
	if !IsSaslException(err) || !errors.Is(err, ErrAuthentication) {
		t.Fatalf("garbage: %v", err)
	}
}
