package controller

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Entity configs: the settings Kafka kept in ZooKeeper under
// /config/<kind>/<name> for users (SCRAM credentials, quotas) and clients
// (quotas), in the same {"version":1,"config":{...}} form as topic
// configs. Names are URL-escaped in the key (Kafka's Sanitizer).

// Entity kinds. A user and client id pair (Kafka's
// /config/users/<user>/clients/<client-id>) is kind user-clients, named
// UserClientName(user, client): kinds stay one key level deep.
const (
	EntityUsers       = "users"
	EntityClients     = "clients"
	EntityUserClients = "user-clients"
	// EntityGroups are the group configs (Kafka's GROUP config resource).
	EntityGroups = "groups"
	// EntityClientMetrics are the client-metrics subscriptions (Kafka's
	// CLIENT_METRICS config resource, KIP-714).
	EntityClientMetrics = "client-metrics"
)

// UserClientName names the user-clients entity of a user and a client id.
func UserClientName(user, clientID string) string {
	return url.PathEscape(user) + "/" + url.PathEscape(clientID)
}

// SplitUserClientName is the inverse of UserClientName.
func SplitUserClientName(name string) (user, clientID string, ok bool) {
	u, c, ok := strings.Cut(name, "/")
	if !ok {
		return "", "", false
	}
	u, err1 := url.PathUnescape(u)
	c, err2 := url.PathUnescape(c)
	return u, c, err1 == nil && err2 == nil
}

func (s *Store) entityPrefix(kind string) string { return s.root + "/config/" + kind + "/" }
func (s *Store) entityKey(kind, name string) string {
	return s.entityPrefix(kind) + url.PathEscape(name)
}

// EntityConfig reads the config of one entity; empty when it has none.
func (s *Store) EntityConfig(ctx context.Context, kind, name string) (map[string]string, error) {
	c, _, err := s.entityConfig(ctx, kind, name)
	return c, err
}

func (s *Store) entityConfig(ctx context.Context, kind, name string) (map[string]string, int64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	resp, err := s.cli.Get(ctx, s.entityKey(kind, name))
	if err != nil {
		return nil, 0, fmt.Errorf("controller: reading %s %q: %w", kind, name, err)
	}
	if len(resp.Kvs) == 0 {
		return map[string]string{}, 0, nil
	}
	c, err := decodeConfig(resp.Kvs[0].Value)
	if err != nil {
		return nil, 0, fmt.Errorf("controller: %s %q: %w", kind, name, err)
	}
	return c, resp.Kvs[0].ModRevision, nil
}

// EntityConfigs reads the configs of every entity of a kind, by name.
func (s *Store) EntityConfigs(ctx context.Context, kind string) (map[string]map[string]string, error) {
	out, _, err := s.EntityConfigsRev(ctx, kind)
	return out, err
}

// EntityConfigsRev is EntityConfigs with the etcd revision it read: of two
// reads, the one with the higher revision is the newer.
func (s *Store) EntityConfigsRev(ctx context.Context, kind string) (map[string]map[string]string, int64, error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	resp, err := s.cli.Get(ctx, s.entityPrefix(kind), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("controller: reading %s: %w", kind, err)
	}
	out := make(map[string]map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		esc := strings.TrimPrefix(string(kv.Key), s.entityPrefix(kind))
		name, err := url.PathUnescape(esc)
		if err != nil {
			continue
		}
		c, err := decodeConfig(kv.Value)
		if err != nil {
			return nil, 0, fmt.Errorf("controller: %s %q: %w", kind, name, err)
		}
		out[name] = c
	}
	return out, resp.Header.Revision, nil
}

// WatchEntities is WatchTopics for the entity configs of users, clients
// and user-clients.
func (s *Store) WatchEntities(ctx context.Context, fromRevision int64, onChange func()) {
	s.watch(ctx, fromRevision, onChange, s.entityPrefix(EntityUsers), s.entityPrefix(EntityClients), s.entityPrefix(EntityUserClients))
}

// WatchGroupConfigs is WatchTopics for the group configs.
func (s *Store) WatchGroupConfigs(ctx context.Context, fromRevision int64, onChange func()) {
	s.watch(ctx, fromRevision, onChange, s.entityPrefix(EntityGroups))
}

// WatchClientMetrics is WatchTopics for the client-metrics subscriptions.
func (s *Store) WatchClientMetrics(ctx context.Context, fromRevision int64, onChange func()) {
	s.watch(ctx, fromRevision, onChange, s.entityPrefix(EntityClientMetrics))
}

// UpdateEntityConfig changes the config of one entity with update, in a
// transaction conditioned on the revision read (retried on a lost race);
// an empty result deletes the entity's key.
func (s *Store) UpdateEntityConfig(ctx context.Context, kind, name string, update func(map[string]string) (map[string]string, error)) error {
	key := s.entityKey(kind, name)
	for {
		cur, rev, err := s.entityConfig(ctx, kind, name)
		if err != nil {
			return err
		}
		next, err := update(maps.Clone(cur))
		if err != nil {
			return err
		}
		op := clientv3.OpDelete(key)
		if len(next) > 0 {
			v, err := encodeConfig(next)
			if err != nil {
				return err
			}
			op = clientv3.OpPut(key, string(v))
		}
		resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).Then(op).Commit()
		if err != nil {
			return fmt.Errorf("controller: updating %s %q: %w", kind, name, err)
		}
		if resp.Succeeded {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
