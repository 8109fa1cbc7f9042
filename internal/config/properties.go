package config

import (
	"strings"
	"unicode/utf8"
)

// property is one key=value pair read from a .properties file, with the
// line on which its logical line started (for error messages).
type property struct {
	key, value string
	line       int
}

// parseProperties reads text in the format of java.util.Properties.load:
//
//   - lines are ended by \n, \r or \r\n;
//   - a line whose first non-blank character is '#' or '!' is a comment;
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading white space is dropped (comments never continue);
//   - the key ends at the first unescaped '=', ':' or white space; white
//     space around the separator is skipped, and the rest is the value;
//   - escapes \t \n \r \f and \uXXXX are decoded, any other \c is c.
//
// It never fails: like Java, a malformed \u escape is kept literally
// (Java throws; we prefer to report the odd value through validation).
func parseProperties(text string) []property {
	var out []property
	lines := splitLines(text)
	for i := 0; i < len(lines); i++ {
		start := i + 1
		l := strings.TrimLeft(lines[i], " \t\f")
		if l == "" || l[0] == '#' || l[0] == '!' {
			continue
		}
		logical := l
		for continues(logical) && i+1 < len(lines) {
			logical = logical[:len(logical)-1] + strings.TrimLeft(lines[i+1], " \t\f")
			i++
		}
		if continues(logical) { // a final backslash at end of input is dropped
			logical = logical[:len(logical)-1]
		}
		k, v := splitKeyValue(logical)
		out = append(out, property{key: unescape(k), value: unescape(v), line: start})
	}
	return out
}

func splitLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.Split(text, "\n")
}

// continues reports whether l ends with an odd number of backslashes.
func continues(l string) bool {
	n := 0
	for i := len(l) - 1; i >= 0 && l[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func splitKeyValue(l string) (key, value string) {
	i := 0
	for i < len(l) {
		c := l[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(l) {
		i = len(l)
	}
	key = l[:i]
	rest := strings.TrimLeft(l[i:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if r, ok := hex4(s[i+1:]); ok {
				b.WriteRune(r)
				i += 4
			} else {
				b.WriteString(`\u`)
			}
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	if !utf8.ValidRune(r) {
		return utf8.RuneError, true
	}
	return r, true
}
