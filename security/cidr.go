package security

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Host ranges in ACLs (KIP-1276, Kafka 4.4): a binding's host may be a
// CIDR range, 10.0.0.0/8 or 2001:db8::/32, that matches every client
// address in it. A host with a "/" is a range; one with a ":" too an IPv6
// range. Kafka parses them with commons-net's SubnetUtils and
// SubnetUtils6, and ParseHostRange accepts what they accept:
//
//   - IPv4: four groups of one to three digits, each at most 255, a "/"
//     and one or two digits at most 32 ("010.1.2.3/8" is 10.0.0.0/8; the
//     host bits need not be zero);
//   - IPv6: an IPv6 literal (optionally in brackets, but not an
//     IPv4-mapped ::ffff:a.b.c.d one), a "/" and a length of 0 to 128.
//
// An IPv4 range never matches an IPv6 client and an IPv6 range never an
// IPv4 one (Kafka's InetAddress for an IPv4-mapped client is IPv4).
// DescribeAcls and DeleteAcls filters match a range's text literally,
// as every other host.

// HostError is an ACL host Kafka refuses; its text is Kafka's message
// (commons-net's within Kafka's), capitalised as Kafka's is.
type HostError string

func (e HostError) Error() string { return string(e) }

// ValidHost checks an ACL host as Kafka's AclControlManager does at
// CreateAcls; the error's text is Kafka's message, for the client.
func ValidHost(host string) error {
	switch {
	case host == "":
		return HostError("Host pattern cannot be null or empty")
	case host == "*" || !strings.Contains(host, "/"):
		return nil
	}
	if _, err := ParseHostRange(host); err != nil {
		return HostError(fmt.Sprintf("Invalid CIDR notation '%s': %v", host, err))
	}
	return nil
}

// ParseHostRange parses an ACL host that is a CIDR range; its error's text
// is commons-net's, which Kafka passes on.
func ParseHostRange(s string) (netip.Prefix, error) {
	if strings.Contains(s, ":") {
		return parseRange6(s)
	}
	return parseRange4(s)
}

func parseRange4(s string) (netip.Prefix, error) {
	fail := HostError(fmt.Sprintf("Could not parse [%s]", s))
	addr, bits, ok := strings.Cut(s, "/")
	groups := strings.Split(addr, ".")
	if !ok || len(groups) != 4 || !asciiDigits(bits, 1, 2) {
		return netip.Prefix{}, fail
	}
	var a [4]byte
	for i, g := range groups {
		if !asciiDigits(g, 1, 3) {
			return netip.Prefix{}, fail
		}
		n, _ := strconv.Atoi(g)
		if err := inRange(n, 255); err != nil {
			return netip.Prefix{}, err
		}
		a[i] = byte(n)
	}
	n, _ := strconv.Atoi(bits)
	if err := inRange(n, 32); err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(netip.AddrFrom4(a), n).Masked(), nil
}

func inRange(n, max int) error {
	if n > max {
		return HostError(fmt.Sprintf("Value [%d] not in range [0,%d]", n, max))
	}
	return nil
}

// asciiDigits reports whether s is min to max ASCII digits.
func asciiDigits(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func parseRange6(s string) (netip.Prefix, error) {
	addr, bits, _ := strings.Cut(s, "/")
	// Java's Integer.parseInt: an optional sign, then decimal digits.
	n, err := strconv.ParseInt(bits, 10, 32)
	if err != nil {
		return netip.Prefix{}, HostError(fmt.Sprintf("Could not parse [%s] - invalid prefix length", s))
	}
	if n < 0 || n > 128 {
		return netip.Prefix{}, HostError(fmt.Sprintf("Could not parse [%s] - prefix length must be between 0 and 128", s))
	}
	if len(addr) > 2 && addr[0] == '[' && addr[len(addr)-1] == ']' {
		addr = addr[1 : len(addr)-1]
	}
	ip, err := netip.ParseAddr(addr)
	if err == nil && ip.Zone() != "" {
		// Java takes a numeric scope id (and the name of an interface
		// the broker has, which means nothing to a client's address).
		if _, zerr := strconv.ParseUint(ip.Zone(), 10, 31); zerr != nil {
			err = zerr
		}
	}
	switch {
	case err != nil || !ip.Is6():
		return netip.Prefix{}, HostError(fmt.Sprintf("Could not parse [%s]", addr))
	case ip.Is4In6():
		return netip.Prefix{}, HostError(fmt.Sprintf("Could not parse [%s] - not an IPv6 address", addr))
	}
	return netip.PrefixFrom(ip.WithZone(""), int(n)).Masked(), nil
}

// hostMatcher is a binding's host, as Authorize compares a client's
// address with it.
type hostMatcher struct {
	host   string
	prefix netip.Prefix // valid when host is a range
}

func newHostMatcher(host string) hostMatcher {
	m := hostMatcher{host: host}
	if strings.Contains(host, "/") {
		m.prefix, _ = ParseHostRange(host) // invalid: matches no address
	}
	return m
}

// matches reports whether a client connected from host (an address as
// net.SplitHostPort leaves it) is one the binding names.
func (m hostMatcher) matches(host string) bool {
	if m.host == "*" || m.host == host {
		return true
	}
	if !m.prefix.IsValid() {
		return false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap().WithZone("")
	return ip.Is4() == m.prefix.Addr().Is4() && m.prefix.Contains(ip)
}
