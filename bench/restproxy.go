package main

// The REST proxy case (bench -restproxy): one samsa broker serving
// Confluent REST Proxy's API (samsa.http.proxy.listener), and the same
// load through its Kafka port beside it, from this process (on the same
// two cores as the broker):
//
//   - produce: restClients clients at once, each sending batches of 100
//     JSON records of recordBytes bytes (POST /topics/{t}, json format;
//     no key) for produceFor; beside it, as many goroutines sharing one
//     franz-go producer (the proxy's own client is one producer too)
//     each producing batches of the same 100 records, acks=all, linger
//     0, uncompressed, as the proxy does.
//   - consume: one consumer instance reading everything the HTTP produce
//     wrote, 100 records per GET (max_bytes = 100 records' bytes); beside
//     it, one franz-go consumer reading everything the Kafka produce
//     wrote, 100 records per poll.
//
// Records/s, MB/s (10^6 bytes of values) and the broker's CPU per record
// (the proxy is in the broker's process).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/procstat"
)

const (
	restBatch       = 100 // records per request, and per poll
	restRecordBytes = 256 // each record's JSON value
	restPartitions  = 4
)

type restProxyPlan struct {
	clients    int
	produceFor time.Duration
}

func makeRestProxyPlan(quick bool) restProxyPlan {
	if quick {
		return restProxyPlan{clients: 4, produceFor: 3 * time.Second}
	}
	return restProxyPlan{clients: 4, produceFor: 10 * time.Second}
}

// restRun is one measured run.
type restRun struct {
	name, path string // the case, and HTTP or the Kafka port
	records    int64
	wall       time.Duration
	cpu        time.Duration
}

// restValue is the JSON value of record i, restRecordBytes long.
func restValue(i int64) []byte {
	v := fmt.Sprintf(`{"id":%d,"user":"user-%05d","event":"page_view","payload":"`, i, i%100000)
	return []byte(v + strings.Repeat("x", restRecordBytes-len(v)-2) + `"}`)
}

// runRestProxy starts samsa with its REST proxy and measures it.
func runRestProxy(ctx context.Context, cfg config, samsaBin string, plan restProxyPlan) ([]restRun, error) {
	h, err := startHTTPSamsa(ctx, cfg, samsaBin, "restproxy", "samsa.http.proxy.listener", plan.clients)
	if err != nil {
		return nil, err
	}
	defer h.close()
	b, url, hc := h.b, h.url, h.hc
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	for _, t := range []string{"rest-http", "rest-kafka"} {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, restPartitions, 1, nil, t); err != nil {
			return nil, fmt.Errorf("create %s: %w", t, err)
		}
	}

	measure := func(name, path string, run func() (int64, error)) (restRun, error) {
		progress("restproxy: %s over %s", name, path)
		cpu0, _ := procstat.CPUTime(b.pid)
		start := time.Now()
		n, err := run()
		r := restRun{name: name, path: path, records: n, wall: time.Since(start)}
		cpu1, _ := procstat.CPUTime(b.pid)
		r.cpu = cpu1 - cpu0
		if err != nil {
			return r, fmt.Errorf("%s over %s: %w", name, path, err)
		}
		return r, nil
	}
	// concurrently runs op on plan.clients goroutines for produceFor and
	// returns the records they sent.
	concurrently := func(op func(next func() int64) error) (int64, error) {
		var seq, sent atomic.Int64
		var firstErr atomic.Value
		stop := time.Now().Add(plan.produceFor)
		var wg sync.WaitGroup
		for range plan.clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) && ctx.Err() == nil {
					if err := op(func() int64 { return seq.Add(1) }); err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
					sent.Add(restBatch)
				}
			}()
		}
		wg.Wait()
		if err, ok := firstErr.Load().(error); ok {
			return sent.Load(), err
		}
		return sent.Load(), ctx.Err()
	}

	var runs []restRun
	r, err := measure("produce", "HTTP", func() (int64, error) {
		return concurrently(func(next func() int64) error {
			var body bytes.Buffer
			body.WriteString(`{"records":[`)
			for i := range restBatch {
				if i > 0 {
					body.WriteByte(',')
				}
				body.WriteString(`{"value":`)
				body.Write(restValue(next()))
				body.WriteByte('}')
			}
			body.WriteString(`]}`)
			return restCall(ctx, hc, http.MethodPost, url+"/topics/rest-http", "application/vnd.kafka.json.v2+json", body.Bytes(), nil)
		})
	})
	runs = append(runs, r)
	if err != nil {
		return runs, err
	}
	httpRecords := r.records
	r, err = measure("produce", "Kafka port", func() (int64, error) {
		return concurrently(func(next func() int64) error {
			recs := make([]*kgo.Record, restBatch)
			for i := range recs {
				recs[i] = &kgo.Record{Topic: "rest-kafka", Value: restValue(next())}
			}
			return cl.ProduceSync(ctx, recs...).FirstErr()
		})
	})
	runs = append(runs, r)
	if err != nil {
		return runs, err
	}
	kafkaRecords := r.records

	r, err = measure("consume", "HTTP", func() (int64, error) { return restConsumeHTTP(ctx, hc, url, httpRecords) })
	runs = append(runs, r)
	if err != nil {
		return runs, err
	}
	r, err = measure("consume", "Kafka port", func() (int64, error) { return restConsumeKafka(ctx, b.addr, kafkaRecords) })
	runs = append(runs, r)
	if err == nil && !b.running() {
		err = fmt.Errorf("samsa exited; log tail:\n%s", b.logTail(30))
	}
	return runs, err
}

