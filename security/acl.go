package security

import (
	"strings"
	"sync/atomic"
)

// ACLs with the semantics of Kafka's StandardAuthorizer (KIP-290 prefixes,
// KIP-801): a binding allows or denies one principal, from one host, one
// operation on the resources its pattern matches.
//
//   - A pattern is LITERAL (the name, or "*" for every resource of the
//     type) or PREFIXED (every name that starts with it).
//   - A principal is "User:<name>" or "User:*"; a host an address, a
//     CIDR range of addresses (cidr.go) or "*".
//   - DENY beats ALLOW. An ALLOW of Read, Write, Delete or Alter implies
//     Describe; of AlterConfigs, DescribeConfigs; All allows every
//     operation (and a DENY of All denies every one).
//   - super.users are allowed everything; a resource no binding matches
//     is allowed to everyone only with allow.everyone.if.no.acl.found.

// ResourceType is Kafka's resource type number.
type ResourceType int8

// Kafka's resource types.
const (
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

var resourceNames = map[ResourceType]string{
	ResourceTopic: "Topic", ResourceGroup: "Group", ResourceCluster: "Cluster",
	ResourceTransactionalID: "TransactionalId", ResourceDelegationToken: "DelegationToken", ResourceUser: "User",
}

func (t ResourceType) String() string { return resourceNames[t] }

// ParseResourceType is the inverse of String; false for an unknown name.
func ParseResourceType(s string) (ResourceType, bool) {
	for t, n := range resourceNames {
		if n == s {
			return t, true
		}
	}
	return 0, false
}

// PatternType is Kafka's pattern type number.
type PatternType int8

// Kafka's pattern types; Any and Match only in filters.
const (
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is Kafka's ACL operation number.
type Operation int8

// Kafka's ACL operations.
const (
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
	OpTwoPhaseCommit  Operation = 15
)

var opNames = map[Operation]string{
	OpAll: "All", OpRead: "Read", OpWrite: "Write", OpCreate: "Create", OpDelete: "Delete", OpAlter: "Alter",
	OpDescribe: "Describe", OpClusterAction: "ClusterAction", OpDescribeConfigs: "DescribeConfigs",
	OpAlterConfigs: "AlterConfigs", OpIdempotentWrite: "IdempotentWrite", OpCreateTokens: "CreateTokens",
	OpDescribeTokens: "DescribeTokens", OpTwoPhaseCommit: "TwoPhaseCommit",
}

func (o Operation) String() string { return opNames[o] }

// ParseOperation is the inverse of String.
func ParseOperation(s string) (Operation, bool) {
	for o, n := range opNames {
		if n == s {
			return o, true
		}
	}
	return 0, false
}

// Permission is Kafka's permission type number.
type Permission int8

// Kafka's permission types; Any only in filters.
const (
	PermissionAny   Permission = 1
	PermissionDeny  Permission = 2
	PermissionAllow Permission = 3
)

// ResourceOps are the operations that apply to a resource type, as
// Kafka's AuthorizedOperations report them.
var ResourceOps = map[ResourceType][]Operation{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:           {OpRead, OpDelete, OpDescribe, OpDescribeConfigs, OpAlterConfigs},
	ResourceCluster:         {OpCreate, OpAlter, OpDescribe, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite},
	ResourceTransactionalID: {OpWrite, OpDescribe, OpTwoPhaseCommit},
	ResourceDelegationToken: {OpDescribe},
	ResourceUser:            {OpCreateTokens, OpDescribeTokens},
}

// Binding is one ACL.
type Binding struct {
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType // Literal or Prefixed
	Principal    string
	Host         string
	Operation    Operation
	Permission   Permission
}

// Filter selects bindings, as DescribeAcls and DeleteAcls take them:
// Any (and nil strings) match everything, PatternMatch matches the
// bindings that would apply to the named resource.
type Filter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Matches reports whether the filter selects b.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	switch f.PatternType {
	case PatternAny:
		if f.ResourceName != nil && *f.ResourceName != b.ResourceName {
			return false
		}
	case PatternMatch:
		if f.ResourceName != nil && !patternMatches(b, *f.ResourceName) {
			return false
		}
	default:
		if f.PatternType != b.PatternType || f.ResourceName != nil && *f.ResourceName != b.ResourceName {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == b.Permission
}

func patternMatches(b Binding, name string) bool {
	switch b.PatternType {
	case PatternLiteral:
		return b.ResourceName == name || b.ResourceName == "*"
	case PatternPrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// Authorizer decides with a snapshot of the bindings, replaced whole by
// Load when they change (in etcd, on any broker).
type Authorizer struct {
	superUsers   map[string]bool
	allowIfNoACL bool
	byType       atomic.Pointer[map[ResourceType][]loaded]
}

// loaded is a binding as the authorizer holds it, with its host parsed.
type loaded struct {
	Binding
	host hostMatcher
}

// NewAuthorizer makes an authorizer with super.users (a ';'-separated
// list of principals) and allow.everyone.if.no.acl.found.
func NewAuthorizer(superUsers string, allowIfNoACL bool) *Authorizer {
	a := &Authorizer{superUsers: map[string]bool{}, allowIfNoACL: allowIfNoACL}
	for _, u := range strings.Split(superUsers, ";") {
		if u = strings.TrimSpace(u); u != "" {
			a.superUsers[u] = true
		}
	}
	a.Load(nil)
	return a
}

// Load replaces the bindings.
func (a *Authorizer) Load(bs []Binding) {
	m := map[ResourceType][]loaded{}
	for _, b := range bs {
		m[b.ResourceType] = append(m[b.ResourceType], loaded{b, newHostMatcher(b.Host)})
	}
	a.byType.Store(&m)
}

// Bindings are the loaded bindings the filter selects.
func (a *Authorizer) Bindings(f Filter) []Binding {
	var out []Binding
	for _, bs := range *a.byType.Load() {
		for _, b := range bs {
			if f.Matches(b.Binding) {
				out = append(out, b.Binding)
			}
		}
	}
	return out
}

// implies reports whether an ALLOW of granted allows op.
func implies(granted, op Operation) bool {
	switch {
	case granted == op || granted == OpAll:
		return true
	case op == OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case op == OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

// SuperUser reports whether principal is one of super.users.
func (a *Authorizer) SuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize decides whether principal, connected from host, may do op on
// the resource of type t named name.
func (a *Authorizer) Authorize(principal, host string, op Operation, t ResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	found, allowed := false, false
	for _, b := range (*a.byType.Load())[t] {
		if !patternMatches(b.Binding, name) {
			continue
		}
		found = true
		if b.Principal != principal && b.Principal != "User:*" || !b.host.matches(host) {
			continue
		}
		if b.Permission == PermissionDeny && (b.Operation == op || b.Operation == OpAll) {
			return false
		}
		if b.Permission == PermissionAllow && implies(b.Operation, op) {
			allowed = true
		}
	}
	if !found {
		return a.allowIfNoACL
	}
	return allowed
}

// AuthorizedOps is the bit set of the operations on a resource principal
// may do, as AuthorizedOperations report it (bit n for operation n).
func (a *Authorizer) AuthorizedOps(principal, host string, t ResourceType, name string) int32 {
	var set int32
	for _, op := range ResourceOps[t] {
		if a.Authorize(principal, host, op, t, name) {
			set |= 1 << op
		}
	}
	return set
}

// AnyAllowed reports whether principal may do op on some resource of type
// t: Kafka's authorizeByResourceType (InitProducerId allows an
// idempotent producer with Write on any topic).
func (a *Authorizer) AnyAllowed(principal, host string, op Operation, t ResourceType) bool {
	if a.superUsers[principal] {
		return true
	}
	for _, b := range (*a.byType.Load())[t] {
		if b.Permission == PermissionAllow && implies(b.Operation, op) &&
			(b.Principal == principal || b.Principal == "User:*") && b.host.matches(host) &&
			a.Authorize(principal, host, op, t, b.ResourceName) {
			return true
		}
	}
	return false
}
