package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// runResult is one load run as its client reported it. MB are 10^6 bytes of
// record values; latencies (produce only) are per record, from the client's
// send call to the acknowledgement, in ms; for fanin, from the send call to
// the consumer receiving the record.
type runResult struct {
	records        int64
	bytes          int64
	seconds        float64
	mbps, rps      float64
	hasLat         bool
	p50, p99, p999 float64
	cpuPerGB       float64 // broker CPU seconds per 10^9 bytes moved, set by the caller
	cpuPerSec      float64 // fanin: broker CPU seconds per second of the measured records, as samsa-bench read them
	clientCPUPerGB float64 // the load generator's own CPU seconds per 10^9 bytes (a JVM's start included)
}

// javaToolOpts are the JVM settings of kafka-producer-perf-test.sh and
// kafka-consumer-perf-test.sh (KAFKA_HEAP_OPTS=-Xmx512M, kafka-run-class's GC).
var javaToolOpts = append([]string{"-Xmx512m"}, kafkaref.JVMOpts...)

// loadSpec is one produce or consume run.
type loadSpec struct {
	client        string
	produce       bool
	fanin         bool  // samsa-bench fanin: rate and size apply, acks and linger do not
	pid           int   // fanin: the broker's process, whose CPU samsa-bench reads
	minBytes      int32 // fanin: the consumer's fetch.min.bytes
	addr          string
	topic         string
	records       int64
	size          int
	acks          string
	linger        string  // "default" or a duration
	rate          float64 // records/s, 0 for unpaced
	txn           int64   // produce: records per transaction (kgo only), 0 for none
	readCommitted bool    // consume at read_committed (kgo only)
	compression   string  // produce (kgo): the batch codec, "" for none
	clients       int     // produce (kgo): producers sharing the records, 0 for one
	roundRobin    bool    // produce (kgo): every partition in turn
	cpus          string  // run the client under taskset(1) on these CPUs
	tls           bool    // addr is the SSL listener: the client trusts tools.tls's CA
	raw           bool    // kgo only: samsa-bench -raw, requests encoded once (one broker)
}

// tools are the load generators' locations.
type tools struct {
	samsaBench string // the cmd/samsa-bench binary
	libs       string // Kafka's jars; "" when Kafka cannot run
	tls        *tlsSetup
}

func (s loadSpec) String() string {
	op := "consume"
	switch {
	case s.fanin:
		op = "fanin"
	case s.produce:
		op = "produce"
	}
	return s.client + " " + op
}

func (t tools) command(ctx context.Context, s loadSpec) (*exec.Cmd, error) {
	switch s.client {
	case clientKgo:
		args := []string{"consume"}
		switch {
		case s.fanin:
			args = []string{"fanin", "-rate", strconv.FormatFloat(s.rate, 'f', -1, 64), "-broker-pid", strconv.Itoa(s.pid),
				"-fetch-min-bytes", strconv.Itoa(int(s.minBytes))}
		case s.produce:
			args = []string{"produce", "-acks", s.acks, "-linger", s.linger, "-rate", strconv.FormatFloat(s.rate, 'f', -1, 64)}
			if s.txn > 0 {
				args = append(args, "-txn-records", strconv.FormatInt(s.txn, 10))
			}
			if s.compression != "" {
				args = append(args, "-compression", s.compression)
			}
			if s.clients > 1 {
				args = append(args, "-clients", strconv.Itoa(s.clients))
			}
			if s.roundRobin {
				args = append(args, "-round-robin")
			}
		case s.readCommitted:
			args = append(args, "-read-committed")
		}
		args = append(args, "-brokers", s.addr, "-topic", s.topic, "-records", strconv.FormatInt(s.records, 10),
			"-size", strconv.Itoa(s.size), "-json")
		if s.tls {
			args = append(args, "-tls-ca", t.tls.caFile)
		}
		if s.raw {
			args = append(args, "-raw")
		}
		return exec.CommandContext(ctx, t.samsaBench, args...), nil
	case clientJava:
		if s.fanin {
			return nil, errors.New("the Java tools have no fanin run")
		}
		if t.libs == "" {
			return nil, errors.New("no Kafka jars for the Java tools")
		}
		if s.produce {
			throughput := "-1"
			if s.rate > 0 {
				throughput = strconv.FormatFloat(s.rate, 'f', 0, 64)
			}
			props := []string{"acks=" + s.acks}
			if s.linger != "default" {
				d, err := time.ParseDuration(s.linger)
				if err != nil {
					return nil, err
				}
				props = append(props, "linger.ms="+strconv.FormatInt(d.Milliseconds(), 10))
			}
			args := []string{"--bootstrap-server", s.addr, "--topic", s.topic,
				"--num-records", strconv.FormatInt(s.records, 10), "--record-size", strconv.Itoa(s.size),
				"--throughput", throughput}
			if s.tls {
				args = append(args, "--command-config", t.tls.javaConf)
			}
			args = append(args, "--command-property")
			return kafkaref.Java(ctx, t.libs, javaToolOpts, "org.apache.kafka.tools.ProducerPerformance", append(args, props...)...), nil
		}
		args := []string{"--bootstrap-server", s.addr, "--topic", s.topic, "--num-records", strconv.FormatInt(s.records, 10),
			"--timeout", "20000"}
		if s.tls {
			args = append(args, "--command-config", t.tls.javaConf)
		}
		return kafkaref.Java(ctx, t.libs, javaToolOpts, "org.apache.kafka.tools.ConsumerPerformance", args...), nil
	}
	return nil, fmt.Errorf("unknown client %q", s.client)
}

