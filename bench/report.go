package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// figKey names one measured run across rounds.
type figKey struct {
	section  string // produce, consume, latency, fanin, txn
	caseName string
	client   string
}

type brokerRounds struct {
	firstAck []float64 // seconds
	peakRSS  []float64 // bytes
	errs     []string
}

// results collects every round of both brokers.
type results struct {
	samsaVersion, kafkaVersion string
	kafkaErr                   error
	limits                     machineLimits
	limitsErr                  error
	loadStart, loadEnd         string
	total                      time.Duration

	keys     []figKey
	runs     map[string]map[figKey][]runResult // broker → key → one per round
	fails    map[string]map[figKey][]string
	rounds   map[string]*brokerRounds
	rates    map[string]float64 // client → the latency case's records/s, fixed once
	rateNote map[string]string
}

func newResults() *results {
	return &results{
		runs:     map[string]map[figKey][]runResult{"samsa": {}, "kafka": {}},
		fails:    map[string]map[figKey][]string{"samsa": {}, "kafka": {}},
		rounds:   map[string]*brokerRounds{"samsa": {}, "kafka": {}},
		rates:    map[string]float64{},
		rateNote: map[string]string{},
	}
}

func (r *results) addKey(k figKey) {
	for _, have := range r.keys {
		if have == k {
			return
		}
	}
	r.keys = append(r.keys, k)
}

func (r *results) add(broker string, k figKey, run runResult, err error) {
	r.addKey(k)
	if err != nil {
		msg := strings.SplitN(err.Error(), "\n", 2)[0]
		r.fails[broker][k] = append(r.fails[broker][k], msg)
		return
	}
	r.runs[broker][k] = append(r.runs[broker][k], run)
}

func (r *results) roundFailed(broker string, err error) {
	r.rounds[broker].errs = append(r.rounds[broker].errs, strings.SplitN(err.Error(), "\n", 2)[0])
}

func (r *results) roundDone(broker string, firstAck time.Duration, peakRSS int64) {
	br := r.rounds[broker]
	br.firstAck = append(br.firstAck, firstAck.Seconds())
	if peakRSS > 0 {
		br.peakRSS = append(br.peakRSS, float64(peakRSS))
	}
}

// latencyRate is the rate of the paced latency case for client: half of the
// records/s Kafka's first round reached in case c with the same client, or,
// when Kafka has not been measured, half of samsa's. Fixed once chosen.
func (r *results) latencyRate(client string, c prodCase) (float64, string) {
	if v, ok := r.rates[client]; ok {
		return v, r.rateNote[client]
	}
	k := figKey{"produce", c.String(), client}
	for _, b := range []string{"kafka", "samsa"} {
		if runs := r.runs[b][k]; len(runs) > 0 && runs[0].rps > 0 {
			v := math.Round(runs[0].rps / 2)
			r.rates[client] = v
			note := fmt.Sprintf("half of Kafka's first-round %.0f rec/s", runs[0].rps)
			if b == "samsa" {
				note = fmt.Sprintf("half of samsa's first-round %.0f rec/s (Kafka not measured)", runs[0].rps)
			}
			r.rateNote[client] = note
			return v, note
		}
	}
	return 0, ""
}

func (r *results) samsaFailed() bool {
	if len(r.rounds["samsa"].errs) > 0 {
		return true
	}
	for k, f := range r.fails["samsa"] {
		// Kafka's ConsumerPerformance needs consumer groups, which samsa
		// may not serve yet: reported, not a bench failure.
		if len(f) > 0 && !(k.section == "consume" && k.client == clientJava) {
			return true
		}
	}
	return false
}

// agg is the medians of one key's runs on one broker.
type agg struct {
	n                                    int
	mbps, rps, p50, p99, p999, cpu, ccpu float64
	cps                                  float64 // broker CPU s per s
	hasLat                               bool
}

func aggregate(runs []runResult) agg {
	a := agg{n: len(runs)}
	if a.n == 0 {
		return a
	}
	pick := func(f func(runResult) float64) float64 {
		xs := make([]float64, len(runs))
		for i, x := range runs {
			xs[i] = f(x)
		}
		return median(xs)
	}
	a.mbps = pick(func(x runResult) float64 { return x.mbps })
	a.rps = pick(func(x runResult) float64 { return x.rps })
	a.cpu = pick(func(x runResult) float64 { return x.cpuPerGB })
	a.ccpu = pick(func(x runResult) float64 { return x.clientCPUPerGB })
	a.cps = pick(func(x runResult) float64 { return x.cpuPerSec })
	a.hasLat = runs[0].hasLat
	if a.hasLat {
		a.p50 = pick(func(x runResult) float64 { return x.p50 })
		a.p99 = pick(func(x runResult) float64 { return x.p99 })
		a.p999 = pick(func(x runResult) float64 { return x.p999 })
	}
	return a
}

