package httpapi

// The console's JSON API. Every call is a Kafka request to the broker the
// console runs in, through internal/admin (kadm), so it is answered, and
// authorized, as any client's would be.
//
//	GET    /api/cluster                     brokers, controller, health
//	GET    /api/topics[?internal=true]      topic list
//	POST   /api/topics                      {"name","partitions","replication_factor","configs":{k:v}}
//	GET    /api/topics/{topic}              partitions, offsets, configs
//	DELETE /api/topics/{topic}
//	POST   /api/topics/{topic}/configs      {"set":{k:v},"delete":[k]}
//	GET    /api/topics/{topic}/messages?partition=P&from=start|end|N|@millis&limit=N
//	GET    /api/groups                      group list
//	GET    /api/groups/{group}              members, assignments, lag per partition
//	POST   /api/groups/{group}/seek         {"topic":"" (all), "to":"start|end|N|@millis"}
//	DELETE /api/groups/{group}
//	GET    /api/links                       cluster links: state, mirror topics and
//	                                        partitions with their lag, lag history
//	GET    /api/clients                     client instances that pushed metrics
//	                                        here (KIP-714), their series and plots
//
// Errors are {"error": "..."} with status 400 (bad input), 404 (unknown
// topic or group) or 502 (the cluster refused or failed). A request that
// changes something must be JSON (Content-Type: application/json) and, if
// it names an Origin, come from the console's own: another site's page
// cannot make a browser send it.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/clientmetrics"
	"github.com/samsa-io/samsa/internal/admin"
)

// api is the console's JSON API.
type api struct {
	bootstrap string
	mechanism string // SASL mechanism of the console's login; "": none
	clients   func() []clientmetrics.ClientView
	log       *slog.Logger

	mu     sync.Mutex
	client *admin.Client           // without a login: made on first use; guarded by mu
	users  map[string]*loginClient // with a login: by user and password; guarded by mu
	closed bool                    // guarded by mu
}

func newAPI(bootstrap, mechanism string, log *slog.Logger) *api {
	return &api{bootstrap: bootstrap, mechanism: mechanism, log: log, users: map[string]*loginClient{}}
}

// errLogin asks for the console user's name and password (401).
var errLogin = errors.New("log in with a user of the cluster (SASL)")

// cl returns the Kafka client of a request: the console's own, or with a
// login the one of the user that the request's Basic credentials name
// (login.go), connecting on first use.
func (a *api) cl(r *http.Request) (*admin.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errors.New("console: shutting down")
	}
	if a.mechanism != "" {
		return a.userClientLocked(r)
	}
	if a.client == nil {
		c, err := admin.New([]string{a.bootstrap})
		if err != nil {
			return nil, err
		}
		a.client = c
	}
	return a.client, nil
}

func (a *api) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.client != nil {
		a.client.Close()
	}
	for k, u := range a.users {
		u.c.Close()
		delete(a.users, k)
	}
}

// requestError is an error of the request itself (400).
type requestError string

func (e requestError) Error() string { return string(e) }

func badRequest(msg string) error { return requestError(msg) }

// handle serves one API call: fn's value as JSON, or its error.
func (a *api) handle(fn func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			if err := sameOrigin(r); err != nil {
				writeError(w, http.StatusForbidden, err)
				return
			}
		}
		cl, err := a.cl(r)
		if errors.Is(err, errLogin) {
			askLogin(w)
			return
		}
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		defer cancel()
		v, err := fn(ctx, cl, r)
		var re requestError
		switch {
		case err == nil:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_ = json.NewEncoder(w).Encode(v)
		case errors.As(err, &re):
			writeError(w, http.StatusBadRequest, err)
		case a.mechanism != "" && errors.Is(err, kerr.SaslAuthenticationFailed):
			a.forget(r)
			askLogin(w)
		case errors.Is(err, admin.ErrUnknownTopic), errors.Is(err, admin.ErrUnknownGroup), errors.Is(err, admin.ErrUnknownPartition):
			writeError(w, http.StatusNotFound, err)
		default:
			a.log.Debug("console api", "path", r.URL.Path, "err", err)
			writeError(w, http.StatusBadGateway, err)
		}
	}
}

func writeError(w http.ResponseWriter, status int, err error) {
	msg := err.Error()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// sameOrigin refuses a changing request another site could have made a
// browser send: one not of JSON (a form needs no preflight), or with an
// Origin other than the console's.
func sameOrigin(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return errors.New("a request that changes something must be application/json")
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return errors.New("cross-origin request refused")
		}
	}
	return nil
}

// decode reads a JSON body into v.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("request body: " + err.Error())
	}
	return nil
}

