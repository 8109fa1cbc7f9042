// Command samsa-bench is a franz-go load generator for any Kafka-compatible
// broker, the counterpart of Apache Kafka's ProducerPerformance and
// ConsumerPerformance in `make bench`.
//
//	samsa-bench produce -brokers HOST:PORT[,...] -topic T -records N [-size 1024] [-acks all|1|0]
//	                    [-linger default|DURATION] [-rate RECORDS/S] [-partitions N]
//	                    [-compression none|gzip|snappy|lz4|zstd] [-clients N] [-round-robin] [-json]
//	samsa-bench consume -brokers HOST:PORT -topic T -records N [-size 1024] [-json]
//	samsa-bench produce|consume -raw -brokers HOST:PORT -topic T -records N [-size 1024] [-acks 1|all] [-json]
//	samsa-bench fanin   -brokers HOST:PORT -topic T -records N -rate RECORDS/S [-size 100] [-partition P] [-broker-pid PID] [-fetch-min-bytes N] [-json]
//
// produce writes N records of -size random bytes (no key, no compression),
// at most -rate per second when given (an open loop: record i is issued at
// start + i/rate), and reports throughput and each record's latency from the
// Produce call to its acknowledgement. Every other client setting is kgo's
// default, except that acks other than all turn idempotence off, as they
// must. With -compression the batches are compressed and the values are
// text (random words, about 4:1 under zstd) instead of random bytes; with
// -clients N, N producers (each its own client and connections) write the
// records between them at -rate in all; -round-robin spreads the records
// over every partition in turn instead of kgo's sticky partitioning; a
// -topic of several names, comma-separated, takes the records in turn.
// consume reads the topic from the start with a direct (group-less)
// consumer until it has N records (more are ignored), checking that every partition's offsets
// run 0,1,2,... and every value has -size bytes. fanin consumes every
// partition of an empty topic with one direct consumer while a producer
// (linger 0) writes N records at -rate to partition -partition alone, and
// reports each record's latency from the Produce call to the consumer's poll
// returning it (see fanin.go): the cost of a Fetch that spans many idle
// partitions.
//
// With -raw, produce and consume talk to one broker with requests encoded
// once and answers barely read (raw.go), so that the generator, not the
// broker, is the cheap side of a broker-bound figure.
//
// With -json the result is one JSON object on stdout (fields of Result);
// otherwise a line of text. The exit status is 1 when the run failed.
package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Result is what a run reports; latencies only for produce (to the
// acknowledgement) and fanin (to the consumer).
type Result struct {
	Op         string  `json:"op"`
	Partitions int     `json:"partitions,omitempty"`   // fanin: partitions consumed
	BrokerCPUs float64 `json:"broker_cpu_s,omitempty"` // fanin with -broker-pid: the broker's CPU seconds over Seconds
	Records    int64   `json:"records"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	MBps       float64 `json:"mb_per_s"` // 10^6 bytes of values per second
	RPS        float64 `json:"records_per_s"`
	P50ms      float64 `json:"p50_ms,omitempty"`
	P99ms      float64 `json:"p99_ms,omitempty"`
	P999ms     float64 `json:"p999_ms,omitempty"`
	MaxMs      float64 `json:"max_ms,omitempty"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "floor" {
		return runFloor(args[1:], stdout, stderr)
	}
	if len(args) == 0 || (args[0] != "produce" && args[0] != "consume" && args[0] != "fanin") {
		fmt.Fprintln(stderr, "usage: samsa-bench produce|consume|fanin -brokers HOST:PORT -topic T -records N [flags], or samsa-bench floor ...")
		return 2
	}
	op := args[0]
	fs := flag.NewFlagSet("samsa-bench "+op, flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "127.0.0.1:9092", "seed broker host:port")
	topic := fs.String("topic", "", "topic (must exist)")
	records := fs.Int64("records", 0, "records to produce or to read")
	defSize := 1024
	if op == "fanin" {
		defSize = 100
	}
	size := fs.Int("size", defSize, "value size in bytes")
	acks := fs.String("acks", "all", "produce: all, 1 or 0")
	linger := fs.String("linger", "default", "produce: kgo's default linger, or a duration")
	rate := fs.Float64("rate", 0, "produce: records per second, 0 for as fast as the client goes; fanin: records per second, required")
	part := fs.Int("partition", 0, "fanin: the partition written to")
	minBytes := fs.Int("fetch-min-bytes", 1, "fanin: the consumer's fetch.min.bytes")
	brokerPID := fs.Int("broker-pid", 0, "fanin: report this process's CPU time (/proc) over the measured records")
	txnRecords := fs.Int64("txn-records", 0, "produce: write in transactions of this many records, each committed (acks=all)")
	readCommitted := fs.Bool("read-committed", false, "consume: read at read_committed")
	compression := fs.String("compression", "none", "produce: batch compression: none, gzip, snappy, lz4 or zstd (values are then compressible text)")
	clients := fs.Int("clients", 1, "produce: this many producers, each with its own client, sharing -records and -rate")
	roundRobin := fs.Bool("round-robin", false, "produce: every partition in turn (kgo's round-robin partitioner)")
	partitions := fs.Int("partitions", 0, "produce, fanin: create the topic with this many partitions unless it exists (0: it must exist)")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	raw := fs.Bool("raw", false, "produce, consume: against one broker leading every partition, with requests encoded once and answers barely read (raw.go): the generator costs next to nothing, for broker-bound figures")
	tlsCA := fs.String("tls-ca", "", "produce, consume: connect over TLS, trusting the CA certificates in this PEM `file`")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	tlsOpts, err := tlsOpts(*tlsCA)
	if err != nil {
		fmt.Fprintf(stderr, "samsa-bench: %v\n", err)
		return 2
	}
	if *topic == "" || *records < 1 || *size < 0 || *size > 10<<20 || *rate < 0 || *clients < 1 || *clients > 10000 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "samsa-bench: need -topic, -records >= 1, 0 <= -size <= 10 MiB, -rate >= 0, 1 <= -clients <= 10000, no arguments")
		return 2
	}
	seeds := strings.Split(*brokers, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	var res Result
	if *raw && (op == "fanin" || len(seeds) != 1 || *tlsCA != "" || *rate > 0 || *clients > 1 || *txnRecords > 0 || *compression != "none" || *readCommitted) {
		fmt.Fprintln(stderr, "samsa-bench: -raw is for produce and consume with one broker, none of -tls-ca, -rate, -clients, -txn-records, -compression, -read-committed")
		return 2
	}
	switch {
	case *raw && op == "produce":
		rawAcks := map[string]int16{"1": 1, "all": -1, "-1": -1}
		a, ok := rawAcks[*acks]
		if !ok {
			fmt.Fprintln(stderr, "samsa-bench: -raw produce takes -acks 1 or all")
			return 2
		}
		if *partitions > 0 {
			err = ensureTopic(ctx, seeds[0], *topic, int32(*partitions))
		}
		if err == nil {
			res, err = rawProduce(ctx, seeds[0], *topic, *records, *size, a)
		}
	case *raw:
		res, err = rawConsume(ctx, seeds[0], *topic, *records, *size)
	case op == "produce":
		var opts []kgo.Opt
		var values func() []byte
		opts, err = produceOpts(*acks, *linger)
		if err == nil {
			var codec kgo.CompressionCodec
			if codec, values, err = compressionOpt(*compression, *size); err == nil {
				opts = append(opts, kgo.ProducerBatchCompression(codec))
			}
		}
		if err == nil && *partitions > 0 {
			err = ensureTopic(ctx, seeds[0], *topic, int32(*partitions))
		}
		topics := strings.Split(*topic, ",")
		opts = append(opts, kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topics[0]))
		if *roundRobin {
			opts = append(opts, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		}
		opts = append(opts, tlsOpts...)
		switch {
		case err != nil:
		case *txnRecords > 0:
			res, err = produceTxn(ctx, opts, *records, *size, *txnRecords)
		default:
			res, err = produce(ctx, opts, topics, *records, *size, *rate, *clients, values)
		}
	case op == "fanin":
		if *partitions > 0 {
			err = ensureTopic(ctx, seeds[0], *topic, int32(*partitions))
		}
		if err == nil {
			res, err = fanin(ctx, seeds[0], *topic, int32(*part), *records, *size, *rate, *brokerPID, int32(min(*minBytes, 1<<30)))
		}
	case op == "consume":
		opts := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(*topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, tlsOpts...)
		if *readCommitted {
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		}
		res, err = consume(ctx, opts, *records, *size, *readCommitted)
	}
	if err != nil {
		fmt.Fprintf(stderr, "samsa-bench %s: %v\n", op, err)
		return 1
	}
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	fmt.Fprintf(stdout, "%s: %d records, %d bytes in %.2fs: %.1f MB/s, %.0f records/s",
		res.Op, res.Records, res.Bytes, res.Seconds, res.MBps, res.RPS)
	switch res.Op {
	case "fanin":
		fmt.Fprintf(stdout, " to 1 of %d partitions; produce to consumer latency p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms",
			res.Partitions, res.P50ms, res.P99ms, res.P999ms, res.MaxMs)
		if res.BrokerCPUs > 0 {
			fmt.Fprintf(stdout, "; broker CPU %.2f s (%.3f s/s)", res.BrokerCPUs, res.BrokerCPUs/res.Seconds)
		}
	case "produce":
		fmt.Fprintf(stdout, "; latency p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms", res.P50ms, res.P99ms, res.P999ms, res.MaxMs)
	}
	fmt.Fprintln(stdout)
	return 0
}

