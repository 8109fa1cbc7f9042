package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"
)

// EmbeddedConfig configures an in-process etcd server: a single member on
// loopback, or, with Members, one member of a cluster (see Member).
type EmbeddedConfig struct {
	// Dir holds etcd's data (member/wal, member/snap). Required.
	Dir string
	// ClientPort and PeerPort are the loopback ports to listen on; 0 picks
	// a free port on every start (nothing about ports is persisted, so a
	// restart may use other ports).
	ClientPort, PeerPort int
	// Host is the IPv4 address to listen on; empty means 127.0.0.1. With
	// another host ClientPort and PeerPort must be given.
	Host string
	// Logger receives etcd's warnings and errors (info and debug are
	// dropped). Nil means slog.Default().
	Logger *slog.Logger
	// MaxTxnOps is etcd's --max-txn-ops; 0 means 65536, so that a topic
	// of up to 65534 partitions is created in one transaction.
	MaxTxnOps uint
	// StartTimeout bounds how long StartEmbedded waits for the server to
	// be ready: for a member of a cluster, for a majority of the members
	// to be up. Zero means 30s.
	StartTimeout time.Duration

	// Members, when not empty, makes this server one member of a cluster
	// of these (the KRaft controller quorum: see quorum.go); Name is this
	// one's, and Listen the address its Addr is served on. etcd itself
	// then listens on loopback (ClientPort, PeerPort) and a listener on
	// Listen carries both its peer and its client traffic.
	Members []Member
	Name    string
	Listen  string
}

// Limits of the embedded server. A topic is created in one transaction of
// partitions+3 operations, so the default of etcd (128 operations, 1.5 MiB)
// would cap topics at 125 partitions.
const (
	embeddedMaxTxnOps       = 1 << 16
	embeddedMaxRequestBytes = 10 << 20 // etcd warns above 10 MiB
	maxCallSendBytes        = embeddedMaxRequestBytes
)

// Embedded is a running in-process etcd server listening on 127.0.0.1 (or
// EmbeddedConfig.Host).
type Embedded struct {
	etcd      *embed.Etcd
	endpoints []string
	log       *dropHandler
	mux       *portMux // nil for a single member
}

// StartEmbedded starts a single-member etcd cluster in cfg.Dir (creating it
// on the first start, reopening it after) and waits until it serves
// requests.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.Dir == "" {
		return nil, errors.New("controller: embedded etcd: Dir required")
	}
	if cfg.ClientPort < 0 || cfg.ClientPort > 65535 || cfg.PeerPort < 0 || cfg.PeerPort > 65535 {
		return nil, fmt.Errorf("controller: embedded etcd: bad ports client=%d peer=%d", cfg.ClientPort, cfg.PeerPort)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if len(cfg.Members) > 0 {
		return startMember(cfg)
	}
	pick := cfg.ClientPort == 0 || cfg.PeerPort == 0
	var lastErr error
	for attempt := 0; attempt < 10; attempt++ {
		e, err := startEmbeddedOnce(cfg)
		if err == nil {
			return e, nil
		}
		lastErr = err
		// A port picked by us may have been taken by someone else between
		// our probe and etcd's bind: pick again.
		if !pick || !isAddrInUse(err) {
			break
		}
	}
	return nil, lastErr
}

func startEmbeddedOnce(cfg EmbeddedConfig) (*Embedded, error) {
	ec, quiet, err := embedConfig(cfg)
	if err != nil {
		return nil, err
	}
	ec.Name = "samsa"
	ec.InitialCluster = ec.Name + "=" + ec.AdvertisePeerUrls[0].String()
	ec.InitialClusterToken = "samsa"
	// The embedded etcd is one member, which never loses an election: the
	// election timeout only decides when its first leader comes, and so when
	// the broker can start. A fresh single member campaigns after 1 to
	// ElectionMs/TickMs ticks (etcd fast-forwards all but one tick of the
	// randomized timeout): 10-50 ms here, against 10-100 ms with a 100 ms
	// timeout (process start to first ack 65-110 ms instead of 130-150 ms).
	// A shorter tick costs idle CPU: 5 ms ticks took an idle broker from
	// 2.3% to 3.5% of a core.
	ec.TickMs = 10
	ec.ElectionMs = 50
	e, err := runEtcd(ec, quiet, cfg, nil)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// embedConfig returns etcd's configuration for cfg, listening on loopback
// or cfg.Host (cfg's ports, or free ones), without name or cluster.
func embedConfig(cfg EmbeddedConfig) (*embed.Config, *dropHandler, error) {
	clientPort, peerPort := cfg.ClientPort, cfg.PeerPort
	var err error
	if clientPort == 0 {
		if clientPort, err = freeLoopbackPort(); err != nil {
			return nil, nil, err
		}
	}
	if peerPort == 0 {
		if peerPort, err = freeLoopbackPort(); err != nil {
			return nil, nil, err
		}
		for peerPort == clientPort {
			if peerPort, err = freeLoopbackPort(); err != nil {
				return nil, nil, err
			}
		}
	}
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	curl := url.URL{Scheme: "http", Host: net.JoinHostPort(host, strconv.Itoa(clientPort))}
	purl := url.URL{Scheme: "http", Host: net.JoinHostPort(host, strconv.Itoa(peerPort))}

	ec := embed.NewConfig()
	ec.Dir = cfg.Dir
	ec.ListenClientUrls = []url.URL{curl}
	ec.AdvertiseClientUrls = []url.URL{curl}
	ec.ListenPeerUrls = []url.URL{purl}
	ec.AdvertisePeerUrls = []url.URL{purl}
	ec.ClusterState = embed.ClusterStateFlagNew
	ec.EnableGRPCGateway = false
	ec.MaxTxnOps = embeddedMaxTxnOps
	if cfg.MaxTxnOps > 0 {
		ec.MaxTxnOps = cfg.MaxTxnOps
	}
	ec.MaxRequestBytes = embeddedMaxRequestBytes
	// Metadata is small but every ISR change or producer-id block is a new
	// revision: keep one hour of history for watchers.
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	ec.AutoCompactionRetention = "1h"
	// NewConfig leaves this at 0 (only the etcd command's flag has the
	// default), which logs every request as "expensive".
	ec.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	ec.LogLevel = "warn"
	quiet := newDropHandler(cfg.Logger.Handler())
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zapToSlog(slog.New(quiet), zapcore.WarnLevel))

	return ec, quiet, nil
}

