package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
)

// BenchmarkObserveRequest is the metrics' cost per request: a Produce
// answered with one partition (counters, five histograms, the error walk).
func BenchmarkObserveRequest(b *testing.B) {
	props, err := config.New(map[string]string{"log.dirs": b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	br, err := New(Config{Props: props})
	if err != nil {
		b.Fatal(err)
	}
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
