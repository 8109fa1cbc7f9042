package security

import "testing"

// ACL hosts as Kafka 4.4's AclControlManager checks them at CreateAcls
// (the messages are commons-net's SubnetUtils and SubnetUtils6 behind
// Kafka's own; compat's TestCreateAclsHostsAsKafka asks Kafka itself).
func TestValidHost(t *testing.T) {
	tests := []struct{ host, want string }{
		{"*", ""},
		{"10.1.2.3", ""},
		{"not-an-address", ""}, // no "/": a literal host, never parsed
		{"10.0.0.0/8", ""},
		{"10.1.2.3/8", ""}, // host bits set: the range is 10.0.0.0/8
		{"010.0.0.0/8", ""},
		{"0.0.0.0/0", ""},
		{"127.0.0.1/32", ""},
		{"2001:db8::/32", ""},
		{"::1/128", ""},
		{"::/0", ""},
		{"[2001:db8::]/32", ""},
		{"::1.2.3.4/128", ""}, // IPv4-compatible: IPv6
		{"fe80::1%2/64", ""},
		{"2001:db8::/+32", ""},
		{"", "Host pattern cannot be null or empty"},
		{"10.0.0.0/33", "Invalid CIDR notation '10.0.0.0/33': Value [33] not in range [0,32]"},
		{"10.0.0.256/8", "Invalid CIDR notation '10.0.0.256/8': Value [256] not in range [0,255]"},
		{"10.0.0/8", "Invalid CIDR notation '10.0.0/8': Could not parse [10.0.0/8]"},
		{"10.0.0.0/", "Invalid CIDR notation '10.0.0.0/': Could not parse [10.0.0.0/]"},
		{"10.0.0.0/100", "Invalid CIDR notation '10.0.0.0/100': Could not parse [10.0.0.0/100]"},
		{"10.0.0.0/8/8", "Invalid CIDR notation '10.0.0.0/8/8': Could not parse [10.0.0.0/8/8]"},
		{"host/8", "Invalid CIDR notation 'host/8': Could not parse [host/8]"},
		{"2001:db8::/129", "Invalid CIDR notation '2001:db8::/129': Could not parse [2001:db8::/129] - prefix length must be between 0 and 128"},
		{"2001:db8::/-1", "Invalid CIDR notation '2001:db8::/-1': Could not parse [2001:db8::/-1] - prefix length must be between 0 and 128"},
		{"2001:db8::/x", "Invalid CIDR notation '2001:db8::/x': Could not parse [2001:db8::/x] - invalid prefix length"},
		{"2001:db8::/", "Invalid CIDR notation '2001:db8::/': Could not parse [2001:db8::/] - invalid prefix length"},
		{"2001:db8:::/32", "Invalid CIDR notation '2001:db8:::/32': Could not parse [2001:db8:::]"},
		{"::ffff:10.0.0.0/104", "Invalid CIDR notation '::ffff:10.0.0.0/104': Could not parse [::ffff:10.0.0.0] - not an IPv6 address"},
		{"fe80::1%nosuchif0/64", "Invalid CIDR notation 'fe80::1%nosuchif0/64': Could not parse [fe80::1%nosuchif0]"},
	}
	for _, tt := range tests {
		got := ""
		if err := ValidHost(tt.host); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("ValidHost(%q) = %q, want %q", tt.host, got, tt.want)
		}
	}
}

// A range matches the client addresses in it, IPv4 ranges IPv4 clients
// and IPv6 ranges IPv6 ones (TestAuthorizerSemantics has ALLOW and DENY
// bindings of ranges).
func TestHostRanges(t *testing.T) {
	matches := []struct {
		acl, client string
		want        bool
	}{
		{"127.0.0.0/8", "127.0.0.1", true},
		{"127.0.0.0/8", "127.255.255.255", true},
		{"10.0.0.0/8", "127.0.0.1", false},
		{"10.1.2.3/8", "10.200.0.1", true},
		{"0.0.0.0/0", "192.0.2.1", true},
		{"0.0.0.0/0", "::1", false},
		{"127.0.0.1/32", "127.0.0.2", false},
		{"::1/128", "::1", true},
		{"::1/128", "::2", false},
		{"::/0", "127.0.0.1", false},
		{"2001:db8::/32", "2001:db8:ffff::1", true},
		{"2001:db8::/32", "2001:db9::1", false},
		{"127.0.0.0/8", "::ffff:127.0.0.1", true}, // an IPv4 client on a dual-stack socket
		{"fe80::/10", "fe80::1%eth0", true},
		{"10.0.0.0/33", "10.0.0.1", false}, // invalid: matches nothing
		{"10.0.0.0/8", "not-an-address", false},
	}
	for _, tt := range matches {
		if got := newHostMatcher(tt.acl).matches(tt.client); got != tt.want {
			t.Errorf("%s matches %s = %v, want %v", tt.acl, tt.client, got, tt.want)
		}
	}

	// Filters match a range's text, not the addresses in it.
	a := NewAuthorizer("", false)
	a.Load([]Binding{{ResourceTopic, "t", PatternLiteral, "User:alice", "10.0.0.0/8", OpWrite, PermissionAllow}})
	for host, want := range map[string]int{"10.0.0.0/8": 1, "10.1.2.3": 0} {
		if got := a.Bindings(Filter{ResourceType: ResourceAny, PatternType: PatternAny, Host: &host, Operation: OpAny, Permission: PermissionAny}); len(got) != want {
			t.Errorf("filter on host %s selects %d bindings, want %d", host, len(got), want)
		}
	}
}