// runEtcd starts etcd and waits until it is ready, calling waiting (if
// not nil) every few seconds until then.
func runEtcd(ec *embed.Config, quiet *dropHandler, cfg EmbeddedConfig, waiting func(time.Duration)) (*Embedded, error) {
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("controller: embedded etcd: %w", err)
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		quiet.closing.Store(true)
		return nil, fmt.Errorf("controller: embedded etcd in %s: %w", cfg.Dir, err)
	}
	start := time.Now()
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
wait:
	for {
		select {
		case <-e.Server.ReadyNotify():
			break wait
		case <-tick.C:
			if waiting != nil {
				waiting(time.Since(start))
			}
		case err := <-e.Err():
			quiet.closing.Store(true)
			e.Close()
			return nil, fmt.Errorf("controller: embedded etcd in %s: %w", cfg.Dir, err)
		case <-timer.C:
			quiet.closing.Store(true)
			// Close waits for the client servers, which start only once
			// the member is ready or stopping: stop it first.
			e.Server.HardStop()
			e.Close()
			return nil, fmt.Errorf("controller: embedded etcd in %s not ready after %v", cfg.Dir, cfg.StartTimeout)
		}
	}
	endpoints := make([]string, 0, len(e.Clients))
	for _, l := range e.Clients {
		endpoints = append(endpoints, "http://"+l.Addr().String())
	}
	return &Embedded{etcd: e, endpoints: endpoints, log: quiet}, nil
}

// Endpoints returns the client URLs, for Config.Endpoints.
func (e *Embedded) Endpoints() []string {
	return append([]string(nil), e.endpoints...)
}

// Close stops the server and waits for its goroutines. Clients still
// connected (watch streams) delay it by up to etcd's request timeout, so
// close Stores first.
func (e *Embedded) Close() error {
	// etcd reports its own shutdown as a series of errors; they are noise.
	e.log.closing.Store(true)
	e.etcd.Close()
	if e.mux != nil {
		e.mux.close()
	}
	// Err is closed once every serving goroutine has returned.
	var errs []error
	for err := range e.etcd.Err() {
		if err != nil && !isClosedErr(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("controller: picking a loopback port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, err
	}
	return port, nil
}

func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

func isClosedErr(err error) bool {
	return errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "use of closed network connection")
}

// dropHandler filters etcd's log: it drops the warnings etcd always prints
// for the way we run it embedded (one member, plain HTTP on loopback), and
// once the server is closing it demotes everything to debug, since etcd
// reports its own orderly shutdown as errors.
type dropHandler struct {
	h       slog.Handler
	closing *atomic.Bool
}

var etcdNoise = []string{
	"Running http and grpc server on single port",
	"simple token is not cryptographically signed",
	"since there are still pending configuration changes to apply", // first election of a new member
}

func newDropHandler(h slog.Handler) *dropHandler {
	return &dropHandler{h: h, closing: new(atomic.Bool)}
}

func (d *dropHandler) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, l) }

func (d *dropHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, p := range etcdNoise {
		if strings.Contains(r.Message, p) {
			return nil
		}
	}
	noise := false
	r.Attrs(func(a slog.Attr) bool {
		// The storage-version check runs before the first apply of a new
		// member and fails harmlessly; it is retried.
		if a.Key == "error" && strings.Contains(a.Value.String(), "missing term information") {
			noise = true
			return false
		}
		return true
	})
	if noise {
		return nil
	}
	if d.closing.Load() && r.Level > slog.LevelDebug {
		r.Level = slog.LevelDebug
		if !d.h.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return d.h.Handle(ctx, r)
}

func (d *dropHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &dropHandler{h: d.h.WithAttrs(as), closing: d.closing}
}

func (d *dropHandler) WithGroup(name string) slog.Handler {
	return &dropHandler{h: d.h.WithGroup(name), closing: d.closing}
}
