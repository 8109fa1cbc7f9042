// Command bench measures samsa against Apache Kafka on this machine, side by
// side: each broker runs as a child process on loopback ports with its log
// dir on the same filesystem, in alternating rounds (Kafka, samsa, Kafka,
// samsa, ...; a fresh broker and data dir per round), driven by two load
// generators: ours (cmd/samsa-bench, franz-go) and Apache Kafka's
// ProducerPerformance and ConsumerPerformance (org.apache.kafka.tools).
//
// Each round: start the broker and time process start to the first
// acknowledged produce; an unmeasured warm-up; the produce cases (1 KiB
// records, acks=1 and all, 1 and 16 partitions, the client's default batching
// and linger 5 ms), one of which fills a 16-partition topic with the consume
// volume; each client reads that topic from the page cache; the latency case
// (acks=all, one partition) paced at half of the rate Kafka reached with the
// same client in its first round; the fanin case (one direct consumer of all
// 1,000 partitions of a topic while a producer writes 100 B records at
// 1,000/s, linger 0, to one of them: latency from the produce call to the
// consumer, and the broker's CPU-seconds per second of the run, the cost of
// a Fetch parked on many idle partitions; once with fetch.min.bytes 1, once
// with 16 KiB so that a parked Fetch sees many appends); peak RSS. For every run the
// broker's CPU-seconds (user+system, /proc) per GB moved. Before the rounds, the
// machine's own limits: one loopback TCP stream from memory, and sendfile
// from a page-cached file. Medians of the rounds and the ratios samsa/Kafka
// are printed as one table.
//
// Apache Kafka comes from Maven once (internal/kafkaref). When it cannot run,
// bench says why and measures samsa alone. The exit status is non-zero only
// when samsa or bench itself fails.
//
//	go run ./bench [-quick] [-rounds N] [-only samsa|kafka] [-sections produce,consume,latency,fanin,txn]
//	               [-samsa-bin PATH] [-keep] [-v] [-profile DIR]
//	go run ./bench -scale [-quick] [-only samsa|kafka] [-sections pinned,compressed,connections,cluster,partitions,tiered]
//	go run ./bench -failover
//	go run ./bench -registry [-quick]
//	go run ./bench -restproxy [-quick]
//	go run ./bench -link [-quick]
//
// -scale runs the cases of scale.go instead of the rounds: a broker pinned
// to one core, compressed produce, many connections, three brokers RF3,
// 1,000 and 10,000 partitions, and tiered storage (tiered.go, samsa alone).
//
// -samsa-bin measures a samsa binary built elsewhere (another commit, for a
// before and after) instead of building ./cmd/samsa; samsa-bench is still
// built from this tree.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/procstat"
)

type config struct {
	plan    plan
	root    string
	tmp     string
	tools   tools
	verbose bool
	keep    bool // -keep: the data and logs of every run stay
	// scaleProfile is -profile with -scale: the directory the CPU
	// profiles of the samsa clusters' creation, failover and restart go
	// to, and their heap profiles at rest.
	scaleProfile string
}

func main() {
	os.Exit(run())
}

