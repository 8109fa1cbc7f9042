// Command bench compares samsa with Apache Kafka on this machine: both run as
// child processes on loopback ports, driven by the same franz-go client with
// the same settings. For each broker and each case (acks=1 and acks=all, one
// and eight partitions) it produces -records records of -size bytes to a new
// topic, measuring throughput and each record's acknowledgement latency
// (Produce call to promise), then reads the topic back from the start with a
// fresh consumer, checking offsets and bytes. It reports the broker's idle
// and peak resident memory (VmRSS after start, VmHWM at the end) and the
// CPU time the broker spent in each phase. Last, it runs samsa twice more,
// with samsa.fetch.sendfile=true and =false, and reads one topic several
// times to compare the two fetch paths.
//
// Apache Kafka's jars come from Maven once (bench/kafka/pom.xml) into
// <cache>/kafka-libs; when Kafka cannot be run, bench says why and still
// measures samsa. The exit status is non-zero only when samsa fails.
//
//	go run ./bench [-records N] [-size B] [-only samsa|kafka] [-passes N] [-keep]
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type benchCase struct {
	acksAll    bool
	partitions int32
}

func (c benchCase) acks() string {
	if c.acksAll {
		return "all"
	}
	return "1"
}

var cases = []benchCase{
	{acksAll: false, partitions: 1},
	{acksAll: false, partitions: 8},
	{acksAll: true, partitions: 1},
	{acksAll: true, partitions: 8},
}

type caseResult struct {
	benchCase
	prod       produceResult
	p50, p99   time.Duration // saturated run
	paced      produceResult
	pp50, pp99 time.Duration // paced run
	cons       consumeResult
	err        error
}

type brokerResult struct {
	name     string
	version  string
	startup  time.Duration
	idleRSS  int64
	peakRSS  int64
	cases    []caseResult
	err      error // the broker could not be run (or died)
	stopNote string
}

type config struct {
	records int
	size    int
	passes  int
	rate    float64
	keep    bool
	root    string
	tmp     string
	cache   string
	payload []byte
}

func main() {
	os.Exit(run())
}

func run() int {
	var (
		cfg  config
		only string
	)
	flag.IntVar(&cfg.records, "records", 200000, "records produced per case")
	flag.IntVar(&cfg.size, "size", 1024, "record value size in bytes")
	flag.StringVar(&only, "only", "", "run only this broker: samsa or kafka")
	flag.IntVar(&cfg.passes, "passes", 3, "reads of the topic per fetch path in the sendfile comparison")
	flag.Float64Var(&cfg.rate, "rate", 5000, "records/s of the paced latency run in each case")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (broker logs and data)")
	flag.StringVar(&cfg.cache, "cache", "", "cache directory for the Kafka jars (default <module root>/.cache)")
	verbose := flag.Bool("v", false, "log the kgo clients at info level (default: warnings) to stderr")
	flag.Parse()
	level := kgo.LogLevelWarn
	if *verbose {
		level = kgo.LogLevelInfo
	}
	clientLog = kgo.BasicLogger(os.Stderr, level, func() string {
		return fmt.Sprintf("# %6.2fs kgo ", time.Since(benchStart).Seconds())
	})
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "bench: unexpected arguments %q\n", flag.Args())
		return 2
	}
	if cfg.records < 1 || cfg.size < 1 || cfg.size > 900000 || cfg.passes < 1 || cfg.passes > 20 ||
		cfg.rate < 10 || cfg.rate > 1e6 {
		fmt.Fprintln(os.Stderr, "bench: need -records >= 1, 1 <= -size <= 900000, 1 <= -passes <= 20, 10 <= -rate <= 1e6")
		return 2
	}
	runSamsa, runKafka := true, true
	switch only {
	case "":
	case "samsa":
		runKafka = false
	case "kafka":
		runSamsa = false
	default:
		fmt.Fprintf(os.Stderr, "bench: -only must be samsa or kafka, not %q\n", only)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	cfg.root = root
	if cfg.cache == "" {
		cfg.cache = filepath.Join(root, ".cache")
	}
	cfg.tmp, err = os.MkdirTemp("", "samsa-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if cfg.keep {
		fmt.Fprintln(os.Stderr, "bench: keeping", cfg.tmp)
	} else {
		defer os.RemoveAll(cfg.tmp)
	}
	cfg.payload = make([]byte, cfg.size)
	_, _ = rand.Read(cfg.payload) // incompressible, though compression is off

	fmt.Printf("samsa bench: %d records x %d B per case, %d CPUs, %s, %s\n",
		cfg.records, cfg.size, runtime.NumCPU(), runtime.Version(), kgoVersion())
	fmt.Printf("client: %s\n", clientSettings())
	fmt.Println("MB = 10^6 bytes of record values; latency = Produce call to acknowledgement (per record), in the")
	fmt.Printf("saturated run (client queueing included) and in a paced run of %d records at %.0f records/s.\n", pacedRecords(cfg), cfg.rate)
	fmt.Println("broker CPU = user+sys seconds the broker process used during the phase (client shares the same cores).")
	fmt.Println("Each broker first takes an unmeasured warm-up (produce 75% of -records to 8 partitions, read it 3 times).")
	fmt.Printf("load average at start: %s (figures from a busy machine are noisy)\n", loadAvg())
	fmt.Println()

	exit := 0
	var results []brokerResult
	if runSamsa {
		r := benchSamsa(ctx, cfg)
		if r.err != nil || caseFailed(r) {
			exit = 1
		}
		results = append(results, r)
	}
	if runKafka && ctx.Err() == nil {
		results = append(results, benchKafka(ctx, cfg))
	}
	printResults(os.Stdout, cfg, results)

	if runSamsa && ctx.Err() == nil {
		if err := sendfileComparison(ctx, cfg, os.Stdout); err != nil {
			fmt.Printf("samsa sendfile comparison FAILED: %v\n", err)
			exit = 1
		}
	}
	fmt.Printf("\nload average at end: %s; total %.0fs\n", loadAvg(), time.Since(benchStart).Seconds())
	if ctx.Err() != nil {
		fmt.Println("interrupted")
		return 130
	}
	return exit
}

