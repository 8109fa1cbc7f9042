package clientmetrics

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// clock is a settable time for the tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{time.Unix(1_700_000_000, 0)} }
func maxBytes(n int32) func() int32      { return func() int32 { return n } }
func javaClient(conn uint64) Client {
	return Client{ConnID: conn, ClientID: "producer-1", SoftwareName: "apache-kafka-java", SoftwareVersion: "4.4.0", Address: "127.0.0.1", Port: 5000}
}
func newTestManager(c *clock) *Manager {
	return NewManager(NewStore(Limits{}, c.now), maxBytes(1<<20), c.now)
}
func subs(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// payload is an uncompressed MetricsData with one gauge point.
func payload(t testing.TB, name string, v float64, attrs ...string) []byte {
	t.Helper()
	var kvs []*commonv1.KeyValue
	for i := 0; i < len(attrs); i += 2 {
		kvs = append(kvs, &commonv1.KeyValue{Key: attrs[i], Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: attrs[i+1]}}})
	}
	md := &metricsv1.MetricsData{ResourceMetrics: []*metricsv1.ResourceMetrics{{ScopeMetrics: []*metricsv1.ScopeMetrics{{Metrics: []*metricsv1.Metric{
		{Name: name, Data: &metricsv1.Metric_Gauge{Gauge: &metricsv1.Gauge{DataPoints: []*metricsv1.NumberDataPoint{
			{Attributes: kvs, Value: &metricsv1.NumberDataPoint_AsDouble{AsDouble: v}}}}}},
	}}}}}}
	b, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSubscriptionsUnionOfMatches(t *testing.T) {
	c := newClock()
	m := newTestManager(c)
	m.SetSubscriptions(map[string]map[string]string{
		"producers": subs("metrics", "org.apache.kafka.producer.", "interval.ms", "10000", "match", "client_software_name=apache-kafka-java"),
		"lag":       subs("metrics", "org.apache.kafka.consumer.fetch.manager.records.lag", "interval.ms", "20000"),
		"python":    subs("metrics", "*", "interval.ms", "1000", "match", "client_software_name=confluent-kafka-python"),
		"ported":    subs("metrics", "org.apache.kafka.consumer.", "match", "client_source_port=5000, client_id=producer-\\d+"),
		"invalid":   subs("interval.ms", "1"),
		"deleted":   {},
	})
	a, err := m.Subscriptions([16]byte{}, javaClient(1))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"org.apache.kafka.consumer.", "org.apache.kafka.consumer.fetch.manager.records.lag", "org.apache.kafka.producer."}
	if !slices.Equal(a.Metrics, want) || a.IntervalMs != 10000 || a.MaxBytes != 1<<20 || a.InstanceID == ([16]byte{}) {
		t.Fatalf("answer %+v, want metrics %v interval 10000", a, want)
	}
	if got := m.Names(); !slices.Equal(got, []string{"lag", "ported", "producers", "python"}) {
		t.Errorf("names %v", got)
	}
	py := Client{ConnID: 2, SoftwareName: "confluent-kafka-python", SoftwareVersion: "2.12.0"}
	if a, _ := m.Subscriptions([16]byte{}, py); !slices.Equal(a.Metrics, []string{"*"}) || a.IntervalMs != 1000 {
		t.Errorf("python client: %+v, want * every second", a)
	}
}

