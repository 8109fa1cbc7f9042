package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap/zapcore"
)

// Config configures a Store.
type Config struct {
	// Endpoints are etcd client URLs (http://127.0.0.1:2379). Required.
	Endpoints []string
	// Prefix is the root of all keys; default "/samsa". Several clusters
	// may share one etcd with different prefixes.
	Prefix string
	// NodeID is this broker's id (node.id / broker.id). It names the
	// registration and the controller election value.
	NodeID int32
	// DialTimeout bounds the connection to etcd; default 5s.
	DialTimeout time.Duration
	// SessionTTL is the lifetime of this broker's lease without keepalive:
	// how long a crashed broker stays registered. Rounded up to whole
	// seconds; default 10s. (etcd raises TTLs below 1.5 election timeouts.)
	SessionTTL time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Validate reports every problem of c.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Endpoints) == 0 {
		errs = append(errs, errors.New("controller: Endpoints required"))
	}
	if c.Prefix != "" && (!strings.HasPrefix(c.Prefix, "/") || strings.HasSuffix(c.Prefix, "/")) {
		errs = append(errs, fmt.Errorf("controller: Prefix %q must start and not end with '/'", c.Prefix))
	}
	if c.NodeID < 0 {
		errs = append(errs, fmt.Errorf("controller: NodeID %d < 0", c.NodeID))
	}
	if c.DialTimeout < 0 || c.SessionTTL < 0 {
		errs = append(errs, errors.New("controller: negative timeout"))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Prefix == "" {
		c.Prefix = "/samsa"
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// revokeTimeout bounds the lease revoke in Close.
const revokeTimeout = 3 * time.Second

// Store is one broker's handle on the cluster metadata in etcd. It holds an
// etcd client and one lease (a concurrency.Session) that carries the
// broker's registration and its controller candidacy. Methods are safe for
// concurrent use.
type Store struct {
	cfg       Config
	log       *slog.Logger
	cli       *clientv3.Client
	clusterID string
	root      string // cfg.Prefix + "/" + clusterID
	ttl       int    // lease TTL in seconds

	ctx    context.Context // cancelled by Close; parent of every goroutine's context
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per goroutine started by spawn

	watches atomic.Int32 // running watches (WatchTopics, WatchBrokers)

	regMu sync.Mutex // serialises (re-)registration

	cacheMu sync.Mutex  // serialises the start of the topic cache
	tc      *topicCache // guarded by cacheMu; nil until first used (topiccache.go)

	mu       sync.Mutex
	closed   bool                          // guarded by mu
	leaving  bool                          // guarded by mu; set by Leave
	left     chan struct{}                 // closed once a lost lease is given up for Leave
	sess     *concurrency.Session          // guarded by mu; replaced when its lease is lost
	sessCh   chan struct{}                 // guarded by mu; closed and replaced when sess is
	retired  map[clientv3.LeaseID]struct{} // guarded by mu; our lost leases that may live on in etcd
	broker   *BrokerInfo                   // guarded by mu; what RegisterBroker last wrote
	election *concurrency.Election         // guarded by mu; set by a won Campaign
	leadSess *concurrency.Session          // guarded by mu; the session that election was won in
	epoch    int32                         // guarded by mu; controller epoch of that win

	brokerEpoch int64            // guarded by mu; create revision of our registration
	ctrlCfg     ControllerConfig // guarded by mu; the configuration RunController runs with
}

// Open connects to etcd, reads or creates the cluster id, and takes a
// lease for this broker (kept alive until Close).
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          cfg.Endpoints,
		DialTimeout:        cfg.DialTimeout,
		Logger:             zapToSlog(cfg.Logger, zapcore.ErrorLevel),
		MaxCallSendMsgSize: maxCallSendBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("controller: connecting to etcd %v: %w", cfg.Endpoints, err)
	}
	s := &Store{
		cfg: cfg,
		log: cfg.Logger,
		cli: cli,
		ttl: int((cfg.SessionTTL + time.Second - 1) / time.Second),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	fail := func(err error) (*Store, error) {
		s.cancel()
		cli.Close()
		return nil, err
	}
	if s.clusterID, err = s.loadClusterID(ctx); err != nil {
		return fail(err)
	}
	s.root = cfg.Prefix + "/" + s.clusterID
	sess, err := s.newSession(ctx)
	if err != nil {
		return fail(err)
	}
	s.sess, s.sessCh = sess, make(chan struct{})
	s.retired = map[clientv3.LeaseID]struct{}{}
	s.left = make(chan struct{})
	s.spawn(s.superviseSession)
	return s, nil
}

// Close revokes this broker's lease (its registration and controller
// candidacy vanish at once), stops every goroutine of the store, watches
// included, waits for them, and closes the etcd client. Later calls return
// nil; other methods return ErrClosed or an etcd "client closed" error.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	sess := s.sess
	s.mu.Unlock()

	s.cancel()
	s.wg.Wait()
	var errs []error
	if sess != nil {
		// Revoke so that the registration and candidacy vanish now. If etcd
		// is unreachable, give up soon: the lease expires within its TTL.
		sess.Orphan()
		ctx, cancel := context.WithTimeout(context.Background(), min(revokeTimeout, time.Duration(s.ttl)*time.Second))
		_, err := s.cli.Revoke(ctx, sess.Lease())
		if err == nil || isLeaseNotFound(err) {
			// Lost leases that may still hold a key: best effort, with
			// what is left of the same timeout.
			_ = s.revokeRetired(ctx)
		}
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) && !isLeaseNotFound(err) {
			errs = append(errs, fmt.Errorf("controller: revoking lease: %w", err))
		}
	}
	if err := s.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Leave says the broker is shutting down (its listeners close next): a