func caseFailed(r brokerResult) bool {
	for _, c := range r.cases {
		if c.err != nil {
			return true
		}
	}
	return false
}

func benchSamsa(ctx context.Context, cfg config) brokerResult {
	res := brokerResult{name: "samsa", version: gitVersion(ctx, cfg.root)}
	dir := filepath.Join(cfg.tmp, "samsa")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.err = err
		return res
	}
	progress("building samsa")
	bin, err := buildSamsa(ctx, cfg.root, filepath.Join(cfg.tmp, "bin"))
	if err != nil {
		res.err = err
		return res
	}
	return benchBroker(ctx, cfg, res, func() (*brokerProc, error) { return startSamsa(bin, dir) })
}

func benchKafka(ctx context.Context, cfg config) brokerResult {
	res := brokerResult{name: "kafka"}
	progress("resolving Apache Kafka jars (cache %s)", cfg.cache)
	libs, err := kafkaLibs(ctx, cfg.root, cfg.cache)
	if err != nil {
		res.err = fmt.Errorf("cannot run Apache Kafka: %w", err)
		return res
	}
	res.version = kafkaVersion(libs)
	dir := filepath.Join(cfg.tmp, "kafka")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.err = err
		return res
	}
	return benchBroker(ctx, cfg, res, func() (*brokerProc, error) { return startKafka(ctx, libs, dir) })
}

// phaseTimeout bounds one produce or consume phase: generous enough for
// 2 MB/s, the point below which a run is broken rather than slow.
func phaseTimeout(cfg config) time.Duration {
	return 30*time.Second + time.Duration(int64(cfg.records)*int64(cfg.size)/2e6)*time.Second
}

