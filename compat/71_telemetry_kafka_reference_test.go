package compat

// KIP-714 against Apache Kafka 4.4: the same client-metrics subscriptions
// (IncrementalAlterConfigs, AlterConfigs, DescribeConfigs and
// ListConfigResources on CLIENT_METRICS resources) and the same
// GetTelemetrySubscriptions and PushTelemetry requests, good and bad, to
// both brokers. Kafka 4.4 without a receiver plugin advertises neither
// API but serves both (and does nothing with the metrics pushed), so every
// answer but a payload's decoding has Kafka's to compare with.

import (
	"crypto/rand"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kmsg"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/samsa-io/samsa/internal/testutil"
)

func TestTelemetryKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	n := admBroker(t, nil)
	kafka, samsa := telemetryProbe(t, kb.Addr), telemetryProbe(t, n.Addr())
	compareProbes(t, kafka, samsa)
}

// otlpPayload is an OTLP MetricsData with a gauge and a delta sum, as
// clients push them.
func otlpPayload(t testing.TB, name string, value float64) []byte {
	t.Helper()
	attr := []*commonv1.KeyValue{{Key: "node_id", Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: "1"}}}}
	md := &metricsv1.MetricsData{ResourceMetrics: []*metricsv1.ResourceMetrics{{ScopeMetrics: []*metricsv1.ScopeMetrics{{Metrics: []*metricsv1.Metric{
		{Name: name, Data: &metricsv1.Metric_Gauge{Gauge: &metricsv1.Gauge{DataPoints: []*metricsv1.NumberDataPoint{
			{Attributes: attr, Value: &metricsv1.NumberDataPoint_AsDouble{AsDouble: value}}}}}},
		{Name: name + ".total", Data: &metricsv1.Metric_Sum{Sum: &metricsv1.Sum{IsMonotonic: true,
			AggregationTemporality: metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
			DataPoints:             []*metricsv1.NumberDataPoint{{Value: &metricsv1.NumberDataPoint_AsInt{AsInt: 3}}}}}},
	}}}}}}
	b, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func zstdCompress(t testing.TB, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

// telemetryConn dials addr and names its client software in ApiVersions,
// which the match selectors see; clientID, if given, is the client id of
// its requests.
func telemetryConn(t *testing.T, addr, software string, clientID ...string) *admConn {
	t.Helper()
	c := admDial(t, addr)
	if len(clientID) > 0 {
		c.clientID = &clientID[0]
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = software, "1.0.0"
	if r := c.roundTrip(av, 3).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("ApiVersions: error %d", r.ErrorCode)
	}
	return c
}

func telemetryProbe(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	c := telemetryConn(t, addr, "samsa-compat")
	cfgs := configProber{t: t, c: c, out: out, typ: kmsg.ConfigResourceTypeClientMetrics}
	get := func(id [16]byte) *kmsg.GetTelemetrySubscriptionsResponse {
		req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
		req.ClientInstanceID = id
		return c.roundTrip(req, 0).(*kmsg.GetTelemetrySubscriptionsResponse)
	}
	// record keeps an answer; the metrics as a set (Kafka's order is a
	// HashSet's).
	record := func(what string, r *kmsg.GetTelemetrySubscriptionsResponse) {
		out["get: "+what] = fmt.Sprintf("error %d, instance set %v, subscription set %v, compression %v, interval %d, max bytes %d, delta %v, metrics %v",
			r.ErrorCode, r.ClientInstanceID != [16]byte{}, r.SubscriptionID != 0, r.AcceptedCompressionTypes,
			r.PushIntervalMillis, r.TelemetryMaxBytes, r.DeltaTemporality, slices.Sorted(slices.Values(r.RequestedMetrics)))
	}
	push := func(what string, id [16]byte, sub int32, terminating bool, codec int8, metrics []byte) {
		req := kmsg.NewPtrPushTelemetryRequest()
		req.ClientInstanceID, req.SubscriptionID, req.Terminating = id, sub, terminating
		req.CompressionType, req.Metrics = codec, metrics
		r := c.roundTrip(req, 0).(*kmsg.PushTelemetryResponse)
		out["push: "+what] = fmt.Sprintf("error %d", r.ErrorCode)
	}
	// fresh is a new instance, once the subscriptions in effect give it
	// metrics (Kafka applies a change after answering the alter).
	fresh := func() *kmsg.GetTelemetrySubscriptionsResponse {
		var r *kmsg.GetTelemetrySubscriptionsResponse
		testutil.Eventually(t, 20*time.Second, func() error {
			if r = get([16]byte{}); r.ErrorCode != 0 || len(r.RequestedMetrics) == 0 {
				return fmt.Errorf("subscription: error %d, metrics %v", r.ErrorCode, r.RequestedMetrics)
			}
			return nil
		})
		return r
	}
	payload := zstdCompress(t, otlpPayload(t, "org.apache.kafka.producer.record.send.rate", 2))
	prefix := "org.apache.kafka.producer."

	cfgs.describe("none", "probe-none", nil)
	cfgs.incr("set", "probe-sub", false, "metrics", prefix, "interval.ms", "60000", "match", "client_software_name=samsa-compat,client_id=samsa-.*")
	cfgs.incr("interval below 100", "probe-bad", false, "interval.ms", "50")
	cfgs.incr("interval above an hour", "probe-bad", false, "interval.ms", "3600001")
	cfgs.incr("interval not a number", "probe-bad", false, "interval.ms", "abc")
	cfgs.incr("unknown selector", "probe-bad", false, "match", "bogus=x")
	cfgs.incr("bad regex", "probe-bad", false, "match", "client_id=[")
	cfgs.incr("selector without a value", "probe-bad", false, "match", "client_id=")
	cfgs.incr("two equals", "probe-bad", false, "match", "client_id=a=b")
	cfgs.incr("unknown config", "probe-bad", false, "bogus", "1")
	cfgs.incr("empty name", "", false, "metrics", "*")
	cfgs.incr("validate only", "probe-vo", true, "metrics", "*")
	cfgs.describe("after validate only", "probe-vo", nil)
	cfgs.incr("append to metrics", "probe-sub", false, "metrics", "+org.apache.kafka.consumer.")
	cfgs.describe("set", "probe-sub", map[string]string{"interval.ms": "60000"})
	cfgs.describe("one named", "probe-sub", nil, "interval.ms")
	cfgs.alter("replace", "probe-alter", "interval.ms", "120000")
	cfgs.describe("replaced", "probe-alter", map[string]string{"interval.ms": "120000"})
	cfgs.describe("empty name", "", nil)
	cfgs.alter("bad interval", "probe-bad", "interval.ms", "99")
	cfgs.alter("unknown config", "probe-bad", "bogus", "1")
	cfgs.incr("validate only, bad", "probe-vo", true, "interval.ms", "1")
	cfgs.incr("address and port selectors", "probe-addr", false, "metrics", "org.apache.kafka.admin.", "match", "client_source_address=127\\.0\\.0\\.1,client_source_port=\\d+")
	cfgs.incr("instance selector", "probe-inst", false, "metrics", "org.apache.kafka.never.", "match", "client_instance_id=AAAAAAAAAAAAAAAAAAAAAA")
	// The configs reach a broker's metadata behind the alter's answer
	// (Kafka's metadata log, samsa's etcd watch): wait until this broker
	// has all four before listing them and probing the subscriptions.
	var v0 *kmsg.ListConfigResourcesResponse
	testutil.Eventually(t, 30*time.Second, func() error {
		v0 = c.roundTrip(kmsg.NewPtrListConfigResourcesRequest(), 0).(*kmsg.ListConfigResourcesResponse)
		have := map[string]bool{}
		for _, cr := range v0.ConfigResources {
			have[cr.Name] = true
		}
		for _, n := range []string{"probe-addr", "probe-alter", "probe-inst", "probe-sub"} {
			if !have[n] {
				return fmt.Errorf("client metrics resource %s not listed yet", n)
			}
		}
		return nil
	})
	cfgs.list("client metrics", int8(kmsg.ConfigResourceTypeClientMetrics))
	var listed []string
	for _, cr := range v0.ConfigResources {
		listed = append(listed, cr.Name)
	}
	slices.Sort(listed)
	out["list config resources v0 (ListClientMetricsResources)"] = fmt.Sprintf("error %d %v", v0.ErrorCode, listed)

	first := fresh()
	record("new instance", first)
	id, sub := first.ClientInstanceID, first.SubscriptionID
	record("again before the interval", get(id))
	push("first", id, sub, false, 4, payload)
	push("again before the interval", id, sub, false, 4, payload)

	r := fresh()
	push("unknown subscription", r.ClientInstanceID, r.SubscriptionID+1, false, 4, payload)
	again := get(r.ClientInstanceID)
	record("after an unknown subscription", again)
	out["get: after an unknown subscription: same subscription"] = fmt.Sprint(again.SubscriptionID == r.SubscriptionID)
	r = fresh()
	push("compression 9", r.ClientInstanceID, r.SubscriptionID, false, 9, payload)
	record("after an unsupported compression", get(r.ClientInstanceID))
	r = fresh()
	push("too large", r.ClientInstanceID, r.SubscriptionID, false, 4, make([]byte, first.TelemetryMaxBytes+1))
	r = fresh()
	push("uncompressed", r.ClientInstanceID, r.SubscriptionID, false, 0, otlpPayload(t, "org.apache.kafka.producer.x", 1))
	r = fresh()
	push("empty", r.ClientInstanceID, r.SubscriptionID, false, 4, nil)
	push("zero instance id", [16]byte{}, 0, false, 4, payload)
	push("instance id one", [16]byte{15: 1}, 0, false, 4, payload)
	var unknown [16]byte
	_, _ = rand.Read(unknown[:])
	unknown[0] &= 0x7f
	push("unknown instance", unknown, 0, false, 4, payload)
	r = fresh()
	push("terminating", r.ClientInstanceID, r.SubscriptionID, true, 4, payload)
	push("after terminating", r.ClientInstanceID, r.SubscriptionID, false, 4, payload)
	push("terminating again", r.ClientInstanceID, r.SubscriptionID, true, 4, payload)

	other := telemetryConn(t, addr, "other-client")
	oreq := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	record("not matched", other.roundTrip(oreq, 0).(*kmsg.GetTelemetrySubscriptionsResponse))
	// Without ApiVersions the client software is unknown to the selectors.
	record("no ApiVersions", admDial(t, addr).roundTrip(oreq, 0).(*kmsg.GetTelemetrySubscriptionsResponse))

	// A change of the subscriptions applies to an instance at once, even
	// before its interval.
	cfgs.incr("subscribe to every metric", "probe-alter", false, "metrics", "*")
	var changed *kmsg.GetTelemetrySubscriptionsResponse
	testutil.Eventually(t, 20*time.Second, func() error {
		if changed = get(id); changed.ErrorCode != 0 {
			return fmt.Errorf("error %d", changed.ErrorCode)
		}
		return nil
	})
	record("after the subscriptions changed", changed)
	out["get: after the subscriptions changed: new subscription"] = fmt.Sprint(changed.SubscriptionID != sub)

	cfgs.incr("delete all", "probe-sub", false, "metrics", "-", "interval.ms", "-", "match", "-")
	cfgs.incr("delete all", "probe-alter", false, "metrics", "-", "interval.ms", "-")
	cfgs.incr("delete all", "probe-addr", false, "metrics", "-", "match", "-")
	cfgs.incr("delete all", "probe-inst", false, "metrics", "-", "match", "-")
	// Every subscription gone (probe-alter matched every client): a
	// client_id pattern is matched against an empty client id too. The
	// second subscription, which matches the client without it, is in
	// effect only after the first is.
	cfgs.incr("any client id", "probe-any-id", false, "metrics", "org.apache.kafka.anyid.", "match", "client_id=.*,client_software_name=no-client-id")
	cfgs.incr("no client id", "probe-no-id", false, "metrics", "org.apache.kafka.noid.", "match", "client_software_name=no-client-id")
	anon := telemetryConn(t, addr, "no-client-id", "")
	testutil.Eventually(t, 20*time.Second, func() error {
		r := anon.roundTrip(kmsg.NewPtrGetTelemetrySubscriptionsRequest(), 0).(*kmsg.GetTelemetrySubscriptionsResponse)
		if !slices.Contains(r.RequestedMetrics, "org.apache.kafka.noid.") {
			return fmt.Errorf("empty client id: error %d, metrics %v", r.ErrorCode, r.RequestedMetrics)
		}
		record("empty client id", r)
		return nil
	})
	cfgs.incr("delete all", "probe-any-id", false, "metrics", "-", "match", "-")
	cfgs.incr("delete all", "probe-no-id", false, "metrics", "-", "match", "-")
	cfgs.describe("deleted", "probe-sub", nil)
	testutil.Eventually(t, 20*time.Second, func() error {
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeClientMetrics)}
		if n := len(c.roundTrip(req, 1).(*kmsg.ListConfigResourcesResponse).ConfigResources); n != 0 {
			return fmt.Errorf("%d subscriptions listed", n)
		}
		return nil
	})
	cfgs.list("none left", int8(kmsg.ConfigResourceTypeClientMetrics))
	return out
}

