package main

// The scale cases (bench -scale), samsa beside Apache Kafka 4.4, one run
// each, Kafka first (its peak fixes the paced rates):
//
//   - pinned: one broker under taskset on CPU 0, the load generator
//     (samsa-bench -raw: requests encoded once, answers barely read, so
//     that it costs far less than the broker) on CPU 1, so the figure is
//     what the broker does with one core: produce 1 KiB records acks=1
//     and acks=all to 16 partitions, then consume the acks=1 topic; MB/s
//     and broker CPU-s/GB. With kgo as the generator, samsa's core was
//     half idle: kgo on its core set the pace.
//   - compressed: on that pinned broker, produce of zstd and of lz4
//     batches of text values; broker CPU-s/GB of value bytes, and the
//     codec of the batch stored (a broker that recompressed or
//     decompressed for good would store another).
//   - connections: one broker, 5,000 idle client connections (each sent
//     ApiVersions), then 200 producers at 50 records/s each: broker RSS
//     before and with the idle connections, p50/p99 of the producers.
//   - cluster: three brokers (samsa: three processes on one etcd; Kafka:
//     three KRaft nodes, combined mode, 512 MiB heap each), topics of 16
//     and 256 partitions RF3 min.insync.replicas 2, acks=all: peak MB/s,
//     p50/p99/p99.9 at half of Kafka's peak, the three brokers' CPU-s/GB.
//   - partitions: 1,000 and 10,000 partitions RF3 over three brokers, in
//     topics of 1,000 (one CreateTopics each, sent together: Kafka's
//     controller takes at most 10,000 records per request, a partition
//     being one):
//     time to create them (to every partition led with three in sync and
//     answering ListOffsets), RSS at rest, idle CPU, Metadata latency,
//     produce to all of them at a low rate (p99), process start to serving
//     all of them after a restart of all three, and the failover: the
//     leader of partition 0 killed with SIGKILL, time until every
//     partition it led has a new leader in Metadata and until each has
//     taken an acks=all write; then a rolling restart of the three under
//     acks=all load (each broker in turn stopped with SIGTERM, started
//     again, and every partition back to three in sync before the next):
//     the total, each clean shutdown (SIGTERM to exit), and the longest
//     window in which one of the producers (one per partition of six,
//     each writing one record after the other) saw no acknowledgement.
//   - restart (only when -sections names it): that rolling restart
//     alone, after one record written to each partition, with each clean
//     shutdown's CPU time and the phases samsa logs of it.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/procstat"
)

var scaleSections = []string{"pinned", "compressed", "connections", "cluster", "partitions", "tiered"}

// scaleExtraSections run only when -sections names them: restart is the
// rolling restart of partitions alone (scaleRestart).
var scaleExtraSections = []string{"restart"}

// scalePlan is what bench -scale measures.
type scalePlan struct {
	sections       map[string]bool
	pinnedBytes    int64 // per pinned produce case, and the consume
	compressBytes  int64 // value bytes per compressed case
	idleConns      int
	producers      int
	producerRate   float64 // records/s per producer
	connSeconds    float64
	clusterBytes   int64
	clusterParts   []int32
	latencySeconds float64
	manyParts      []int32
	restSeconds    float64 // at rest before RSS, and the idle CPU window
	lowRate        float64 // records/s of the low-rate produce to many partitions
	lowSeconds     float64
	metadataTimes  int
}

func makeScalePlan(quick bool) scalePlan {
	p := scalePlan{
		sections:    map[string]bool{},
		pinnedBytes: 1 << 30, compressBytes: 512 << 20,
		idleConns: 5000, producers: 200, producerRate: 50, connSeconds: 10,
		clusterBytes: 512 << 20, clusterParts: []int32{16, 256}, latencySeconds: 10,
		manyParts: []int32{1000, 10000}, restSeconds: 10, lowRate: 1000, lowSeconds: 10, metadataTimes: 50,
	}
	if quick {
		p.pinnedBytes, p.compressBytes = 64<<20, 32<<20
		p.idleConns, p.producers, p.connSeconds = 1000, 50, 3
		p.clusterBytes, p.clusterParts, p.latencySeconds = 32<<20, []int32{16}, 3
		p.manyParts, p.restSeconds, p.lowSeconds, p.metadataTimes = []int32{1000}, 3, 3, 10
	}
	for _, s := range scaleSections {
		p.sections[s] = true
	}
	return p
}

// partitionCounts sets manyParts from a comma-separated list ("" keeps them).
func (p *scalePlan) partitionCounts(list string) error {
	if list == "" {
		return nil
	}
	p.manyParts = nil
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 100000 {
			return fmt.Errorf("-partitions: %q is not a count from 1 to 100000", f)
		}
		p.manyParts = append(p.manyParts, int32(n))
	}
	return nil
}

func (p *scalePlan) only(list string) error {
	if list == "" {
		return nil
	}
	want, err := pickSections(list, append(slices.Clone(scaleSections), scaleExtraSections...))
	if err != nil {
		return err
	}
	p.sections = want
	return nil
}

// scaleRow is one figure of both brokers.
type scaleRow struct {
	section, figure, unit string
	v                     map[string]float64 // broker → value
	lowerBetter           bool
	note                  map[string]string // broker → text instead of (or beside) a value
}

type scaleResults struct {
	rows   []*scaleRow
	loads  []string // per section: load at its start and end
	floors []string // the kernel's floor beside the pinned brokers (scaleFloor)
	errs   []string
}