// lease lost from now on is not replaced, so the broker does not register
// again. A registration fenced by peers whose connections its closed port
// refuses would otherwise come back under a new lease for as long as the
// shutdown takes, and keep its partitions and coordinators on a broker
// that answers nobody.
func (s *Store) Leave() {
	s.mu.Lock()
	s.leaving = true
	s.mu.Unlock()
}

// Abandon stops the store as a crash would: no lease revoke, so the
// registration and the controller candidacy live until the lease's TTL
// runs out (a broker killed abruptly, in tests).
func (s *Store) Abandon() { s.abandon() }

// abandon stops the store as a crash would: no lease revoke, so the
// registration lives until its TTL runs out. For tests.
func (s *Store) abandon() {
	s.mu.Lock()
	s.closed = true
	sess := s.sess
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if sess != nil {
		sess.Orphan()
	}
	s.cli.Close()
}

// spawn runs f in a goroutine that Close cancels and waits for. It returns
// false when the store is closed.
func (s *Store) spawn(f func(ctx context.Context)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f(s.ctx)
	}()
	return true
}

// ClusterID returns the cluster id: 22 characters of base64url, created by
// the first broker that ever opened this prefix, stable thereafter.
func (s *Store) ClusterID(ctx context.Context) (string, error) {
	if err := s.checkOpen(); err != nil {
		return "", err
	}
	return s.clusterID, nil
}

// NodeID returns Config.NodeID.
func (s *Store) NodeID() int32 { return s.cfg.NodeID }

func (s *Store) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

type clusterIDValue struct {
	Version string `json:"version"`
	ID      string `json:"id"`
}

func (s *Store) loadClusterID(ctx context.Context) (string, error) {
	key := s.cfg.Prefix + "/cluster_id"
	u := NewUUID()
	val, err := json.Marshal(clusterIDValue{Version: "1", ID: EncodeUUID(u)})
	if err != nil {
		return "", err
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(val))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return "", fmt.Errorf("controller: reading cluster id: %w", err)
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return "", fmt.Errorf("controller: cluster id %s vanished", key)
		}
		val = kvs[0].Value
	}
	var v clusterIDValue
	if err := json.Unmarshal(val, &v); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
	}
	if _, err := DecodeUUID(v.ID); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
	}
	return v.ID, nil
}

// newSession grants a lease (aborted by ctx) and keeps it alive until the
// session is closed or orphaned. The keepalive and the revoke in Close run
// on the client's context, so closing the store's context does not abandon
// the lease.
func (s *Store) newSession(ctx context.Context) (*concurrency.Session, error) {
	g, err := s.cli.Grant(ctx, int64(s.ttl))
	if err != nil {
		return nil, fmt.Errorf("controller: granting lease: %w", err)
	}
	sess, err := concurrency.NewSession(s.cli, concurrency.WithLease(g.ID), concurrency.WithTTL(s.ttl))
	if err != nil {
		return nil, fmt.Errorf("controller: keeping lease alive: %w", err)
	}
	return sess, nil
}

func (s *Store) session() (*concurrency.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	return s.sess, nil
}

// liveSession returns the current session once its lease is kept alive:
// while the lease is lost it waits for superviseSession to take a new one
// (or ctx to end). The lease may still be lost right after; writes with it
// then fail with rpctypes.ErrLeaseNotFound.
func (s *Store) liveSession(ctx context.Context) (*concurrency.Session, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		sess, replaced := s.sess, s.sessCh
		s.mu.Unlock()
		select {
		case <-sess.Done():
		default:
			return sess, nil
		}
		select {
		case <-replaced:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.ctx.Done():
			return nil, ErrClosed
		case <-s.left:
			return nil, ErrClosed
		}
	}
}