func run() int {
	quick := flag.Bool("quick", false, "a one-minute version: one round, fewer and smaller cases")
	rounds := flag.Int("rounds", 0, "rounds per broker (default 3, 1 with -quick)")
	only := flag.String("only", "", "run only this broker: samsa or kafka")
	keep := flag.Bool("keep", false, "keep the temporary directory (broker logs and data)")
	verbose := flag.Bool("v", false, "print every run's figures as they come")
	sectionList := flag.String("sections", "", "run only these parts of each round, comma-separated: produce, consume, latency, fanin, txn (consume and latency need produce)")
	samsaBinFlag := flag.String("samsa-bin", "", "measure this samsa binary instead of building ./cmd/samsa (not with -profile)")
	scale := flag.Bool("scale", false, "run only the scale cases (scale.go): "+strings.Join(scaleSections, ", ")+"; -sections picks among them, or "+strings.Join(scaleExtraSections, ", ")+" (off by default)")
	manyParts := flag.String("partitions", "", "with -scale: the partition counts of the partitions section, comma-separated (default 1000,10000; 1000 with -quick)")
	restProxy := flag.Bool("restproxy", false, "run only the REST proxy case: produce and consume over HTTP beside the Kafka port on one samsa broker (restproxy.go)")
	registry := flag.Bool("registry", false, "run only the schema registry case: registrations and lookups per second on one samsa broker (registry.go)")
	linkBench := flag.Bool("link", false, "run only the cluster link case: Kafka mirrored into samsa by a link and by MirrorMaker 2, MB/s and lag (link.go)")
	failover := flag.Bool("failover", false, "run only the failover comparison: three brokers of each, the leader killed with SIGKILL (failover.go)")
	profile := flag.String("profile", "", "run samsa in-process with pprof (bench/pprofsamsa), writing cpu, allocs, heap and mutex profiles of each round to this directory; with -scale, the CPU profiles of each samsa broker of the partitions section (creation, failover, restart) and their heap at rest")
	flag.Parse()
	if flag.NArg() > 0 || *rounds < 0 || *rounds > 20 || (*samsaBinFlag != "" && *profile != "" && !*scale) {
		fmt.Fprintf(os.Stderr, "bench: unexpected arguments %q, -rounds outside 0..20, or -samsa-bin with -profile\n", flag.Args())
		return 2
	}
	withSamsa, withKafka := true, true
	switch *only {
	case "":
	case "samsa":
		withKafka = false
	case "kafka":
		withSamsa = false
	default:
		fmt.Fprintf(os.Stderr, "bench: -only must be samsa or kafka, not %q\n", *only)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg := config{plan: makePlan(*quick, *rounds), verbose: *verbose, keep: *keep}
	if *scale {
		cfg.scaleProfile = *profile
	}
	sp := makeScalePlan(*quick)
	onlySections := cfg.plan.only
	if *scale {
		onlySections = sp.only
	}
	if err := sp.partitionCounts(*manyParts); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if err := onlySections(*sectionList); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	var err error
	if cfg.root, err = kafkaref.ModuleRoot(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if cfg.tmp, err = os.MkdirTemp("", "samsa-bench-"); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "bench: keeping", cfg.tmp)
	} else {
		defer os.RemoveAll(cfg.tmp)
	}

	if cfg.tools.tls, err = newTLS(filepath.Join(cfg.tmp, "tls")); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	res := newResults()
	res.samsaVersion = gitVersion(ctx, cfg.root)
	progress("building samsa and samsa-bench")
	var samsaBin string
	samsaBin, cfg.tools.samsaBench, err = buildTools(ctx, cfg.root, filepath.Join(cfg.tmp, "bin"), *profile != "" && !*scale)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if *samsaBinFlag != "" {
		if samsaBin, err = filepath.Abs(*samsaBinFlag); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		res.samsaVersion = samsaBin
	}
	if *registry {
		return registryMain(ctx, cfg, samsaBin, res.samsaVersion, *quick)
	}
	if *restProxy {
		return restProxyMain(ctx, cfg, samsaBin, res.samsaVersion, *quick)
	}
	// Kafka's jars serve the Java load generator too, -only samsa or not.
	progress("resolving Apache Kafka jars")
	if cfg.tools.libs, err = kafkaref.Libs(ctx, cfg.root); err != nil {
		res.kafkaErr = fmt.Errorf("cannot run Apache Kafka or its tools: %w", err)
		withKafka = false
	} else if withKafka {
		res.kafkaVersion = kafkaref.Version(cfg.tools.libs)
	}

	if *linkBench {
		return linkMain(ctx, cfg, samsaBin, res.samsaVersion, *quick)
	}
	if *failover {
		progress("failover: three samsa processes and three Kafka KRaft nodes")
		rs := runFailover(ctx, cfg, samsaBin, withSamsa, withKafka)
		printFailover(os.Stdout, rs)
		for _, r := range rs {
			if r.err != nil && r.name == "samsa" {
				return 1
			}
		}
		return 0
	}
	if *scale {
		rs := runScale(ctx, cfg, sp, samsaBin, withSamsa, withKafka)
		printScale(os.Stdout, rs, res.samsaVersion)
		if ctx.Err() != nil {
			return 130
		}
		if rs.samsaFailed() {
			return 1
		}
		return 0
	}
	progress("machine limits")
	res.limits, res.limitsErr = measureLimits(cfg.tmp, cfg.plan.limitBytes, time.Duration(cfg.plan.limitSeconds*float64(time.Second)))
	res.loadStart = loadAvg()

	exit := 0
	order := brokerOrder(cfg.plan.rounds, withSamsa, withKafka)
	for i, name := range order {
		if ctx.Err() != nil {
			break
		}
		round := i/max(1, len(order)/cfg.plan.rounds) + 1
		dir := filepath.Join(cfg.tmp, fmt.Sprintf("%s-%d", name, round))
		profileOut := ""
		if *profile != "" {
			profileOut = filepath.Join(*profile, fmt.Sprintf("samsa-%d", round))
		}
		start := func() (*broker, error) { return startSamsa(ctx, samsaBin, dir, profileOut, "", cfg.tools.tls) }
		if name == "kafka" {
			start = func() (*broker, error) { return startKafka(ctx, cfg.tools.libs, dir, "", cfg.tools.tls) }
		}
		if err := runRound(ctx, cfg, res, name, round, start); err != nil {
			progress("%s round %d: %v", name, round, err)
			if name == "samsa" {
				exit = 1
			}
		}
		if !*keep {
			_ = os.RemoveAll(dir) // the next broker gets the page cache and disk to itself
		}
	}
	res.loadEnd = loadAvg()
	res.total = time.Since(benchStart)
	res.print(os.Stdout, cfg.plan)
	if ctx.Err() != nil {
		fmt.Println("interrupted")
		return 130
	}
	if res.samsaFailed() {
		exit = 1
	}
	return exit
}