func (a *api) routes(mux *http.ServeMux) {
	mux.Handle("GET /api/cluster", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		info, err := cl.Cluster(ctx)
		if err != nil {
			return nil, err
		}
		h, err := cl.Health(ctx)
		if err != nil {
			return nil, err
		}
		return map[string]any{"cluster": info, "health": h}, nil
	}))
	mux.Handle("GET /api/clients", a.handle(func(context.Context, *admin.Client, *http.Request) (any, error) {
		if a.clients == nil {
			return []clientmetrics.ClientView{}, nil
		}
		return a.clients(), nil
	}))
	mux.Handle("GET /api/links", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		names, err := cl.Links(ctx)
		if err != nil {
			return nil, err
		}
		type linkView struct {
			admin.Link
			History []admin.LagSample `json:"history"`
		}
		out := []linkView{}
		for _, n := range names {
			l, err := cl.Link(ctx, n)
			if errors.Is(err, kerr.ResourceNotFound) {
				continue // deleted since listed
			}
			if err != nil {
				return nil, err
			}
			h, err := cl.LinkHistory(ctx, n)
			if err != nil {
				return nil, err
			}
			out = append(out, linkView{l, h})
		}
		return out, nil
	}))
	mux.Handle("GET /api/topics", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		return cl.Topics(ctx, r.URL.Query().Get("internal") == "true")
	}))
	mux.Handle("POST /api/topics", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		var req struct {
			Name              string            `json:"name"`
			Partitions        int32             `json:"partitions"`
			ReplicationFactor int16             `json:"replication_factor"`
			Configs           map[string]string `json:"configs"`
		}
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		if req.Name == "" {
			return nil, badRequest("name the topic")
		}
		cfg := map[string]*string{}
		for k, v := range req.Configs {
			cfg[k] = &v
		}
		if req.Partitions == 0 {
			req.Partitions = -1
		}
		if req.ReplicationFactor == 0 {
			req.ReplicationFactor = -1
		}
		if err := cl.CreateTopic(ctx, req.Name, req.Partitions, req.ReplicationFactor, cfg); err != nil {
			return nil, err
		}
		return map[string]string{"created": req.Name}, nil
	}))
	mux.Handle("GET /api/topics/{topic}", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		return cl.Topic(ctx, r.PathValue("topic"))
	}))
	mux.Handle("DELETE /api/topics/{topic}", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		if err := cl.DeleteTopic(ctx, r.PathValue("topic")); err != nil {
			return nil, err
		}
		return map[string]string{"deleted": r.PathValue("topic")}, nil
	}))
	mux.Handle("POST /api/topics/{topic}/configs", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		var req struct {
			Set    map[string]string `json:"set"`
			Delete []string          `json:"delete"`
		}
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		if len(req.Set) == 0 && len(req.Delete) == 0 {
			return nil, badRequest("no config to change")
		}
		if err := cl.AlterTopicConfigs(ctx, r.PathValue("topic"), req.Set, req.Delete); err != nil {
			return nil, err
		}
		return map[string]string{"altered": r.PathValue("topic")}, nil
	}))
	mux.Handle("GET /api/topics/{topic}/messages", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		q := r.URL.Query()
		p, err := strconv.ParseInt(q.Get("partition"), 10, 32)
		if err != nil || p < 0 {
			return nil, badRequest("partition: expected a partition number")
		}
		from, err := admin.ParseTarget(cmp.Or(q.Get("from"), "start"))
		if err != nil {
			return nil, badRequest("from: " + err.Error())
		}
		limit := 50
		if s := q.Get("limit"); s != "" {
			if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > 1000 {
				return nil, badRequest("limit: expected 1 to 1000")
			}
		}
		return cl.Read(ctx, r.PathValue("topic"), int32(p), from, limit, 2*time.Second)
	}))
	mux.Handle("GET /api/groups", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		return cl.Groups(ctx)
	}))
	mux.Handle("GET /api/groups/{group}", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		return cl.Group(ctx, r.PathValue("group"))
	}))
	mux.Handle("POST /api/groups/{group}/seek", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		var req struct {
			Topic string `json:"topic"`
			To    string `json:"to"`
		}
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		to, err := admin.ParseTarget(req.To)
		if err != nil {
			return nil, badRequest("to: " + err.Error())
		}
		return cl.Seek(ctx, r.PathValue("group"), req.Topic, to)
	}))
	mux.Handle("DELETE /api/groups/{group}", a.handle(func(ctx context.Context, cl *admin.Client, r *http.Request) (any, error) {
		if err := cl.DeleteGroup(ctx, r.PathValue("group")); err != nil {
			return nil, err
		}
		return map[string]string{"deleted": r.PathValue("group")}, nil
	}))
}