// produceOpts are kgo's defaults except the acks asked for, no compression
// (compressionOpt may set one), and the linger when one is given.
func produceOpts(acks, linger string) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.ProducerBatchCompression(kgo.NoCompression())}
	switch acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("-acks %q: want all, 1 or 0", acks)
	}
	if linger != "default" {
		d, err := time.ParseDuration(linger)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("-linger %q: want default or a duration >= 0", linger)
		}
		opts = append(opts, kgo.ProducerLinger(d))
	}
	return opts, nil
}

// ensureTopic creates topic with the given partition count (replication
// factor 1) unless it exists.
func ensureTopic(ctx context.Context, broker, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// produce writes n records with clients producers, record i by producer
// i%clients to topics[i%len(topics)], each paced at rate/clients when rate
// is set; values returns each record's value (nil: one random payload for
// all).
func produce(ctx context.Context, opts []kgo.Opt, topics []string, n int64, size int, rate float64, clients int, values func() []byte) (Result, error) {
	clients = int(min(int64(clients), n))
	cls := make([]*kgo.Client, clients)
	for i := range cls {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return Result{}, err
		}
		defer cl.Close()
		// Connect and learn the topic before the clock starts.
		if err := cl.Ping(ctx); err != nil {
			return Result{}, fmt.Errorf("ping: %w", err)
		}
		cls[i] = cl
	}
	if values == nil {
		payload := make([]byte, size)
		_, _ = rand.Read(payload)
		values = func() []byte { return payload }
	}

	lat := make([]time.Duration, n)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		failed   atomic.Bool
		issuers  sync.WaitGroup
	)
	start := time.Now()
	for c, cl := range cls {
		issuers.Add(1)
		go func() {
			defer issuers.Done()
			for i := int64(c); i < n; i += int64(clients) {
				if failed.Load() || ctx.Err() != nil {
					break
				}
				if rate > 0 {
					due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
					if d := time.Until(due); d > 0 {
						time.Sleep(d)
					}
				}
				wg.Add(1)
				t0 := time.Now()
				cl.Produce(ctx, &kgo.Record{Topic: topics[i%int64(len(topics))], Value: values()}, func(_ *kgo.Record, err error) {
					defer wg.Done()
					if err != nil {
						errOnce.Do(func() { firstErr = fmt.Errorf("record %d: %w", i, err) })
						failed.Store(true)
						return
					}
					lat[i] = time.Since(t0)
				})
			}
		}()
	}
	issuers.Wait()
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return Result{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	res := summary("produce", n, n*int64(size), elapsed)
	res.setLatencies(lat)
	return res, nil
}