// A selector's pattern is matched against an empty attribute too (a
// request's client id may be empty), as Kafka 4.4 matches it.
func TestSubscriptionsMatchEmptyClientID(t *testing.T) {
	m := newTestManager(newClock())
	m.SetSubscriptions(map[string]map[string]string{
		"any-id": subs("metrics", "org.apache.kafka.anyid.", "match", "client_id=.*"),
		"named":  subs("metrics", "org.apache.kafka.named.", "match", "client_id=.+"),
	})
	a, err := m.Subscriptions([16]byte{}, Client{ConnID: 3, SoftwareName: "unknown", SoftwareVersion: "unknown"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Metrics, []string{"org.apache.kafka.anyid."}) {
		t.Errorf("metrics %v, want those of any-id", a.Metrics)
	}
}

func TestPushInterval(t *testing.T) {
	c := newClock()
	m := newTestManager(c)
	m.SetSubscriptions(map[string]map[string]string{"all": subs("metrics", "*", "interval.ms", "1000")})
	cl := javaClient(1)
	a, _ := m.Subscriptions([16]byte{}, cl)
	if _, err := m.Subscriptions(a.InstanceID, cl); !errors.Is(err, ErrThrottled) {
		t.Fatalf("second GetTelemetrySubscriptions at once: %v, want throttled", err)
	}
	push := Push{InstanceID: a.InstanceID, SubscriptionID: a.SubscriptionID, Metrics: payload(t, "m", 1)}
	if err := m.Push(push, cl); err != nil {
		t.Fatalf("first push, at once after the subscription: %v", err)
	}
	c.advance(999 * time.Millisecond)
	if err := m.Push(push, cl); !errors.Is(err, ErrThrottled) {
		t.Fatalf("push before the interval: %v", err)
	}
	c.advance(time.Millisecond)
	if err := m.Push(push, cl); err != nil {
		t.Fatalf("push after the interval: %v", err)
	}
	c.advance(10 * time.Millisecond)
	term := push
	term.Terminating = true
	if err := m.Push(term, cl); err != nil {
		t.Fatalf("terminating push before the interval: %v", err)
	}
	c.advance(2 * time.Second)
	if err := m.Push(push, cl); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("push after a terminating one: %v", err)
	}
	want := `
# HELP kafka_server_client_metrics_instances Client instances the broker keeps (instance-count; not _count, which Prometheus keeps for histograms).
# TYPE kafka_server_client_metrics_instances gauge
kafka_server_client_metrics_instances 1
# HELP kafka_server_client_metrics_plugin_export_total Pushed payloads decoded and kept (plugin-export-count).
# TYPE kafka_server_client_metrics_plugin_export_total counter
kafka_server_client_metrics_plugin_export_total 3
# HELP kafka_server_client_metrics_throttle_total GetTelemetrySubscriptions and PushTelemetry requests refused before the push interval (throttle-count).
# TYPE kafka_server_client_metrics_throttle_total counter
kafka_server_client_metrics_throttle_total 2
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "kafka_server_client_metrics_instances",
		"kafka_server_client_metrics_plugin_export_total", "kafka_server_client_metrics_throttle_total"); err != nil {
		t.Error(err)
	}
}

func TestPushRefusals(t *testing.T) {
	c := newClock()
	m := NewManager(NewStore(Limits{}, c.now), maxBytes(64), c.now)
	m.SetSubscriptions(map[string]map[string]string{"all": subs("metrics", "*")})
	for _, tc := range []struct {
		name string
		edit func(*Push)
		want error
	}{
		{"zero instance id", func(p *Push) { p.InstanceID = [16]byte{} }, ErrInvalidRequest},
		{"instance id one", func(p *Push) { p.InstanceID = oneUUID }, ErrInvalidRequest},
		{"other subscription", func(p *Push) { p.SubscriptionID++ }, ErrUnknownSubscription},
		{"compression 5", func(p *Push) { p.Compression = 5 }, ErrUnsupportedCompression},
		{"compression -1", func(p *Push) { p.Compression = -1 }, ErrUnsupportedCompression},
		{"over telemetry.max.bytes", func(p *Push) { p.Metrics = make([]byte, 65) }, ErrTooLarge},
		{"not protobuf", func(p *Push) { p.Metrics = []byte{0xff, 0xff, 0xff} }, ErrInvalidRecord},
		{"not zstd", func(p *Push) { p.Compression = 4 }, ErrInvalidRecord},
		{"a zstd bomb", func(p *Push) { p.Compression, p.Metrics = 4, zstdBomb(t) }, ErrTooLarge},
		{"empty", func(p *Push) { p.Metrics = nil }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := m.Subscriptions([16]byte{}, javaClient(1))
			if err != nil {
				t.Fatal(err)
			}
			p := Push{InstanceID: a.InstanceID, SubscriptionID: a.SubscriptionID, Metrics: payload(t, "m", 1)}
			tc.edit(&p)
			if err := m.Push(p, javaClient(1)); !errors.Is(err, tc.want) {
				t.Fatalf("push: %v, want %v", err, tc.want)
			}
		})
	}
}

// An instance refused for its subscription id or compression may ask
// for its subscription again at once; a change of the subscriptions
// gives every instance its new one at once.
func TestResubscribe(t *testing.T) {
	c := newClock()
	m := newTestManager(c)
	m.SetSubscriptions(map[string]map[string]string{"all": subs("metrics", "a.", "interval.ms", "60000")})
	cl := javaClient(1)
	a, _ := m.Subscriptions([16]byte{}, cl)
	if err := m.Push(Push{InstanceID: a.InstanceID, SubscriptionID: a.SubscriptionID + 1}, cl); !errors.Is(err, ErrUnknownSubscription) {
		t.Fatal(err)
	}
	if b, err := m.Subscriptions(a.InstanceID, cl); err != nil || b.SubscriptionID != a.SubscriptionID {
		t.Fatalf("after an unknown subscription: %+v, %v", b, err)
	}
	m.SetSubscriptions(map[string]map[string]string{"all": subs("metrics", "b.", "interval.ms", "60000")})
	b, err := m.Subscriptions(a.InstanceID, cl)
	if err != nil || b.SubscriptionID == a.SubscriptionID || !slices.Equal(b.Metrics, []string{"b."}) {
		t.Fatalf("after the subscriptions changed: %+v, %v", b, err)
	}
}

// Instances are forgotten when their connection closes, or when they
// sent nothing for a minute (three intervals when longer).
func TestInstancesForgotten(t *testing.T) {
	c := newClock()
	m := newTestManager(c)
	m.SetSubscriptions(map[string]map[string]string{"all": subs("metrics", "*", "interval.ms", "100")})
	a, _ := m.Subscriptions([16]byte{}, javaClient(7))
	if err := m.Push(Push{InstanceID: a.InstanceID, SubscriptionID: a.SubscriptionID, Metrics: payload(t, "m", 1)}, javaClient(7)); err != nil {
		t.Fatal(err)
	}
	m.ConnClosed(7)
	if n := len(m.inst); n != 0 {
		t.Fatalf("%d instances after the connection closed", n)
	}
	if v := m.Store().Clients(); len(v) != 1 || v[0].Connected {
		t.Fatalf("store after the connection closed: %+v", v)
	}
	m.Subscriptions([16]byte{}, javaClient(8))
	c.advance(instanceExpiry)
	m.Subscriptions([16]byte{}, javaClient(9))
	if n := len(m.inst); n != 1 {
		t.Fatalf("%d instances a minute on, want the new one alone", n)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		want error
	}{
		{"ok", subs("metrics", "a,b", "interval.ms", "100", "match", "client_id=x.*, client_source_address=127\\.0\\.0\\.1"), nil},
		{"empty name", nil, ErrInvalidRequest},
		{"unknown", subs("bogus", "1"), ErrInvalidRequest},
		{"interval 99", subs("interval.ms", "99"), ErrInvalidRequest},
		{"interval text", subs("interval.ms", "x"), ErrInvalidConfig},
		{"selector", subs("match", "client_rack=a"), ErrInvalidConfig},
		{"regex", subs("match", "client_id=("), ErrInvalidConfig},
		{"no value", subs("match", "client_id="), ErrInvalidConfig},
	} {
		name := "sub"
		if tc.name == "empty name" {
			name = ""
		}
		if err := Validate(name, tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// FuzzPush: any PushTelemetry a client sends gets nil or one of the
// errors Kafka answers, never a panic.
func FuzzPush(f *testing.F) {
	f.Add(int32(0), false, int8(0), payload(f, "m", 1))
	f.Add(int32(1), true, int8(4), zstdBomb(f))
	f.Add(int32(0), false, int8(2), []byte{0xff, 0, 1})
	f.Fuzz(func(t *testing.T, subDelta int32, terminating bool, codec int8, metrics []byte) {
		c := newClock()
		m := NewManager(NewStore(Limits{Clients: 2, SeriesPerClient: 4}, c.now), maxBytes(64<<10), c.now)
		m.SetSubscriptions(map[string]map[string]string{"all": subs("metrics", "*", "interval.ms", "100")})
		a, err := m.Subscriptions([16]byte{}, javaClient(1))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			err := m.Push(Push{InstanceID: a.InstanceID, SubscriptionID: a.SubscriptionID + subDelta, Terminating: terminating,
				Compression: codec, Metrics: metrics}, javaClient(1))
			if err != nil && kindOf(err) == err {
				t.Fatalf("push: %v is none of the package's errors", err)
			}
			c.advance(100 * time.Millisecond)
		}
	})
}

// The same subscriptions handed over again (the broker does so on every
// read of its CLIENT_METRICS resources) leave the instances as they are:
// a client that pushed terminating stays refused.
func TestSameSubscriptionsKeepInstances(t *testing.T) {
	c := newClock()
	m := newTestManager(c)
	m.SetSubscriptions(map[string]map[string]string{"all": subs("metrics", "*")})
	cl := javaClient(1)
	a, err := m.Subscriptions([16]byte{}, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Push(Push{InstanceID: a.InstanceID, SubscriptionID: a.SubscriptionID, Terminating: true}, cl); err != nil {
		t.Fatal(err)
	}
	m.SetSubscriptions(map[string]map[string]string{"all": subs("metrics", "*")})
	if err := m.Push(Push{InstanceID: a.InstanceID, SubscriptionID: a.SubscriptionID}, cl); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("push after terminating and the same subscriptions again: %v, want %v", err, ErrInvalidRequest)
	}
}