// runLoad runs s to completion and parses what the client reported.
func (t tools) runLoad(ctx context.Context, s loadSpec, timeout time.Duration) (runResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, err := t.command(ctx, s)
	if err != nil {
		return runResult{}, err
	}
	if s.cpus != "" {
		cmd = exec.CommandContext(ctx, "taskset", append([]string{"-c", s.cpus, cmd.Path}, cmd.Args[1:]...)...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (timeout %v)", err, timeout)
		}
		return runResult{}, fmt.Errorf("%s: %w\n%s", s, err, kafkaref.Tail(append(stdout.Bytes(), stderr.Bytes()...), 15))
	}
	var r runResult
	switch {
	case s.client == clientKgo:
		r, err = parseKgo(stdout.Bytes())
	case s.produce:
		r, err = parseProducerPerf(stdout.String(), s.size)
	default:
		r, err = parseConsumerPerf(stdout.String())
	}
	if err != nil {
		return r, fmt.Errorf("%w\n%s", err, kafkaref.Tail(append(stdout.Bytes(), stderr.Bytes()...), 15))
	}
	if st := cmd.ProcessState; st != nil && r.bytes > 0 {
		r.clientCPUPerGB = (st.UserTime() + st.SystemTime()).Seconds() / (float64(r.bytes) / 1e9)
	}
	if r.records < s.records {
		return r, fmt.Errorf("%d records reported, want %d\n%s", r.records, s.records, kafkaref.Tail(append(stdout.Bytes(), stderr.Bytes()...), 15))
	}
	return r, nil
}

// parseKgo reads samsa-bench's -json line.
func parseKgo(out []byte) (runResult, error) {
	var v struct {
		Records int64   `json:"records"`
		Bytes   int64   `json:"bytes"`
		Seconds float64 `json:"seconds"`
		MBps    float64 `json:"mb_per_s"`
		RPS     float64 `json:"records_per_s"`
		P50     float64 `json:"p50_ms"`
		P99     float64 `json:"p99_ms"`
		P999    float64 `json:"p999_ms"`
		Op      string  `json:"op"`
		CPU     float64 `json:"broker_cpu_s"`
	}
	line := lastLine(string(out))
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		return runResult{}, fmt.Errorf("samsa-bench output %q: %w", line, err)
	}
	r := runResult{records: v.Records, bytes: v.Bytes, seconds: v.Seconds, mbps: v.MBps, rps: v.RPS,
		hasLat: v.Op == "produce" || v.Op == "fanin", p50: v.P50, p99: v.P99, p999: v.P999}
	if v.Op == "fanin" && v.Seconds > 0 {
		r.cpuPerSec = v.CPU / v.Seconds
	}
	return r, nil
}

// producerPerfFinal matches ProducerPerformance's closing line, e.g.
// "100000 records sent, 22552.999549 records/sec (22.02 MB/sec), 964.33 ms avg
// latency, 1608.00 ms max latency, 891 ms 50th, 1506 ms 95th, 1589 ms 99th,
// 1600 ms 99.9th."
var producerPerfFinal = regexp.MustCompile(`(\d+) records sent, ([\d.]+) records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, [\d.]+ ms max latency, (\d+) ms 50th, \d+ ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th`)

// parseProducerPerf reads ProducerPerformance's output. Its MB are MiB, so
// throughput is recomputed from records/s and the record size.
func parseProducerPerf(out string, size int) (runResult, error) {
	m := producerPerfFinal.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return runResult{}, errors.New("no closing line in ProducerPerformance output")
	}
	f := m[len(m)-1]
	n, _ := strconv.ParseInt(f[1], 10, 64)
	rps, _ := strconv.ParseFloat(f[2], 64)
	p50, _ := strconv.ParseFloat(f[3], 64)
	p99, _ := strconv.ParseFloat(f[4], 64)
	p999, _ := strconv.ParseFloat(f[5], 64)
	if rps <= 0 {
		return runResult{}, fmt.Errorf("ProducerPerformance reports %v records/s", rps)
	}
	return runResult{records: n, bytes: n * int64(size), seconds: float64(n) / rps,
		mbps: rps * float64(size) / 1e6, rps: rps, hasLat: true, p50: p50, p99: p99, p999: p999}, nil
}

// parseConsumerPerf reads ConsumerPerformance's CSV line: start.time,
// end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
// rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec. The fetch
// figures leave out the group join; MB are MiB.
func parseConsumerPerf(out string) (runResult, error) {
	var fs []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Split(line, ","); len(f) == 10 && !strings.HasPrefix(line, "start.time") {
			fs = f
		}
	}
	if fs == nil {
		return runResult{}, errors.New("no result line in ConsumerPerformance output")
	}
	num := func(i int) float64 {
		v, err := strconv.ParseFloat(strings.TrimSpace(fs[i]), 64)
		if err != nil {
			return -1
		}
		return v
	}
	mib, n, fetchMS, fetchMiBps, fetchRPS := num(2), num(4), num(7), num(8), num(9)
	if mib < 0 || n < 0 || fetchMS <= 0 || fetchMiBps < 0 || fetchRPS < 0 {
		return runResult{}, fmt.Errorf("malformed ConsumerPerformance result %q", strings.Join(fs, ","))
	}
	return runResult{records: int64(n), bytes: int64(mib * (1 << 20)), seconds: fetchMS / 1000,
		mbps: fetchMiBps * (1 << 20) / 1e6, rps: fetchRPS}, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