func benchBroker(ctx context.Context, cfg config, base brokerResult, start func() (*brokerProc, error)) (res brokerResult) {
	res = base
	progress("starting %s", res.name)
	t0 := time.Now()
	b, err := start()
	if err != nil {
		res.err = err
		return res
	}
	defer func() {
		if err := b.stop(30 * time.Second); err != nil {
			res.stopNote = err.Error()
		}
	}()
	if err := b.waitReady(ctx, 90*time.Second); err != nil {
		res.err = err
		return res
	}
	res.startup = time.Since(t0)
	res.idleRSS, _ = memStat(b.pid(), "VmRSS")
	progress("%s ready in %.1fs (pid %d, %s)", res.name, res.startup.Seconds(), b.pid(), b.addr)

	timeout := phaseTimeout(cfg)
	if err := warmUp(ctx, cfg, b, timeout); err != nil {
		res.err = fmt.Errorf("warm-up: %w", err)
		return res
	}
	for _, c := range cases {
		if ctx.Err() != nil {
			break
		}
		if !b.running() {
			res.err = fmt.Errorf("%s exited (%v); log tail:\n%s", res.name, b.waitErr, b.logTail(30))
			break
		}
		cr := caseResult{benchCase: c}
		topic := fmt.Sprintf("bench-acks%s-p%d", c.acks(), c.partitions)
		cr.err = func() error {
			if err := createTopic(ctx, b.addr, topic, c.partitions); err != nil {
				return err
			}
			progress("%s: produce %d x %d B, acks=%s, %d partition(s)", res.name, cfg.records, cfg.size, c.acks(), c.partitions)
			p, err := produce(ctx, b, topic, c.partitions, cfg.records, cfg.payload, c.acksAll, pacing{}, timeout)
			if err != nil {
				return fmt.Errorf("produce: %w", err)
			}
			cr.prod = p
			cr.p50, cr.p99 = latencySummary(p.latencies)
			cr.prod.latencies = nil
			progress("%s: consume %s", res.name, topic)
			cons, err := consume(ctx, b, topic, p.perPart, cfg.payload, timeout)
			if err != nil {
				return fmt.Errorf("consume: %w", err)
			}
			cr.cons = cons
			progress("%s: paced produce %d at %.0f/s", res.name, pacedRecords(cfg), cfg.rate)
			pp, err := produce(ctx, b, topic, c.partitions, pacedRecords(cfg), cfg.payload, c.acksAll, pacing{rate: cfg.rate}, timeout)
			if err != nil {
				return fmt.Errorf("paced produce: %w", err)
			}
			cr.paced = pp
			cr.pp50, cr.pp99 = latencySummary(pp.latencies)
			cr.paced.latencies = nil
			return nil
		}()
		if cr.err != nil {
			progress("%s: %s acks=%s p=%d FAILED: %v", res.name, topic, c.acks(), c.partitions, cr.err)
		}
		res.cases = append(res.cases, cr)
	}
	res.peakRSS, _ = memStat(b.pid(), "VmHWM")
	return res
}

func printResults(w io.Writer, cfg config, results []brokerResult) {
	n := 0
	for _, r := range results {
		n += len(r.cases)
	}
	if n > 0 {
		printTables(w, cfg, results)
	}
	printBrokerNotes(w, results)
}

func printTables(w io.Writer, cfg config, results []brokerResult) {
	fmt.Fprintln(w, "PRODUCE")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "broker\tacks\tparts\tMB/s\trecords/s\tp50 ms\tp99 ms\tbroker CPU s\tp50 ms @%.0f/s\tp99 ms @%.0f/s\t\n", cfg.rate, cfg.rate)
	for _, r := range results {
		for _, c := range r.cases {
			if c.err != nil {
				fmt.Fprintf(tw, "%s\t%s\t%d\tFAILED\t\t\t\t\t\t\t\n", r.name, c.acks(), c.partitions)
				continue
			}
			mb, rs := rate(c.prod.bytes, c.prod.records, c.prod.elapsed)
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.0f\t%s\t%s\t%.2f\t%s\t%s\t\n",
				r.name, c.acks(), c.partitions, mb, rs, fmtMS(c.p50), fmtMS(c.p99), c.prod.brokerCPU.Seconds(),
				fmtMS(c.pp50), fmtMS(c.pp99))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "CONSUME (fresh consumer from offset 0, reading what the saturated run produced)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "broker\tacks\tparts\tMB/s\trecords/s\tbroker CPU s\t")
	for _, r := range results {
		for _, c := range r.cases {
			if c.err != nil || c.cons.records == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%d\tFAILED\t\t\t\n", r.name, c.acks(), c.partitions)
				continue
			}
			mb, rs := rate(c.cons.bytes, c.cons.records, c.cons.elapsed)
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.0f\t%.2f\t\n", r.name, c.acks(), c.partitions, mb, rs, c.cons.brokerCPU.Seconds())
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func printBrokerNotes(w io.Writer, results []brokerResult) {
	for _, r := range results {
		name := r.name
		if r.version != "" {
			name += " " + r.version
		}
		if r.err != nil && len(r.cases) == 0 {
			fmt.Fprintf(w, "%s: NOT MEASURED: %v\n", name, r.err)
			continue
		}
		fmt.Fprintf(w, "%s: ready in %.1fs, RSS idle %s, peak RSS (VmHWM) %s\n",
			name, r.startup.Seconds(), fmtMiB(r.idleRSS), fmtMiB(r.peakRSS))
		if r.err != nil {
			fmt.Fprintf(w, "%s: stopped early: %v\n", name, r.err)
		}
		for _, c := range r.cases {
			if c.err != nil {
				fmt.Fprintf(w, "%s acks=%s partitions=%d: %v\n", name, c.acks(), c.partitions, c.err)
			}
		}
		if r.stopNote != "" {
			fmt.Fprintf(w, "%s: %s\n", name, r.stopNote)
		}
	}
	fmt.Fprintln(w)
}

// sendfileComparison runs samsa once per fetch path, produces one 8-partition
// topic, and reads it cfg.passes times with fresh consumers.
func sendfileComparison(ctx context.Context, cfg config, w io.Writer) error {
	bin := filepath.Join(cfg.tmp, "bin", "samsa")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("samsa binary not built: %w", err)
	}
	type row struct {
		mode     string
		mbps     []float64
		cpuPerGB []float64
	}
	var rows []row
	for _, mode := range []string{"true", "false"} {
		r := row{mode: mode}
		err := func() error {
			dir := filepath.Join(cfg.tmp, "samsa-sendfile-"+mode)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			progress("samsa with samsa.fetch.sendfile=%s", mode)
			b, err := startSamsa(bin, dir, "samsa.fetch.sendfile="+mode)
			if err != nil {
				return err
			}
			defer b.stop(30 * time.Second)
			if err := b.waitReady(ctx, 90*time.Second); err != nil {
				return err
			}
			const topic = "bench-fetch"
			if err := createTopic(ctx, b.addr, topic, 8); err != nil {
				return err
			}
			timeout := phaseTimeout(cfg)
			p, err := produce(ctx, b, topic, 8, cfg.records, cfg.payload, false, pacing{}, timeout)
			if err != nil {
				return fmt.Errorf("produce: %w", err)
			}
			for i := range cfg.passes {
				progress("samsa sendfile=%s: read %d/%d", mode, i+1, cfg.passes)
				c, err := consume(ctx, b, topic, p.perPart, cfg.payload, timeout)
				if err != nil {
					return fmt.Errorf("consume pass %d: %w", i+1, err)
				}
				mb, _ := rate(c.bytes, c.records, c.elapsed)
				r.mbps = append(r.mbps, mb)
				r.cpuPerGB = append(r.cpuPerGB, c.brokerCPU.Seconds()/(float64(c.bytes)/1e9))
			}
			return nil
		}()
		if err != nil {
			return fmt.Errorf("samsa.fetch.sendfile=%s: %w", mode, err)
		}
		rows = append(rows, r)
	}
	fmt.Fprintf(w, "samsa consume, fetch path (8 partitions, %d x %d B, %d reads each, fresh consumer per read):\n",
		cfg.records, cfg.size, cfg.passes)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "samsa.fetch.sendfile\tbest MB/s\tmedian MB/s\tbroker CPU s/GB (median)\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.2f\t\n", r.mode, slices.Max(r.mbps), median(r.mbps), median(r.cpuPerGB))
	}
	tw.Flush()
	return nil
}

