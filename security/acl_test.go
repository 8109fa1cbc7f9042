package security

import "testing"

func TestAuthorizerSemantics(t *testing.T) {
	a := NewAuthorizer("User:admin; User:broker", false)
	a.Load([]Binding{
		{ResourceTopic, "orders", PatternLiteral, "User:alice", "*", OpRead, PermissionAllow},
		{ResourceTopic, "pay", PatternPrefixed, "User:alice", "*", OpWrite, PermissionAllow},
		{ResourceTopic, "payroll", PatternLiteral, "User:alice", "*", OpAll, PermissionDeny},
		{ResourceTopic, "*", PatternLiteral, "User:*", "10.0.0.1", OpDescribe, PermissionAllow},
		{ResourceTopic, "conf", PatternLiteral, "User:bob", "*", OpAlterConfigs, PermissionAllow},
		{ResourceGroup, "g", PatternPrefixed, "User:alice", "*", OpRead, PermissionAllow},
		// Host ranges (cidr.go).
		{ResourceTopic, "ranged", PatternLiteral, "User:carol", "10.0.0.0/8", OpWrite, PermissionAllow},
		{ResourceTopic, "ranged", PatternLiteral, "User:carol", "10.9.0.0/16", OpWrite, PermissionDeny},
		{ResourceTopic, "ranged", PatternLiteral, "User:dave", "*", OpRead, PermissionAllow},
		{ResourceTopic, "ranged", PatternLiteral, "User:dave", "2001:db8::/32", OpRead, PermissionDeny},
	})
	checkDecisions(t, a, []decision{
		{"User:alice", "1.2.3.4", OpRead, ResourceTopic, "orders", true},
		{"User:alice", "1.2.3.4", OpDescribe, ResourceTopic, "orders", true}, // Read implies Describe
		{"User:alice", "1.2.3.4", OpWrite, ResourceTopic, "orders", false},
		{"User:alice", "1.2.3.4", OpWrite, ResourceTopic, "payments", true}, // prefixed
		{"User:alice", "1.2.3.4", OpWrite, ResourceTopic, "payroll", false}, // DENY beats ALLOW
		{"User:alice", "1.2.3.4", OpDescribe, ResourceTopic, "payroll", false},
		{"User:carol", "10.0.0.1", OpDescribe, ResourceTopic, "anything", true}, // User:* and host
		{"User:carol", "10.0.0.2", OpDescribe, ResourceTopic, "anything", false},
		{"User:bob", "1.2.3.4", OpDescribeConfigs, ResourceTopic, "conf", true}, // AlterConfigs implies DescribeConfigs
		{"User:bob", "1.2.3.4", OpDescribe, ResourceTopic, "conf", false},
		{"User:alice", "1.2.3.4", OpRead, ResourceGroup, "g-1", true},
		{"User:alice", "1.2.3.4", OpRead, ResourceGroup, "other", false}, // no ACL: denied
		{"User:admin", "1.2.3.4", OpAlter, ResourceCluster, "kafka-cluster", true},
		{"User:broker", "1.2.3.4", OpClusterAction, ResourceCluster, "kafka-cluster", true},
		{"User:carol", "10.1.2.3", OpWrite, ResourceTopic, "ranged", true},
		{"User:carol", "10.9.1.1", OpWrite, ResourceTopic, "ranged", false}, // the narrower DENY
		{"User:carol", "11.0.0.1", OpWrite, ResourceTopic, "ranged", false},
		{"User:dave", "2001:db8::7", OpRead, ResourceTopic, "ranged", false},
		{"User:dave", "2001:db9::7", OpRead, ResourceTopic, "ranged", true},
	})
	open := NewAuthorizer("", true)
	open.Load(nil)
	if !open.Authorize("User:x", "h", OpWrite, ResourceTopic, "t") {
		t.Error("allow.everyone.if.no.acl.found: a resource without ACLs was denied")
	}
	if !a.AnyAllowed("User:alice", "h", OpWrite, ResourceTopic) || a.AnyAllowed("User:bob", "h", OpWrite, ResourceTopic) ||
		!a.AnyAllowed("User:carol", "10.1.2.3", OpWrite, ResourceTopic) || a.AnyAllowed("User:carol", "11.0.0.1", OpWrite, ResourceTopic) {
		t.Error("AnyAllowed")
	}
	if ops := a.AuthorizedOps("User:alice", "h", ResourceTopic, "orders"); ops != 1<<OpRead|1<<OpDescribe {
		t.Errorf("AuthorizedOps = %b", ops)
	}
	f := Filter{ResourceType: ResourceTopic, PatternType: PatternMatch, ResourceName: ptr("payments"), Operation: OpAny, Permission: PermissionAny}
	if got := a.Bindings(f); len(got) != 2 { // pay (prefixed) and * (literal wildcard)
		t.Errorf("MATCH filter for payments: %+v", got)
	}
}

// decision is what Authorize should answer.
type decision struct {
	who, host string
	op        Operation
	rt        ResourceType
	name      string
	want      bool
}

func checkDecisions(t *testing.T, a *Authorizer, tests []decision) {
	t.Helper()
	for _, tt := range tests {
		if got := a.Authorize(tt.who, tt.host, tt.op, tt.rt, tt.name); got != tt.want {
			t.Errorf("%s@%s %s %s %q = %v, want %v", tt.who, tt.host, tt.op, tt.rt, tt.name, got, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