func (r *scaleResults) set(section, figure, unit string, lowerBetter bool, broker string, v float64) {
	// On stderr at once too: a long run stopped early keeps what it measured.
	progress("  %s %s: %s %.4g %s", section, broker, figure, v, unit)
	for _, row := range r.rows {
		if row.section == section && row.figure == figure {
			row.v[broker] = v
			return
		}
	}
	r.rows = append(r.rows, &scaleRow{section: section, figure: figure, unit: unit, lowerBetter: lowerBetter,
		v: map[string]float64{broker: v}, note: map[string]string{}})
}

func (r *scaleResults) noteOf(section, figure, broker, text string) {
	for _, row := range r.rows {
		if row.section == section && row.figure == figure {
			row.note[broker] = text
			return
		}
	}
	r.rows = append(r.rows, &scaleRow{section: section, figure: figure, v: map[string]float64{}, note: map[string]string{broker: text}})
}

func (r *scaleResults) failed(section, broker string, err error) {
	msg := strings.SplitN(err.Error(), "\n", 2)[0]
	r.errs = append(r.errs, fmt.Sprintf("%s %s: %s", section, broker, msg))
	progress("%s %s FAILED: %v", section, broker, err)
}

// get returns a broker's figure, if measured.
func (r *scaleResults) get(section, figure, broker string) (float64, bool) {
	for _, row := range r.rows {
		if row.section == section && row.figure == figure {
			v, ok := row.v[broker]
			return v, ok
		}
	}
	return 0, false
}

func runScale(ctx context.Context, cfg config, sp scalePlan, samsaBin string, withSamsa, withKafka bool) *scaleResults {
	res := &scaleResults{}
	var order []string
	if withKafka {
		order = append(order, "kafka")
	}
	if withSamsa {
		order = append(order, "samsa")
	}
	section := func(name string, run func(broker string) error) {
		if !sp.sections[name] || ctx.Err() != nil {
			return
		}
		l0 := loadAvg()
		for _, b := range order {
			if ctx.Err() != nil {
				return
			}
			progress("scale %s: %s", name, b)
			if err := run(b); err != nil {
				res.failed(name, b, err)
			}
		}
		res.loads = append(res.loads, fmt.Sprintf("%s: load %s at the start, %s at the end", name, l0, loadAvg()))
	}
	dirOf := func(section, broker string) string { return filepath.Join(cfg.tmp, "scale-"+section+"-"+broker) }
	start := func(broker, dir, cpus string) (*broker, error) {
		if broker == "kafka" {
			return startKafka(ctx, cfg.tools.libs, dir, cpus, cfg.tools.tls)
		}
		return startSamsa(ctx, samsaBin, dir, "", cpus, cfg.tools.tls)
	}
	if sp.sections["pinned"] || sp.sections["compressed"] {
		restore, note := holdFreePages()
		defer restore()
		if note != "" {
			res.loads = append(res.loads, note)
		}
		name := "pinned"
		if !sp.sections["pinned"] {
			name = "compressed"
		}
		section(name, func(b string) error {
			dir := dirOf("pinned", b)
			defer cfg.remove(dir)
			if err := warmPages(cfg.tmp, sp.pinnedWrites()); err != nil {
				return err
			}
			br, err := start(b, dir, "0")
			if err != nil {
				return err
			}
			defer br.stop(30 * time.Second)
			return scalePinned(ctx, cfg, sp, res, b, br)
		})
	}
	if sp.sections["pinned"] && ctx.Err() == nil {
		if err := scaleFloor(ctx, cfg, sp, res); err != nil {
			res.failed("pinned", "floor", err)
		}
	}
	section("connections", func(b string) error {
		dir := dirOf("connections", b)
		defer cfg.remove(dir)
		br, err := start(b, dir, "")
		if err != nil {
			return err
		}
		defer br.stop(30 * time.Second)
		return scaleConnections(ctx, cfg, sp, res, b, br)
	})
	startCluster := func(b, dir, level string) (*failoverCluster, error) {
		if b == "kafka" {
			return startKafkaCluster(ctx, cfg.tools.libs, dir)
		}
		return startSamsaCluster(ctx, samsaBin, dir, level)
	}
	section("cluster", func(b string) error {
		dir := dirOf("cluster", b)
		defer cfg.remove(dir)
		c, err := startCluster(b, dir, "")
		if err != nil {
			return err
		}
		defer c.stop()
		return scaleCluster(ctx, cfg, sp, res, b, c)
	})
	section("partitions", func(b string) error {
		for _, n := range sp.manyParts {
			dir := dirOf(fmt.Sprintf("partitions-%d", n), b)
			c, err := startCluster(b, dir, "")
			if err != nil {
				return err
			}
			err = scalePartitions(ctx, cfg, sp, res, b, c, n)
			c.stop()
			cfg.remove(dir)
			if err != nil {
				return fmt.Errorf("%d partitions: %w", n, err)
			}
		}
		return nil
	})
	section("tiered", func(b string) error { // tiered.go
		defer cfg.remove(dirOf("tiered", b))
		return scaleTiered(ctx, cfg, sp, res, b, samsaBin, dirOf("tiered", b))
	})
	// Not among the default sections (partitions includes it): for
	// measuring shutdowns alone. samsa logs at info here, its default,
	// for the phases of each shutdown.
	section("restart", func(b string) error {
		for _, n := range sp.manyParts {
			dir := dirOf(fmt.Sprintf("restart-%d", n), b)
			c, err := startCluster(b, dir, "info")
			if err != nil {
				return err
			}
			err = scaleRestart(ctx, cfg, res, b, c, n)
			c.stop()
			cfg.remove(dir)
			if err != nil {
				return fmt.Errorf("%d partitions: %w", n, err)
			}
		}
		return nil
	})
	return res
}

