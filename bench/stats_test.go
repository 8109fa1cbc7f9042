package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	in := []float64{3, 1, 2}
	median(in)
	if !slices.Equal(in, []float64{3, 1, 2}) {
		t.Error("median reordered its argument")
	}
}

func TestParseProducerPerf(t *testing.T) {
	out := `Option --producer-props has been deprecated.
50000 records sent, 10000.0 records/sec (9.77 MB/sec), 12.0 ms avg latency, 200.0 ms max latency.
100000 records sent, 22552.999549 records/sec (22.02 MB/sec), 964.33 ms avg latency, 1608.00 ms max latency, 891 ms 50th, 1506 ms 95th, 1589 ms 99th, 1600 ms 99.9th.
`
	r, err := parseProducerPerf(out, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if r.records != 100000 || r.bytes != 100000*1024 || !r.hasLat || r.p50 != 891 || r.p99 != 1589 || r.p999 != 1600 {
		t.Errorf("parsed %+v", r)
	}
	if math.Abs(r.rps-22552.999549) > 1e-6 || math.Abs(r.mbps-22552.999549*1024/1e6) > 1e-9 {
		t.Errorf("rates %v rec/s %v MB/s", r.rps, r.mbps)
	}
	if _, err := parseProducerPerf("50000 records sent, 10000.0 records/sec (9.77 MB/sec), 12.0 ms avg latency, 200.0 ms max latency.\n", 1024); err == nil {
		t.Error("an interim line alone was taken for the result")
	}
}

func TestParseConsumerPerf(t *testing.T) {
	out := `start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-11-29 11:19:05:123, 2026-11-29 11:19:15:123, 1000.0000, 100.0000, 1024000, 102400.0000, 3000, 7000, 142.8571, 146285.7143
`
	r, err := parseConsumerPerf(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.records != 1024000 || r.bytes != 1000<<20 || r.seconds != 7 || r.hasLat {
		t.Errorf("parsed %+v", r)
	}
	if math.Abs(r.mbps-142.8571*(1<<20)/1e6) > 1e-9 || r.rps != 146285.7143 {
		t.Errorf("rates %v MB/s %v rec/s", r.mbps, r.rps)
	}
	for _, bad := range []string{"", "start.time, end.time\n", "a, b, x, 1, 2, 3, 4, 0, 1, 1\n"} {
		if _, err := parseConsumerPerf(bad); err == nil {
			t.Errorf("parseConsumerPerf(%q) accepted it", bad)
		}
	}
}

func TestParseKgo(t *testing.T) {
	r, err := parseKgo([]byte("noise\n" + `{"op":"produce","records":10,"bytes":10240,"seconds":0.5,"mb_per_s":0.02,"records_per_s":20,"p50_ms":1.5,"p99_ms":3,"p999_ms":4}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r.records != 10 || !r.hasLat || r.p99 != 3 || r.rps != 20 {
		t.Errorf("parsed %+v", r)
	}
	if r, err := parseKgo([]byte(`{"op":"consume","records":10,"bytes":10240,"seconds":1}`)); err != nil || r.hasLat {
		t.Errorf("consume: %+v, %v", r, err)
	}
	if _, err := parseKgo([]byte("samsa-bench produce: connection refused\n")); err == nil {
		t.Error("a failure message was parsed")
	}
}

func TestPlan(t *testing.T) {
	full := makePlan(false, 0)
	if full.rounds != 3 || len(full.cases) != 8 || full.consumeBytes != 5<<30 {
		t.Errorf("full plan: %d rounds, %d cases, consume %d", full.rounds, len(full.cases), full.consumeBytes)
	}
	if !slices.Contains(full.cases, fillCase) || !slices.Contains(full.cases, latencyCase) {
		t.Error("full plan lacks the fill or the latency case")
	}
	quick := makePlan(true, 0)
	if quick.rounds != 1 || !slices.Contains(quick.cases, fillCase) || !slices.Contains(quick.cases, latencyCase) {
		t.Errorf("quick plan: %+v", quick)
	}
	if makePlan(true, 2).rounds != 2 {
		t.Error("-rounds does not override")
	}
	if full.recordsFor(1<<30) != 1<<20 || full.bytesOf(fillCase, clientKgo) != 5<<30 || full.bytesOf(latencyCase, clientKgo) != 1<<30 ||
		full.bytesOf(latencyCase, clientJava) != 256<<20 {
		t.Error("record counts")
	}
	if (prodCase{"1", 1, "5ms"}).runsOn(clientJava) || !(prodCase{"1", 1, "5ms"}).runsOn(clientKgo) {
		t.Error("Java's linger 5ms repeats its default and is skipped; kgo's is not")
	}
	if got := brokerOrder(2, true, true); !slices.Equal(got, []string{"kafka", "samsa", "kafka", "samsa"}) {
		t.Errorf("order %v", got)
	}
	if got := brokerOrder(2, true, false); !slices.Equal(got, []string{"samsa", "samsa"}) {
		t.Errorf("order without kafka %v", got)
	}
	if timeoutFor(5<<30) < 30*time.Minute/2 {
		t.Error("a 5 GiB run gets less than 15 minutes")
	}
}

func TestLatencyRateFromKafkasFirstRound(t *testing.T) {
	r := newResults()
	if v, _ := r.latencyRate(clientKgo, latencyCase); v != 0 {
		t.Errorf("rate with nothing measured = %v", v)
	}
	k := figKey{"produce", latencyCase.String(), clientKgo}
	r.add("samsa", k, runResult{rps: 9000}, nil)
	r.add("kafka", k, runResult{rps: 4000}, nil)
	r.add("kafka", k, runResult{rps: 8000}, nil)
	v, note := r.latencyRate(clientKgo, latencyCase)
	if v != 2000 || !strings.Contains(note, "Kafka") {
		t.Errorf("rate %v (%s), want half of Kafka's first round, 2000", v, note)
	}
	r.add("kafka", k, runResult{rps: 1}, nil)
	if v, _ := r.latencyRate(clientKgo, latencyCase); v != 2000 {
		t.Error("the rate changed once chosen")
	}
	k2 := figKey{"produce", latencyCase.String(), clientJava}
	r.add("samsa", k2, runResult{rps: 300}, nil)
	if v, note := r.latencyRate(clientJava, latencyCase); v != 150 || !strings.Contains(note, "not measured") {
		t.Errorf("fallback rate %v (%s)", v, note)
	}
}

func TestReportTableAndTargets(t *testing.T) {
	r := newResults()
	pk := figKey{"produce", "acks=1 p=1 default", clientKgo}
	ck := figKey{"consume", "5 GiB from page cache, p=16", clientJava}
	lk := figKey{"latency", "acks=all p=1 default @ 1000 rec/s", clientKgo}
	for range 3 {
		r.add("samsa", pk, runResult{mbps: 300, rps: 292968, cpuPerGB: 2, hasLat: true, p50: 1, p99: 4, p999: 8}, nil)
		r.add("kafka", pk, runResult{mbps: 150, rps: 146484, cpuPerGB: 6, hasLat: true, p50: 2, p99: 10, p999: 20}, nil)
		r.add("samsa", lk, runResult{mbps: 1, rps: 1000, hasLat: true, p50: 0.5, p99: 2, p999: 3}, nil)
		r.add("kafka", lk, runResult{mbps: 1, rps: 1000, hasLat: true, p50: 1, p99: 3, p999: 5}, nil)
		r.roundDone("samsa", 150*time.Millisecond, 100<<20)
		r.roundDone("kafka", 3*time.Second, 1000<<20)
	}
	r.add("kafka", ck, runResult{mbps: 400, rps: 400000, cpuPerGB: 1}, nil)
	r.add("samsa", ck, runResult{}, errString("no consumer groups"))
	var sb strings.Builder
	r.print(&sb, makePlan(true, 0))
	out := sb.String()
	for _, want := range []string{"2.00x", "FAILED", "0.67x", "0.10x", "0.150", "100", "1000",
		"produce MB/s >= 1.5x Kafka             met: worst 2.00x",
		"latency case p99 <= 0.5x Kafka         MISSED: worst 0.67x",
		"peak RSS <= 0.2x Kafka                 met",
		"start to first ack < 0.2s              met",
		"consume MB/s >= 1.5x Kafka             not measured",
		"samsa consume 5 GiB from page cache, p=16 java FAILED: no consumer groups"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if r.samsaFailed() {
		t.Error("a Java consume failure on samsa counts as a samsa failure")
	}
	r.add("samsa", pk, runResult{}, errString("boom"))
	if !r.samsaFailed() {
		t.Error("a failed samsa produce does not count")
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestParseKgoFanin(t *testing.T) {
	r, err := parseKgo([]byte(`{"op":"fanin","partitions":1000,"broker_cpu_s":2.5,"records":5000,"bytes":500000,"seconds":5,"mb_per_s":0.1,"records_per_s":1000,"p50_ms":1.2,"p99_ms":8,"p999_ms":15}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r.records != 5000 || !r.hasLat || r.p50 != 1.2 || r.p999 != 15 || r.cpuPerSec != 0.5 {
		t.Errorf("parsed %+v", r)
	}
}

func TestPlanSections(t *testing.T) {
	p := makePlan(true, 0)
	for _, s := range sections {
		if !p.sections[s] {
			t.Errorf("default plan lacks section %s", s)
		}
	}
	if err := p.only("fanin"); err != nil || p.sections["produce"] || !p.sections["fanin"] {
		t.Errorf("only(fanin): %v, %v", err, p.sections)
	}
	if err := p.only("produce, latency"); err != nil || !p.sections["latency"] || p.sections["fanin"] {
		t.Errorf("only(produce, latency): %v, %v", err, p.sections)
	}
	for _, bad := range []string{"fetch", "consume", "latency,fanin", "produce,"} {
		q := makePlan(true, 0)
		if err := q.only(bad); err == nil {
			t.Errorf("only(%q) accepted", bad)
		}
	}
	if makePlan(false, 0).faninSeconds <= p.faninSeconds {
		t.Error("the quick fanin is not shorter")
	}
}

func TestReportFanin(t *testing.T) {
	r := newResults()
	k := figKey{"fanin", faninCaseName(1), clientKgo}
	r.add("samsa", k, runResult{mbps: 0.1, rps: 1000, hasLat: true, p50: 1, p99: 4, p999: 8, cpuPerGB: 300, cpuPerSec: 0.05}, nil)
	r.add("kafka", k, runResult{mbps: 0.1, rps: 1000, hasLat: true, p50: 2, p99: 8, p999: 20, cpuPerGB: 600, cpuPerSec: 0.2}, nil)
	var sb strings.Builder
	r.print(&sb, makePlan(true, 0))
	out := sb.String()
	var row, ratios string
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "fanin p=1000") {
			row, ratios = l, lines[i+2]
		}
	}
	if !strings.Contains(row, "0.050") || !strings.Contains(ratios, "0.25x") || !strings.Contains(ratios, "0.40x") {
		t.Errorf("fanin rows lack CPU s/s 0.050, its ratio 0.25x or the p99.9 ratio 0.40x:\n%s", out)
	}
	// CPU s/s is shown for fanin only.
	pk := figKey{"produce", "acks=1 p=1 default", clientKgo}
	r.add("samsa", pk, runResult{mbps: 300, rps: 1, cpuPerGB: 2, cpuPerSec: 0.777}, nil)
	sb.Reset()
	r.print(&sb, makePlan(true, 0))
	if strings.Contains(sb.String(), "0.777") {
		t.Error("CPU s/s shown for a produce case")
	}
}
