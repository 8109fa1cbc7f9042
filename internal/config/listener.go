package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Listener is one entry of listeners or advertised.listeners:
// NAME://host:port. Host "" means every interface (when binding); Port 0
// means a port chosen by the system, and then the advertised port is the
// one actually bound.
type Listener struct {
	Name     string // listener name, e.g. PLAINTEXT
	Host     string // without brackets for IPv6
	Port     int32
	Protocol string // security protocol from listener.security.protocol.map
}

// Addr returns host:port, suitable for net.Listen.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))) }

// String returns the listener in Kafka's NAME://host:port form.
func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// parseListeners parses a listeners-style value. It checks syntax and
// name uniqueness only; protocols are resolved by the caller.
func parseListeners(v string) ([]Listener, error) {
	var out []Listener
	seen := map[string]bool{}
	for _, e := range splitList(v) {
		i := strings.Index(e, "://")
		if i <= 0 {
			return nil, fmt.Errorf("listener %q: expected NAME://host:port", e)
		}
		name := strings.ToUpper(e[:i])
		if !validListenerName(name) {
			return nil, fmt.Errorf("listener %q: invalid listener name %q", e, e[:i])
		}
		host, portStr, err := net.SplitHostPort(e[i+3:])
		if err != nil {
			return nil, fmt.Errorf("listener %q: expected NAME://host:port", e)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("listener %q: invalid port %q", e, portStr)
		}
		if seen[name] {
			return nil, fmt.Errorf("listener %q: name %s used twice", e, name)
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: host, Port: int32(port)})
	}
	return out, nil
}

func validListenerName(n string) bool {
	if n == "" {
		return false
	}
	for _, c := range n {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func checkListeners(v string) error {
	ls, err := parseListeners(v)
	if err != nil {
		return err
	}
	if len(ls) == 0 {
		return errors.New("no listener given")
	}
	return nil
}

func checkAdvertised(v string) error {
	ls, err := parseListeners(v)
	if err != nil {
		return err
	}
	for _, l := range ls {
		if l.Host == "0.0.0.0" || l.Host == "::" {
			return fmt.Errorf("listener %s: cannot advertise the non-routable address %s", l.Name, l.Host)
		}
	}
	return nil
}

// parseProtocolMap parses NAME:PROTOCOL,... into a map keyed by upper-case name.
func parseProtocolMap(v string) (map[string]string, error) {
	m := map[string]string{}
	for _, e := range splitList(v) {
		name, proto, ok := strings.Cut(e, ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" || proto == "" {
			return nil, fmt.Errorf("entry %q: expected NAME:PROTOCOL", e)
		}
		switch proto {
		case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		default:
			return nil, fmt.Errorf("entry %q: unknown security protocol %s", e, proto)
		}
		m[name] = proto
	}
	return m, nil
}

func checkProtocolMap(v string) error {
	_, err := parseProtocolMap(v)
	return err
}
