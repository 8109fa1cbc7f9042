package broker_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/common/expfmt"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/samsa-io/samsa/internal/testutil"
)

// A CLIENT_METRICS subscription set by IncrementalAlterConfigs (which
// alice, without AlterConfigs on the cluster, may not) is what
// GetTelemetrySubscriptions gives every client, alice's too; a push of
// an OTLP payload shows on /metrics, a malformed one is INVALID_RECORD.
func TestTelemetryHandlers(t *testing.T) {
	t.Parallel()
	b := startHandlerBroker(t, nil)
	alter := testutil.SubscribeClientMetrics("every-client", "metrics", "*", "interval.ms", "100")
	wantCode(t, "alter as alice", b.as("alice", alter).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, kerr.ClusterAuthorizationFailed)
	wantCode(t, "alter", b.do(alter).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode, nil)

	get := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	sub := b.as("alice", get).(*kmsg.GetTelemetrySubscriptionsResponse)
	wantCode(t, "GetTelemetrySubscriptions as alice", sub.ErrorCode, nil)
	if !slices.Equal(sub.RequestedMetrics, []string{"*"}) || sub.PushIntervalMillis != 100 || !sub.DeltaTemporality {
		t.Fatalf("subscription %+v", sub)
	}
	push := kmsg.NewPtrPushTelemetryRequest()
	push.ClientInstanceID, push.SubscriptionID, push.CompressionType = sub.ClientInstanceID, sub.SubscriptionID, 4
	push.Metrics = []byte("not zstd")
	wantCode(t, "malformed push", b.do(push).(*kmsg.PushTelemetryResponse).ErrorCode, kerr.InvalidRecord)

	sub = b.do(get).(*kmsg.GetTelemetrySubscriptionsResponse)
	md := &metricsv1.MetricsData{ResourceMetrics: []*metricsv1.ResourceMetrics{{ScopeMetrics: []*metricsv1.ScopeMetrics{{Metrics: []*metricsv1.Metric{
		{Name: "org.apache.kafka.producer.record.send.rate", Data: &metricsv1.Metric_Gauge{Gauge: &metricsv1.Gauge{DataPoints: []*metricsv1.NumberDataPoint{
			{Value: &metricsv1.NumberDataPoint_AsDouble{AsDouble: 42}}}}}},
	}}}}}}
	raw, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil)
	push.ClientInstanceID, push.SubscriptionID, push.Metrics = sub.ClientInstanceID, sub.SubscriptionID, enc.EncodeAll(raw, nil)
	enc.Close()
	wantCode(t, "push", b.do(push).(*kmsg.PushTelemetryResponse).ErrorCode, nil)
	fams, err := b.node.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, f := range fams {
		if f.GetName() == "org_apache_kafka_producer_record_send_rate" {
			expfmt.MetricFamilyToText(&out, f)
		}
	}
	if !bytes.Contains(out.Bytes(), []byte(`client_id="handler-test"`)) || !bytes.Contains(out.Bytes(), []byte("} 42")) {
		t.Errorf("/metrics:\n%s\nwant the pushed gauge", out.String())
	}
}
