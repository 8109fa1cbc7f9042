package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ACLs as Kafka kept them in ZooKeeper: one key per resource pattern,
// holding every ACL bound to it.
//
//	/kafka-acl/<ResourceType>/<url-escaped name>                     LITERAL
//	/kafka-acl-extended/prefixed/<ResourceType>/<url-escaped name>  PREFIXED
//	    {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
//	                          "operation":"Read","host":"*"}]}

// ACLResource is a resource pattern: Kafka's resource type name (Topic,
// Group, ...), the name, and LITERAL or PREFIXED.
type ACLResource struct {
	Type    string
	Name    string
	Pattern string
}

// ACLEntry is one ACL bound to a resource pattern.
type ACLEntry struct {
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

type aclValue struct {
	Version int        `json:"version"`
	ACLs    []ACLEntry `json:"acls"`
}

func (s *Store) aclLiteralPrefix() string  { return s.root + "/kafka-acl/" }
func (s *Store) aclPrefixedPrefix() string { return s.root + "/kafka-acl-extended/prefixed/" }

func (s *Store) aclKey(r ACLResource) string {
	p := s.aclLiteralPrefix()
	if r.Pattern == "PREFIXED" {
		p = s.aclPrefixedPrefix()
	}
	return p + r.Type + "/" + url.PathEscape(r.Name)
}

// ACLs reads every ACL, by resource pattern, with the etcd revision of the
// read (for WatchACLs).
func (s *Store) ACLs(ctx context.Context) (map[ACLResource][]ACLEntry, int64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	out := map[ACLResource][]ACLEntry{}
	var rev int64
	for _, pfx := range []struct{ prefix, pattern string }{{s.aclLiteralPrefix(), "LITERAL"}, {s.aclPrefixedPrefix(), "PREFIXED"}} {
		opts := []clientv3.OpOption{clientv3.WithPrefix()}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.cli.Get(ctx, pfx.prefix, opts...)
		if err != nil {
			return nil, 0, fmt.Errorf("controller: reading ACLs: %w", err)
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			typ, esc, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), pfx.prefix), "/")
			if !ok {
				continue
			}
			name, err := url.PathUnescape(esc)
			if err != nil {
				continue
			}
			var v aclValue
			if err := json.Unmarshal(kv.Value, &v); err != nil {
				return nil, 0, fmt.Errorf("controller: ACLs of %s %q: %w", typ, name, err)
			}
			out[ACLResource{Type: typ, Name: name, Pattern: pfx.pattern}] = v.ACLs
		}
	}
	return out, rev, nil
}

// UpdateACLs changes the ACLs of one resource pattern with update, in a
// transaction conditioned on the revision read (retried on a lost race);
// no ACL left deletes the key.
func (s *Store) UpdateACLs(ctx context.Context, r ACLResource, update func([]ACLEntry) []ACLEntry) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	key := s.aclKey(r)
	for {
		resp, err := s.cli.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("controller: reading ACLs: %w", err)
		}
		var cur aclValue
		var rev int64
		if len(resp.Kvs) > 0 {
			rev = resp.Kvs[0].ModRevision
			if err := json.Unmarshal(resp.Kvs[0].Value, &cur); err != nil {
				return fmt.Errorf("controller: ACLs of %s %q: %w", r.Type, r.Name, err)
			}
		}
		next := update(slices.Clone(cur.ACLs))
		op := clientv3.OpDelete(key)
		if len(next) > 0 {
			v, err := json.Marshal(aclValue{Version: 1, ACLs: next})
			if err != nil {
				return err
			}
			op = clientv3.OpPut(key, string(v))
		}
		tr, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).Then(op).Commit()
		if err != nil {
			return fmt.Errorf("controller: writing ACLs: %w", err)
		}
		if tr.Succeeded {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// WatchACLs is WatchTopics for the ACLs; fromRevision comes from ACLs.
func (s *Store) WatchACLs(ctx context.Context, fromRevision int64, onChange func()) {
	s.watch(ctx, fromRevision, onChange, s.aclLiteralPrefix(), s.aclPrefixedPrefix())
}
