package controller

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func brokerIDs(t *testing.T, s *Store) ([]int32, error) {
	t.Helper()
	bs, err := s.Brokers(testCtx(t))
	if err != nil {
		return nil, err
	}
	ids := make([]int32, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
	}
	return ids, nil
}

func TestRegisterBroker(t *testing.T) {
	e := startEtcd(t)
	s1 := openStore(t, e, 1)
	s2 := openStore(t, e, 2)
	ctx := testCtx(t)

	info := BrokerInfo{ID: 1, Rack: "r1", Endpoints: []Endpoint{
		{Listener: "PLAINTEXT", Host: "10.0.0.1", Port: 9092},
		{Listener: "EXTERNAL", SecurityProtocol: "SASL_SSL", Host: "::1", Port: 19092},
	}}
	if err := s1.RegisterBroker(ctx, info); err != nil {
		t.Fatal(err)
	}
	if err := s2.RegisterBroker(ctx, BrokerInfo{ID: 2, Host: "h2", Port: 9093}); err != nil {
		t.Fatal(err)
	}
	bs, err := s2.Brokers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].ID != 1 || bs[1].ID != 2 {
		t.Fatalf("brokers %+v", bs)
	}
	b := bs[0]
	if b.Host != "10.0.0.1" || b.Port != 9092 || b.Rack != "r1" || b.Epoch <= 0 || len(b.Endpoints) != 2 {
		t.Errorf("broker 1: %+v", b)
	}
	if ep := b.Endpoints[1]; ep.Listener != "EXTERNAL" || ep.SecurityProtocol != "SASL_SSL" || ep.Host != "::1" || ep.Port != 19092 {
		t.Errorf("endpoint %+v", ep)
	}
	if ep := bs[1].Endpoints; len(ep) != 1 || ep[0].Listener != "PLAINTEXT" || ep[0].Host != "h2" || ep[0].Port != 9093 || bs[1].Rack != "" {
		t.Errorf("broker 2: %+v", bs[1])
	}

	// Re-registering from the same store updates in place.
	info.Rack = "r2"
	if err := s1.RegisterBroker(ctx, info); err != nil {
		t.Fatalf("re-register: %v", err)
	}
	bs, _ = s1.Brokers(ctx)
	if bs[0].Rack != "r2" || bs[0].Epoch != b.Epoch {
		t.Errorf("after re-register: %+v (epoch was %d)", bs[0], b.Epoch)
	}

	// Another live broker with id 1 is refused.
	dup := openStore(t, e, 1)
	if err := dup.RegisterBroker(ctx, BrokerInfo{ID: 1, Host: "x", Port: 1}); !errors.Is(err, ErrBrokerIDInUse) {
		t.Fatalf("duplicate id: %v", err)
	}
	// An id other than the store's is refused.
	if err := s1.RegisterBroker(ctx, BrokerInfo{ID: 5, Host: "x", Port: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("foreign id: %v", err)
	}
	if err := s1.RegisterBroker(ctx, BrokerInfo{ID: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no endpoint: %v", err)
	}

	// Close revokes the lease: the registration is gone at once, and the
	// id is free for the other store.
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	ids, err := brokerIDs(t, s2)
	if err != nil || len(ids) != 1 || ids[0] != 2 {
		t.Fatalf("after close: %v %v", ids, err)
	}
	if err := dup.RegisterBroker(ctx, BrokerInfo{ID: 1, Host: "x", Port: 1}); err != nil {
		t.Fatalf("id 1 after the holder closed: %v", err)
	}
	if _, err := s1.Brokers(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Brokers on a closed store: %v", err)
	}
}

// A broker that dies without Close stays registered until its lease's TTL
// runs out, then disappears.
func TestBrokerLeaseExpiresAfterCrash(t *testing.T) {
	e := startEtcd(t)
	watcher := openStore(t, e, 9)
	cfg := Config{Endpoints: e.Endpoints(), NodeID: 1, SessionTTL: 2 * time.Second, Logger: testLogger()}
	s, err := Open(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterBroker(testCtx(t), BrokerInfo{ID: 1, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	s.abandon() // no revoke
	crashed := time.Now()
	ids, _ := brokerIDs(t, watcher)
	if len(ids) != 1 {
		t.Fatalf("registration gone at once after a crash: %v", ids)
	}
	eventually(t, 15*time.Second, func() error {
		ids, err := brokerIDs(t, watcher)
		if err != nil {
			return err
		}
		return errorIf(len(ids) != 0, "still registered: %v", ids)
	})
	if took := time.Since(crashed); took < time.Second {
		t.Errorf("registration gone after %v, before the TTL", took)
	}
}

// When the lease is lost while the process lives, the store takes a new
// lease and registers again.
func TestReregisterAfterLeaseLoss(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	if err := s.RegisterBroker(ctx, BrokerInfo{ID: 1, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	bs, _ := s.Brokers(ctx)
	epoch := bs[0].Epoch
	sess, _ := s.session()

	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Revoke(ctx, sess.Lease()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, func() error {
		bs, err := s.Brokers(ctx)
		if err != nil {
			return err
		}
		return errorIf(len(bs) != 1 || bs[0].Epoch == epoch, "brokers %+v (old epoch %d)", bs, epoch)
	})
	cur, _ := s.session()
	if cur.Lease() == sess.Lease() {
		t.Errorf("same lease after loss")
	}
	r, err := cli.Get(ctx, s.brokerKey(1))
	if err != nil || len(r.Kvs) != 1 || clientv3.LeaseID(r.Kvs[0].Lease) != cur.Lease() {
		t.Errorf("registration not on the new lease: %v %v", r, err)
	}
}
