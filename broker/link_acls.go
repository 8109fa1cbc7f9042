package broker

// ACL sync of cluster links (sync.acls, link/acls.go): on each look at
// the source, the controller broker makes this cluster's ACLs that the
// link's acl.filters select the source's that they select, creating the
// missing and deleting the extra in etcd as CreateAcls and DeleteAcls do.

import (
	"context"
	"errors"
	"fmt"

	"github.com/samsa-io/samsa/link"
	"github.com/samsa-io/samsa/security"
)

// linkACLErrKey is the key of a link's ACL sync error among its errors
// (topic names cannot hold parentheses).
const linkACLErrKey = "(acls)"

// errNoAuthorizer refuses sync.acls on a cluster that enforces no ACLs.
var errNoAuthorizer = errors.New("this cluster has no authorizer (authorizer.class.name): its ACLs cannot be synced")

func bindingOf(a link.ACL) security.Binding {
	return security.Binding{ResourceType: security.ResourceType(a.ResourceType), ResourceName: a.Name,
		PatternType: security.PatternType(a.PatternType), Principal: a.Principal, Host: a.Host,
		Operation: security.Operation(a.Operation), Permission: security.Permission(a.Permission)}
}

// syncLinkACLs brings the ACLs that s's filters select here to what they
// select on the source: returns how many it created and deleted.
func (b *Broker) syncLinkACLs(ctx context.Context, s *link.Spec) (created, deleted int, err error) {
	if !s.SyncACLs {
		return 0, 0, nil
	}
	if b.authz == nil {
		return 0, 0, errNoAuthorizer
	}
	cl := b.linkMgr.Client(s.Name)
	if cl == nil {
		return 0, 0, nil
	}
	src, err := link.SourceACLs(ctx, cl, s.ACLs)
	if err != nil {
		return 0, 0, err
	}
	want := map[security.Binding]bool{}
	var errs []error
	for _, a := range src {
		bd := bindingOf(a)
		if err := validBinding(bd); err != nil {
			errs = append(errs, fmt.Errorf("source ACL %s not copied: %v", a, err))
			continue
		}
		want[bd] = true
	}
	have := map[security.Binding]bool{}
	for _, f := range s.ACLs {
		sf, ok := aclFilter(f.ResourceType, f.Name, f.PatternType, f.Principal, f.Host, f.Operation, f.Permission)
		if !ok {
			return 0, 0, fmt.Errorf("acl.filters: invalid filter %+v", f)
		}
		for _, bd := range b.authz.Bindings(sf) {
			have[bd] = true
		}
	}
	for bd := range want {
		if have[bd] {
			continue
		}
		if err := b.addACL(ctx, bd); err != nil {
			errs = append(errs, err)
			continue
		}
		created++
	}
	for bd := range have {
		if want[bd] {
			continue
		}
		if err := b.removeACL(ctx, bd); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted++
	}
	if created+deleted > 0 {
		if _, err := b.loadACLs(ctx); err != nil {
			errs = append(errs, err)
		}
		b.log.Info("cluster link: ACLs synced", "link", s.Name, "created", created, "deleted", deleted)
	}
	return created, deleted, errors.Join(errs...)
}
