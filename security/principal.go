package security

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// A principal is Kafka's "<type>:<name>" string; the type is User.
const (
	UserPrefix = "User:"
	// Anonymous is the principal of a PLAINTEXT connection, or of a TLS
	// one without a client certificate.
	Anonymous = "User:ANONYMOUS"
)

// principalRule is one rule of ssl.principal.mapping.rules:
// RULE:pattern/replacement/[LU] or DEFAULT.
type principalRule struct {
	isDefault bool
	re        *regexp.Regexp // anchored: the rule applies when the whole name matches
	repl      string         // in Go's Expand syntax
	lower     bool
	upper     bool
}

// ruleSplit finds the rules of ssl.principal.mapping.rules, separated by
// commas or newlines, where a rule's pattern and replacement may hold
// escaped characters (\, \/) as in Kafka's parser.
var ruleSplit = regexp.MustCompile(`^\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?))\s*(?:[,\n]\s*|$)`)

func parsePrincipalRules(s string) ([]principalRule, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return []principalRule{{isDefault: true}}, nil
	}
	var out []principalRule
	for s != "" {
		m := ruleSplit.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("invalid rule at %q", s)
		}
		s = s[len(m[0]):]
		if m[1] == "DEFAULT" {
			out = append(out, principalRule{isDefault: true})
			continue
		}
		re, err := regexp.Compile(`^(?:` + m[2] + `)$`)
		if err != nil {
			return nil, fmt.Errorf("rule pattern %q: %w", m[2], err)
		}
		out = append(out, principalRule{re: re, repl: javaReplacement(m[3]), lower: m[4] == "L", upper: m[4] == "U"})
	}
	return out, nil
}

// javaReplacement turns a java.util.regex replacement ($1, \x for a
// literal x) into Go's (${1}, $$ for a literal $).
func javaReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		switch c := r[i]; {
		case c == '\\' && i+1 < len(r):
			i++
			if r[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(r[i])
			}
		case c == '$':
			j := i + 1
			for j < len(r) && r[j] >= '0' && r[j] <= '9' {
				j++
			}
			b.WriteString("${" + r[i+1:j] + "}")
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

var errNoRule = errors.New("no ssl.principal.mapping.rules rule matches")

// mapPrincipal applies the first matching rule to a distinguished name.
func mapPrincipal(rules []principalRule, dn string) (string, error) {
	for _, r := range rules {
		if r.isDefault {
			return dn, nil
		}
		m := r.re.FindStringSubmatchIndex(dn)
		if m == nil {
			continue
		}
		out := string(r.re.ExpandString(nil, r.repl, dn, m))
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w %q", errNoRule, dn)
}

// subjectDN is a certificate's subject as Java's X500Principal.getName()
// writes it (RFC 2253: the last RDN first, "CN=alice,OU=eng,O=acme").
func subjectDN(c *x509.Certificate) string {
	var rdn pkix.RDNSequence
	if _, err := asn1.Unmarshal(c.RawSubject, &rdn); err != nil {
		return c.Subject.String()
	}
	return rdn.String()
}
