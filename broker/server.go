package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/clientmetrics"
	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/groups"
	"github.com/samsa-io/samsa/httpapi"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/link"
	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/protocol"
	"github.com/samsa-io/samsa/registry"
	"github.com/samsa-io/samsa/replication"
	"github.com/samsa-io/samsa/restproxy"
	"github.com/samsa-io/samsa/security"
	"github.com/samsa-io/samsa/share"
	"github.com/samsa-io/samsa/tiered"
	"github.com/samsa-io/samsa/txn"
)

// Config is what New needs: the Kafka properties and a logger.
type Config struct {
	Props  *config.Props
	Logger *slog.Logger
	// Dial, when set, opens the follower fetchers' connections to
	// partition leaders (replication.Config.Dial). A test seam for fault
	// injection; nil dials directly.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// LogFS, when set, holds the partition logs (logstore.Config.FS). A
	// test seam for storage faults (logstore.FaultFS); nil is the OS.
	LogFS logstore.FS
}

// Broker is one samsa broker.
type Broker struct {
	props    *config.Props          // the static properties
	settings *config.BrokerSettings // decoded from props once; read-only
	// dynProps is props with the dynamic broker configs over them
	// (dynconfig.go): what the settings Kafka changes at run time are read
	// from.
	dynProps atomic.Pointer[config.Props]
	// groupCfgs are the group configs by group (group_configs.go).
	groupCfgs atomic.Pointer[groupCfgSet]
	// telemetry serves GetTelemetrySubscriptions and PushTelemetry and
	// keeps the client-metrics subscriptions (71_telemetry.go).
	telemetry *clientmetrics.Manager
	// groupCfgWatchHook: SetGroupConfigWatchHook; see group_configs.go.
	groupCfgWatchHook atomic.Pointer[func()]
	// streamsCreating are the streams groups' internal topics being
	// created (88_streams_group.go).
	streamsCreating sync.Map
	// replThrottle is the leader side of the replication quota; the
	// follower side is the fetchers' (replication.Config.FollowerThrottle).
	replThrottle replication.Throttle
	log          *slog.Logger
	nodeID       int32
	dial         func(ctx context.Context, network, addr string) (net.Conn, error) // Config.Dial
	logFS        logstore.FS                                                       // Config.LogFS
	placer       logstore.Placer                                                   // places new partitions in log.dirs

	cordonApplyMu sync.Mutex // serialises applyCordon
	cordonMu      sync.Mutex // guards cordoned
	cordoned      []string   // cordoned log directories (cordon.go), as registered

	dirFailed   chan struct{}   // a log reported a storage failure (logdirs.go)
	offlineMu   sync.Mutex      // guards offlineDirs
	offlineDirs map[string]bool // log directories taken offline
	// preferredDirs: partition dir name -> the log dir AlterReplicaLogDirs
	// chose for a replica not hosted yet; guarded by offlineMu.
	preferredDirs map[string]string

	// Settings used on hot paths, copied from settings.
	maxFrame      int32
	fetchMaxBytes int32
	useSendfile   bool
	autoCreate    bool
	numPartitions int32
	defaultRF     int16
	deleteEnabled bool
	logDir        string   // the first of log.dirs: the embedded etcd's home
	logDirs       []string // log.dirs: partitions spread across them (JBOD)
	advertised    []config.Listener
	retentionTick time.Duration

	embedded  *controller.Embedded
	store     *controller.Store
	clusterID string

	listeners []net.Listener
	lnNames   []string             // listener name of each of listeners
	lnSec     []*listenerSecurity  // TLS and SASL of each of listeners
	authz     *security.Authorizer // nil without authorizer.class.name: every check passes
	quotas    *security.Quotas     // client quotas; none set: Record returns at once
	addrs     []string

	ctx    context.Context // the server's root context; cancelled by Close
	cancel context.CancelFunc

	mu      sync.Mutex
	closing bool                  // guarded by mu
	wg      sync.WaitGroup        // goroutines started by spawn
	conns   map[net.Conn]struct{} // guarded by mu
	perIP   map[string]int        // open connections by remote IP; guarded by mu
	freed   chan struct{}         // a connection closed (max.connections waits on it)
	connSeq atomic.Uint64         // the number of the last connection accepted (conn.go)
	limits  connLimits            // max.connection.creation.rate, max.connections.per.ip.overrides

	meta metadata // topics and partitions; see metadata.go

	versions   []protocol.VersionRange // advertised by ApiVersions
	pids       producerIDs
	sessions   *fetchSessions
	groups     *groups.Coordinator         // set by Start before metadata is first synced
	share      *share.Manager              // share-partitions led here; see 78_share_fetch.go
	shareSt    *shareStore                 // share-group state, here or at its coordinator; see 84_share_group_state.go
	shareCoord *share.StateCoordinator     // __share_group_state partitions led here; set by Start before metadata is first synced
	txn        *txn.Coordinator            // set by Start before metadata is first synced
	peers      peerConns                   // connections to other brokers for coordinator requests; see txn.go
	peerDial   *peerDialer                 // dials every connection to another broker; see peer_dial.go
	fetchers   *replication.Manager        // follower fetchers; see partition.go
	replicas   *replication.ReplicaManager // leads and follows the partitions; see partition.go
	ctrlID     controllerCache             // the elected controller, for Metadata
	// internalCreates: internal topics FindCoordinator is creating (10_find_coordinator.go).
	internalCreates internalCreates

	frames  framePool // buffers for large request frames
	stats   protocol.Stats
	metrics *metrics        // see metrics.go
	http    *httpapi.Server // samsa.http.listener; nil when unset
	tiered  *tiered.Manager // remote.log.storage.system.enable; nil when off

	registry      *registry.Registry // samsa.schema.registry.listener; nil when unset; set by Start before metadata is first synced
	registryPeers *peerConns         // the registry's reader's connections
	registryLn    net.Listener       // samsa.schema.registry.listener, bound before the broker registers
	registryTLS   *security.TLS      // an https:// registry listener's TLS; nil for http
	proxy         *restproxy.Proxy   // samsa.http.proxy.listener; nil when unset; set by Start once the listeners serve
	panics        atomic.Int64       // handler panics recovered by dispatch

	txnHook atomic.Pointer[TxnMarkerHook] // SetTxnMarkerHook; see 27_write_txn_markers.go
	// createTopicHook, set by tests (export_test.go), runs in createTopic
	// just before the topic is written to etcd.
	createTopicHook atomic.Pointer[func(name string)]
	// txnVerifiedHook: SetTxnVerifiedHook; see txn_verify.go.
	txnVerifiedHook atomic.Pointer[func(topic string, partition int32)]

	passwords *security.PasswordEncoder // password.encoder.*; nil without a secret (see dynconfig.go)

	// Cluster links (link.go): the links and mirror topics of etcd, the
	// mirror partitions' fetchers, the loop's wake-up, and the errors of
	// the last look at each link's source.
	links     atomic.Pointer[linkSet]
	linkMgr   *link.Manager
	linkKick  chan struct{}
	linkErrMu sync.Mutex
	linkErrs  map[string]map[string]string // guarded by linkErrMu
	// linkSyncedOffs: the group offsets last copied (link_groups.go);
	// guarded by linkErrMu.
	linkSyncedOffs map[linkSyncKey]int64
}