// httpSamsa is a samsa broker serving one HTTP listener on a free
// loopback port, and a keep-alive client of it.
type httpSamsa struct {
	name string
	b    *broker
	url  string
	hc   *http.Client
}

// startHTTPSamsa starts samsa with its HTTP listener prop (the registry's,
// the REST proxy's) and a client for that many requests at once.
func startHTTPSamsa(ctx context.Context, cfg config, samsaBin, name, prop string, clients int) (*httpSamsa, error) {
	ports, err := kafkaref.FreePorts(1)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	b, err := startSamsa(ctx, samsaBin, filepath.Join(cfg.tmp, name), "", "", cfg.tools.tls, prop+"="+addr)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: clients,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
	return &httpSamsa{name: name, b: b, url: "http://" + addr, hc: hc}, nil
}

func (h *httpSamsa) close() {
	h.hc.CloseIdleConnections()
	if err := h.b.stop(30 * time.Second); err != nil {
		progress("%s: %v", h.name, err)
	}
}

// restConsumeHTTP reads n records of rest-http with a consumer instance,
// 100 per GET.
func restConsumeHTTP(ctx context.Context, hc *http.Client, url string, n int64) (int64, error) {
	const v2 = "application/vnd.kafka.v2+json"
	var created struct {
		BaseURI string `json:"base_uri"`
	}
	if err := restCall(ctx, hc, http.MethodPost, url+"/consumers/bench", v2, []byte(`{"name":"reader","format":"json","auto.offset.reset":"earliest"}`), &created); err != nil {
		return 0, err
	}
	inst := created.BaseURI
	defer restCall(context.Background(), hc, http.MethodDelete, inst, v2, nil, nil)
	var parts []string
	for p := range restPartitions {
		parts = append(parts, fmt.Sprintf(`{"topic":"rest-http","partition":%d}`, p))
	}
	if err := restCall(ctx, hc, http.MethodPost, inst+"/assignments", v2, []byte(`{"partitions":[`+strings.Join(parts, ",")+`]}`), nil); err != nil {
		return 0, err
	}
	// A record that would bring an answer to max_bytes is left for the
	// next (Confluent's rule): one byte more answers 100. The last GET
	// waits out its timeout for a 101st record.
	get := fmt.Sprintf("%s/records?timeout=200&max_bytes=%d", inst, restBatch*restRecordBytes+1)
	var read int64
	for read < n {
		var recs []json.RawMessage
		if err := restCall(ctx, hc, http.MethodGet, get, "", nil, &recs); err != nil {
			return read, err
		}
		if len(recs) == 0 {
			return read, fmt.Errorf("a GET of records answered none after %d of %d", read, n)
		}
		read += int64(len(recs))
	}
	return read, nil
}

// restConsumeKafka reads n records of rest-kafka with franz-go, 100 per
// poll.
func restConsumeKafka(ctx context.Context, addr string, n int64) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("rest-kafka"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var read int64
	for read < n {
		fs := cl.PollRecords(ctx, restBatch)
		if err := fs.Err0(); err != nil {
			return read, err
		}
		read += int64(fs.NumRecords())
	}
	return read, nil
}

// restCall makes one request of the proxy and decodes its answer into
// out (nil: the answer is read and dropped).
func restCall(ctx context.Context, hc *http.Client, method, url, ctype string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/vnd.kafka.json.v2+json, application/vnd.kafka.v2+json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s %.300s", method, url, resp.Status, b)
	}
	if out == nil || len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, out)
}

// printRestProxy writes the runs as a table, each HTTP run beside the
// Kafka port's.
func printRestProxy(w io.Writer, runs []restRun, version string, clients int, err error) {
	fmt.Fprintf(w, "\nREST proxy, samsa %s, one broker; batches of %d JSON records of %d B, %d producing clients, one consumer (in this process, on the same cores):\n\n",
		version, restBatch, restRecordBytes, clients)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tpath\trecords\trecords/s\tMB/s\tbroker CPU/record\tHTTP/Kafka\t")
	rate := map[string]float64{}
	for _, r := range runs {
		rate[r.name+r.path] = float64(r.records) / r.wall.Seconds()
	}
	for _, r := range runs {
		rps := rate[r.name+r.path]
		ratio := ""
		if k := rate[r.name+"Kafka port"]; r.path == "HTTP" && k > 0 {
			ratio = fmt.Sprintf("%.2f", rps/k)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.1f\t%s\t%s\t\n", r.name, r.path, r.records, rps, rps*restRecordBytes/1e6,
			fmtDur(r.cpu/time.Duration(max(1, r.records))), ratio)
	}
	tw.Flush()
	if err != nil {
		fmt.Fprintln(w, "failed:", err)
	}
}

// restProxyMain is bench -restproxy.
func restProxyMain(ctx context.Context, cfg config, samsaBin, version string, quick bool) int {
	plan := makeRestProxyPlan(quick)
	runs, err := runRestProxy(ctx, cfg, samsaBin, plan)
	printRestProxy(os.Stdout, runs, version, plan.clients, err)
	if err != nil {
		return 1
	}
	return 0
}