// ratio is a/b, NaN when either is missing.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

func fmtNum(v float64, prec int) string {
	if math.IsNaN(v) || v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

func fmtRatio(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v < 0.1:
		return fmt.Sprintf("%.3fx", v)
	}
	return fmt.Sprintf("%.2fx", v)
}

func fmtBytes(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%d B", b)
}

func (r *results) print(w io.Writer, p plan) {
	kv := r.kafkaVersion
	if kv == "" {
		kv = "not run"
	}
	fmt.Fprintf(w, "\nsamsa %s vs Apache Kafka %s: %d round(s) each, alternating, medians; %s; %d B records, no compression;\n",
		r.samsaVersion, kv, p.rounds, machineNote(), p.size)
	fmt.Fprintf(w, "produce cases %s each with kgo, %s with java, the fill case %s; load average %s at start, %s at end; %.0fs in all.\n",
		fmtBytes(p.produceBytes), fmtBytes(p.javaBytes), fmtBytes(p.consumeBytes), r.loadStart, r.loadEnd, r.total.Seconds())
	fmt.Fprintln(w, "MB = 10^6 B of record values. Latency: per record, client send call to acknowledgement, ms (the Java tool")
	fmt.Fprintln(w, "reports whole ms). CPU s/GB: broker user+system CPU seconds (/proc) per 10^9 B moved; client CPU s/GB: the load")
	fmt.Fprintln(w, "generator's own (a JVM's start and JIT included), on the same 2 cores: the two add up to what the machine has.")
	fmt.Fprintln(w, "kgo = cmd/samsa-bench (franz-go, kgo defaults); java = Kafka's ProducerPerformance/ConsumerPerformance (defaults;")
	fmt.Fprintln(w, "its linger.ms default is already 5 ms, so its 'linger 5ms' cases are its 'default' ones).")
	fmt.Fprintf(w, "fanin (kgo only, %.0fs): one direct consumer of all %d partitions, %d B records produced to one of them; its latency\n", p.faninSeconds, faninParts, faninSize)
	fmt.Fprintln(w, "is produce call to consumer; CPU s/s: broker CPU seconds per second while the measured records flow (read by")
	fmt.Fprintln(w, "samsa-bench from /proc once the consumer has its first record, and again when it has the last), i.e. cores busy.")
	fmt.Fprintf(w, "txn (kgo only): one transactional producer, transactions of %d records committed one after another (acks=all), its\n", txnBatch)
	fmt.Fprintln(w, "latency that of a transaction (begin to commit); then a read_committed consumer of the same records.")
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tclient\tbroker\tMB/s\trecords/s\tp50 ms\tp99 ms\tp99.9 ms\tCPU s/GB\tCPU s/s\tclient CPU s/GB\tstart→ack s\tpeak RSS MiB\t")
	for _, k := range r.keys {
		s, kf := aggregate(r.runs["samsa"][k]), aggregate(r.runs["kafka"][k])
		label := k.section + " " + k.caseName
		for i, row := range []struct {
			name string
			a    agg
		}{{"samsa", s}, {"kafka", kf}} {
			first := ""
			if i == 0 {
				first = label
			}
			if row.a.n == 0 {
				note := "-"
				if f := r.fails[row.name][k]; len(f) > 0 {
					note = "FAILED"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\t\t\t\t\t\t\t\t\t\n", first, k.client, row.name, note)
				continue
			}
			lat := []string{"", "", ""}
			if row.a.hasLat {
				lat = []string{fmtNum(row.a.p50, 1), fmtNum(row.a.p99, 1), fmtNum(row.a.p999, 1)}
			}
			cps := ""
			if k.section == "fanin" {
				cps = fmtNum(row.a.cps, 3)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t\t\n", first, k.client, row.name,
				fmtNum(row.a.mbps, 1), fmtNum(row.a.rps, 0), lat[0], lat[1], lat[2], fmtNum(row.a.cpu, 2), cps, fmtNum(row.a.ccpu, 2))
		}
		lat := []string{"", "", ""}
		if s.hasLat && kf.hasLat {
			lat = []string{fmtRatio(ratio(s.p50, kf.p50)), fmtRatio(ratio(s.p99, kf.p99)), fmtRatio(ratio(s.p999, kf.p999))}
		}
		cps := ""
		if k.section == "fanin" {
			cps = fmtRatio(ratio(s.cps, kf.cps))
		}
		fmt.Fprintf(tw, "\t\tsamsa/kafka\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t\t\n",
			fmtRatio(ratio(s.mbps, kf.mbps)), fmtRatio(ratio(s.rps, kf.rps)), lat[0], lat[1], lat[2], fmtRatio(ratio(s.cpu, kf.cpu)), cps, fmtRatio(ratio(s.ccpu, kf.ccpu)))
	}
	sa, ka := median(r.rounds["samsa"].firstAck), median(r.rounds["kafka"].firstAck)
	sr, kr := median(r.rounds["samsa"].peakRSS)/(1<<20), median(r.rounds["kafka"].peakRSS)/(1<<20)
	fmt.Fprintf(tw, "whole round\t\tsamsa\t\t\t\t\t\t\t\t\t%s\t%s\t\n", fmtNum(sa, 3), fmtNum(sr, 0))
	fmt.Fprintf(tw, "\t\tkafka\t\t\t\t\t\t\t\t\t%s\t%s\t\n", fmtNum(ka, 3), fmtNum(kr, 0))
	fmt.Fprintf(tw, "\t\tsamsa/kafka\t\t\t\t\t\t\t\t\t%s\t%s\t\n", fmtRatio(ratio(sa, ka)), fmtRatio(ratio(sr, kr)))
	if r.limitsErr != nil {
		fmt.Fprintf(tw, "machine limits\t\t\tFAILED\t\t\t\t\t\t\t\t\t\t\n")
	} else {
		fmt.Fprintf(tw, "machine: loopback TCP, 1 stream from memory\t\t\t%s\t\t\t\t\t\t\t\t\t\t\n", fmtNum(r.limits.loopbackMBps, 0))
		fmt.Fprintf(tw, "machine: sendfile from a cached file, 1 stream\t\t\t%s\t\t\t\t\t\t\t\t\t\t\n", fmtNum(r.limits.sendfileMBps, 0))
	}
	tw.Flush()

	fmt.Fprintln(w)
	for _, c := range clients {
		if n := r.rateNote[c]; n != "" {
			fmt.Fprintf(w, "latency case rate for %s: %s\n", c, n)
		}
	}
	for _, line := range r.targets() {
		fmt.Fprintln(w, line)
	}
	r.printFailures(w)
}

// targets checks issue 6's goals against the medians.
func (r *results) targets() []string {
	var out []string
	worst := func(section, metric string, get func(agg) float64, lowerBetter bool) (float64, string, int) {
		w, wk, n := math.NaN(), "", 0
		for _, k := range r.keys {
			if k.section != section {
				continue
			}
			v := ratio(get(aggregate(r.runs["samsa"][k])), get(aggregate(r.runs["kafka"][k])))
			if math.IsNaN(v) {
				continue
			}
			n++
			if math.IsNaN(w) || (!lowerBetter && v < w) || (lowerBetter && v > w) {
				w, wk = v, k.caseName+" "+k.client
			}
		}
		return w, wk, n
	}
	check := func(name string, v float64, ok bool, where string, n int) {
		if math.IsNaN(v) {
			out = append(out, fmt.Sprintf("target %-38s not measured", name))
			return
		}
		mark := "met"
		if !ok {
			mark = "MISSED"
		}
		out = append(out, fmt.Sprintf("target %-38s %s: worst %.2fx of %d (%s)", name, mark, v, n, where))
	}
	v, k, n := worst("produce", "MB/s", func(a agg) float64 { return a.mbps }, false)
	check("produce MB/s >= 1.5x Kafka", v, v >= 1.5, k, n)
	v, k, n = worst("consume", "MB/s", func(a agg) float64 { return a.mbps }, false)
	check("consume MB/s >= 1.5x Kafka", v, v >= 1.5, k, n)
	v, k, n = worst("latency", "p99", func(a agg) float64 { return a.p99 }, true)
	check("latency case p99 <= 0.5x Kafka", v, v <= 0.5, k, n)
	sr, kr := median(r.rounds["samsa"].peakRSS), median(r.rounds["kafka"].peakRSS)
	v = ratio(sr, kr)
	check("peak RSS <= 0.2x Kafka", v, v <= 0.2, "per round", 1)
	if sa := r.rounds["samsa"].firstAck; len(sa) > 0 {
		m := median(sa)
		mark := "met"
		if m >= 0.2 {
			mark = "MISSED"
		}
		out = append(out, fmt.Sprintf("target %-38s %s: median %.3fs", "start to first ack < 0.2s", mark, m))
	}
	return out
}

func (r *results) printFailures(w io.Writer) {
	if r.kafkaErr != nil {
		fmt.Fprintf(w, "kafka: NOT MEASURED: %v\n", r.kafkaErr)
	}
	if r.limitsErr != nil {
		fmt.Fprintf(w, "machine limits: %v\n", r.limitsErr)
	}
	for _, b := range []string{"samsa", "kafka"} {
		for _, e := range r.rounds[b].errs {
			fmt.Fprintf(w, "%s round FAILED: %s\n", b, e)
		}
		for _, k := range r.keys {
			for _, f := range r.fails[b][k] {
				fmt.Fprintf(w, "%s %s %s %s FAILED: %s\n", b, k.section, k.caseName, k.client, f)
			}
		}
	}
}