// New validates the configuration; Start brings the broker up.
func New(cfg Config) (*Broker, error) {
	if cfg.Props == nil {
		return nil, errors.New("broker: Config.Props required")
	}
	p := cfg.Props
	l := cfg.Logger
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	s := p.Settings()
	b := &Broker{
		linkKick:      make(chan struct{}, 1), // before any watch can kick the link loop
		props:         p,
		settings:      s,
		log:           l,
		nodeID:        s.NodeID,
		dial:          cfg.Dial,
		logFS:         cfg.LogFS,
		dirFailed:     make(chan struct{}, 1),
		offlineDirs:   map[string]bool{},
		maxFrame:      s.SocketRequestMaxBytes,
		fetchMaxBytes: s.FetchMaxBytes,
		useSendfile:   s.Sendfile,
		autoCreate:    s.AutoCreateTopics,
		numPartitions: s.NumPartitions,
		defaultRF:     s.DefaultReplicationFactor,
		deleteEnabled: s.DeleteTopicEnable,
		retentionTick: s.LogRetentionCheck,
		conns:         make(map[net.Conn]struct{}),
		perIP:         map[string]int{},
		freed:         make(chan struct{}, 1),
	}
	dirs := s.LogDirs
	if len(dirs) == 0 {
		return nil, errors.New("broker: log.dirs is empty")
	}
	b.logDir, b.logDirs = dirs[0], dirs
	cordoned, err := p.CordonedLogDirs()
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	b.cordoned = cordoned
	b.placer.SetCordoned(cordoned)
	if b.retentionTick <= 0 {
		b.retentionTick = 5 * time.Minute
	}
	b.sessions = newFetchSessions(1000)
	b.versions = advertisedVersions()
	pw, err := passwordEncoder(p)
	if err != nil {
		return nil, err
	}
	b.passwords = pw
	b.dynProps.Store(p)
	b.telemetry = clientmetrics.NewManager(clientmetrics.NewStore(clientmetrics.Limits{}, nil),
		func() int32 { return b.settings.TelemetryMaxBytes }, nil)
	b.metrics = newMetrics(b)
	b.meta.init()
	return b, nil
}