// configProber puts config requests on one resource type to a broker and
// records each answer in out, for compareProbes.
type configProber struct {
	t   *testing.T
	c   *admConn
	out map[string]string
	typ kmsg.ConfigResourceType
}

// incr sends an IncrementalAlterConfigs of name: kv pairs, a value "-"
// deleting, "+v" appending v.
func (p configProber) incr(what, name string, validateOnly bool, kv ...string) {
	_, p.out["incremental: "+what] = probeIncremental(p.c, p.typ, name, validateOnly, kv...)
}

// alter sends an AlterConfigs replacing name's configs with kv.
func (p configProber) alter(what, name string, kv ...string) {
	p.out["alter: "+what] = probeAlter(p.c, p.typ, name, kv...)
}

// describe records a DescribeConfigs answer once it shows want (Kafka
// applies a change to its metadata cache after answering the alter).
func (p configProber) describe(what, name string, want map[string]string, names ...string) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = p.typ, name
	rr.ConfigNames = names
	req.Resources = append(req.Resources, rr)
	var r kmsg.DescribeConfigsResponseResource
	testutil.Eventually(p.t, 20*time.Second, func() error {
		r = p.c.roundTrip(req, 4).(*kmsg.DescribeConfigsResponse).Resources[0]
		for k, v := range want {
			if !slices.ContainsFunc(r.Configs, func(cfg kmsg.DescribeConfigsResponseResourceConfig) bool {
				return cfg.Name == k && derefStr(cfg.Value) == v
			}) {
				return fmt.Errorf("%s: %s is not %s yet", what, k, v)
			}
		}
		return nil
	})
	p.out["describe: "+what] = fmt.Sprintf("error %d %q, %d configs", r.ErrorCode, derefStr(r.ErrorMessage), len(r.Configs))
	for _, cfg := range r.Configs {
		var syn []string
		for _, s := range cfg.ConfigSynonyms {
			syn = append(syn, fmt.Sprintf("%s=%s/%d", s.Name, derefStr(s.Value), s.Source))
		}
		p.out["describe: "+what+": "+cfg.Name] = fmt.Sprintf("%s source %d type %d readOnly %v sensitive %v documented %v synonyms %v",
			derefStr(cfg.Value), cfg.Source, cfg.ConfigType, cfg.ReadOnly, cfg.IsSensitive, cfg.Documentation != nil && *cfg.Documentation != "", syn)
	}
}

// list records a ListConfigResources answer for the types.
func (p configProber) list(what string, types ...int8) {
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.ResourceTypes = types
	r := p.c.roundTrip(req, 1).(*kmsg.ListConfigResourcesResponse)
	var got []string
	for _, cr := range r.ConfigResources {
		got = append(got, fmt.Sprintf("%d:%s", cr.Type, cr.Name))
	}
	slices.Sort(got)
	p.out["list config resources: "+what] = fmt.Sprintf("error %d %v", r.ErrorCode, got)
}
