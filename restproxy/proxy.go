package restproxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/admin"
)

// Config is the proxy's part of the broker configuration.
type Config struct {
	// Bootstrap is the Kafka address (host:port) of the broker's listener
	// the proxy's clients dial.
	Bootstrap string
	// SASLMechanism is the Bootstrap listener's SASL mechanism (PLAIN,
	// SCRAM-SHA-256 or SCRAM-SHA-512), "" for a PLAINTEXT one. When set,
	// every request needs HTTP Basic credentials, which the proxy's
	// clients authenticate with.
	SASLMechanism string
	// ClientOpts are added to every client's options (a TLS dialer).
	ClientOpts []kgo.Opt
	Logger     *slog.Logger
	// MaxBodyBytes bounds a request's body.
	MaxBodyBytes int64
	// InstanceTimeout is consumer.instance.timeout.ms: an instance idle
	// this long is closed.
	InstanceTimeout time.Duration
	// RequestTimeout is consumer.request.timeout.ms: how long a GET of
	// records waits when it names no timeout.
	RequestTimeout time.Duration
	// RequestMaxBytes is consumer.request.max.bytes: the most a GET of
	// records answers when it names no max_bytes.
	RequestMaxBytes int64
	// RegistryURL is the schema registry's (samsa's own), for the avro
	// and jsonschema formats; "" when the broker serves none.
	RegistryURL string
	// RegistryHTTP reaches it (its TLS); http.DefaultClient's when nil.
	RegistryHTTP *http.Client
	// CORS lets pages of other origins call the API (cors.go).
	CORS CORS
}

// Proxy serves the REST API.
type Proxy struct {
	cfg Config
	log *slog.Logger
	mux http.Handler    // the routes, behind the CORS filter
	ctx context.Context // the proxy's root context; ends at Close

	schemas schemaCache
	stop    context.CancelFunc
	wg      sync.WaitGroup

	mu        sync.Mutex
	users     map[string]*userClient    // by loginKey; guarded by mu
	consumers map[instanceKey]*consumer // guarded by mu
	closed    bool                      // guarded by mu

	srvMu sync.Mutex
	srv   *http.Server // guarded by srvMu
	ln    net.Listener // guarded by srvMu
}

// maxUsers bounds the users' clients kept; the least recently used goes.
const maxUsers = 64

// userClient is the Kafka clients of one user (or of everyone, on a
// PLAINTEXT listener): a producer, which creates a topic it produces to
// when the broker allows (as the Java producer's metadata requests do),
// and an admin client, which never does (a GET of a topic, or the lag of
// a group that read a deleted topic, must not create it).
type userClient struct {
	key  string // loginKey: "" on a PLAINTEXT listener
	user string
	opts []kgo.Opt // the user's connection options, for its consumers
	kgo  *kgo.Client
	admc *kgo.Client
	adm  *kadm.Client
	used time.Time
}

func (u *userClient) close() {
	u.kgo.Close()
	u.admc.Close()
}

// New returns a proxy; Serve serves it.
func New(cfg Config) *Proxy {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 16 << 20
	}
	if cfg.InstanceTimeout <= 0 {
		cfg.InstanceTimeout = 300 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = time.Second
	}
	if cfg.RequestMaxBytes <= 0 {
		cfg.RequestMaxBytes = 64 << 20
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &Proxy{cfg: cfg, log: cfg.Logger, ctx: ctx, stop: stop, users: map[string]*userClient{}, consumers: map[instanceKey]*consumer{}}
	p.mux = newCORSFilter(cfg.CORS).wrap(p.routes())
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.expireLoop()
	}()
	return p
}

// Handler is the REST API.
func (p *Proxy) Handler() http.Handler { return p.mux }

// Serve answers the REST API on ln until Close.
func (p *Proxy) Serve(ln net.Listener) {
	srv := &http.Server{Handler: p.mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)}
	p.srvMu.Lock()
	p.srv, p.ln = srv, ln
	p.srvMu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.log.Warn("REST proxy listener stopped", "err", err)
		}
	}()
}