// remove deletes a run's directory unless -keep.
func (c config) remove(dir string) {
	if !c.keep {
		_ = os.RemoveAll(dir)
	}
}

// cpuOf sums the CPU time of pids.
func cpuOf(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		d, err := procstat.CPUTime(pid)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// measureLoad runs s and returns its result with cpuPerGB set from the CPU
// time pids used meanwhile.
func measureLoad(ctx context.Context, cfg config, s loadSpec, pids []int) (runResult, error) {
	cpu0, err := cpuOf(pids)
	if err != nil {
		return runResult{}, err
	}
	timeout := timeoutFor(s.records * int64(s.size))
	if s.rate > 0 {
		timeout += time.Duration(float64(s.records) / s.rate * float64(time.Second))
	}
	r, err := cfg.tools.runLoad(ctx, s, timeout)
	if err != nil {
		return r, err
	}
	cpu1, err := cpuOf(pids)
	if err != nil {
		return r, err
	}
	if r.bytes > 0 {
		r.cpuPerGB = (cpu1 - cpu0).Seconds() / (float64(r.bytes) / 1e9)
	}
	if cfg.verbose {
		progress("  %.1f MB/s, p50 %.1f p99 %.1f p99.9 %.1f ms, %.2f broker CPU s/GB", r.mbps, r.p50, r.p99, r.p999, r.cpuPerGB)
	}
	return r, nil
}

func scalePinned(ctx context.Context, cfg config, sp scalePlan, res *scaleResults, b string, br *broker) error {
	const parts = 16
	size := 1024
	n := sp.pinnedBytes / int64(size)
	pids := []int{br.pid}
	// Unmeasured warm-up (the JVM's compiler, both brokers' buffers).
	if err := createTopic(ctx, br.addr, "warm", parts); err != nil {
		return err
	}
	warm := loadSpec{client: clientKgo, produce: true, addr: br.addr, topic: "warm", records: max(1, n/8), size: size, acks: "1", linger: "default", cpus: "1"}
	if _, err := cfg.tools.runLoad(ctx, warm, timeoutFor(sp.pinnedBytes)); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if sp.sections["pinned"] {
		for _, acks := range []string{"1", "all"} {
			topic := "pinned-" + acks
			if err := createTopic(ctx, br.addr, topic, parts); err != nil {
				return err
			}
			s := loadSpec{client: clientKgo, produce: true, addr: br.addr, topic: topic, records: n, size: size, acks: acks, linger: "default", cpus: "1", raw: true}
			r, err := measureLoad(ctx, cfg, s, pids)
			if err != nil {
				return err
			}
			fig := fmt.Sprintf("produce acks=%s p=%d", acks, parts)
			res.set("pinned", fig+" MB/s", "MB/s", false, b, r.mbps)
			res.set("pinned", fig+" broker CPU", "s/GB", true, b, r.cpuPerGB)
		}
		s := loadSpec{client: clientKgo, addr: br.addr, topic: "pinned-1", records: n, size: size, cpus: "1", raw: true}
		r, err := measureLoad(ctx, cfg, s, pids)
		if err != nil {
			return err
		}
		res.set("pinned", fmt.Sprintf("consume p=%d MB/s", parts), "MB/s", false, b, r.mbps)
		res.set("pinned", fmt.Sprintf("consume p=%d broker CPU", parts), "s/GB", true, b, r.cpuPerGB)
	}
	if sp.sections["compressed"] {
		for _, codec := range []string{"zstd", "lz4"} {
			topic := "compressed-" + codec
			if err := createTopic(ctx, br.addr, topic, parts); err != nil {
				return err
			}
			s := loadSpec{client: clientKgo, produce: true, addr: br.addr, topic: topic, records: sp.compressBytes / int64(size), size: size,
				acks: "1", linger: "default", compression: codec, cpus: "1"}
			r, err := measureLoad(ctx, cfg, s, pids)
			if err != nil {
				return err
			}
			fig := fmt.Sprintf("produce %s acks=1 p=%d", codec, parts)
			res.set("compressed", fig+" MB/s (values)", "MB/s", false, b, r.mbps)
			res.set("compressed", fig+" broker CPU", "s/GB", true, b, r.cpuPerGB)
			stored, err := storedCodec(ctx, br.addr, topic)
			if err != nil {
				return err
			}
			res.noteOf("compressed", fig+" batches stored as", b, stored)
		}
	}
	return nil
}

// storedCodec fetches the first batch of partition 0 of topic and names
// the compression codec of its attributes as the broker stored it.
func storedCodec(ctx context.Context, addr, topic string) (string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return "", err
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 1<<20, 100
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, md.Topics[topic].ID // kgo sends the newest version both know
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.LogStartOffset = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", err
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return "", fmt.Errorf("%s: no partition in the fetch response", topic)
	}
	p := resp.Topics[0].Partitions[0]
	b := p.RecordBatches
	if len(b) < 23 {
		return "", fmt.Errorf("%s[0]: no batch fetched (error %d)", topic, p.ErrorCode)
	}
	// baseOffset 8, length 4, partitionLeaderEpoch 4, magic 1, crc 4,
	// then the attributes, whose low three bits are the codec.
	codecs := []string{"none", "gzip", "snappy", "lz4", "zstd"}
	c := int(b[22] & 7)
	if c < len(codecs) {
		return codecs[c], nil
	}
	return fmt.Sprintf("codec %d", c), nil
}