// pacedRecords is the size of each case's paced latency run: about four
// seconds at -rate, at most a tenth of -records, at least 1000 records.
func pacedRecords(cfg config) int {
	return max(1000, min(cfg.records/10, int(cfg.rate*4)))
}

const warmUpReads = 3

// warmUp is an unmeasured run so that neither broker is measured cold: the
// JVM compiles its hot paths only after many calls (a 200k-record case
// measured first ran at half speed and twice the CPU without it), and both
// brokers fill their buffers and page cache. It produces half of -records
// with acks=1 and a quarter with acks=all (the idempotent path) to an
// 8-partition topic and reads it back warmUpReads times.
func warmUp(ctx context.Context, cfg config, b *brokerProc, timeout time.Duration) error {
	const topic = "bench-warmup"
	n1 := max(1000, cfg.records/2)
	n2 := max(1000, cfg.records/4)
	progress("%s: warm-up, %d + %d records", b.name, n1, n2)
	if err := createTopic(ctx, b.addr, topic, 8); err != nil {
		return err
	}
	p1, err := produce(ctx, b, topic, 8, n1, cfg.payload, false, pacing{}, timeout)
	if err != nil {
		return fmt.Errorf("produce acks=1: %w", err)
	}
	p2, err := produce(ctx, b, topic, 8, n2, cfg.payload, true, pacing{}, timeout)
	if err != nil {
		return fmt.Errorf("produce acks=all: %w", err)
	}
	want := make([]int64, 8)
	for i := range want {
		want[i] = p1.perPart[i] + p2.perPart[i]
	}
	for range warmUpReads {
		if _, err := consume(ctx, b, topic, want, cfg.payload, timeout); err != nil {
			return fmt.Errorf("consume: %w", err)
		}
	}
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

var benchStart = time.Now()

// progress reports what bench is doing, on stderr, with the seconds since start.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "# %6.2fs %s\n", time.Since(benchStart).Seconds(), fmt.Sprintf(format, args...))
}

// moduleRoot finds the directory of the samsa module's go.mod at or above
// the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/samsa-io/samsa") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run bench inside the samsa module (no go.mod of github.com/samsa-io/samsa above the working directory)")
		}
		dir = parent
	}
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

func kgoVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				return "franz-go " + d.Version
			}
		}
	}
	return "franz-go"
}
