package restproxy

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEncodeJSONAsJackson: the json format stores what Jackson writes of
// the tree it parsed: compact, members in order, non-ASCII as UTF-8,
// numbers as sent.
func TestEncodeJSONAsJackson(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b": 1, "a": [true, false, null]}`, `{"b":1,"a":[true,false,null]}`},
		{`"\u00fc\u0001\n\"\\/"`, `"ü\u0001\n\"\\/"`},
		{`{"n": 12345678901234567890, "f": 1.50, "e": 1e3}`, `{"n":12345678901234567890,"f":1.50,"e":1e3}`},
		{`"<&>"`, `"<&>"`},
		{` [ ] `, `[]`},
		{`{}`, `{}`},
	} {
		got, err := encodeData(formatJSON, json.RawMessage(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	deep := strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)
	if _, err := encodeData(formatJSON, json.RawMessage(deep)); err == nil {
		t.Errorf("a value nested %d deep was taken", maxDepth+2)
	}
	for _, in := range []string{"null", "", " null "} {
		if got, err := encodeData(formatJSON, json.RawMessage(in)); got != nil || err != nil {
			t.Errorf("%q: %q, %v; want a null value", in, got, err)
		}
	}
}

// FuzzEncodeJSON: what the json format stores is valid JSON, and a
// value taken as is (compactAsIs) is what re-encoding it token by token
// writes.
func FuzzEncodeJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",{"b":null}]}`, `"ü\u00fc"`, `{"a":"b c"}`, "\"\xff\"", `[1e3,-0.5,true]`, `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		got, err := encodeData(formatJSON, json.RawMessage(s))
		if err == nil && got != nil && !json.Valid(got) {
			t.Fatalf("%q re-encoded as invalid JSON %q", s, got)
		}
		if compactAsIs([]byte(s)) {
			slow, err := reencodeTokens(json.RawMessage(s))
			if err != nil || string(slow) != s {
				t.Fatalf("%q is taken as is; token by token it is %q, %v", s, slow, err)
			}
		}
	})
}