func scaleConnections(ctx context.Context, cfg config, sp scalePlan, res *scaleResults, b string, br *broker) error {
	const sec = "connections"
	topic := "conns"
	if err := createTopic(ctx, br.addr, topic, 16); err != nil {
		return err
	}
	settle := func() { sleepCtx(ctx, 2*time.Second) }
	settle()
	rss0, err := procstat.Mem(br.pid, "VmRSS")
	if err != nil {
		return err
	}
	conns, err := idleConnections(ctx, br.addr, sp.idleConns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return err
	}
	settle()
	rss1, err := procstat.Mem(br.pid, "VmRSS")
	if err != nil {
		return err
	}
	res.set(sec, "RSS before the idle connections", "MiB", true, b, float64(rss0)/(1<<20))
	res.set(sec, fmt.Sprintf("RSS added by %d idle connections", len(conns)), "MiB", true, b, float64(rss1-rss0)/(1<<20))
	rate := float64(sp.producers) * sp.producerRate
	s := loadSpec{client: clientKgo, produce: true, addr: br.addr, topic: topic, records: int64(rate * sp.connSeconds), size: 1024,
		acks: "all", linger: "default", rate: rate, clients: sp.producers}
	r, err := measureLoad(ctx, cfg, s, []int{br.pid})
	if err != nil {
		return err
	}
	rss2, _ := procstat.Mem(br.pid, "VmRSS")
	fig := fmt.Sprintf("%d producers x %.0f rec/s beside them", sp.producers, sp.producerRate)
	res.set(sec, fig+" p50", "ms", true, b, r.p50)
	res.set(sec, fig+" p99", "ms", true, b, r.p99)
	res.set(sec, fig+", broker RSS", "MiB", true, b, float64(rss2)/(1<<20))
	return nil
}

// idleConnections opens n connections to addr, each of which sends one
// ApiVersions request and reads its answer, then stays idle.
func idleConnections(ctx context.Context, addr string, n int) ([]net.Conn, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-bench", "1"
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("idle")).AppendRequest(nil, req, 1)
	conns := make([]net.Conn, n)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			d := net.Dialer{Timeout: 10 * time.Second}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err = c.Write(frame); err == nil {
					var size [4]byte
					if _, err = io.ReadFull(c, size[:]); err == nil {
						_, err = io.CopyN(io.Discard, c, int64(uint32(size[0])<<24|uint32(size[1])<<16|uint32(size[2])<<8|uint32(size[3])))
					}
				}
				_ = c.SetDeadline(time.Time{})
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if c != nil {
					c.Close()
				}
				if firstErr == nil {
					firstErr = fmt.Errorf("idle connection %d: %w", i, err)
				}
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	out := conns[:0]
	for _, c := range conns {
		if c != nil {
			out = append(out, c)
		}
	}
	return out, firstErr
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// createClusterTopic creates topic RF3 with min.insync.replicas 2 on c and
// waits until every partition is led with three replicas in sync and
// answers ListOffsets; it returns the time that took.
func createClusterTopic(ctx context.Context, c *failoverCluster, topic string, parts int32) (time.Duration, error) {
	return createClusterTopics(ctx, c, []string{topic}, parts)
}

