package httpapi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/samsa-io/samsa/internal/testutil"
)

// pushClient is a client instance that pushes metrics (KIP-714) through
// its own kgo client, as the Java client and librdkafka do.
type pushClient struct {
	t   *testing.T
	cl  *kgo.Client
	sub *kmsg.GetTelemetrySubscriptionsResponse
}

func newPushClient(t *testing.T, addr, clientID string) *pushClient {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	p := &pushClient{t: t, cl: cl}
	testutil.Eventually(t, 20*time.Second, func() error {
		r, err := kmsg.NewPtrGetTelemetrySubscriptionsRequest().RequestWith(context.Background(), cl)
		if err != nil || r.ErrorCode != 0 || len(r.RequestedMetrics) == 0 {
			return fmt.Errorf("GetTelemetrySubscriptions: %v %+v", err, r)
		}
		p.sub = r
		return nil
	})
	return p
}

// push sends one gauge per name=value pair, once the interval allows.
func (p *pushClient) push(kv ...any) {
	p.t.Helper()
	var ms []*metricsv1.Metric
	node := []*commonv1.KeyValue{{Key: "node_id", Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: "1"}}}}
	for i := 0; i < len(kv); i += 2 {
		ms = append(ms, &metricsv1.Metric{Name: kv[i].(string), Data: &metricsv1.Metric_Gauge{Gauge: &metricsv1.Gauge{
			DataPoints: []*metricsv1.NumberDataPoint{{Attributes: node, Value: &metricsv1.NumberDataPoint_AsDouble{AsDouble: kv[i+1].(float64)}}}}}})
	}
	b, err := proto.Marshal(&metricsv1.MetricsData{ResourceMetrics: []*metricsv1.ResourceMetrics{{ScopeMetrics: []*metricsv1.ScopeMetrics{{Metrics: ms}}}}})
	if err != nil {
		p.t.Fatal(err)
	}
	req := kmsg.NewPtrPushTelemetryRequest()
	req.ClientInstanceID, req.SubscriptionID, req.Metrics = p.sub.ClientInstanceID, p.sub.SubscriptionID, b
	testutil.Eventually(p.t, 20*time.Second, func() error {
		r, err := req.RequestWith(context.Background(), p.cl)
		if err != nil || r.ErrorCode != 0 {
			return fmt.Errorf("PushTelemetry: %v %+v", err, r)
		}
		return nil
	})
}

// TestConsoleClientsInBrowser: the Clients page lists the client
// instances that pushed metrics, with plots of their request latency,
// record send rate and lag.
func TestConsoleClientsInBrowser(t *testing.T) {
	n, cl := startHTTPBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alter := testutil.SubscribeClientMetrics("everything", "metrics", "org.apache.kafka.", "interval.ms", "100")
	if r, err := alter.RequestWith(ctx, cl); err != nil || r.Resources[0].ErrorCode != 0 {
		t.Fatalf("subscribing: %v %+v", err, r)
	}
	producer, consumer := newPushClient(t, n.Addr(), "orders-producer"), newPushClient(t, n.Addr(), "orders-consumer")
	for i := range 4 {
		producer.push("org.apache.kafka.producer.node.request.latency.avg", 2.5+float64(i), "org.apache.kafka.producer.record.send.rate", 100*float64(i+1))
		consumer.push("org.apache.kafka.consumer.fetch.manager.records.lag.max", 50-10*float64(i))
	}

	dir := artifacts(t)
	b := browser(t)
	if err := chromedp.Do(b, chromedp.Navigate("http://"+n.HTTPAddr()+"/#/clients")); err != nil {
		t.Fatal(err)
	}
	ready := `document.getElementById("view").dataset.route === "#/clients" && document.querySelectorAll(".client svg.plot").length === 3`
	if _, err := chromedp.Run(b, chromedp.Poll[bool](ready, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		text, _ := chromedp.Run(b, chromedp.Text(chromedp.CSS("#view")))
		t.Fatalf("the Clients page with three plots: %v\npage:\n%s", err, text)
	}
	text, err := chromedp.Run(b, chromedp.Text(chromedp.CSS("#view")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"orders-producer", "orders-consumer", "kgo", "Request latency", "Record send rate", "Consumer lag", "= 400", "connected"} {
		if !strings.Contains(text, want) {
			t.Errorf("Clients page: no %q in\n%s", want, text)
		}
	}
	png, err := chromedp.Run(b, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clients.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
