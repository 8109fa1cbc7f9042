package config

import (
	"reflect"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []property
	}{
		{"equals", "a=b\n", []property{{"a", "b", 1}}},
		{"colon and spaces", "  a :  b c \n", []property{{"a", "b c ", 1}}},
		{"whitespace separator", "a b\n", []property{{"a", "b", 1}}},
		{"comments and blanks", "# c\n! c\n\n   \nk=v", []property{{"k", "v", 5}}},
		{"empty value", "k=\nj", []property{{"k", "", 1}, {"j", "", 2}}},
		{"continuation", "k=a,\\\n    b,\\\n  c\nn=1", []property{{"k", "a,b,c", 1}, {"n", "1", 4}}},
		{"escaped backslash does not continue", "k=a\\\\\nn=1", []property{{"k", `a\`, 1}, {"n", "1", 2}}},
		{"comment never continues", "# x \\\nk=v", []property{{"k", "v", 2}}},
		{"escapes", `k\:x=a\tb\u0041\=`, []property{{"k:x", "a\tbA=", 1}}},
		{"CRLF and CR", "a=1\r\nb=2\rc=3", []property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"later value of same key kept in order", "a=1\na=2", []property{{"a", "1", 1}, {"a", "2", 2}}},
		{"trailing backslash at EOF", "a=1\\", []property{{"a", "1", 1}}},
		{"bad unicode escape kept", `a=\u12`, []property{{"a", `\u12`, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseProperties(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parseProperties(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzParseProperties(f *testing.F) {
	f.Add("a=b\nc:d\\\n e\n#x\n\\u0041=\\u00")
	f.Fuzz(func(t *testing.T, s string) {
		_ = parseProperties(s) // must not panic
	})
}