// createClusterTopics is createClusterTopic for several topics of parts
// partitions each, one CreateTopics request per topic, all at once: Kafka's
// controller takes at most 10,000 records (a partition is one) per request.
func createClusterTopics(ctx context.Context, c *failoverCluster, topics []string, parts int32) (time.Duration, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.RequestTimeoutOverhead(2*time.Minute))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32((5 * time.Minute).Milliseconds()))
	t0 := time.Now()
	errs := make([]error, len(topics))
	var wg sync.WaitGroup
	for i, topic := range topics {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				errs[i] = fmt.Errorf("create %s: %w", topic, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if err := awaitServing(ctx, adm, topics, parts, true, 10*time.Minute); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// awaitServing waits until every partition of topics (parts each) has a
// leader (and, with fullISR, three replicas in sync) and answers
// ListOffsets.
func awaitServing(ctx context.Context, adm *kadm.Client, topics []string, parts int32, fullISR bool, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last error
	shown := time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		md, err := adm.Metadata(mctx, topics...)
		cancel()
		last = err
		for _, topic := range topics {
			if last == nil {
				last = partitionsReady(md, topic, parts, fullISR)
			}
		}
		for _, topic := range topics {
			if last != nil {
				break
			}
			octx, cancel := context.WithTimeout(ctx, 30*time.Second)
			if !endOffsetsServed(octx, adm, topic, parts) {
				last = fmt.Errorf("%s: ListOffsets not answered by every partition", topic)
			}
			cancel()
		}
		if last == nil {
			return nil
		}
		if time.Since(shown) >= 5*time.Second {
			progress("  not yet served: %v", last)
			shown = time.Now()
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	return fmt.Errorf("not served after %v: %v", limit, last)
}

func partitionsReady(md kadm.Metadata, topic string, parts int32, fullISR bool) error {
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil || len(td.Partitions) != int(parts) {
		return fmt.Errorf("%s: %d of %d partitions in metadata", topic, len(td.Partitions), parts)
	}
	for _, p := range td.Partitions {
		if p.Leader < 0 || (fullISR && len(p.ISR) < 3) {
			return fmt.Errorf("%s[%d]: leader %d, isr %v", topic, p.Partition, p.Leader, p.ISR)
		}
	}
	return nil
}

func scaleCluster(ctx context.Context, cfg config, sp scalePlan, res *scaleResults, b string, c *failoverCluster) error {
	const sec = "cluster"
	seeds := strings.Join(c.addrs, ",")
	size := 1024
	for _, parts := range sp.clusterParts {
		topic := fmt.Sprintf("rf3-%d", parts)
		if _, err := createClusterTopic(ctx, c, topic, parts); err != nil {
			return err
		}
		s := loadSpec{client: clientKgo, produce: true, addr: seeds, topic: topic, records: sp.clusterBytes / int64(size), size: size, acks: "all", linger: "default"}
		r, err := measureLoad(ctx, cfg, s, c.pids())
		if err != nil {
			return err
		}
		fig := fmt.Sprintf("RF3 acks=all p=%d", parts)
		res.set(sec, fig+" MB/s", "MB/s", false, b, r.mbps)
		res.set(sec, fig+" CPU of the 3 brokers", "s/GB", true, b, r.cpuPerGB)
		peak, ok := res.get(sec, fig+" MB/s", "kafka")
		if !ok {
			peak = r.mbps
		}
		rate := peak / 2 * 1e6 / float64(size)
		topic = fmt.Sprintf("rf3-lat-%d", parts)
		if _, err := createClusterTopic(ctx, c, topic, parts); err != nil {
			return err
		}
		s = loadSpec{client: clientKgo, produce: true, addr: seeds, topic: topic, records: max(100, int64(rate*sp.latencySeconds)), size: size,
			acks: "all", linger: "default", rate: rate}
		if r, err = measureLoad(ctx, cfg, s, c.pids()); err != nil {
			return err
		}
		fig = fmt.Sprintf("RF3 acks=all p=%d @ %.0f rec/s", parts, rate)
		res.set(sec, fig+" p50", "ms", true, b, r.p50)
		res.set(sec, fig+" p99", "ms", true, b, r.p99)
		res.set(sec, fig+" p99.9", "ms", true, b, r.p999)
	}
	return nil
}

// manyTopicParts is the partitions of each topic of the partitions
// section: n partitions are spread over topics of at most that many.
const manyTopicParts = 1000

func scalePartitions(ctx context.Context, cfg config, sp scalePlan, res *scaleResults, b string, c *failoverCluster, n int32) error {
	sec := "partitions"
	topics, per, pre := manyTopics(n)
	profiled := profileCluster(cfg, c, fmt.Sprintf("%d-create", n), 20*time.Second, 0)
	took, err := createClusterTopics(ctx, c, topics, per)
	profiled()
	if err != nil {
		return err
	}
	res.set(sec, pre+"create to all served", "s", true, b, took.Seconds())
	progress("  created in %.1fs", took.Seconds())

	sleepCtx(ctx, time.Duration(sp.restSeconds*float64(time.Second)))
	pids := c.pids()
	var rss int64
	for _, pid := range pids {
		v, err := procstat.Mem(pid, "VmRSS")
		if err != nil {
			return err
		}
		rss += v
	}
	res.set(sec, pre+"RSS at rest, per broker", "MiB", true, b, float64(rss)/float64(len(pids))/(1<<20))
	profileHeap(cfg, c, fmt.Sprintf("%d-rest", n))
	cpu0, err := cpuOf(pids)
	if err != nil {
		return err
	}
	idle := time.Duration(sp.restSeconds * float64(time.Second))
	sleepCtx(ctx, idle)
	cpu1, err := cpuOf(pids)
	if err != nil {
		return err
	}
	res.set(sec, pre+"idle CPU, per broker", "CPU s/s", true, b, (cpu1-cpu0).Seconds()/idle.Seconds()/float64(len(pids)))

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	var lat []time.Duration
	for range sp.metadataTimes {
		req := kmsg.NewPtrMetadataRequest()
		for _, topic := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
		}
		t0 := time.Now()
		if _, err := req.RequestWith(ctx, cl); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	res.set(sec, pre+"Metadata of all p50", "ms", true, b, ms(lat[len(lat)/2]))
	res.set(sec, pre+"Metadata of all max", "ms", true, b, ms(lat[len(lat)-1]))

	s := loadSpec{client: clientKgo, produce: true, addr: strings.Join(c.addrs, ","), topic: strings.Join(topics, ","), records: int64(sp.lowRate * sp.lowSeconds), size: 100,
		acks: "all", linger: "default", rate: sp.lowRate, roundRobin: true}
	r, err := cfg.tools.runLoad(ctx, s, 5*time.Minute+time.Duration(sp.lowSeconds*float64(time.Second)))
	if err != nil {
		return err
	}
	res.set(sec, fmt.Sprintf("%sproduce to all at %.0f rec/s p99", pre, sp.lowRate), "ms", true, b, r.p99)

	profiled = profileCluster(cfg, c, fmt.Sprintf("%d-failover", n), 20*time.Second, 0)
	elected, writable, moved, err := manyFailover(ctx, c, topics)
	profiled()
	if err != nil {
		return err
	}
	res.set(sec, pre+"failover: new leaders for the killed broker's", "s", true, b, elected.Seconds())
	res.set(sec, pre+"failover: all of them take acks=all", "s", true, b, writable.Seconds())
	res.noteOf(sec, pre+"failover: partitions moved", b, fmt.Sprint(moved))
	// Then all three, the killed one too, start again on their data.
	adm := kadm.NewClient(cl)
	t0, err := c.restart()
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	profiled = profileCluster(cfg, c, fmt.Sprintf("%d-restart", n), 30*time.Second, 2*time.Minute)
	err = awaitServing(ctx, adm, topics, per, false, 10*time.Minute)
	profiled()
	if err != nil {
		return fmt.Errorf("after the restart: %w", err)
	}
	res.set(sec, pre+"start to serving all (restart of all 3)", "s", true, b, time.Since(t0).Seconds())
	progress("  serving %.1fs after the restart", time.Since(t0).Seconds())
	if err := awaitServing(ctx, adm, topics, per, true, 10*time.Minute); err != nil {
		return fmt.Errorf("before the rolling restart: %w", err)
	}
	rr, err := rollingRestart(ctx, c, adm, topics, per, "")
	if err != nil {
		return fmt.Errorf("rolling restart: %w", err)
	}
	rr.report(res, sec, pre, b)
	return nil
}

// manyTopics names the topics n partitions are spread over (at most
// manyTopicParts each), with the partitions of each and the prefix of the
// figures about them.
func manyTopics(n int32) (topics []string, per int32, pre string) {
	k := (n + manyTopicParts - 1) / manyTopicParts
	per = n / k
	for i := range k {
		topics = append(topics, fmt.Sprintf("many-%d-%d", n, i))
	}
	return topics, per, fmt.Sprintf("%d RF3 (%d topics): ", per*k, k)
}

// scaleRestart is the rolling restart of the partitions section alone, on
// partitions that each hold a record (so that every log has its files and
// a leader epoch to carry through the shutdown): n partitions created, one
// acks=all record written to each, then rollingRestart. Besides its
// figures it prints each clean shutdown's time, CPU time, and the phases
// a samsa broker logs ("controlled shutdown: leadership moved", "logs
// flushed ahead of the close", "samsa stopped").
func scaleRestart(ctx context.Context, cfg config, res *scaleResults, b string, c *failoverCluster, n int32) error {
	const sec = "restart"
	topics, per, pre := manyTopics(n)
	took, err := createClusterTopics(ctx, c, topics, per)
	if err != nil {
		return err
	}
	progress("  created in %.1fs", took.Seconds())
	if err := produceToAll(ctx, c, topics, per); err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := awaitServing(ctx, adm, topics, per, true, 10*time.Minute); err != nil {
		return fmt.Errorf("before the rolling restart: %w", err)
	}
	rr, err := rollingRestart(ctx, c, adm, topics, per, cfg.scaleProfile)
	if err != nil {
		return fmt.Errorf("rolling restart: %w", err)
	}
	rr.report(res, sec, pre, b)
	for i, s := range rr.stops {
		line := fmt.Sprintf("  broker %d: clean shutdown %.1fs, %.1f CPU-s", i+1, s.took.Seconds(), s.cpu.Seconds())
		if i < len(c.logs) {
			line += "; " + shutdownPhases(c.logs[i])
		}
		progress("%s", line)
	}
	return nil
}

// produceToAll writes one acks=all record to every partition of topics
// (per each).
func produceToAll(ctx context.Context, c *failoverCluster, topics []string, per int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(len(topics)*int(per)+1))
	if err != nil {
		return err
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, topic := range topics {
		for p := range per {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: []byte("x")})
		}
	}
	t0 := time.Now()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return fmt.Errorf("a record to every partition: %w", err)
	}
	progress("  a record written to each of %d partitions in %.1fs", len(rs), time.Since(t0).Seconds())
	return nil
}

