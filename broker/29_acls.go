package broker

// DescribeAcls v1-3 (key 29), CreateAcls v1-3 (30), DeleteAcls v1-3 (31):
// ACL bindings in etcd (controller.ACLs), enforced by security.Authorizer.
// v1: pattern types (KIP-290). v2: flexible. Without an authorizer each
// answers SECURITY_DISABLED, as Kafka does. Describe needs Describe on the
// cluster, Create and Delete need Alter.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/security"
)

// aclFilter converts a wire filter; false when it is not a valid filter.
func aclFilter(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType, principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) (security.Filter, bool) {
	f := security.Filter{ResourceType: security.ResourceType(rt), ResourceName: name, PatternType: security.PatternType(pt),
		Principal: principal, Host: host, Operation: security.Operation(op), Permission: security.Permission(perm)}
	ok := (f.ResourceType == security.ResourceAny || f.ResourceType.String() != "") &&
		f.PatternType >= security.PatternAny && f.PatternType <= security.PatternPrefixed &&
		(f.Operation == security.OpAny || f.Operation.String() != "") &&
		f.Permission >= security.PermissionAny && f.Permission <= security.PermissionAllow
	return f, ok
}

// validBinding checks a binding to create as Kafka's AclControlManager
// does; the error message is for the client.
func validBinding(b security.Binding) error {
	hostErr := security.ValidHost(b.Host)
	switch {
	case b.ResourceType.String() == "":
		return fmt.Errorf("invalid resource type %d", b.ResourceType)
	case b.PatternType != security.PatternLiteral && b.PatternType != security.PatternPrefixed:
		return fmt.Errorf("invalid pattern type %d", b.PatternType)
	case b.Operation.String() == "":
		return fmt.Errorf("invalid operation %d", b.Operation)
	case b.Permission != security.PermissionAllow && b.Permission != security.PermissionDeny:
		return fmt.Errorf("invalid permission type %d", b.Permission)
	case b.ResourceName == "":
		return fmt.Errorf("resource name should not be empty")
	case b.ResourceType == security.ResourceCluster && b.ResourceName != clusterName:
		return fmt.Errorf("the only valid name for the CLUSTER resource is %s", clusterName)
	case !strings.Contains(b.Principal, ":") || strings.HasPrefix(b.Principal, ":"):
		return fmt.Errorf("could not parse principal from `%s` (no colon is found)", b.Principal)
	case hostErr != nil:
		return hostErr
	case !slices.Contains(security.ResourceOps[b.ResourceType], b.Operation) && b.Operation != security.OpAll:
		return fmt.Errorf("operation %s does not apply to resource type %s", b.Operation, b.ResourceType)
	}
	return nil
}

func (b *Broker) handleDescribeAcls(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if b.authz == nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured.")
		return resp, nil
	}
	if err := b.clusterRefusal(r, security.OpDescribe); err != nil {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	f, ok := aclFilter(req.ResourceType, req.ResourceName, req.ResourcePatternType, req.Principal, req.Host, req.Operation, req.PermissionType)
	if !ok {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("invalid ACL filter")
		return resp, nil
	}
	type key struct {
		t    security.ResourceType
		name string
		pt   security.PatternType
	}
	idx := map[key]int{}
	for _, bd := range b.authz.Bindings(f) {
		k := key{bd.ResourceType, bd.ResourceName, bd.PatternType}
		i, ok := idx[k]
		if !ok {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = kmsg.ACLResourceType(k.t), k.name, kmsg.ACLResourcePatternType(k.pt)
			resp.Resources = append(resp.Resources, res)
			i = len(resp.Resources) - 1
			idx[k] = i
		}
		acl := kmsg.NewDescribeACLsResponseResourceACL()
		acl.Principal, acl.Host, acl.Operation, acl.PermissionType = bd.Principal, bd.Host, kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, acl)
	}
	return resp, nil
}

func (b *Broker) handleCreateAcls(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	refusal := b.clusterRefusal(r, security.OpAlter)
	for _, c := range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		bd := security.Binding{ResourceType: security.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
			PatternType: security.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
			Operation: security.Operation(c.Operation), Permission: security.Permission(c.PermissionType)}
		switch {
		case b.authz == nil:
			res.ErrorCode, res.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured.")
		case refusal != nil:
			res.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		default:
			if err := validBinding(bd); err != nil {
				res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
				break
			}
			if err := b.addACL(ctx, bd); err != nil {
				res.ErrorCode, res.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
			}
		}
		resp.Results = append(resp.Results, res)
	}
	if b.authz != nil && refusal == nil {
		if _, err := b.loadACLs(ctx); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

func (b *Broker) handleDeleteAcls(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	refusal := b.clusterRefusal(r, security.OpAlter)
	for _, fl := range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		f, ok := aclFilter(fl.ResourceType, fl.ResourceName, fl.ResourcePatternType, fl.Principal, fl.Host, fl.Operation, fl.PermissionType)
		switch {
		case b.authz == nil:
			res.ErrorCode, res.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr("No Authorizer is configured.")
		case refusal != nil:
			res.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		case !ok:
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("invalid ACL filter")
		default:
			for _, bd := range b.authz.Bindings(f) {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(bd.ResourceType), bd.ResourceName, kmsg.ACLResourcePatternType(bd.PatternType)
				m.Principal, m.Host, m.Operation, m.PermissionType = bd.Principal, bd.Host, kmsg.ACLOperation(bd.Operation), kmsg.ACLPermissionType(bd.Permission)
				if err := b.removeACL(ctx, bd); err != nil {
					m.ErrorCode, m.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
				}
				res.MatchingACLs = append(res.MatchingACLs, m)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	if b.authz != nil && refusal == nil {
		if _, err := b.loadACLs(ctx); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// addACL stores a binding in etcd (the authorizers load it from there).
func (b *Broker) addACL(ctx context.Context, bd security.Binding) error {
	entry := aclEntry(bd)
	return b.store.UpdateACLs(ctx, aclResource(bd), func(cur []controller.ACLEntry) []controller.ACLEntry {
		if !slices.Contains(cur, entry) {
			cur = append(cur, entry)
		}
		return cur
	})
}

// removeACL deletes a binding from etcd.
func (b *Broker) removeACL(ctx context.Context, bd security.Binding) error {
	entry := aclEntry(bd)
	return b.store.UpdateACLs(ctx, aclResource(bd), func(cur []controller.ACLEntry) []controller.ACLEntry {
		return slices.DeleteFunc(cur, func(e controller.ACLEntry) bool { return e == entry })
	})
}