// leaseLost gives sess up after etcd answered that its lease is gone
// (revoked, or expired while the client could not tell): the keepalive
// would notice only on its next answer. superviseSession then replaces it.
func (s *Store) leaseLost(sess *concurrency.Session, err error) {
	if isLeaseNotFound(err) {
		sess.Orphan()
	}
}

// isLeaseNotFound reports etcd's "requested lease not found".
func isLeaseNotFound(err error) bool {
	return err != nil && (errors.Is(err, rpctypes.ErrLeaseNotFound) ||
		strings.Contains(err.Error(), rpctypes.ErrLeaseNotFound.Error()))
}

// revokeLease revokes lease, one of this store's lost leases, and forgets
// it once etcd no longer has it.
func (s *Store) revokeLease(ctx context.Context, lease clientv3.LeaseID) error {
	rctx, cancel := context.WithTimeout(ctx, revokeTimeout)
	_, err := s.cli.Revoke(rctx, lease)
	cancel()
	if err != nil && !isLeaseNotFound(err) {
		return fmt.Errorf("controller: revoking lost lease %x: %w", int64(lease), err)
	}
	s.mu.Lock()
	delete(s.retired, lease)
	s.mu.Unlock()
	return nil
}

// revokeRetired revokes every lost lease of this store that etcd may still
// hold: after an etcd restart, etcd restores the leases and gives each a
// full TTL again, so a lease the client gave up on can hold this broker's
// registration (and its controller candidacy) for another TTL.
func (s *Store) revokeRetired(ctx context.Context) error {
	s.mu.Lock()
	leases := make([]clientv3.LeaseID, 0, len(s.retired))
	for l := range s.retired {
		leases = append(leases, l)
	}
	s.mu.Unlock()
	var errs []error
	for _, l := range leases {
		if err := s.revokeLease(ctx, l); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// isRetired reports whether lease is one of this store's lost leases.
func (s *Store) isRetired(lease clientv3.LeaseID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.retired[lease]
	return ok
}

// superviseSession replaces the session when its lease is lost (etcd
// unreachable for longer than the TTL, or etcd answering that the lease is
// gone) and registers the broker again, as a Kafka broker re-creates its
// ephemeral node in a new ZooKeeper session. The lost lease is revoked
// (retried until etcd no longer has it), so that it cannot hold the
// registration. A new lease lost before the broker is registered with it is
// replaced in turn. Controllership is not regained: the owner sees
// ControllerDone close and campaigns again.
func (s *Store) superviseSession(ctx context.Context) {
	for ctx.Err() == nil {
		s.mu.Lock()
		old := s.sess
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-old.Done():
		}
		s.mu.Lock()
		s.retired[old.Lease()] = struct{}{}
		leaving := s.leaving
		s.mu.Unlock()
		if leaving {
			s.log.Info("etcd lease lost while shutting down; not registering again", "node", s.cfg.NodeID, "lease", int64(old.Lease()))
			close(s.left)
			return
		}
		s.log.Warn("etcd lease lost; taking a new one", "node", s.cfg.NodeID, "lease", int64(old.Lease()))
		var sess *concurrency.Session
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
			var err error
			if sess, err = s.newSession(ctx); err == nil {
				break
			}
			s.log.Warn("etcd: cannot take a new lease", "err", err)
			if !sleepCtx(ctx, backoff) {
				return
			}
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			sess.Close()
			return
		}
		s.sess = sess
		close(s.sessCh)
		s.sessCh = make(chan struct{})
		if s.leadSess == old {
			// The election key died with the old lease.
			s.election, s.leadSess, s.epoch = nil, nil, 0
		}
		s.mu.Unlock()
		s.registerAgain(ctx, sess)
	}
}

// registerAgain revokes the lost leases and registers the broker with
// sess, retrying until it is done, ctx ends or sess's lease is lost too.
func (s *Store) registerAgain(ctx context.Context, sess *concurrency.Session) {
	registered := false
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		// A lost lease can also hold our old election key, which our next
		// campaign would wait behind: revoke even once registered.
		err := s.revokeRetired(ctx)
		if !registered {
			rerr := s.reregister(ctx, sess)
			registered = rerr == nil
			err = errors.Join(rerr, err)
		}
		if err == nil {
			return
		}
		s.log.Warn("etcd: cannot register broker again", "node", s.cfg.NodeID, "lease", int64(sess.Lease()), "registered", registered, "err", err)
		s.leaseLost(sess, err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-sess.Done():
		case <-t.C:
		}
		t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-sess.Done():
			return // superviseSession takes a new lease
		default:
		}
	}
}

// sleepCtx waits d or until ctx is done; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
