package controller

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Dynamic broker configs live where Kafka kept them in ZooKeeper:
// /config/brokers/<id> for one broker and /config/brokers/<default> for
// the cluster-wide default, as {"version":1,"config":{...}}.

// DefaultBrokerEntity names the cluster-wide default of the dynamic broker
// configs (the BROKER resource "" of AlterConfigs).
const DefaultBrokerEntity = "<default>"

func (s *Store) brokerConfigsPrefix() string { return s.root + "/config/brokers/" }

// BrokerConfigEntity is the entity of a BROKER config resource name: the
// id, or DefaultBrokerEntity for "".
func BrokerConfigEntity(resourceName string) string {
	if resourceName == "" {
		return DefaultBrokerEntity
	}
	return resourceName
}

// BrokerConfigs returns the dynamic configs of the cluster-wide default and
// of broker id, as stored, and the etcd revision of the read (for
// WatchBrokerConfigs).
func (s *Store) BrokerConfigs(ctx context.Context, id int32) (clusterDefault, perBroker map[string]string, rev int64, err error) {
	if err := s.checkOpen(); err != nil {
		return nil, nil, 0, err
	}
	pfx := s.brokerConfigsPrefix()
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpGet(pfx+DefaultBrokerEntity),
		clientv3.OpGet(pfx+strconv.Itoa(int(id))),
	).Commit()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("controller: reading broker configs: %w", err)
	}
	read := func(i int) (map[string]string, error) {
		kvs := resp.Responses[i].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return nil, nil
		}
		c, err := decodeConfig(kvs[0].Value)
		if err != nil {
			return nil, fmt.Errorf("controller: %s: %w", kvs[0].Key, err)
		}
		return c, nil
	}
	if clusterDefault, err = read(0); err != nil {
		return nil, nil, 0, err
	}
	if perBroker, err = read(1); err != nil {
		return nil, nil, 0, err
	}
	return clusterDefault, perBroker, resp.Header.Revision, nil
}

// UpdateBrokerConfig edits the dynamic configs of entity (a broker id, or
// DefaultBrokerEntity) in one compare-and-set: update gets a copy of the
// current set and returns the next; an empty set removes the key.
func (s *Store) UpdateBrokerConfig(ctx context.Context, entity string, update func(map[string]string) (map[string]string, error)) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if entity == "" || strings.ContainsAny(entity, "/\x00") {
		return fmt.Errorf("%w: broker config entity %q", ErrInvalid, entity)
	}
	key := s.brokerConfigsPrefix() + entity
	for {
		resp, err := s.cli.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("controller: reading configs of broker %s: %w", entity, err)
		}
		var cur map[string]string
		var rev int64
		if len(resp.Kvs) > 0 {
			rev = resp.Kvs[0].ModRevision
			if cur, err = decodeConfig(resp.Kvs[0].Value); err != nil {
				return fmt.Errorf("controller: %s: %w", key, err)
			}
		}
		next, err := update(maps.Clone(cur))
		if err != nil {
			return err
		}
		op := clientv3.OpDelete(key)
		if len(next) > 0 {
			val, err := encodeConfig(next)
			if err != nil {
				return err
			}
			op = clientv3.OpPut(key, string(val))
		}
		tr, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).Then(op).Commit()
		if err != nil {
			return fmt.Errorf("controller: updating configs of broker %s: %w", entity, err)
		}
		if tr.Succeeded {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// WatchBrokerConfigs calls onChange after any dynamic broker config
// changes, until ctx ends (as WatchTopics).
func (s *Store) WatchBrokerConfigs(ctx context.Context, fromRevision int64, onChange func()) {
	s.watch(ctx, fromRevision, onChange, s.brokerConfigsPrefix())
}