// Start starts (or connects to) etcd, registers the broker, opens the logs
// of its partitions and binds the listeners.
func (b *Broker) Start() (err error) {
	start := time.Now()
	var etcdReady, registered time.Duration
	b.ctx, b.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	if ignored := b.props.Ignored(); len(ignored) > 0 {
		b.log.Warn("accepted and ignored: samsa does not implement these Kafka properties", "properties", strings.Join(ignored, ","))
	}
	// Every log directory is created if missing, as Kafka's LogManager
	// does: each gets a clean shutdown file, partition or not. The first
	// holds the broker's own state; another that cannot be made is left
	// to fail as a directory fails.
	if err := os.MkdirAll(b.logDir, 0o755); err != nil {
		return fmt.Errorf("broker: log dir: %w", err)
	}
	for _, d := range b.logDirs[1:] {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.log.Warn("creating a log directory", "dir", d, "err", err)
		}
	}
	endpoints := b.settings.EtcdEndpoints
	if q, ok := b.props.Quorum(); ok && len(endpoints) == 0 {
		if endpoints, err = b.joinQuorum(q); err != nil {
			return err
		}
	}
	if len(endpoints) == 0 {
		b.embedded, err = controller.StartEmbedded(controller.EmbeddedConfig{
			Dir:    filepath.Join(b.logDir, "etcd"),
			Logger: b.log,
		})
		if err != nil {
			return fmt.Errorf("broker: embedded etcd: %w", err)
		}
		endpoints = b.embedded.Endpoints()
	}
	etcdReady = time.Since(start)
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	b.store, err = controller.Open(ctx, controller.Config{
		Endpoints: endpoints,
		Prefix:    b.settings.EtcdPrefix,
		NodeID:    b.nodeID,
		Logger:    b.log,
		// A broker's registration outlives its death by this much.
		SessionTTL: b.settings.BrokerSessionTimeout,
	})
	if err != nil {
		return fmt.Errorf("broker: etcd: %w", err)
	}
	if b.clusterID, err = b.store.ClusterID(ctx); err != nil {
		return fmt.Errorf("broker: cluster id: %w", err)
	}

	lns := b.settings.Listeners
	if len(lns) == 0 {
		return errors.New("broker: no listeners")
	}
	for _, ln := range lns {
		sec, err := b.listenerSecurity(ln)
		if err != nil {
			return err
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ln.Host, strconv.Itoa(int(ln.Port))))
		if err != nil {
			return fmt.Errorf("broker: listen %s: %w", ln.Name, err)
		}
		b.listeners = append(b.listeners, l)
		b.lnNames = append(b.lnNames, ln.Name)
		b.lnSec = append(b.lnSec, sec)
		b.addrs = append(b.addrs, l.Addr().String())
	}
	// Advertised listeners: configured ones, with a port of 0 replaced by
	// the bound port (tests listen on :0).
	adv := slices.Clone(b.settings.AdvertisedListeners)
	if len(adv) == 0 {
		return errors.New("broker: no advertised listeners")
	}
	for i := range adv {
		if adv[i].Port != 0 {
			continue
		}
		for j, name := range b.lnNames {
			if name == adv[i].Name {
				adv[i].Port = int32(b.listeners[j].Addr().(*net.TCPAddr).Port)
			}
		}
	}
	b.advertised = adv

	if err := b.startAuthorizer(ctx); err != nil {
		return fmt.Errorf("broker: authorizer: %w", err)
	}
	if err := b.startQuotas(ctx); err != nil {
		return fmt.Errorf("broker: quotas: %w", err)
	}
	if err := b.startGroupConfigs(ctx); err != nil {
		return fmt.Errorf("broker: group configs: %w", err)
	}
	if err := b.startClientMetrics(ctx); err != nil {
		return fmt.Errorf("broker: client metrics: %w", err)
	}
	if err := b.loadLinks(ctx); err != nil {
		return fmt.Errorf("broker: cluster links: %w", err)
	}
	prevEpoch, err := b.takeCleanShutdown()
	if err != nil {
		return err
	}
	if err := b.listenRegistry(); err != nil {
		return err
	}
	if err := b.register(prevEpoch); err != nil {
		return err
	}
	registered = time.Since(start)
	b.shareCoord = b.newShareCoordinator()
	b.share = b.newShareManager()
	b.groups = b.newCoordinator()
	// Markers committed to __consumer_offsets settle the TxnOffsetCommits.
	b.SetTxnMarkerHook(func(p int32, pid int64, _ int16, commit bool) { b.groups.CompleteTxn(p, pid, commit) })
	if b.peerDial, err = b.newPeerDialer(); err != nil {
		return err
	}
	b.peers.b = b
	b.txn = b.newTxnCoordinator()
	b.newRegistry()
	b.fetchers = b.newFetchers()
	b.replicas = b.newReplicaManager()
	if b.tiered, err = b.newTieredManager(); err != nil {
		return err
	}
	cfgRev, err := b.reloadDynamicConfigs(ctx)
	if err != nil {
		return fmt.Errorf("broker: dynamic configs: %w", err)
	}
	rev, err := b.syncCachedMetadata(ctx)
	if err != nil {
		return fmt.Errorf("broker: load metadata: %w", err)
	}
	b.removeOrphanLogs()
	// The watches run until b.ctx ends; the store's Close waits for them.
	syncCached := func() {
		if _, err := b.syncCachedMetadata(b.ctx); err != nil && b.ctx.Err() == nil {
			b.log.Warn("metadata sync failed", "err", err)
		}
		b.kickLinks() // leaderships of mirror partitions may have moved
	}
	if err := b.store.WatchCachedTopics(b.ctx, rev, syncCached); err != nil {
		return fmt.Errorf("broker: watch metadata: %w", err)
	}
	b.store.WatchBrokers(b.ctx, 0, b.meta.forgetBrokers)
	b.store.WatchBrokerConfigs(b.ctx, cfgRev, func() {
		if _, err := b.reloadDynamicConfigs(b.ctx); err != nil && b.ctx.Err() == nil {
			b.log.Warn("dynamic broker configs: reload failed", "err", err)
			return
		}
		syncCached() // the topics' settings derive from the broker's
	})
	b.spawn(b.replicas.Run)
	b.spawn(b.runController)
	b.startLinks()
	b.spawn(b.maintenanceLoop)
	b.spawn(b.logDirFailureLoop)
	b.spawn(b.livenessLoop)
	if b.tokensEnabled() {
		b.spawn(b.tokenExpiryLoop)
	}
	if b.settings.LogCleanerEnable {
		b.spawn(b.cleanerLoop)
	}
	if b.tiered != nil {
		b.spawn(b.tiered.Run)
	}
	for i, l := range b.listeners {
		b.spawn(func(ctx context.Context) { b.accept(ctx, l, b.lnNames[i], b.lnSec[i]) })
	}
	if addr := b.settings.HTTPListener; addr != "" {
		bootstrap, mechanism := b.consoleBootstrap()
		var reg http.Handler // no typed nil: the console tells "no registry" by nil
		if b.registry != nil {
			reg = b.registry.Handler()
		}
		b.http, err = httpapi.Start(httpapi.Config{Addr: addr, Gatherer: b.metrics.reg, Bootstrap: bootstrap, SASLMechanism: mechanism,
			Clients: b.telemetry.Store().Clients, Registry: reg, Pprof: b.settings.HTTPPprof, Logger: b.log})
		if err != nil {
			return fmt.Errorf("broker: samsa.http.listener %s: %w", addr, err)
		}
		b.log.Info("serving metrics and the console", "url", "http://"+b.http.Addr()+"/")
	}
	if err := b.serveRegistry(); err != nil {
		return err
	}
	if err := b.serveProxy(); err != nil {
		return err
	}
	b.log.Info("samsa started", "node", b.nodeID, "listeners", b.addrs, "cluster", b.clusterID,
		"took", time.Since(start).Round(time.Microsecond), "etcd_ready", etcdReady.Round(time.Microsecond), "registered", registered.Round(time.Microsecond))
	return nil
}

