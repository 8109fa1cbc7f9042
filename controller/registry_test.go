package controller

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/samsa-io/samsa/internal/poll"
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

	// Cordoned log directories (KIP-1066) are kept with the registration;
	// a broker is cordoned when every directory is.
	info.LogDirs = []string{"/d1", "/d2"}
	if err := s1.RegisterBroker(ctx, info); err != nil {
		t.Fatal(err)
	}
	for _, cordoned := range [][]string{{"/d2"}, {"/d1", "/d2"}, nil} {
		if err := s1.SetCordonedLogDirs(ctx, cordoned); err != nil {
			t.Fatal(err)
		}
		bs, _ = s2.Brokers(ctx)
		if got := bs[0]; !slices.Equal(got.LogDirs, info.LogDirs) || !slices.Equal(got.CordonedLogDirs, cordoned) || got.Cordoned() != (len(cordoned) == 2) {
			t.Errorf("cordoned %v: registered %v of %v, Cordoned %v", cordoned, got.CordonedLogDirs, got.LogDirs, got.Cordoned())
		}
	}
	if (BrokerInfo{}).Cordoned() || !(BrokerInfo{LogDirs: []string{"/a"}, CordonedLogDirs: []string{"/a"}}).Cordoned() {
		t.Error("Cordoned: a broker without directories is not cordoned; one with its only one cordoned is")
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
	poll.Eventually(t, 15*time.Second, func() error {
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
	poll.Eventually(t, 15*time.Second, func() error {
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

// A broker that is shutting down (Leave) and loses its lease, as when its
// peers fence it because its closed port refuses them, does not register
// again: a registration that answers nobody would keep its partitions.
func TestNoRegistrationAgainAfterLeave(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	if err := s.RegisterBroker(ctx, BrokerInfo{ID: 1, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	sess, _ := s.session()
	cli := directClient(t, e)
	s.Leave()
	if _, err := cli.Revoke(ctx, sess.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.left:
	case <-time.After(15 * time.Second):
		t.Fatal("the lost lease was not given up within 15s")
	}
	if holder, _, err := regLease(t, cli, s, 1); err != nil || holder != 0 {
		t.Errorf("registered again on lease %x (err %v)", holder, err)
	}
	lctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := s.liveSession(lctx); !errors.Is(err, ErrClosed) {
		t.Errorf("liveSession after giving the lease up: %v, want ErrClosed", err)
	}
}

// regLease returns the lease holding broker id's registration (0 if none)
// and its create revision, read by cli (connected to etcd directly).
func regLease(t *testing.T, cli *clientv3.Client, s *Store, id int32) (clientv3.LeaseID, int64, error) {
	t.Helper()
	r, err := cli.Get(testCtx(t), s.brokerKey(id))
	if err != nil || len(r.Kvs) == 0 {
		return 0, 0, err
	}
	return clientv3.LeaseID(r.Kvs[0].Lease), r.Kvs[0].CreateRevision, nil
}

// registeredAnew reports (as an error) unless broker id's registration is
// on s's current lease with a broker epoch above epoch.
func registeredAnew(t *testing.T, cli *clientv3.Client, s *Store, id int32, epoch int64) error {
	t.Helper()
	sess, err := s.session()
	if err != nil {
		return err
	}
	holder, rev, err := regLease(t, cli, s, id)
	if err != nil {
		return err
	}
	return errorIf(holder == 0 || holder != sess.Lease() || rev <= epoch,
		"registration on lease %x (store's %x), epoch %d (was %d)", holder, sess.Lease(), rev, epoch)
}

func leaseAlive(t *testing.T, cli *clientv3.Client, id clientv3.LeaseID) (bool, error) {
	t.Helper()
	r, err := cli.TimeToLive(testCtx(t), id)
	if err != nil {
		return false, err
	}
	return r.TTL > 0, nil
}

func directClient(t *testing.T, e *Embedded) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// waitLeaseLost waits until s has given up lease (the client saw no
// keepalive answer for a TTL), then holds the outage one TTL more: long
// enough for a one-shot revoke of the lost lease to time out.
func waitLeaseLost(t *testing.T, s *Store, lease clientv3.LeaseID) {
	t.Helper()
	poll.Eventually(t, 20*time.Second, func() error {
		s.mu.Lock()
		sess := s.sess
		s.mu.Unlock()
		if sess.Lease() != lease {
			return nil
		}
		select {
		case <-sess.Done():
			return nil
		default:
			return errorIf(true, "lease %x still kept alive", lease)
		}
	})
	// The outage itself lasts on: this is the fault, not a wait for a
	// condition.
	time.Sleep(time.Duration(s.ttl)*time.Second + time.Second)
}

// The broker registers again, with a larger broker epoch, and becomes the
// controller again (RELIABILITY.md 2.22): etcd restarts (so the old lease
// is restored and holds the registration for another TTL), the store takes
// a new lease, then is cut off until that new lease expires too, then heals.
func TestReregisterAfterEtcdRestartAndCut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	e1, err := StartEmbedded(EmbeddedConfig{Dir: dir, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	e1Closed := false
	t.Cleanup(func() {
		if !e1Closed {
			e1.Close()
		}
	})
	px := newTCPProxy(t, e1.Endpoints()[0])
	s := openStoreAt(t, px.Endpoints(), 1, func(c *Config) { c.SessionTTL = 2 * time.Second })
	register(t, s, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.RunController(ctx, ControllerConfig{Resync: 50 * time.Millisecond})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	poll.Eventually(t, 10*time.Second, func() error { return errorIf(!s.IsController(), "not the controller") })
	old, _ := s.session()
	bs, err := s.Brokers(testCtx(t))
	if err != nil || len(bs) != 1 {
		t.Fatalf("brokers %v %v", bs, err)
	}
	epoch := bs[0].Epoch

	// etcd goes away for longer than the TTL and comes back on other ports.
	px.Cut()
	e1Closed = true
	if err := e1.Close(); err != nil {
		t.Fatal(err)
	}
	waitLeaseLost(t, s, old.Lease())
	e2 := startEtcdIn(t, dir)
	cli := directClient(t, e2)
	px.SetUpstream(e2.Endpoints()[0])
	px.Heal()

	// As soon as the store has a new lease, cut it off again, until that
	// lease has expired on the server.
	var fresh clientv3.LeaseID
	poll.Eventually(t, 20*time.Second, func() error {
		sess, _ := s.session()
		fresh = sess.Lease()
		return errorIf(fresh == old.Lease(), "no new lease yet")
	})
	px.Cut()
	holder, _, _ := regLease(t, cli, s, 1)
	t.Logf("cut with the registration on lease %x (old %x, new %x)", holder, old.Lease(), fresh)
	poll.Eventually(t, 20*time.Second, func() error {
		alive, err := leaseAlive(t, cli, fresh)
		if err != nil {
			return err
		}
		holder, _, err := regLease(t, cli, s, 1)
		if err != nil {
			return err
		}
		return errorIf(alive || holder != 0, "lease %x alive %v, registration on %x", fresh, alive, holder)
	})
	px.Heal()

	poll.Eventually(t, 30*time.Second, func() error {
		if err := registeredAnew(t, cli, s, 1, epoch); err != nil {
			return err
		}
		bs, err := s.Brokers(testCtx(t))
		if err != nil {
			return err
		}
		return errorIf(len(bs) != 1 || bs[0].Epoch <= epoch, "brokers %+v, epoch was %d", bs, epoch)
	})
	poll.Eventually(t, 30*time.Second, func() error {
		return errorIf(!s.IsController() || s.controllerEpoch() < 2, "controller %v, epoch %d", s.IsController(), s.controllerEpoch())
	})
}

// A registration held by one of the store's own earlier leases, still alive
// on the server (etcd restored it on a restart, while the client had given
// it up and could not revoke it), is the store's own: it registers again at
// once instead of waiting for that lease's TTL (here kept alive on purpose,
// so waiting would never end). Another live broker's lease keeps its key:
// see TestRegisterBroker.
func TestReregisterRevokesOwnOldLease(t *testing.T) {
	e := startEtcd(t)
	cli := directClient(t, e)
	px := newTCPProxy(t, e.Endpoints()[0])
	s := openStoreAt(t, px.Endpoints(), 1, func(c *Config) { c.SessionTTL = 2 * time.Second })
	register(t, s, 1)
	old, _ := s.session()
	_, epoch, err := regLease(t, cli, s, 1)
	if err != nil {
		t.Fatal(err)
	}

	px.Cut()
	kctx, stop := context.WithCancel(context.Background())
	defer stop()
	ka, err := cli.KeepAlive(kctx, old.Lease())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range ka {
		}
	}()
	waitLeaseLost(t, s, old.Lease())
	px.Heal()

	poll.Eventually(t, 10*time.Second, func() error { return registeredAnew(t, cli, s, 1, epoch) })
	if alive, err := leaseAlive(t, cli, old.Lease()); err != nil || alive {
		t.Errorf("old lease alive %v (%v), want revoked", alive, err)
	}
}