// shutdownPhases returns what the last clean shutdown in a samsa broker's
// log said of its phases: the attributes of its last "leadership moved",
// "logs flushed ahead of the close" and "samsa stopped" lines.
func shutdownPhases(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, msg := range []string{"controlled shutdown: leadership moved", "shutdown: logs flushed ahead of the close", "samsa stopped"} {
		i := strings.LastIndex(string(b), `msg="`+msg+`"`)
		if i < 0 {
			continue
		}
		line, _, _ := strings.Cut(string(b[i+len(msg)+7:]), "\n")
		out = append(out, msg+":"+line)
	}
	return strings.Join(out, "; ")
}

// rollingRestart bounces the brokers of c one after the other while six
// producers (one per partition 0-5 of the first topic) write acks=all
// records one at a time; before the next broker goes, every partition of
// topics (per each) is back to three replicas in sync. It returns the
// total time, each clean shutdown and the longest time a producer waited
// for an acknowledgement.
//
// With profile set (a directory), a CPU profile of the first 5 s of each
// samsa broker's shutdown is written to it as shutdown-<node>.cpu.pprof,
// with its goroutines every second (see profileShutdown).
func rollingRestart(ctx context.Context, c *failoverCluster, adm *kadm.Client, topics []string, per int32, profile string) (rr rolled, err error) {
	const producers = 6
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	last := make([]time.Time, producers)
	var wg sync.WaitGroup
	for p := range int32(producers) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(0), kgo.MetadataMinAge(100*time.Millisecond), kgo.RecordRetries(1<<30),
			kgo.RetryTimeout(10*time.Minute))
		if err != nil {
			return rr, err
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topics[0], Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
			return rr, fmt.Errorf("before the rolling restart: %w", err)
		}
		last[p] = time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pctx.Err() == nil {
				if cl.ProduceSync(pctx, &kgo.Record{Topic: topics[0], Partition: p, Value: []byte("x")}).FirstErr() != nil {
					continue
				}
				now := time.Now()
				mu.Lock()
				rr.gap = max(rr.gap, now.Sub(last[p]))
				last[p] = now
				mu.Unlock()
			}
		}()
	}
	t0 := time.Now()
	for i := range c.addrs {
		profiled := func() {}
		if profile != "" && i < len(c.httpAddrs) {
			profiled = profileShutdown(c.httpAddrs[i], filepath.Join(profile, fmt.Sprintf("shutdown-%d.cpu.pprof", i+1)))
		}
		s, err := c.bounce(i)
		profiled()
		if err != nil {
			return rr, fmt.Errorf("broker %d: %w", i+1, err)
		}
		rr.stops = append(rr.stops, s)
		progress("  rolling restart: broker %d stopped in %.1fs (load %s)", i+1, s.took.Seconds(), loadAvg())
		if err := awaitServing(ctx, adm, topics, per, true, 10*time.Minute); err != nil {
			return rr, fmt.Errorf("after restarting broker %d: %w", i+1, err)
		}
		progress("  rolling restart: broker %d back in sync %.1fs after its stop began", i+1, time.Since(t0).Seconds())
	}
	rr.total = time.Since(t0)
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, t := range last {
		if t.Before(t0) {
			return rr, errors.New("a producer took no write during the rolling restart")
		}
	}
	return rr, nil
}

