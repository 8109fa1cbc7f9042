package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
)

// newUnstartedBroker is a broker made by New and not started: its
// metrics, and no server.
func newUnstartedBroker(tb testing.TB) *Broker {
	tb.Helper()
	props, err := config.New(map[string]string{"log.dirs": tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	br, err := New(Config{Props: props})
	if err != nil {
		tb.Fatal(err)
	}
	return br
}

// BenchmarkObserveRequest is the metrics' cost per request: a Produce
// answered with one partition (counters, five histograms, the error walk).
func BenchmarkObserveRequest(b *testing.B) {
	br := newUnstartedBroker(b)
	resp := kmsg.NewPtrProduceResponse()
	resp.Topics = append(resp.Topics, kmsg.ProduceResponseTopic{Topic: "t", Partitions: []kmsg.ProduceResponseTopicPartition{{Partition: 0}}})
	r := &request{}
	now := time.Now()
	t := reqTimes{read: now, start: now.Add(time.Microsecond), end: now.Add(time.Millisecond), sent: now.Add(2 * time.Millisecond)}
	b.ReportAllocs()
	for b.Loop() {
		br.metrics.observeRequest(int16(kmsg.Produce), 11, r, resp, t)
	}
}

// TestRegistryRequestMethodsBounded: the method of a schema registry
// request is the client's to name (any token, authenticated or not), and
// each name kept as a label value would be a series for good; the
// methods HTTP defines are counted by name, any other as "other".
func TestRegistryRequestMethodsBounded(t *testing.T) {
	m := newUnstartedBroker(t).metrics
	for i := range 1000 {
		m.registryRequest(fmt.Sprintf("M%d", i), "", 404)
	}
	m.registryRequest("GET", "/subjects", 0)
	m.registryRequest("DELETE", "/subjects/{subject}", 0)
	if n := testutil.CollectAndCount(m.registryRequests); n != 3 {
		t.Errorf("%d series of registry requests, want 3 (other, GET, DELETE)", n)
	}
	if got := testutil.ToFloat64(m.registryRequests.WithLabelValues("other", "")); got != 1000 {
		t.Errorf("other: %v, want 1000", got)
	}
}
