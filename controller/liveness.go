package controller

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A broker whose process has died keeps its registration until its lease
// expires (broker.session.timeout.ms, 9 s by default). Its peers can tell
// sooner: a dead process's listening port refuses connections at once,
// while a live one, however slow or paused, still has the kernel complete
// the handshake. Each broker that finds a peer's port refusing writes a
// suspicion of that peer's registration, bound to its own lease; once a
// majority of the other brokers suspect the same registration, it is
// fenced: its lease is revoked, which removes the registration (and the
// controller candidacy) it holds, and the controller moves its partitions
// as it would after the lease expired. A live broker fenced by mistake (a
// network that rejects rather than drops) registers again with a new lease,
// as after a lost lease.

// suspectKey is observer's suspicion of broker target.
func (s *Store) suspectKey(target, observer int32) string {
	return s.suspectPrefix(target) + strconv.Itoa(int(observer))
}

func (s *Store) suspectPrefix(target int32) string {
	return s.root + "/samsa/suspects/" + strconv.Itoa(int(target)) + "/"
}

// Suspect records that this broker found the registration of broker
// target with epoch (BrokerInfo.Epoch) unreachable: its port refuses
// connections. The record is bound to this broker's lease.
func (s *Store) Suspect(ctx context.Context, target int32, epoch int64) error {
	sess, err := s.liveSession(ctx)
	if err != nil {
		return err
	}
	_, err = s.cli.Put(ctx, s.suspectKey(target, s.cfg.NodeID), strconv.FormatInt(epoch, 10), clientv3.WithLease(sess.Lease()))
	if err != nil {
		s.leaseLost(sess, err)
		return fmt.Errorf("controller: suspecting broker %d: %w", target, err)
	}
	return nil
}

// Unsuspect withdraws this broker's suspicion of broker target.
func (s *Store) Unsuspect(ctx context.Context, target int32) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if _, err := s.cli.Delete(ctx, s.suspectKey(target, s.cfg.NodeID)); err != nil {
		return fmt.Errorf("controller: withdrawing suspicion of broker %d: %w", target, err)
	}
	return nil
}

// Suspects returns the brokers that suspect the registration of broker
// target with epoch.
func (s *Store) Suspects(ctx context.Context, target int32, epoch int64) ([]int32, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	pfx := s.suspectPrefix(target)
	resp, err := s.cli.Get(ctx, pfx, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("controller: reading suspicions of broker %d: %w", target, err)
	}
	want := strconv.FormatInt(epoch, 10)
	var out []int32
	for _, kv := range resp.Kvs {
		id, err := strconv.ParseInt(strings.TrimPrefix(string(kv.Key), pfx), 10, 32)
		if err != nil || string(kv.Value) != want {
			continue
		}
		out = append(out, int32(id))
	}
	return out, nil
}

// FenceBroker revokes the lease of broker id's registration if it is still
// the one with epoch: the registration goes at once, as if its lease had
// expired. It reports whether it fenced; a broker registered anew since
// (another epoch) is left alone.
func (s *Store) FenceBroker(ctx context.Context, id int32, epoch int64) (bool, error) {
	if err := s.checkOpen(); err != nil {
		return false, err
	}
	resp, err := s.cli.Get(ctx, s.brokerKey(id))
	if err != nil {
		return false, fmt.Errorf("controller: fencing broker %d: %w", id, err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != epoch || resp.Kvs[0].Lease == 0 {
		return false, nil
	}
	lease := clientv3.LeaseID(resp.Kvs[0].Lease)
	rctx, cancel := context.WithTimeout(ctx, revokeTimeout)
	defer cancel()
	if _, err := s.cli.Revoke(rctx, lease); err != nil {
		if isLeaseNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("controller: fencing broker %d: revoking lease %x: %w", id, int64(lease), err)
	}
	s.log.Warn("fenced broker: its port refuses connections", "broker", id, "broker_epoch", epoch, "lease", int64(lease))
	return true, nil
}