// profileShutdown fetches a CPU profile of the first seconds of the
// shutdown of the samsa broker whose HTTP listener is addr into path,
// and its goroutines every second meanwhile into path's name with .N.txt
// (where a shutdown waits) (the listener closes once leadership moved
// and the logs were flushed: a shutdown that reaches that sooner leaves
// less). The func it returns waits for them.
func profileShutdown(addr, path string) func() {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := fetchProfile("http://"+addr+"/debug/pprof/profile?seconds=5", path, time.Minute); err != nil {
			progress("shutdown profile: %v", err)
		}
	}()
	go func() {
		defer wg.Done()
		for i := range 5 {
			time.Sleep(time.Second)
			dump := strings.TrimSuffix(path, ".cpu.pprof") + fmt.Sprintf(".goroutines.%d.txt", i+1)
			if fetchProfile("http://"+addr+"/debug/pprof/goroutine?debug=1", dump, 30*time.Second) != nil {
				return
			}
		}
	}()
	return wg.Wait
}

// rolled is what rollingRestart measured.
type rolled struct {
	total time.Duration
	gap   time.Duration // the longest a producer waited for an acknowledgement
	stops []stopped     // each broker's clean shutdown, in order
}

// report sets rr's figures in section sec of res.
func (rr rolled) report(res *scaleResults, sec, pre, b string) {
	var slowest stopped
	for _, s := range rr.stops {
		if s.took > slowest.took {
			slowest = s
		}
	}
	res.set(sec, pre+"rolling restart under acks=all: total", "s", true, b, rr.total.Seconds())
	res.set(sec, pre+"rolling restart: slowest clean shutdown", "s", true, b, slowest.took.Seconds())
	if slowest.cpu >= 0 {
		res.set(sec, pre+"rolling restart: that shutdown's CPU time", "s", true, b, slowest.cpu.Seconds())
	}
	res.set(sec, pre+"rolling restart: longest no-ack window", "s", true, b, rr.gap.Seconds())
}

// profileCluster starts fetching a CPU profile of d from each samsa broker
// of c (-profile with -scale) into <dir>/<name>-<node>.cpu.pprof; the func
// it returns waits for them. A broker that does not answer (killed, or
// not yet up) is asked again for up to wait, then skipped.
func profileCluster(cfg config, c *failoverCluster, name string, d, wait time.Duration) func() {
	var wg sync.WaitGroup
	if cfg.scaleProfile == "" {
		return wg.Wait
	}
	for i, addr := range c.httpAddrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A restarted broker's listener comes up once its logs are open.
			for deadline := time.Now().Add(wait); ; {
				url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds()))
				if fetchProfile(url, filepath.Join(cfg.scaleProfile, fmt.Sprintf("%s-%d.cpu.pprof", name, i+1)), d+30*time.Second) == nil {
					return
				}
				if time.Now().After(deadline) {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	return wg.Wait
}

// profileHeap writes each samsa broker's heap profile (-profile with
// -scale) to <dir>/<name>-<node>.heap.pprof.
func profileHeap(cfg config, c *failoverCluster, name string) {
	if cfg.scaleProfile == "" {
		return
	}
	for i, addr := range c.httpAddrs {
		path := filepath.Join(cfg.scaleProfile, fmt.Sprintf("%s-%d.heap.pprof", name, i+1))
		if err := fetchProfile("http://"+addr+"/debug/pprof/heap", path, 30*time.Second); err != nil {
			progress("heap profile of broker %d: %v", i+1, err)
		}
	}
}