// register writes this broker's lease-bound registration, with its rack
// (broker.rack). After a crash (kill -9) the previous registration lives
// on until its lease expires, as a ZooKeeper ephemeral node did: wait for
// that, up to initial.broker.registration.timeout.ms, rather than fail.
// prevEpoch is the epoch the previous process shut down cleanly in, -1
// after an unclean shutdown (takeCleanShutdown).
func (b *Broker) register(prevEpoch int64) error {
	wait := b.settings.InitialRegistrationTimeout
	ctx, cancel := context.WithTimeout(b.ctx, wait)
	defer cancel()
	first := b.advertised[0]
	info := controller.BrokerInfo{ID: b.nodeID, Host: first.Host, Port: first.Port, Rack: b.settings.Rack, PreviousEpoch: prevEpoch,
		SchemaRegistryURL: b.registryURL(), LogDirs: b.logDirs, CordonedLogDirs: b.cordonedDirs()}
	for _, l := range b.advertised {
		info.Endpoints = append(info.Endpoints, controller.Endpoint{Listener: l.Name, SecurityProtocol: l.Protocol, Host: l.Host, Port: l.Port})
	}
	warned := false
	for {
		err := b.store.RegisterBroker(ctx, info)
		if err == nil {
			return nil
		}
		if !errors.Is(err, controller.ErrBrokerIDInUse) {
			return fmt.Errorf("broker: register: %w", err)
		}
		if !warned {
			b.log.Warn("broker id still registered, waiting for the previous registration's lease to expire", "node", b.nodeID)
			warned = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker: register: %w (waited initial.broker.registration.timeout.ms, %v)", err, wait)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Addr is the first listener's bound address.
func (b *Broker) Addr() string {
	if len(b.addrs) == 0 {
		return ""
	}
	return b.addrs[0]
}

// HTTPAddr is the bound address of samsa.http.listener, or "".
func (b *Broker) HTTPAddr() string {
	if b.http == nil {
		return ""
	}
	return b.http.Addr()
}

// consoleBootstrap is the listener the console's Kafka client dials, and
// its SASL mechanism: the first PLAINTEXT listener (no login), else the
// first SASL_PLAINTEXT one with its first enabled mechanism (the console's
// users log in, and the console talks to Kafka as each of them). With
// neither, the console's API fails on the first listener, and says so.
func (b *Broker) consoleBootstrap() (addr, mechanism string) {
	protocol := func(name string) string {
		for _, ln := range b.settings.Listeners {
			if ln.Name == name {
				return ln.Protocol
			}
		}
		return ""
	}
	for i, name := range b.lnNames {
		if protocol(name) == "PLAINTEXT" {
			return dialable(b.addrs[i]), ""
		}
	}
	for i, name := range b.lnNames {
		if protocol(name) != "SASL_PLAINTEXT" {
			continue
		}
		for _, m := range strings.Split(b.props.ListenerString(name, "sasl.enabled.mechanisms"), ",") {
			if m = strings.TrimSpace(m); m == "PLAIN" || m == "SCRAM-SHA-256" || m == "SCRAM-SHA-512" {
				return dialable(b.addrs[i]), m
			}
		}
	}
	b.log.Warn("the console's API needs a PLAINTEXT or SASL_PLAINTEXT listener; it will fail on the first one's", "listener", b.lnNames[0])
	return dialable(b.addrs[0]), ""
}

// dialable is a bound address a client on this host can dial: an
// unspecified host (0.0.0.0, ::) becomes loopback.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// Addrs are the bound addresses of every listener, in configuration order.
func (b *Broker) Addrs() []string { return append([]string(nil), b.addrs...) }

// Panics is how many handler panics dispatch recovered from; tests and
// fuzzers expect none.
func (b *Broker) Panics() int64 { return b.panics.Load() }

// NodeID is this broker's id.
func (b *Broker) NodeID() int32 { return b.nodeID }

// SendfileBytes is how many record bytes Fetch responses sent with sendfile.
func (b *Broker) SendfileBytes() int64 { return b.stats.SendfileBytes.Load() }

// CopiedFileBytes is how many record bytes Fetch responses copied through
// user space (TLS, or samsa.fetch.sendfile=false).
func (b *Broker) CopiedFileBytes() int64 { return b.stats.CopiedFileBytes.Load() }

// spawn runs f in a goroutine that Close waits for, unless Close has begun.
func (b *Broker) spawn(f func(ctx context.Context)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f(b.ctx)
	}()
	return true
}

// Close is a clean shutdown: leadership moves to other replicas first
// (DrainLeadership, with controlled.shutdown.enable) while the logs are
// flushed as a clean close leaves them, then the broker stops
// accepting, closes every connection, waits for every goroutine, leaves
// etcd (revoking the broker's lease, so that the controller drops it from
// the ISRs at once) and closes the logs cleanly (so the next start needs
// no recovery scan).
func (b *Broker) Close() error {
	b.mu.Lock()
	closing := b.closing
	b.mu.Unlock()
	if !closing && b.ctx != nil {
		// While leadership moves away, every log is made durable as a
		// clean close leaves it: the close itself then has only what
		// changed since to write, nothing for an idle partition.
		prepared := make(chan struct{})
		go func() {
			defer close(prepared)
			began := time.Now()
			b.meta.prepareClose()
			b.log.Info("shutdown: logs flushed ahead of the close", "node", b.nodeID, "took", time.Since(began).Round(time.Millisecond))
		}()
		if err := b.DrainLeadership(b.ctx); err != nil && b.ctx.Err() == nil {
			b.log.Warn("controlled shutdown failed; shutting down anyway", "node", b.nodeID, "err", err)
		}
		<-prepared
	}
	return b.shutdown(true)
}

// Kill stops the broker as a crash would, within the process: connections
// and goroutines stop, but the logs are not closed cleanly (the next start
// runs a recovery scan) and the etcd lease is not revoked (the
// registration lives until broker.session.timeout.ms). For tests.
func (b *Broker) Kill() error { return b.shutdown(false) }

// shutdown is Close; with clean false it is Kill: the logs are left as a
// crash leaves them and the etcd lease is not revoked.
func (b *Broker) shutdown(clean bool) error {
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		return nil
	}
	b.closing = true
	b.mu.Unlock()
	began := time.Now()
	if b.store != nil {
		// From here the listeners close: a lease lost now (peers fence a
		// port that refuses them) must not bring the registration back.
		b.store.Leave()
	}
	if b.http != nil {
		// First: the console's client closes its connections itself.
		if err := b.http.Close(); err != nil {
			b.log.Warn("closing the http listener", "err", err)
		}
	}
	// Then the REST proxy: its consumer instances leave their groups.
	b.closeProxy()
	b.mu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	if b.cancel != nil {
		b.cancel()
	}
	for _, l := range b.listeners {
		l.Close()
	}
	b.wg.Wait()
	if b.groups != nil {
		b.groups.Close()
	}
	if b.share != nil {
		b.share.Close()
	}
	b.closeRegistry()
	if b.txn != nil {
		b.txn.Close()
	}
	if b.shareCoord != nil {
		b.shareCoord.Close()
	}
	b.peers.close()
	if b.fetchers != nil {
		b.fetchers.Close()
	}
	var errs []error
	var epoch int64 // of this registration, for the clean shutdown file
	if b.store != nil {
		epoch = b.store.BrokerEpoch()
	}
	if b.store != nil && clean {
		errs = append(errs, b.store.Close())
	} else if b.store != nil {
		b.store.Abandon()
	}
	stopped := time.Now() // connections, goroutines and the etcd session
	if clean && b.replicas != nil {
		b.replicas.CheckpointHWs()
	}
	logsBegan := time.Now()
	if err := b.meta.closeAll(clean); err != nil {
		errs = append(errs, err)
	} else if clean && epoch > 0 {
		errs = append(errs, b.markCleanShutdown(epoch))
	}
	if b.embedded != nil {
		errs = append(errs, b.embedded.Close())
	}
	// The phases of a shutdown, to tell where a slow one spends its time.
	b.log.Info("samsa stopped", "node", b.nodeID, "clean", clean, "took", time.Since(began).Round(time.Millisecond),
		"stopping", stopped.Sub(began).Round(time.Millisecond), "hw_checkpoints", logsBegan.Sub(stopped).Round(time.Millisecond),
		"closing_logs", time.Since(logsBegan).Round(time.Millisecond))
	return errors.Join(errs...)
}

// accept serves the connections of listener l, named name, with its
// security.
func (b *Broker) accept(ctx context.Context, l net.Listener, name string, sec *listenerSecurity) {
	var backoff time.Duration
	interBroker := name == b.interBrokerListener()
	for {
		// max.connections: past it, the broker accepts nothing more on its
		// client listeners until a connection closes (the kernel's backlog
		// holds the rest), as Kafka's acceptor waits; the inter-broker
		// listener is exempt, as Kafka protects it.
		for !interBroker && b.connCount() >= int(b.cfg().Settings().MaxConnections) {
			select {
			case <-ctx.Done():
				return
			case <-b.freed:
			case <-time.After(100 * time.Millisecond):
			}
		}
		if !interBroker && !b.limits.waitCreation(ctx, func() int32 { return b.cfg().Settings().MaxConnectionCreation }) {
			return
		}
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			b.log.Warn("accept failed", "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		ip := remoteIP(c)
		limit := b.perIPLimit(b.cfg().Settings(), ip)
		b.mu.Lock()
		if b.closing {
			b.mu.Unlock()
			c.Close()
			return
		}
		if !interBroker && b.perIP[ip] >= limit {
			b.mu.Unlock()
			// Kafka closes it at once (TooManyConnectionsException).
			b.log.Info("rejected connection: max.connections.per.ip reached", "remote", c.RemoteAddr().String(), "listener", name, "max", limit)
			c.Close()
			continue
		}
		b.conns[c] = struct{}{}
		b.perIP[ip]++
		b.mu.Unlock()
		if !b.spawn(func(ctx context.Context) { b.serveConn(ctx, c, name, sec) }) {
			c.Close()
		}
	}
}

// connCount is the number of open connections.
func (b *Broker) connCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// remoteIP is a connection's peer address without its port.
func remoteIP(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

func (b *Broker) forgetConn(c net.Conn) {
	ip := remoteIP(c)
	b.mu.Lock()
	if _, ok := b.conns[c]; ok {
		delete(b.conns, c)
		if b.perIP[ip]--; b.perIP[ip] <= 0 {
			delete(b.perIP, ip)
		}
	}
	b.mu.Unlock()
	select {
	case b.freed <- struct{}{}:
	default:
	}
}

// cleanerLoop is the log cleaner: every log.cleaner.backoff.ms it gives
// each compacted log a pass (which does nothing unless enough of the log is
// new since the last one). It runs apart from retention and flushes, which
// a long pass must not hold up.
// log.cleaner.backoff.ms is dynamic: a change takes effect from the next
// tick.
func (b *Broker) cleanerLoop(ctx context.Context) {
	backoff := func() time.Duration { return max(b.cfg().Settings().LogCleanerBackoff, 10*time.Millisecond) }
	every := backoff()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.cleanLogs(ctx)
		}
		if d := backoff(); d != every {
			every = d
			t.Reset(every)
		}
	}
}

// cleanLogs runs one compaction pass over each local log of a compacted
// topic, below its high watermark: a follower cleans its own copy, as in
// Kafka, and a consumer never sees a log change above what it may read.
func (b *Broker) cleanLogs(ctx context.Context) {
	maxKeys := b.cleanerMaxKeys()
	for _, t := range b.meta.topicList() {
		if t.cleaner == nil {
			continue
		}
		for _, p := range t.parts {
			if ctx.Err() != nil {
				return
			}
			if p == nil || p.Log == nil {
				continue
			}
			opts := *t.cleaner
			opts.UpTo, opts.MaxKeys = p.LastStableOffset(), maxKeys // never past an undecided transaction
			if t.remote != nil {
				// Tombstones go locally only where the remote segments
				// are clean (tiered.Metadata.CleanedTo).
				opts.Tiered = true
				if b.tiered != nil {
					md, _ := b.tiered.Cached(t.id, p.ID)
					opts.TieredCleanedTo = md.CleanedTo
				}
			}
			// The clock now, not the tick's: a tick waits in its channel
			// while a slow pass runs, and a segment sealed after the tick
			// would look written in the future, keeping its expired
			// tombstones while the pass marks it clean (TestFranzCompaction
			// found a tombstone never removed under load).
			st, err := p.Log.Compact(time.Now(), opts)
			switch {
			case err != nil && !errors.Is(err, logstore.ErrClosed) && !errors.Is(err, logstore.ErrCompactAborted):
				b.log.Warn("log compaction failed", "partition", p.String(), "err", err)
			case st.Segments > 0:
				b.log.Debug("log compacted", "partition", p.String(), "segments", st.Segments,
					"bytes_before", st.BytesBefore, "bytes_after", st.BytesAfter, "records_removed", st.RecordsRemoved)
			}
		}
	}
}

// cleanerMaxKeys bounds the log cleaner's key map by
// log.cleaner.dedupe.buffer.size: a key costs about 64 bytes in it (an
// MD5 and an offset, with the map's own overhead), not Kafka's 24.
func (b *Broker) cleanerMaxKeys() int {
	return int(b.cfg().Settings().LogCleanerDedupeBytes / 64)
}

// maintenanceLoop enforces retention every log.retention.check.interval.ms
// and, every second, flushes the partitions whose flush.ms has passed (an
// idle partition gets no append to trigger it).
func (b *Broker) maintenanceLoop(ctx context.Context) {
	t := time.NewTicker(b.retentionTick)
	defer t.Stop()
	flush := time.NewTicker(time.Second)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-flush.C:
			for _, p := range b.meta.allPartitions() {
				if _, err := p.Log.FlushIfDue(now); err != nil && ctx.Err() == nil {
					b.log.Warn("flush failed", "partition", p.String(), "err", err)
				}
			}
		case now := <-t.C:
			for _, p := range b.meta.allPartitions() {
				if n, err := p.Log.EnforceRetention(now); err != nil {
					b.log.Warn("retention failed", "partition", p.String(), "err", err)
				} else if n > 0 {
					b.log.Info("retention deleted segments", "partition", p.String(), "segments", n)
					p.Signal()
				}
			}
		}
	}
}
