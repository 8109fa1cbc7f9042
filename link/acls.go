package link

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACLFilter selects ACLs as DescribeAcls and DeleteAcls do (Any and nil
// match everything; pattern type MATCH selects the ACLs that apply to the
// named resource). A link with sync.acls makes this cluster's ACLs that
// its filters select the source's that they select: it creates those
// missing here and deletes those the source no longer has, so ACLs made
// here by hand belong outside its filters (as with Confluent's cluster
// links).
type ACLFilter struct {
	ResourceType kmsg.ACLResourceType
	Name         *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// ACL is one ACL binding.
type ACL struct {
	ResourceType kmsg.ACLResourceType
	Name         string
	PatternType  kmsg.ACLResourcePatternType
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// String is the ACL as kafka-acls.sh lists it, for logs and errors.
func (a ACL) String() string {
	return fmt.Sprintf("%s %s:%s (%s) %s %s from %s", a.Permission, a.ResourceType, a.Name, a.PatternType, a.Principal, a.Operation, a.Host)
}

// aclFiltersJSON is acl.filters, in the JSON of Confluent's cluster links:
//
//	{"aclFilters": [{"resourceFilter": {"resourceType": "topic", "name": "orders", "patternType": "match"},
//	                 "accessFilter": {"principal": "User:alice", "host": "*", "operation": "any", "permissionType": "any"}}]}
//
// A field left out matches anything.
type aclFiltersJSON struct {
	ACLFilters []struct {
		ResourceFilter struct {
			ResourceType string  `json:"resourceType"`
			Name         *string `json:"name"`
			PatternType  string  `json:"patternType"`
		} `json:"resourceFilter"`
		AccessFilter struct {
			Principal      *string `json:"principal"`
			Host           *string `json:"host"`
			Operation      string  `json:"operation"`
			PermissionType string  `json:"permissionType"`
		} `json:"accessFilter"`
	} `json:"aclFilters"`
}

// ParseACLFilters parses acl.filters.
func ParseACLFilters(v string) ([]ACLFilter, error) {
	var j aclFiltersJSON
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("%s: %w", KeyACLFilters, err)
	}
	if len(j.ACLFilters) == 0 {
		return nil, fmt.Errorf("%s: no filter in aclFilters", KeyACLFilters)
	}
	orAny := func(s string) string {
		if s == "" {
			return "any"
		}
		return s
	}
	var out []ACLFilter
	var errs []error
	for i, f := range j.ACLFilters {
		var af ACLFilter
		var err error
		if af.ResourceType, err = kmsg.ParseACLResourceType(orAny(f.ResourceFilter.ResourceType)); err != nil {
			errs = append(errs, fmt.Errorf("filter %d: resourceType %q", i, f.ResourceFilter.ResourceType))
		}
		if af.PatternType, err = kmsg.ParseACLResourcePatternType(orAny(f.ResourceFilter.PatternType)); err != nil {
			errs = append(errs, fmt.Errorf("filter %d: patternType %q", i, f.ResourceFilter.PatternType))
		}
		if af.Operation, err = kmsg.ParseACLOperation(orAny(f.AccessFilter.Operation)); err != nil {
			errs = append(errs, fmt.Errorf("filter %d: operation %q", i, f.AccessFilter.Operation))
		}
		if af.Permission, err = kmsg.ParseACLPermissionType(orAny(f.AccessFilter.PermissionType)); err != nil {
			errs = append(errs, fmt.Errorf("filter %d: permissionType %q", i, f.AccessFilter.PermissionType))
		}
		af.Name, af.Principal, af.Host = f.ResourceFilter.Name, f.AccessFilter.Principal, f.AccessFilter.Host
		out = append(out, af)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", KeyACLFilters, errors.Join(errs...))
	}
	return out, nil
}

// SourceACLs are the source's ACLs that any of filters selects, each once.
func SourceACLs(ctx context.Context, cl *kgo.Client, filters []ACLFilter) ([]ACL, error) {
	seen := map[ACL]bool{}
	var out []ACL
	for _, f := range filters {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName, req.ResourcePatternType = f.ResourceType, f.Name, f.PatternType
		req.Principal, req.Host, req.Operation, req.PermissionType = f.Principal, f.Host, f.Operation, f.Permission
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("describing the source's ACLs: %w", err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if errors.Is(err, kerr.SecurityDisabled) {
				return nil, fmt.Errorf("describing the source's ACLs: %w (the source has no authorizer)", err)
			}
			return nil, fmt.Errorf("describing the source's ACLs: %w", err)
		}
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				acl := ACL{ResourceType: r.ResourceType, Name: r.ResourceName, PatternType: r.ResourcePatternType,
					Principal: a.Principal, Host: a.Host, Operation: a.Operation, Permission: a.PermissionType}
				if !seen[acl] {
					seen[acl] = true
					out = append(out, acl)
				}
			}
		}
	}
	return out, nil
}