// fetchProfile GETs url into path.
func fetchProfile(url, path string, timeout time.Duration) error {
	cl := http.Client{Timeout: timeout}
	resp, err := cl.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// manyFailover kills the leader of the first partition of topics and
// returns the time until every partition it led has another leader in
// Metadata, and until each of them acknowledged an acks=all write sent
// right after the kill.
func manyFailover(ctx context.Context, c *failoverCluster, topics []string) (elected, writable time.Duration, moved int, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.MetadataMinAge(100*time.Millisecond), kgo.RecordRetries(1<<30),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }), kgo.RetryTimeout(10*time.Minute))
	if err != nil {
		return 0, 0, 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return 0, 0, 0, err
	}
	victim := md.Topics[topics[0]].Partitions[0].Leader
	var parts []kgo.Record
	for _, t := range topics {
		for _, p := range md.Topics[t].Partitions {
			if p.Leader == victim {
				parts = append(parts, kgo.Record{Topic: t, Partition: p.Partition})
			}
		}
	}
	// Every partition gets a write first: the client then has each
	// leader's connection and the partitions' metadata.
	if _, err := produceEach(ctx, cl, parts); err != nil {
		return 0, 0, 0, fmt.Errorf("before the kill: %w", err)
	}
	killed := time.Now()
	c.kill(victim)
	acked := make(chan error, 1)
	var ackTimes []time.Time
	go func() {
		var err error
		ackTimes, err = produceEach(ctx, cl, parts)
		acked <- err
	}()
	lastShown := time.Duration(0)
	for elected == 0 {
		if time.Since(killed) > 10*time.Minute {
			return 0, 0, 0, fmt.Errorf("partitions of broker %d not led elsewhere after 10 min", victim)
		}
		mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		md, err := adm.Metadata(mctx, topics...)
		cancel()
		if err == nil {
			left := 0
			for _, r := range parts {
				if l := md.Topics[r.Topic].Partitions[r.Partition].Leader; l == victim || l < 0 {
					left++
				}
			}
			if left == 0 {
				elected = time.Since(killed)
			} else if since := time.Since(killed); since-lastShown >= time.Second {
				progress("  failover: %.1fs after the kill, %d of %d partitions still without a new leader", since.Seconds(), left, len(parts))
				lastShown = since
			}
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
	if err := <-acked; err != nil {
		return 0, 0, 0, fmt.Errorf("after the kill: %w", err)
	}
	writable = time.Since(killed)
	after := make([]time.Duration, len(ackTimes))
	for i, t := range ackTimes {
		after[i] = t.Sub(killed)
	}
	slices.Sort(after)
	q := func(f float64) float64 { return after[min(len(after)-1, int(f*float64(len(after))))].Seconds() }
	progress("  failover: new leaders after %.1fs; first acks after the kill: p10 %.1fs, p50 %.1fs, p90 %.1fs, p99 %.1fs, last %.1fs",
		elected.Seconds(), q(0.1), q(0.5), q(0.9), q(0.99), writable.Seconds())
	return elected, writable, len(parts), nil
}

// produceEach writes one record to the topic and partition of each of
// parts and waits for all the acknowledgements; it returns when each was
// acknowledged.
func produceEach(ctx context.Context, cl *kgo.Client, parts []kgo.Record) ([]time.Time, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	at := make([]time.Time, len(parts))
	for i, p := range parts {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: p.Topic, Partition: p.Partition, Value: []byte("x")}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			at[i] = time.Now()
			if err != nil && first == nil {
				first = fmt.Errorf("%s[%d]: %w", p.Topic, p.Partition, err)
			}
		})
	}
	wg.Wait()
	return at, first
}

func printScale(w io.Writer, r *scaleResults, version string) {
	fmt.Fprintf(w, "scale cases, samsa %s, %s\n", version, machineNote())
	for _, l := range r.loads {
		fmt.Fprintln(w, "  "+l)
	}
	fmt.Fprintf(w, "%-12s %-58s %12s %12s %10s  %s\n", "section", "figure", "samsa", "kafka", "samsa/kafka", "unit")
	for _, row := range r.rows {
		cell := func(b string) string {
			if t, ok := row.note[b]; ok {
				return t
			}
			if v, ok := row.v[b]; ok {
				return fmt.Sprintf("%.3g", v)
			}
			return "-"
		}
		ratio := ""
		s, ok1 := row.v["samsa"]
		k, ok2 := row.v["kafka"]
		if ok1 && ok2 && k != 0 {
			ratio = fmt.Sprintf("%.2fx", s/k)
		}
		fmt.Fprintf(w, "%-12s %-58s %12s %12s %10s  %s\n", row.section, row.figure, cell("samsa"), cell("kafka"), ratio, row.unit)
	}
	for _, f := range r.floors {
		fmt.Fprintln(w, "  "+f)
	}
	for _, e := range r.errs {
		fmt.Fprintln(w, "FAILED:", e)
	}
}

// scaleFailed reports whether a samsa case failed.
func (r *scaleResults) samsaFailed() bool {
	for _, e := range r.errs {
		if strings.Contains(e, " samsa: ") {
			return true
		}
	}
	return false
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// scaleFloor measures what the kernel alone costs per byte on this machine
// for the pinned cases: samsa-bench floor serve (read, CRC-32C and pwrite;
// sendfile of 1 MiB pieces) under taskset on CPU 0 as the brokers were, its
// client on CPU 1, pinnedBytes each way.
func scaleFloor(ctx context.Context, cfg config, sp scalePlan, res *scaleResults) error {
	dir := filepath.Join(cfg.tmp, "scale-floor")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	defer cfg.remove(dir)
	if err := warmPages(cfg.tmp, sp.pinnedBytes+64<<20); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "taskset", "-c", "0", cfg.tools.samsaBench, "floor", "serve", "-dir", dir) // taskset execs it: same pid
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		return fmt.Errorf("samsa-bench floor serve printed %q: %v", line, err)
	}
	pids := []int{cmd.Process.Pid}
	var figs []string
	for _, op := range []string{"produce", "consume"} { // consume sends the files produce wrote
		cpu0, err := cpuOf(pids)
		if err != nil {
			return err
		}
		run := exec.CommandContext(ctx, "taskset", "-c", "1", cfg.tools.samsaBench, "floor", op, "-brokers", addr,
			"-bytes", fmt.Sprint(sp.pinnedBytes), "-json")
		o, err := run.Output()
		if err != nil {
			return fmt.Errorf("samsa-bench floor %s: %w\n%s", op, err, o)
		}
		r, err := parseKgo(o)
		if err != nil {
			return err
		}
		cpu1, err := cpuOf(pids)
		if err != nil {
			return err
		}
		perGB := (cpu1 - cpu0).Seconds() / (float64(r.bytes) / 1e9)
		progress("  pinned floor: %s %.1f MB/s, %.3g CPU s/GB", op, r.mbps, perGB)
		what := map[string]string{"produce": "read, CRC-32C, pwrite", "consume": "sendfile of 1 MiB pieces"}[op]
		figs = append(figs, fmt.Sprintf("%s (%s) %.3g CPU-s/GB at %.0f MB/s", op, what, perGB, r.mbps))
	}
	res.floors = append(res.floors, "kernel floor beside the pinned brokers (samsa-bench floor: only the per-byte work, pinned as they were): "+strings.Join(figs, "; "))
	return nil
}
