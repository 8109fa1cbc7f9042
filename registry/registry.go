package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/coordinator"
)

// Log is the _schemas topic as the registry reads and writes it; the
// broker implements it. Every method works on partition 0.
type Log interface {
	// Ensure creates the topic when it does not exist: one partition,
	// compacted, as Confluent's registry creates it.
	Ensure(ctx context.Context) error
	// Read returns the committed records (up to the high watermark) from
	// offset from on, waiting up to wait for one when there is none yet,
	// and the offset to read next. A from below the log's start reads
	// from its start.
	Read(ctx context.Context, from int64, wait time.Duration) (recs []Record, next int64, err error)
	// Append writes recs, in order, in leader epoch epoch (refused once
	// the partition has another) and returns the offset of the last once
	// they are committed.
	Append(ctx context.Context, epoch int32, recs []Record) (last int64, err error)
}

// Config is the registry's part of the broker configuration.
type Config struct {
	Log    Log
	Logger *slog.Logger
	// Topic is kafkastore.topic, for logs.
	Topic string
	// Compatibility is schema.compatibility.level, the global level
	// until a config record sets one.
	Compatibility string
	// MaxBodyBytes bounds a request's body.
	MaxBodyBytes int64
	// PollWait is how long one read of the topic waits for records.
	PollWait time.Duration
	// WriteTimeout bounds one write: its append and its replay.
	WriteTimeout time.Duration
	// Leader returns the URL of the registry that writes (the one of the
	// broker leading the topic's partition), for a registry that does
	// not to forward writes to; nil, it answers them with 50003.
	Leader func(ctx context.Context) (string, error)
	// Client forwards writes; http.DefaultClient's transport when nil.
	Client *http.Client
	// Authenticate, when set, checks every request's HTTP basic
	// credentials: ok and the principal ("User:name") when they are a
	// user's, err when they could not be checked.
	Authenticate func(ctx context.Context, user, password string) (principal string, ok bool, err error)
	// Authorize, when set, tells whether a principal, from host, may make
	// op on subject ("": on the registry as a whole).
	Authorize func(principal, host string, op Op, subject string) bool
	// Observe, when set, is told of every request answered: its method,
	// its route (the path pattern, "" when none matched) and the error
	// code of Confluent's it got (0: none).
	Observe func(method, route string, code int)
}

// Registry serves the REST API from the state replayed from _schemas,
// and writes while this broker leads its partition.
type Registry struct {
	cfg   Config
	log   *slog.Logger
	state *State
	rt    *coordinator.Runtime[*writer]
	mux   *http.ServeMux
	// declared are the routes, "METHOD pattern", for a test to walk.
	declared []string

	srvMu sync.Mutex
	srv   *http.Server // guarded by srvMu
	ln    net.Listener // guarded by srvMu
}

// New returns a registry that reads once started (Start) and writes once
// SetOwned gives it partition 0.
func New(cfg Config) *Registry {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Topic == "" {
		cfg.Topic = "_schemas"
	}
	if level, ok := ValidLevel(cfg.Compatibility); ok {
		cfg.Compatibility = level
	} else {
		cfg.Compatibility = levelBackward
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 8 << 20
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = 500 * time.Millisecond
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 2 * cfg.WriteTimeout}
	}
	r := &Registry{cfg: cfg, log: cfg.Logger, state: newState()}
	r.rt = coordinator.New(coordinator.Config[*writer]{
		Topic:         cfg.Topic,
		Logger:        cfg.Logger,
		New:           func(sh *coordinator.Shard) *writer { return &writer{r: r, sh: sh} },
		AppendTimeout: cfg.WriteTimeout,
	})
	r.mux = r.routes()
	return r
}

// Start starts the reader, which creates the topic if need be and
// replays it into the state until Close.
func (r *Registry) Start() { r.rt.Go(r.readLoop) }

// SetOwned tells the registry whether this broker leads partition 0 of
// _schemas, and in which leader epoch: owned holds {0: epoch} then, and
// nothing otherwise.
func (r *Registry) SetOwned(owned map[int32]int32) { r.rt.SetOwned(owned) }

// Close stops the listener, the reader and the writer.
func (r *Registry) Close() error {
	r.srvMu.Lock()
	srv := r.srv
	r.srvMu.Unlock()
	var err error
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = srv.Shutdown(ctx)
		cancel()
		if err != nil {
			// Requests still in flight (a write waiting for the store):
			// their connections close now, or one would go on serving
			// its client after the registry is gone.
			err = errors.Join(err, srv.Close())
		}
	}
	r.rt.Close()
	return err
}

