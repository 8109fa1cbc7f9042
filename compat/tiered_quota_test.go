package compat

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// tieredCounter reads a topic's KIP-405 counter (remotecopybytes_total,
// remotefetchbytes_total) from the broker's /metrics; 0 when absent.
func tieredCounter(t *testing.T, n *testutil.Node, name, topic string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^kafka_server_brokertopicmetrics_` + name + `\{topic="` + topic + `"\} ([0-9.e+]+)$`).
		FindStringSubmatch(scrapeText(n.Broker.HTTPAddr()))
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTieredQuotas: remote.log.manager.copy.max.bytes.per.second and
// .fetch.max.bytes.per.second, set as dynamic cluster defaults (as Kafka
// has them), bound the bytes the broker copies and reads remotely, by
// its upload and remote fetch byte metrics, over the time measured; a
// consumer from offset 0 still reads every record, the old ones from the
// bucket at about the fetch quota.
func TestTieredQuotas(t *testing.T) {
	t.Parallel()
	const (
		rate    = 8 << 10
		records = 600 // about 60 KiB (batches compressed), 15 segments of 4 KiB
	)
	topic := "tiered-quotas"
	n, _ := tieredBrokerWith(t, topic)
	adm := newAdmin(t, n.Addr())
	var set []kadm.AlterConfig
	for _, name := range []string{"remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.fetch.max.bytes.per.second"} {
		set = append(set, kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: strp(strconv.Itoa(rate))})
	}
	rs, err := adm.AlterBrokerConfigs(testCtx(t, 10*time.Second), set)
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		rcs, err := adm.DescribeBrokerConfigs(testCtx(t, 10*time.Second), n.NodeID())
		if err != nil {
			return err
		}
		applied := 0
		for _, rc := range rcs {
			for _, c := range rc.Configs {
				if c.Key == set[0].Name || c.Key == set[1].Name {
					if c.MaybeValue() == strconv.Itoa(rate) {
						applied++
					}
				}
			}
		}
		if applied != 2 {
			return fmt.Errorf("%d of the two quotas applied", applied)
		}
		return nil
	})
	// What the quota lets through in d: a window's worth at once, then
	// the rate, and the segment or read taken last, with half as much
	// again of slack.
	bound := func(d time.Duration) float64 { return 1.5*rate*(d.Seconds()+1) + 5000 }

	start := time.Now()
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	produceValues(t, cl, topic, 0, records)
	testutil.Eventually(t, 60*time.Second, func() error {
		took, copied := time.Since(start), tieredCounter(t, n, "remotecopybytes_total", topic)
		if copied > bound(took) {
			t.Fatalf("%.0f bytes copied in %v, over the quota of %d B/s", copied, took, rate)
		}
		if copied < 4*rate {
			return fmt.Errorf("%.0f bytes copied in %v", copied, took)
		}
		return nil
	})

	start = time.Now()
	consumer := newKgo(t, n.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	consumeTieredValues(t, consumer, records)
	took, fetched := time.Since(start), tieredCounter(t, n, "remotefetchbytes_total", topic)
	if fetched == 0 || fetched > bound(took) {
		t.Errorf("%.0f bytes read from the bucket in %v, with a quota of %d B/s", fetched, took, rate)
	}
}
