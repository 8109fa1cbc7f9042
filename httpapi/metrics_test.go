package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// startHTTPBroker starts a broker with its HTTP listener on a free
// loopback port, and returns it with a kgo client of it.
func startHTTPBroker(t *testing.T) (*testutil.Node, *kgo.Client) {
	t.Helper()
	n := testutil.StartBroker(t, map[string]string{"samsa.http.listener": "127.0.0.1:0"})
	if n.HTTPAddr() == "" {
		t.Fatal("samsa.http.listener set, but the broker serves no HTTP")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return n, cl
}

// scrape fetches /metrics and returns the text and the parsed families.
func scrape(t *testing.T, addr string) ([]byte, map[string]*dto.MetricFamily) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, body)
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return body, mfs
}

// value is the value of the series of family name whose labels include
// want (label=value pairs); histograms give their sample count. It fails
// the test unless exactly one series matches.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	v, err := lookup(mfs, name, want...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func lookup(mfs map[string]*dto.MetricFamily, name string, want ...string) (float64, error) {
	mf := mfs[name]
	if mf == nil {
		return 0, fmt.Errorf("no metric %s", name)
	}
	var found []float64
	for _, m := range mf.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for _, kv := range want {
			k, v, _ := strings.Cut(kv, "=")
			ok = ok && labels[k] == v
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			found = append(found, m.Counter.GetValue())
		case m.Gauge != nil:
			found = append(found, m.Gauge.GetValue())
		case m.Histogram != nil:
			found = append(found, float64(m.Histogram.GetSampleCount()))
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("%s%v: %d series, want 1", name, want, len(found))
	}
	return found[0], nil
}

// TestMetricsAfterTraffic produces, consumes and commits with franz-go,
// then scrapes /metrics and checks that the counters and gauges of that
// traffic moved, and that the exposition passes promtool check metrics
// (and client_golang's promlint, which promtool runs).
func TestMetricsAfterTraffic(t *testing.T) {
	n, cl := startHTTPBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	const topic = "metered"
	// flush.messages=1: every append is fsynced, so the flush histogram moves.
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"flush.messages": kadm.StringPtr("1")}, topic); err != nil {
		t.Fatal(err)
	}
	_, before := scrape(t, n.HTTPAddr())
	produceBefore := value(t, before, "kafka_network_requestmetrics_requests_total", "request=Produce", "version=13")

	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(fmt.Sprintf("value-%02d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Read them back on another client (its fetches count as consumer bytes out).
	cons, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < 10; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	// A group that committed offset 2 on partition 0 (5 records there) lags by 3.
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 2, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "lagging", offs); err != nil {
		t.Fatal(err)
	}

	text, mfs := scrape(t, n.HTTPAddr())
	checks := []struct {
		name   string
		labels []string
		ok     func(float64) bool
		want   string
	}{
		{"kafka_server_brokertopicmetrics_messagesin_total", []string{"topic=" + topic}, eq(10), "10"},
		{"kafka_server_brokertopicmetrics_bytesin_total", []string{"topic=" + topic}, gt(10 * 8), "> 80 (10 batches of one 8-byte value)"},
		{"kafka_server_brokertopicmetrics_bytesout_total", []string{"topic=" + topic}, gt(10 * 8), "> 80"},
		{"kafka_server_brokertopicmetrics_totalproducerequests_total", []string{"topic=" + topic}, gt(0), "> 0"},
		{"kafka_server_brokertopicmetrics_totalfetchrequests_total", []string{"topic=" + topic}, gt(0), "> 0"},
		{"kafka_network_requestmetrics_requests_total", []string{"request=Produce", "version=13"}, gt(produceBefore), fmt.Sprintf("> %v", produceBefore)},
		{"kafka_network_requestmetrics_requests_total", []string{"request=FetchConsumer", "version=18"}, gt(0), "> 0"},
		{"kafka_network_requestmetrics_totaltimems", []string{"request=Produce"}, gt(0), "observations > 0"},
		{"kafka_network_requestmetrics_requestqueuetimems", []string{"request=Metadata"}, gt(0), "observations > 0"},
		{"kafka_network_requestmetrics_throttletimems", []string{"request=Produce"}, gt(0), "observations > 0"},
		{"kafka_log_logflushstats_logflushrateandtimems", nil, gt(1), "observations >= 2 (a batch per partition)"},
		{"kafka_log_log_logendoffset", []string{"topic=" + topic, "partition=0"}, eq(5), "5"},
		{"kafka_log_log_logendoffset", []string{"topic=" + topic, "partition=1"}, eq(5), "5"},
		{"kafka_log_log_size", []string{"topic=" + topic, "partition=1"}, gt(5 * 8), "> 40"},
		{"kafka_server_group_consumerlag", []string{"group=lagging", "topic=" + topic, "partition=0"}, eq(3), "3"},
		{"kafka_server_replicamanager_leadercount", nil, gt(1), ">= 2"},
		{"kafka_server_replicamanager_partitioncount", nil, gt(1), ">= 2"},
		{"kafka_server_replicamanager_underreplicatedpartitions", nil, eq(0), "0"},
		{"kafka_controller_kafkacontroller_activecontrollercount", nil, eq(1), "1"},
		{"kafka_controller_kafkacontroller_globaltopiccount", nil, gt(0), "> 0"},
		{"kafka_coordinator_group_groupmetadatamanager_numgroups", nil, gt(0), "> 0"},
		{"kafka_server_socket_server_metrics_connections", []string{"listener=PLAINTEXT"}, gt(1), ">= 2 (two clients)"},
		{"kafka_server_socket_server_metrics_connection_creation_total", []string{"listener=PLAINTEXT"}, gt(1), ">= 2"},
	}
	for _, c := range checks {
		v, err := lookup(mfs, c.name, c.labels...)
		if err != nil {
			t.Error(err)
			continue
		}
		if !c.ok(v) {
			t.Errorf("%s%v = %v, want %s", c.name, c.labels, v, c.want)
		}
	}

	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	promtoolCheck(t, text)
}

