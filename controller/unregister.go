package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A broker's registration under /brokers/ids/<id> lives and dies with its
// lease: it says the broker is up. Kafka's controller keeps a broker's
// registration after the broker stops (fenced) until UnregisterBroker
// removes it, so RegisterBroker also writes the registration, without a
// lease, under /brokers/registered/<id>: a broker with a key there and
// none under /brokers/ids is registered and fenced (down). A broker that
// registered before that key existed is registered while it is up.

func (s *Store) registeredPrefix() string { return s.root + "/brokers/registered/" }
func (s *Store) registeredKey(id int32) string {
	return s.registeredPrefix() + strconv.Itoa(int(id))
}

// RegisteredBroker is a broker registered with the cluster, up or not.
type RegisteredBroker struct {
	BrokerInfo
	// Fenced: the broker is down (it has no live registration); its
	// registration stays until UnregisterBroker removes it.
	Fenced bool
}

// RegisteredBrokers returns every registered broker, sorted by id: the
// live ones (Brokers) and the fenced ones.
func (s *Store) RegisteredBrokers(ctx context.Context) ([]RegisteredBroker, error) {
	live, rev, err := s.brokers(ctx)
	if err != nil {
		return nil, err
	}
	pfx := s.registeredPrefix()
	resp, err := s.cli.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithRev(rev))
	if err != nil {
		return nil, fmt.Errorf("controller: reading registered brokers: %w", err)
	}
	out := make([]RegisteredBroker, 0, len(live)+len(resp.Kvs))
	for _, b := range live {
		out = append(out, RegisteredBroker{BrokerInfo: b})
	}
	for _, kv := range resp.Kvs {
		id, err := strconv.ParseInt(strings.TrimPrefix(string(kv.Key), pfx), 10, 32)
		if err != nil || id < 0 {
			s.log.Warn("etcd: skipping malformed broker key", "key", string(kv.Key))
			continue
		}
		if slices.ContainsFunc(live, func(b BrokerInfo) bool { return b.ID == int32(id) }) {
			continue
		}
		b, err := decodeBroker(int32(id), kv.Value)
		if err != nil {
			s.log.Warn("etcd: skipping malformed broker registration", "key", string(kv.Key), "err", err)
			continue
		}
		b.ShuttingDown, b.OfflineReplicas = false, nil
		out = append(out, RegisteredBroker{BrokerInfo: b, Fenced: true})
	}
	slices.SortFunc(out, func(a, b RegisteredBroker) int { return int(a.ID) - int(b.ID) })
	return out, nil
}

// UnregisterBroker removes the registration of broker id, which must be
// down (fenced), as Kafka's UnregisterBroker does: ErrBrokerNotRegistered
// when it has none, ErrBrokerLive when it is up. The controller took the
// broker out of the ISRs when it went down (unless it was a partition's
// last in-sync replica); its replica assignments stay.
func (s *Store) UnregisterBroker(ctx context.Context, id int32) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	reg, live := s.registeredKey(id), s.brokerKey(id)
	for {
		resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(reg), clientv3.OpGet(live)).Commit()
		if err != nil {
			return fmt.Errorf("controller: unregistering broker %d: %w", id, err)
		}
		regKvs, liveKvs := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
		switch {
		case len(liveKvs) > 0:
			return fmt.Errorf("%w: broker %d", ErrBrokerLive, id)
		case len(regKvs) == 0:
			return fmt.Errorf("%w: broker %d", ErrBrokerNotRegistered, id)
		}
		del, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(reg), "=", regKvs[0].ModRevision),
				clientv3.Compare(clientv3.CreateRevision(live), "=", 0)).
			Then(clientv3.OpDelete(reg)).
			Commit()
		if err != nil {
			return fmt.Errorf("controller: unregistering broker %d: %w", id, err)
		}
		if del.Succeeded {
			return nil
		}
		// Registered again (or rewritten) meanwhile: look again.
	}
}

// opRegistered writes the lasting registration of broker id, to put in
// the transaction that writes its live one.
func (s *Store) opRegistered(id int32, val []byte) clientv3.Op {
	return clientv3.OpPut(s.registeredKey(id), string(val))
}