// runRound starts one broker and runs every case of the plan against it.
func runRound(ctx context.Context, cfg config, res *results, name string, round int, start func() (*broker, error)) error {
	p := cfg.plan
	progress("%s round %d: start", name, round)
	b, err := start()
	if err != nil {
		res.roundFailed(name, err)
		return err
	}
	defer func() {
		if err := b.stop(30 * time.Second); err != nil {
			progress("%s round %d: %v", name, round, err)
		}
	}()
	progress("%s round %d: first produce acknowledged %.3fs after process start (pid %d, %s)",
		name, round, b.firstAck.Seconds(), b.pid, b.addr)

	measure := func(key figKey, s loadSpec, topicParts int32) error {
		if !b.running() {
			return fmt.Errorf("%s exited; log tail:\n%s", name, b.logTail(30))
		}
		if topicParts > 0 {
			if err := createTopic(ctx, b.addr, s.topic, topicParts); err != nil {
				return err
			}
		}
		progress("%s round %d: %s %s %s", name, round, key.section, key.caseName, s.client)
		cpu0, err := procstat.CPUTime(b.pid)
		if err != nil {
			return err
		}
		timeout := timeoutFor(s.records * int64(s.size))
		if s.rate > 0 {
			timeout += time.Duration(float64(s.records) / s.rate * float64(time.Second))
		}
		r, err := cfg.tools.runLoad(ctx, s, timeout)
		cpu1, cerr := procstat.CPUTime(b.pid)
		if err == nil && cerr == nil && r.bytes > 0 && !s.fanin {
			r.cpuPerGB = (cpu1 - cpu0).Seconds() / (float64(r.bytes) / 1e9)
		}
		res.add(name, key, r, err)
		if err == nil && cfg.verbose {
			lat := ""
			if r.hasLat {
				lat = fmt.Sprintf(" p50 %.1f p99 %.1f p99.9 %.1f ms,", r.p50, r.p99, r.p999)
			}
			progress("  %.1f MB/s %.0f rec/s,%s %.2f broker CPU s/GB, %.3f broker CPU s/s", r.mbps, r.rps, lat, r.cpuPerGB, r.cpuPerSec)
		}
		if err != nil {
			progress("%s round %d: %s %s %s FAILED: %v", name, round, key.section, key.caseName, s.client, err)
		}
		return nil
	}

	// Warm-up: the JVM compiles its hot paths only after many calls, and both
	// brokers grow their buffers; not measured.
	progress("%s round %d: warm-up", name, round)
	for _, acks := range []string{"1", "all"} {
		topic := "warm-" + acks
		if err := createTopic(ctx, b.addr, topic, 16); err != nil {
			return err
		}
		n := p.recordsFor(p.warmBytes / 2)
		s := loadSpec{client: clientKgo, produce: true, addr: b.addr, topic: topic, records: n, size: p.size, acks: acks, linger: "default"}
		if _, err := cfg.tools.runLoad(ctx, s, timeoutFor(p.warmBytes)); err != nil {
			return fmt.Errorf("warm-up produce: %w", err)
		}
		s.produce = false
		if _, err := cfg.tools.runLoad(ctx, s, timeoutFor(p.warmBytes)); err != nil {
			return fmt.Errorf("warm-up consume: %w", err)
		}
	}

	var fillTopic string
	var fillRecords int64
	for _, c := range p.cases {
		if !p.sections["produce"] {
			break
		}
		for _, client := range clients {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !c.runsOn(client) || (c == fillCase && client != clientKgo) {
				continue
			}
			topic := fmt.Sprintf("p-%s-%s-%d-%s", client, c.acks, c.parts, strings.TrimSuffix(c.linger, "ms"))
			n := p.recordsFor(p.bytesOf(c, client))
			s := loadSpec{client: client, produce: true, addr: b.addr, topic: topic, records: n, size: p.size, acks: c.acks, linger: c.linger}
			if err := measure(figKey{"produce", c.String(), client}, s, c.parts); err != nil {
				return err
			}
			if c == fillCase {
				fillTopic, fillRecords = topic, n
			}
		}
	}
	if fillTopic != "" && p.sections["consume"] {
		caseName := fmt.Sprintf("%s from page cache, p=%d", fmtBytes(p.consumeBytes), fillCase.parts)
		for _, client := range clients {
			s := loadSpec{client: client, addr: b.addr, topic: fillTopic, records: fillRecords, size: p.size}
			if err := measure(figKey{"consume", caseName, client}, s, 0); err != nil {
				return err
			}
		}
	}
	for _, client := range clients {
		rate, src := res.latencyRate(client, latencyCase)
		if rate <= 0 || !p.sections["latency"] {
			continue
		}
		res.rateNote[client] = src
		topic := "lat-" + client
		n := max(100, int64(rate*p.latencySeconds))
		s := loadSpec{client: client, produce: true, addr: b.addr, topic: topic, records: n, size: p.size,
			acks: latencyCase.acks, linger: latencyCase.linger, rate: rate}
		if err := measure(figKey{"latency", fmt.Sprintf("%s @ %.0f rec/s", latencyCase, rate), client}, s, latencyCase.parts); err != nil {
			return err
		}
	}
	if p.sections["fanin"] {
		// The Java tools have no such run: kgo only.
		for _, mb := range faninMinBytes {
			n := int64(faninRate * p.faninSeconds)
			s := loadSpec{client: clientKgo, fanin: true, pid: b.pid, minBytes: mb, addr: b.addr,
				topic: fmt.Sprintf("fanin-%s-%d", clientKgo, mb), records: n, size: faninSize, rate: faninRate}
			if err := measure(figKey{"fanin", faninCaseName(mb), clientKgo}, s, faninParts); err != nil {
				return err
			}
		}
	}
	if p.sections["txn"] {
		// kgo only: Kafka's ProducerPerformance has no records-per-transaction
		// setting.
		n := p.recordsFor(p.txnBytes)
		pc := fmt.Sprintf("%d x 1 KiB per transaction, acks=all p=1", txnBatch)
		s := loadSpec{client: clientKgo, produce: true, addr: b.addr, topic: "txn-" + clientKgo, records: n, size: p.size,
			acks: "all", linger: "default", txn: txnBatch}
		if err := measure(figKey{"txn", "produce " + pc, clientKgo}, s, 1); err != nil {
			return err
		}
		s = loadSpec{client: clientKgo, addr: b.addr, topic: "txn-" + clientKgo, records: n, size: p.size, readCommitted: true}
		if err := measure(figKey{"txn", "read_committed consume of them", clientKgo}, s, 0); err != nil {
			return err
		}
	}
	if p.sections["tls"] {
		// The fill case's produce over the SSL listener with each client,
		// then a consume of kgo's topic with each, from the page cache:
		// the produce and consume sections' figures over PLAINTEXT.
		var kgoTopic string
		var kgoRecords int64
		for _, client := range clients {
			topic := "tls-" + client
			n := p.recordsFor(p.bytesOf(prodCase{acks: tlsCase.acks, parts: tlsCase.parts, linger: "default"}, client))
			linger := tlsCase.linger
			if !tlsCase.runsOn(client) {
				linger = "default"
			}
			s := loadSpec{client: client, produce: true, tls: true, addr: b.tlsAddr, topic: topic, records: n, size: p.size, acks: tlsCase.acks, linger: linger}
			if err := measure(figKey{"tls", tlsCaseName(fmt.Sprintf("produce acks=%s p=%d", tlsCase.acks, tlsCase.parts)), client}, s, tlsCase.parts); err != nil {
				return err
			}
			if client == clientKgo {
				kgoTopic, kgoRecords = topic, n
			}
		}
		for _, client := range clients {
			s := loadSpec{client: client, tls: true, addr: b.tlsAddr, topic: kgoTopic, records: kgoRecords, size: p.size}
			if err := measure(figKey{"tls", tlsCaseName(fmt.Sprintf("consume %s from page cache, p=%d", fmtBytes(kgoRecords*int64(p.size)), tlsCase.parts)), client}, s, 0); err != nil {
				return err
			}
		}
	}
	hwm, _ := procstat.Mem(b.pid, "VmHWM")
	res.roundDone(name, b.firstAck, hwm)
	return nil
}

var benchStart = time.Now()

// progress reports what bench is doing, on stderr, with the seconds since start.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "# %6.1fs %s\n", time.Since(benchStart).Seconds(), fmt.Sprintf(format, args...))
}

// gitVersion names the samsa commit being measured ("abc1234", with
// "-dirty" when the work tree has changes), or "HEAD" without git.
func gitVersion(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "describe", "--always", "--dirty").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "HEAD"
}

// loadAvg returns the 1, 5 and 15 minute load averages of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fs := strings.Fields(string(b))
	if len(fs) < 3 {
		return "unknown"
	}
	return strings.Join(fs[:3], " ")
}

func machineNote() string {
	return fmt.Sprintf("%d CPUs, %s", runtime.NumCPU(), runtime.Version())
}