// promtoolCheck runs promtool check metrics (built into .tools by make
// promtool, which make test runs) on an exposition.
func promtoolCheck(t *testing.T, text []byte) {
	t.Helper()
	tools, _ := filepath.Glob(filepath.Join("..", ".tools", "promtool-*", "promtool"))
	if len(tools) == 0 {
		t.Fatal("no promtool under .tools: run make promtool")
	}
	cmd := exec.Command(tools[len(tools)-1], "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("%s check metrics: %v\n%s", tools[len(tools)-1], err, out)
	}
}

func eq(want float64) func(float64) bool { return func(v float64) bool { return v == want } }
func gt(than float64) func(float64) bool { return func(v float64) bool { return v > than } }

// TestHTTPListenerOffByDefault: without samsa.http.listener the broker
// serves no HTTP.
func TestHTTPListenerOffByDefault(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	if addr := n.HTTPAddr(); addr != "" {
		t.Fatalf("HTTPAddr() = %q with samsa.http.listener unset", addr)
	}
}

// TestMetricsISRShrink: a follower that stops fetching leaves the ISR;
// the leader's /metrics counts the shrink and the under-replicated
// partition.
func TestMetricsISRShrink(t *testing.T) {
	c := testutil.StartCluster(t, 2, map[string]string{"replica.lag.time.max.ms": "1000", "samsa.http.listener": "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "shrinking"
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, topic); err != nil {
		t.Fatal(err)
	}
	var leader int32
	testutil.Eventually(t, 30*time.Second, func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		p := md.Topics[topic].Partitions[0]
		if p.Leader < 0 || len(p.ISR) != 2 {
			return fmt.Errorf("leader %d, isr %v", p.Leader, p.ISR)
		}
		leader = p.Leader
		return nil
	})
	c.Node(3 - leader).StopReplicaFetchers()
	testutil.Eventually(t, 30*time.Second, func() error {
		// New data the follower does not fetch: it falls behind.
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
			return err
		}
		_, mfs := scrape(t, c.Node(leader).HTTPAddr())
		for _, m := range []struct {
			name   string
			labels []string
		}{
			{"kafka_server_replicamanager_isrshrinks_total", nil},
			{"kafka_server_replicamanager_underreplicatedpartitions", nil},
			{"kafka_cluster_partition_underreplicated", []string{"topic=" + topic, "partition=0"}},
		} {
			if v, err := lookup(mfs, m.name, m.labels...); err != nil || v != 1 {
				return fmt.Errorf("%s%v = %v (%v), want 1", m.name, m.labels, v, err)
			}
		}
		return nil
	})
}
