package main

// The schema registry case (bench -registry): one samsa broker serving
// its Schema Registry on a loopback port, driven over HTTP/1.1 keep-alive
// from this process (on the same two cores as the broker):
//
//   - registrations: distinct Avro schemas (a record of four fields, the
//     n-th named n), each the first version of a subject of its own, by
//     one client, then by regClients at once; every registration is a
//     write to _schemas (acks=all) that the registry applies before it
//     answers. Registrations per second, and the broker's CPU per
//     registration.
//   - lookups: GET /schemas/ids/{id} of the registered ids, round robin,
//     the answer read from the registry's state (cached id → schema): by
//     one client (p50, p99, p99.9 of a lookup unloaded) and by
//     lookupClients at once (lookups per second, p50/p99 under load, the
//     broker's CPU per lookup).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/samsa-io/samsa/internal/procstat"
)

// registryPlan is what bench -registry measures.
type registryPlan struct {
	schemas       int           // registered by one client, and as many again by regClients
	regClients    int           // concurrent registering clients
	lookupClients int           // concurrent looking-up clients
	lookupFor     time.Duration // per lookup run
}

func makeRegistryPlan(quick bool) registryPlan {
	if quick {
		return registryPlan{schemas: 200, regClients: 8, lookupClients: 16, lookupFor: 3 * time.Second}
	}
	return registryPlan{schemas: 1000, regClients: 8, lookupClients: 16, lookupFor: 10 * time.Second}
}

// registryRun is one measured run: operations, their wall time, the
// broker's CPU over it and each operation's latency.
type registryRun struct {
	name    string
	clients int
	ops     int
	wall    time.Duration
	cpu     time.Duration
	lat     []time.Duration // sorted
}

// runRegistry starts samsa with its registry and measures it.
func runRegistry(ctx context.Context, cfg config, samsaBin string, plan registryPlan) ([]registryRun, error) {
	h, err := startHTTPSamsa(ctx, cfg, samsaBin, "registry", "samsa.schema.registry.listener", max(plan.regClients, plan.lookupClients))
	if err != nil {
		return nil, err
	}
	defer h.close()
	b, url, hc := h.b, h.url, h.hc
	// The writer is elected (the _schemas partition's leader) a moment
	// after the broker starts: the first registration waits for it.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err = register(ctx, hc, url, "bench-ready", -1); err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("the registry takes no registration: %v; log tail:\n%s", err, b.logTail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}

	var ids []int
	var idsMu sync.Mutex
	measure := func(name string, clients, each int, op func(client, i int) error) (registryRun, error) {
		progress("registry: %s, %d client(s)", name, clients)
		r := registryRun{name: name, clients: clients}
		lats := make([][]time.Duration, clients)
		cpu0, _ := procstat.CPUTime(b.pid)
		start := time.Now()
		var wg sync.WaitGroup
		var firstErr atomic.Value
		var stop atomic.Bool
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; (each > 0 && i < each) || (each == 0 && !stop.Load()); i++ {
					t := time.Now()
					if err := op(c, i); err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
					lats[c] = append(lats[c], time.Since(t))
				}
			}()
		}
		if each == 0 {
			select {
			case <-time.After(plan.lookupFor):
			case <-ctx.Done():
			}
			stop.Store(true)
		}
		wg.Wait()
		r.wall = time.Since(start)
		cpu1, _ := procstat.CPUTime(b.pid)
		r.cpu = cpu1 - cpu0
		for _, l := range lats {
			r.lat = append(r.lat, l...)
		}
		slices.Sort(r.lat)
		r.ops = len(r.lat)
		if err, ok := firstErr.Load().(error); ok {
			return r, fmt.Errorf("%s: %w", name, err)
		}
		return r, nil
	}
	regOp := func(base int) func(client, i int) error {
		return func(client, i int) error {
			n := base + client*plan.schemas + i
			id, err := register(ctx, hc, url, "bench-"+strconv.Itoa(n)+"-value", n)
			if err == nil {
				idsMu.Lock()
				ids = append(ids, id)
				idsMu.Unlock()
			}
			return err
		}
	}
	var runs []registryRun
	for _, m := range []struct {
		clients int
		base    int
	}{{1, 0}, {plan.regClients, 1 << 20}} {
		r, err := measure("registrations", m.clients, plan.schemas/m.clients, regOp(m.base))
		if err != nil {
			return runs, err
		}
		runs = append(runs, r)
	}
	lookOp := func(client, i int) error {
		return lookup(ctx, hc, url, ids[(client*7919+i)%len(ids)])
	}
	for _, clients := range []int{1, plan.lookupClients} {
		r, err := measure("lookups", clients, 0, lookOp)
		if err != nil {
			return runs, err
		}
		runs = append(runs, r)
	}
	if !b.running() {
		return runs, fmt.Errorf("samsa exited; log tail:\n%s", b.logTail(30))
	}
	return runs, nil
}

// register registers the n-th schema (n < 0: a string schema) under
// subject and returns its id.
func register(ctx context.Context, hc *http.Client, url, subject string, n int) (int, error) {
	schema := `"string"`
	if n >= 0 {
		schema = fmt.Sprintf(`{"type":"record","name":"r%d","namespace":"bench","fields":[{"name":"id","type":"long"},`+
			`{"name":"name","type":"string"},{"name":"tags","type":{"type":"array","items":"string"}},`+
			`{"name":"n%d","type":["null","int"],"default":null}]}`, n, n)
	}
	body, _ := json.Marshal(map[string]string{"schema": schema})
	var out struct {
		ID int `json:"id"`
	}
	if err := call(ctx, hc, http.MethodPost, url+"/subjects/"+subject+"/versions", body, &out); err != nil {
		return 0, err
	}
	return out.ID, nil
}

// lookup reads schema id.
func lookup(ctx context.Context, hc *http.Client, url string, id int) error {
	var out struct {
		Schema string `json:"schema"`
	}
	if err := call(ctx, hc, http.MethodGet, url+"/schemas/ids/"+strconv.Itoa(id), nil, &out); err != nil {
		return err
	}
	if out.Schema == "" {
		return fmt.Errorf("schema %d: empty", id)
	}
	return nil
}

func call(ctx context.Context, hc *http.Client, method, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s %s", method, url, resp.Status, b)
	}
	return json.Unmarshal(b, out)
}

// printRegistry writes the runs as a table.
func printRegistry(w io.Writer, runs []registryRun, version string, err error) {
	fmt.Fprintf(w, "\nSchema registry, samsa %s, one broker (the HTTP clients in this process, on the same cores):\n\n", version)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tclients\tops\tops/s\tp50\tp99\tp99.9\tbroker CPU/op\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t\n", r.name, r.clients, r.ops, float64(r.ops)/r.wall.Seconds(),
			fmtDur(pctl(r.lat, 0.50)), fmtDur(pctl(r.lat, 0.99)), fmtDur(pctl(r.lat, 0.999)), fmtDur(r.cpu/time.Duration(max(1, r.ops))))
	}
	tw.Flush()
	if err != nil {
		fmt.Fprintln(w, "failed:", err)
	}
}

// pctl is the q-quantile of sorted (nearest rank).
func pctl(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
}

// registryMain is bench -registry.
func registryMain(ctx context.Context, cfg config, samsaBin, version string, quick bool) int {
	runs, err := runRegistry(ctx, cfg, samsaBin, makeRegistryPlan(quick))
	printRegistry(os.Stdout, runs, version, err)
	if err != nil {
		return 1
	}
	return 0
}
