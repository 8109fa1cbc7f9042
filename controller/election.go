package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// errLeaseLost: the lease a candidacy was bound to was lost; campaign again
// with the next one.
var errLeaseLost = errors.New("controller: lease lost")

// controllerValue is the election value under /controller, in the form of
// Kafka's /controller znode.
type controllerValue struct {
	Version   int    `json:"version"`
	BrokerID  int32  `json:"brokerid"`
	Timestamp string `json:"timestamp"`
}

// Campaign blocks until this broker is elected controller (or ctx ends),
// then increments /controller_epoch in a transaction conditioned on still
// holding the election key and on the epoch's revision, and returns the new
// epoch. Leadership lasts until Resign, Close, or the loss of the store's
// lease; ControllerDone tells when. Every write the controller makes must
// be fenced (by revision or epoch): holding an etcd lock is no proof of
// being alone (Jepsen, etcd 3.4.3).
//
// The candidacy is bound to the store's current lease, waiting for a new
// one while the lease is lost. If that lease is lost during the campaign,
// Campaign returns an error; the next call campaigns with the new lease.
func (s *Store) Campaign(ctx context.Context) (int32, error) {
	sess, err := s.liveSession(ctx)
	if err != nil {
		return 0, err
	}
	val, err := json.Marshal(controllerValue{Version: 1, BrokerID: s.cfg.NodeID, Timestamp: strconv.FormatInt(time.Now().UnixMilli(), 10)})
	if err != nil {
		return 0, err
	}
	// Waiting behind the other candidates ends with the lease: the
	// candidacy is gone with it.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(sess.Ctx(), cancel)
	defer stop()
	e := concurrency.NewElection(sess, s.controllerPrefix())
	if err := e.Campaign(cctx, string(val)); err != nil {
		s.leaseLost(sess, err)
		if ctx.Err() == nil && sess.Ctx().Err() != nil {
			return 0, fmt.Errorf("controller: campaigning with lease %x: %w: %w", int64(sess.Lease()), errLeaseLost, err)
		}
		return 0, fmt.Errorf("controller: campaigning: %w", err)
	}
	key := s.controllerEpochKey()
	for {
		resp, err := s.cli.Get(ctx, key)
		if err != nil {
			return 0, s.resignAfter(e, fmt.Errorf("controller: reading controller epoch: %w", err))
		}
		var cur int64
		var rev int64
		if len(resp.Kvs) > 0 {
			rev = resp.Kvs[0].ModRevision
			if cur, err = strconv.ParseInt(strings.TrimSpace(string(resp.Kvs[0].Value)), 10, 32); err != nil || cur < 0 {
				return 0, s.resignAfter(e, fmt.Errorf("%w: %s: %q", ErrCorrupt, key, resp.Kvs[0].Value))
			}
		}
		next := int32(cur + 1)
		tr, err := s.cli.Txn(ctx).
			If(
				clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev()),
				clientv3.Compare(clientv3.ModRevision(key), "=", rev),
			).
			Then(clientv3.OpPut(key, strconv.Itoa(int(next)))).
			Else(clientv3.OpGet(e.Key(), clientv3.WithCountOnly())).
			Commit()
		if err != nil {
			return 0, s.resignAfter(e, fmt.Errorf("controller: bumping controller epoch: %w", err))
		}
		if tr.Succeeded {
			s.mu.Lock()
			if s.closed || s.sess != sess {
				s.mu.Unlock()
				return 0, ErrNotController
			}
			s.election, s.leadSess, s.epoch = e, sess, next
			s.mu.Unlock()
			return next, nil
		}
		if tr.Responses[0].GetResponseRange().Count == 0 {
			return 0, ErrNotController // our key vanished: lease lost
		}
	}
}

func (s *Store) resignAfter(e *concurrency.Election, err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.ttl)*time.Second)
	defer cancel()
	return errors.Join(err, e.Resign(ctx))
}

// Resign gives up the controllership won by Campaign, if any.
func (s *Store) Resign(ctx context.Context) error {
	s.mu.Lock()
	e := s.election
	s.election, s.leadSess, s.epoch = nil, nil, 0
	s.mu.Unlock()
	if e == nil {
		return nil
	}
	return e.Resign(ctx)
}

// ControllerDone returns a channel closed when the controllership won by
// the last Campaign ends through the loss of the store's lease (or Close).
// Nil when this store is not the controller (never won, resigned, or lost
// the lease and took a new one).
func (s *Store) ControllerDone() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.election == nil {
		return nil
	}
	return s.leadSess.Done()
}

// controllerEpoch is the epoch of this store's controllership, 0 if none.
func (s *Store) controllerEpoch() int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// Controller returns the id of the elected controller, or ErrNoController.
func (s *Store) Controller(ctx context.Context) (int32, error) {
	if err := s.checkOpen(); err != nil {
		return -1, err
	}
	resp, err := s.cli.Get(ctx, s.controllerPrefix()+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return -1, fmt.Errorf("controller: reading controller: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return -1, ErrNoController
	}
	var v controllerValue
	if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
		return -1, fmt.Errorf("%w: %s: %v", ErrCorrupt, resp.Kvs[0].Key, err)
	}
	return v.BrokerID, nil
}

// ControllerEpoch returns the value of /controller_epoch (0 before the first
// election).
func (s *Store) ControllerEpoch(ctx context.Context) (int32, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	key := s.controllerEpochKey()
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("controller: reading controller epoch: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(resp.Kvs[0].Value)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %q", ErrCorrupt, key, resp.Kvs[0].Value)
	}
	return int32(n), nil
}