// Addr is the listener's address, or "".
func (p *Proxy) Addr() string {
	p.srvMu.Lock()
	defer p.srvMu.Unlock()
	if p.ln == nil {
		return ""
	}
	return p.ln.Addr().String()
}

// Close stops the listener, closes every consumer instance (leaving its
// group) and every client.
func (p *Proxy) Close() error {
	p.srvMu.Lock()
	srv := p.srv
	p.srvMu.Unlock()
	var err error
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(ctx)
		cancel()
	}
	p.stop()
	p.mu.Lock()
	p.closed = true
	consumers, users := p.consumers, p.users
	p.consumers, p.users = map[instanceKey]*consumer{}, map[string]*userClient{}
	p.mu.Unlock()
	for _, c := range consumers {
		c.close()
	}
	for _, u := range users {
		u.close()
	}
	p.wg.Wait()
	return err
}

// expireLoop closes the consumer instances idle for InstanceTimeout.
func (p *Proxy) expireLoop() {
	every := min(p.cfg.InstanceTimeout/4, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case now := <-t.C:
			var idle []*consumer
			p.mu.Lock()
			for k, c := range p.consumers {
				if c.idleSince(now) >= p.cfg.InstanceTimeout {
					delete(p.consumers, k)
					idle = append(idle, c)
				}
			}
			p.mu.Unlock()
			for _, c := range idle {
				p.log.Info("REST proxy: consumer instance expired", "group", c.key.group, "instance", c.key.name)
				c.close()
			}
		}
	}
}

// errLogin: the listener is a SASL one and the request has no Basic
// credentials.
var errLogin = errors.New("restproxy: credentials required")

// client is the Kafka client of the request's user.
func (p *Proxy) client(r *http.Request) (*userClient, error) {
	user, pass, key := "", "", ""
	if p.cfg.SASLMechanism != "" {
		var ok bool
		user, pass, ok = r.BasicAuth()
		if !ok || user == "" {
			return nil, errLogin
		}
		key = admin.LoginKey(user, pass)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errClosed
	}
	if u := p.users[key]; u != nil {
		u.used = time.Now()
		return u, nil
	}
	opts := []kgo.Opt{kgo.SeedBrokers(p.cfg.Bootstrap), kgo.ClientID("samsa-rest-proxy")}
	opts = append(opts, p.cfg.ClientOpts...)
	if p.cfg.SASLMechanism != "" {
		m, err := admin.SASL(p.cfg.SASLMechanism, user, pass)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	cl, err := kgo.NewClient(append(opts,
		kgo.RecordPartitioner(partitioner{kgo.StickyKeyPartitioner(nil)}),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(0),
		// Uncompressed, as the Java producer of Confluent's proxy
		// (compression.type none), not franz-go's snappy: a client
		// without snappy (kafkajs) reads what was produced over HTTP.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)...)
	if err != nil {
		return nil, err
	}
	admc, err := kgo.NewClient(opts...)
	if err != nil {
		cl.Close()
		return nil, err
	}
	if len(p.users) >= maxUsers {
		oldest := admin.Oldest(p.users, func(u *userClient) time.Time { return u.used })
		p.users[oldest].close()
		delete(p.users, oldest)
	}
	u := &userClient{key: key, user: user, opts: opts, kgo: cl, admc: admc, adm: kadm.NewClient(admc), used: time.Now()}
	p.users[key] = u
	return u, nil
}

// forget drops the client of a request's credentials (the cluster refused
// them).
func (p *Proxy) forget(r *http.Request) {
	if p.cfg.SASLMechanism == "" {
		return
	}
	user, pass, _ := r.BasicAuth()
	key := admin.LoginKey(user, pass)
	p.mu.Lock()
	u := p.users[key]
	delete(p.users, key)
	p.mu.Unlock()
	if u != nil {
		u.close()
	}
}

// errClosed: the proxy is closing.
var errClosed = errors.New("restproxy: closed")
