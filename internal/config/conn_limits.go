package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParseIPOverrides reads max.connections.per.ip.overrides: host:limit
// pairs, comma-separated, as Kafka takes them; a host that is not an IP
// address is resolved by lookup (nil lookup: net.LookupHost), each of its
// addresses getting the limit. An unresolvable host is an error.
func ParseIPOverrides(v string, lookup func(host string) ([]string, error)) (map[string]int, error) {
	if lookup == nil {
		lookup = net.LookupHost
	}
	out := map[string]int{}
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		i := strings.LastIndex(e, ":")
		if i <= 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q is not host:limit", e)
		}
		host := strings.Trim(strings.TrimSpace(e[:i]), "[]")
		n, err := strconv.Atoi(strings.TrimSpace(e[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q: the limit must be a number >= 0", e)
		}
		if ip := net.ParseIP(host); ip != nil {
			out[ip.String()] = n
			continue
		}
		addrs, err := lookup(host)
		if err != nil {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q: %w", e, err)
		}
		for _, a := range addrs {
			if ip := net.ParseIP(a); ip != nil {
				out[ip.String()] = n
			}
		}
	}
	return out, nil
}

// checkIPOverrides checks the form only: resolving host names waits for
// the broker to read the setting.
func checkIPOverrides(v string) error {
	_, err := ParseIPOverrides(v, func(string) ([]string, error) { return nil, nil })
	return err
}