// Handler is the REST API.
func (r *Registry) Handler() http.Handler { return r }

// Serve answers the REST API on ln until Close.
func (r *Registry) Serve(ln net.Listener) {
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(r.log.Handler(), slog.LevelDebug)}
	r.srvMu.Lock()
	r.srv, r.ln = srv, ln
	r.srvMu.Unlock()
	if !r.rt.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.log.Warn("schema registry listener stopped", "err", err)
		}
	}) {
		ln.Close()
	}
}

// Addr is the listener's address, or "".
func (r *Registry) Addr() string {
	r.srvMu.Lock()
	defer r.srvMu.Unlock()
	if r.ln == nil {
		return ""
	}
	return r.ln.Addr().String()
}

// readLoop creates the topic if need be, then applies its records as
// they are committed, until the registry closes.
func (r *Registry) readLoop() {
	ctx := r.rt.Context()
	backoff := func(d time.Duration) bool { return sleep(ctx, d) }
	for {
		err := r.cfg.Log.Ensure(ctx)
		if err == nil {
			break
		}
		r.log.Debug("schema registry: creating "+r.cfg.Topic+" failed", "err", err)
		if !backoff(time.Second) {
			return
		}
	}
	for ctx.Err() == nil {
		from, _ := r.state.applied()
		recs, next, err := r.cfg.Log.Read(ctx, from, r.cfg.PollWait)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Debug("schema registry: reading "+r.cfg.Topic+" failed", "err", err)
			}
			if !backoff(200 * time.Millisecond) {
				return
			}
			continue
		}
		for _, err := range r.state.apply(recs, next) {
			r.log.Warn("schema registry: skipping a record", "topic", r.cfg.Topic, "err", err)
		}
	}
}

// waitApplied waits until the reader has applied every record before
// offset off.
func (r *Registry) waitApplied(ctx context.Context, off int64) error {
	for {
		next, moved := r.state.applied()
		if next >= off {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
		}
	}
}

// errNotWriter: this broker does not lead _schemas (or is still
// loading it).
var errNotWriter = errors.New("this broker does not lead the schema registry's topic")

// write makes one change: under the writer's lock, build computes the
// records from the state (which holds every record written before) and
// write appends them and waits until the reader has applied them.
func (r *Registry) write(ctx context.Context, build func() ([]Record, error)) error {
	w, err := r.rt.Get(0)
	if err != nil {
		return errNotWriter
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	recs, err := build()
	if err != nil || len(recs) == 0 {
		return err
	}
	var last int64
	err = w.sh.Append(func(ctx context.Context) error {
		var err error
		last, err = r.cfg.Log.Append(ctx, w.sh.Epoch(), recs)
		return err
	})
	switch {
	case errors.Is(err, kerr.NotCoordinator):
		// Fenced, or unloaded meanwhile: another broker writes now.
		return errNotWriter
	case err != nil:
		return fmt.Errorf("%w: %v", errStoreTimeout, err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
	defer cancel()
	if err := r.waitApplied(ctx, last+1); err != nil {
		return fmt.Errorf("%w: %v", errStoreTimeout, err)
	}
	if p, ok := ctx.Value(writtenKey{}).(*int64); ok {
		*p = last + 1
	}
	return nil
}

// errStoreTimeout: a write was not committed, or not read back, in time.
var errStoreTimeout = errors.New("write to the Kafka store timed out")

// writer is the coordinator.Machine of partition 0 while this broker
// leads it.
type writer struct {
	r  *Registry
	sh *coordinator.Shard

	mu  sync.Mutex // the machine's lock (guards sh.State)
	wmu sync.Mutex // held for one write, build to replay
}

func (w *writer) Lock()     { w.mu.Lock() }
func (w *writer) Unlock()   { w.mu.Unlock() }
func (w *writer) Unloaded() {}

// Load appends a NOOP record in the shard's epoch and waits until the
// reader has applied it: every record written before, by any writer, is
// in the state then.
func (w *writer) Load(ctx context.Context) (func(), error) {
	for {
		actx, cancel := context.WithTimeout(ctx, w.r.cfg.WriteTimeout)
		last, err := w.r.cfg.Log.Append(actx, w.sh.Epoch(), []Record{noopRecord()})
		if err == nil {
			err = w.r.waitApplied(actx, last+1)
		}
		cancel()
		if err == nil {
			return nil, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		w.r.log.Debug("schema registry: taking the writer's role failed, retrying", "err", err)
		if !sleep(ctx, 200*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

// sleep waits d, or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
