package compat

import (
	"context"
	"crypto/rand"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// throttleHook counts the throttles a broker asked for.
type throttleHook struct{ n atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// A producer over its client id's producer_byte_rate is held to it: over
// 10 s it gets within 10% of the quota (Kafka's window of 11 one-second
// samples lets the first ten seconds' worth through at once, then holds
// the rate), and it is told throttle_time_ms.
func TestFranzProducerQuota(t *testing.T) {
	addr := testutil.StartBroker(t, nil).Addr()
	adm := newAdmin(t, addr)
	createTopic(t, adm, "quota", 1, nil)
	const quota = 256 << 10
	ctx := testCtx(t, 60*time.Second)
	_, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: kmsgStr("throttled")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quota}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	described, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: kmsgStr("throttled"), MatchType: 0}})
	if err != nil || len(described) != 1 || len(described[0].Values) != 1 || described[0].Values[0].Value != quota {
		t.Fatalf("DescribeClientQuotas: %v %+v", err, described)
	}

	hook := &throttleHook{}
	cl := newKgo(t, addr, kgo.ClientID("throttled"), kgo.ProducerBatchMaxBytes(8<<10), kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(64), kgo.WithHooks(hook), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	// The quota counts the bytes on the wire, as Kafka's does: values
	// that do not compress, sent uncompressed.
	value := make([]byte, 4<<10)
	rand.Read(value)
	var acked atomic.Int64
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	for pctx.Err() == nil {
		cl.Produce(pctx, &kgo.Record{Topic: "quota", Value: value}, func(r *kgo.Record, err error) {
			if err == nil && time.Since(start) <= 10*time.Second {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
	cl.Flush(context.Background())
	rate := float64(acked.Load()) / 10
	t.Logf("acknowledged %d bytes in 10 s: %.0f B/s against a quota of %d B/s; %d throttles", acked.Load(), rate, quota, hook.n.Load())
	if rate < 0.9*quota || rate > 1.1*quota {
		t.Errorf("produced %.0f B/s over 10 s, want within 10%% of the quota %d B/s", rate, quota)
	}
	if hook.n.Load() == 0 {
		t.Error("the producer was never told throttle_time_ms")
	}
}

// kafka-configs.sh (Kafka 4.4's ConfigCommand) sets, describes and
// removes quotas of users and client ids, and SCRAM credentials of users.
func TestKafkaConfigsUsersAndClients(t *testing.T) {
	addr := testutil.StartBroker(t, nil).Addr()
	ctx := testCtx(t, 3*time.Minute)
	tool := kafkaToolIn(t, ctx, addr, t.TempDir())
	run := func(args ...string) string {
		t.Helper()
		out, err := tool("", "org.apache.kafka.tools.ConfigCommand", args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	run("--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152", "--entity-type", "users", "--entity-name", "alice")
	run("--alter", "--add-config", "producer_byte_rate=4096", "--entity-type", "clients", "--entity-default")
	out := run("--describe", "--entity-type", "users", "--entity-name", "alice")
	if !strings.Contains(out, "producer_byte_rate=1048576.0") || !strings.Contains(out, "consumer_byte_rate=2097152.0") {
		t.Errorf("kafka-configs --describe users alice: %s", out)
	}
	out = run("--describe", "--entity-type", "clients", "--entity-default")
	if !strings.Contains(out, "producer_byte_rate=4096.0") {
		t.Errorf("kafka-configs --describe clients --entity-default: %s", out)
	}
	run("--alter", "--add-config", "SCRAM-SHA-512=[iterations=8192,password=alice-secret]", "--entity-type", "users", "--entity-name", "alice")
	out = run("--describe", "--entity-type", "users", "--entity-name", "alice")
	if !strings.Contains(out, "SCRAM-SHA-512=iterations=8192") {
		t.Errorf("kafka-configs --describe users alice after adding SCRAM-SHA-512: %s", out)
	}
	run("--alter", "--delete-config", "producer_byte_rate", "--entity-type", "users", "--entity-name", "alice")
	adm := newAdmin(t, addr)
	q, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: kmsgStr("alice")}})
	if err != nil || len(q) != 1 || len(q[0].Values) != 1 || q[0].Values[0].Key != "consumer_byte_rate" {
		t.Errorf("after --delete-config: %v %+v", err, q)
	}
}

func kmsgStr(s string) *string { return &s }
