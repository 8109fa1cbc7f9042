package compat

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	t.Parallel()
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

// A consumer over its client id's consumer_byte_rate is held to it as
// Kafka holds one: fetches are bounded to what the quota window lets
// through, and one that puts it over the quota is answered empty with
// throttle_time_ms (its connection muted) and not counted. Reading a
// backlog, it gets the window's worth (ten seconds of quota) and then
// waits for the window to pass: over 10 s, within 10% of the quota.
func TestFranzConsumerQuota(t *testing.T) {
	addr := testutil.StartBroker(t, nil).Addr()
	adm := newAdmin(t, addr)
	createTopic(t, adm, "cquota", 1, nil)
	const quota = 256 << 10
	ctx := testCtx(t, 90*time.Second)
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: kmsgStr("slow-consumer")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: quota}},
	}}); err != nil {
		t.Fatal(err)
	}
	// Three times what the quota lets through in the 10 s measured.
	value := make([]byte, 4<<10)
	rand.Read(value)
	// Small batches: a fetch returns at least one whole batch.
	p := newKgo(t, addr, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
	var recs []*kgo.Record
	for range 30 * quota / len(value) {
		recs = append(recs, &kgo.Record{Topic: "cquota", Value: value})
	}
	produceAll(t, p, recs...)

	hook := &throttleHook{}
	// Small fetches, so that the quota's grain is fine: the overshoot of
	// the fetch that crosses the quota is at most 64 KiB.
	cl := newKgo(t, addr, kgo.ClientID("slow-consumer"), kgo.WithHooks(hook), kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(64<<10),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"cquota": {0: kgo.NewOffset().AtStart()}}))
	var read int64
	start := time.Now()
	for time.Since(start) < 10*time.Second {
		pctx, cancel := context.WithDeadline(ctx, start.Add(10*time.Second))
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			if time.Since(start) <= 10*time.Second {
				read += int64(len(r.Value))
			}
		})
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
	}
	rate := float64(read) / 10
	t.Logf("consumed %d bytes in 10 s: %.0f B/s against a quota of %d B/s; %d throttles", read, rate, quota, hook.n.Load())
	if rate < 0.9*quota || rate > 1.1*quota {
		t.Errorf("consumed %.0f B/s over 10 s, want within 10%% of the quota %d B/s", rate, quota)
	}
	if hook.n.Load() == 0 {
		t.Error("the consumer was never told throttle_time_ms")
	}
}

// controller_mutation_rate (KIP-599) as Kafka's token bucket applies it:
// a client may burst windows × rate partitions and go below zero with the
// mutation that finds the bucket not yet below; then kadm (CreateTopics
// v7, CreatePartitions v3, DeleteTopics v6) gets THROTTLING_QUOTA_EXCEEDED
// for a topic that finds it below zero, with throttle_time_ms (which kgo
// waits out); an older CreateTopics (v5) is not refused but throttled.
func TestControllerMutationQuota(t *testing.T) {
	addr := testutil.StartBroker(t, nil).Addr()
	adm := newAdmin(t, addr)
	ctx := testCtx(t, 60*time.Second)
	// 2 partitions/s over 11 one-second samples: a burst of 22.
	for _, client := range []string{"mutator", "raw"} {
		if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
			Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: kmsgStr(client)}},
			Ops:    []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 2}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	hook := &throttleHook{}
	mut := kadm.NewClient(newKgo(t, addr, kgo.ClientID("mutator"), kgo.WithHooks(hook)))
	// 12 + 12 partitions take the bucket to -2; the third topic is refused.
	res, err := mut.CreateTopics(ctx, 12, 1, nil, "m1", "m2", "m3")
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, r := range res {
		if errors.Is(r.Err, kerr.ThrottlingQuotaExceeded) {
			refused++
		} else if r.Err != nil {
			t.Errorf("CreateTopics %s: %v", r.Topic, r.Err)
		}
	}
	if refused != 1 || res["m1"].Err != nil {
		t.Errorf("CreateTopics of 3 × 12 partitions from a bucket of 22: %d refused (want the last), %+v", refused, res)
	}
	if hook.n.Load() == 0 {
		t.Error("CreateTopics over the quota told no throttle_time_ms")
	}
	// kgo waits the throttle out (1 s): the bucket is back to about 0, so
	// deleting m1's 12 partitions goes through and takes it to -12; then
	// CreatePartitions is refused.
	if dr, err := mut.DeleteTopics(ctx, "m1"); err != nil || dr["m1"].Err != nil {
		t.Errorf("DeleteTopics with the bucket at zero: %v %+v", err, dr)
	}
	created := "m2"
	if res["m2"].Err != nil {
		created = "m3"
	}
	if cp, err := mut.CreatePartitions(ctx, 1, created); err != nil || !errors.Is(cp[created].Err, kerr.ThrottlingQuotaExceeded) {
		t.Errorf("CreatePartitions below zero: %v %+v", err, cp)
	}
	// Other clients are not held by mutator's quota.
	if res, err := adm.CreateTopics(ctx, 12, 1, nil, "other"); err != nil || res["other"].Err != nil {
		t.Errorf("CreateTopics by another client: %v %+v", err, res)
	}
	// Permissive before v6: created, and throttled (compat's raw
	// connection sends the version asked for, as client id "raw").
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 5, 10000
	for _, name := range []string{"o1", "o2", "o3"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 12, 1
		req.Topics = append(req.Topics, rt)
	}
	cr := dialRaw(t, addr).roundTrip(req).(*kmsg.CreateTopicsResponse)
	for _, rt := range cr.Topics {
		if rt.ErrorCode != 0 {
			t.Errorf("CreateTopics v5 %s: %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
		}
	}
	// 36 partitions from a bucket of 22 at 2/s: 7 s below zero.
	if cr.ThrottleMillis < 6500 || cr.ThrottleMillis > 7000 {
		t.Errorf("CreateTopics v5 over the quota: throttle_time_ms %d, want about 7000", cr.ThrottleMillis)
	}
}

// request_percentage: a client whose requests take more of the broker's
// time than its quota (here 0.01% of one thread) is told throttle_time_ms
// and muted; another client is not.
func TestRequestPercentageQuota(t *testing.T) {
	addr := testutil.StartBroker(t, nil).Addr()
	adm := newAdmin(t, addr)
	ctx := testCtx(t, 60*time.Second)
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: kmsgStr("raw")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 0.01}},
	}}); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, addr) // client id "raw"
	metadata := func() *kmsg.MetadataResponse {
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 9
		return c.roundTrip(md).(*kmsg.MetadataResponse)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		c.c.SetDeadline(time.Now().Add(20 * time.Second))
		if resp := metadata(); resp.ThrottleMillis == 0 {
			return errors.New("no throttle_time_ms yet")
		}
		return nil
	})
	cl := newKgo(t, addr, kgo.ClientID("unlimited"))
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ThrottleMillis != 0 {
		t.Errorf("another client's Metadata: throttle_time_ms %d", resp.ThrottleMillis)
	}
}