// produceTxn writes n records in transactions of txn records, each
// committed before the next begins (franz-go's transactional producer,
// acks=all); the latency is that of each transaction, begin to commit.
func produceTxn(ctx context.Context, opts []kgo.Opt, n int64, size int, txn int64) (Result, error) {
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	cl, err := kgo.NewClient(append(opts, kgo.TransactionalID(fmt.Sprintf("samsa-bench-%x", id)))...)
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return Result{}, fmt.Errorf("ping: %w", err)
	}
	payload := make([]byte, size)
	_, _ = rand.Read(payload)
	var lat []time.Duration
	var firstErr atomic.Pointer[error]
	start := time.Now()
	for i := int64(0); i < n; {
		t0 := time.Now()
		if err := cl.BeginTransaction(); err != nil {
			return Result{}, err
		}
		for j := int64(0); j < txn && i < n; j, i = j+1, i+1 {
			cl.Produce(ctx, &kgo.Record{Value: payload}, func(_ *kgo.Record, err error) {
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			return Result{}, err
		}
		if e := firstErr.Load(); e != nil {
			return Result{}, *e
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return Result{}, fmt.Errorf("commit: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	res := summary("produce", n, n*int64(size), time.Since(start))
	res.setLatencies(lat)
	return res, nil
}

// consume reads n records from the start. At read_committed the offsets
// have gaps (each transaction's marker takes one): only their order is
// checked.
func consume(ctx context.Context, opts []kgo.Opt, n int64, size int, committed bool) (Result, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	var (
		got, bytes int64
		next       []int64 // per partition
	)
	start := time.Now()
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("read %d of %d records: %w", got, n, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
			}
		})
		if ferr != nil {
			return Result{}, ferr
		}
		var verr error
		fs.EachRecord(func(r *kgo.Record) {
			if verr != nil || got == n {
				return
			}
			p := int(r.Partition)
			if p < 0 || p > 1<<16 {
				verr = fmt.Errorf("record from partition %d", p)
				return
			}
			for len(next) <= p {
				next = append(next, 0)
			}
			if r.Offset != next[p] && !(committed && r.Offset > next[p]) {
				verr = fmt.Errorf("partition %d: offset %d, want %d", p, r.Offset, next[p])
				return
			}
			if len(r.Value) != size {
				verr = fmt.Errorf("partition %d offset %d: %d value bytes, want %d", p, r.Offset, len(r.Value), size)
				return
			}
			next[p] = r.Offset + 1
			got++
			bytes += int64(len(r.Value))
		})
		if verr != nil {
			return Result{}, verr
		}
	}
	return summary("consume", got, bytes, time.Since(start)), nil
}

func summary(op string, records, bytes int64, d time.Duration) Result {
	r := Result{Op: op, Records: records, Bytes: bytes, Seconds: d.Seconds()}
	if s := d.Seconds(); s > 0 {
		r.MBps = float64(bytes) / 1e6 / s
		r.RPS = float64(records) / s
	}
	return r
}

// setLatencies sets r's latency percentiles and maximum from lat, which
// it sorts in place.
func (r *Result) setLatencies(lat []time.Duration) {
	slices.Sort(lat)
	r.P50ms, r.P99ms, r.P999ms = ms(percentile(lat, 0.50)), ms(percentile(lat, 0.99)), ms(percentile(lat, 0.999))
	if len(lat) > 0 {
		r.MaxMs = ms(lat[len(lat)-1])
	}
}

// percentile is the nearest-rank q-quantile of sorted.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*q + 0.999999999)
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// tlsOpts dials TLS trusting the CA certificates in the PEM file caFile;
// none for "".
func tlsOpts(caFile string) ([]kgo.Opt, error) {
	if caFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate", caFile)
	}
	return []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})}, nil
}
