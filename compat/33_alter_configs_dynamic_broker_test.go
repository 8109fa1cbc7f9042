package compat

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// brokerConfig describes one config of the BROKER resource name.
func brokerConfig(t testing.TB, adm *kadm.Client, name, config string) (kadm.Config, bool) {
	t.Helper()
	var rcs kadm.ResourceConfigs
	var err error
	if name == "" {
		rcs, err = adm.DescribeBrokerConfigs(testCtx(t, 10*time.Second))
	} else {
		rcs, err = adm.DescribeBrokerConfigs(testCtx(t, 10*time.Second), mustAtoi32(t, name))
	}
	if err != nil {
		t.Fatalf("DescribeBrokerConfigs %q: %v", name, err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("DescribeBrokerConfigs %q: %v", name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key == config {
				return c, true
			}
		}
	}
	return kadm.Config{}, false
}

func mustAtoi32(t testing.TB, s string) int32 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		t.Fatalf("not a broker id: %q", s)
	}
	return int32(n)
}

// Dynamic broker configs through kadm: the cluster-wide default and a
// broker's own, stored in etcd and in effect at once (message.max.bytes,
// the default of every topic's max.message.bytes, refuses a large record
// without a restart), reported with Kafka's sources, kept across a
// restart; what Kafka refuses is refused with its codes.
func TestDynamicBrokerConfigs(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	cl := newKgo(t, n.Addr(), kgo.ProducerLinger(0), kgo.RecordRetries(0), kgo.ProducerBatchMaxBytes(1<<20))
	adm := kadm.NewClient(cl)
	const topic = "dyn"
	createTopic(t, adm, topic, 1, nil)
	big := make([]byte, 20_000) // random: it must not compress below the limit
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	produceAll(t, cl, &kgo.Record{Topic: topic, Value: big})

	alter := func(name string, op kadm.IncrementalOp, key, value string) error {
		t.Helper()
		ac := []kadm.AlterConfig{{Op: op, Name: key, Value: strp(value)}}
		var rs kadm.AlterConfigsResponses
		var err error
		if name == "" {
			rs, err = adm.AlterBrokerConfigs(testCtx(t, 10*time.Second), ac)
		} else {
			rs, err = adm.AlterBrokerConfigs(testCtx(t, 10*time.Second), ac, mustAtoi32(t, name))
		}
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				return r.Err
			}
		}
		return nil
	}

	// The cluster-wide default.
	if err := alter("", kadm.SetConfig, "message.max.bytes", "10000"); err != nil {
		t.Fatalf("set message.max.bytes at the default: %v", err)
	}
	c, ok := brokerConfig(t, adm, "", "message.max.bytes")
	if !ok || c.MaybeValue() != "10000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("default resource: message.max.bytes %+v (listed %v), want 10000 from DYNAMIC_DEFAULT_BROKER_CONFIG", c, ok)
	}
	if _, ok := brokerConfig(t, adm, "", "log.retention.ms"); ok {
		t.Errorf("the default resource lists log.retention.ms, which is not set there")
	}
	c, _ = brokerConfig(t, adm, "1", "message.max.bytes")
	if c.MaybeValue() != "10000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("broker 1: message.max.bytes %q from %v, want 10000 from DYNAMIC_DEFAULT_BROKER_CONFIG", c.MaybeValue(), c.Source)
	}
	tc, err := adm.DescribeTopicConfigs(testCtx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := tc.On(topic, nil); err != nil {
		t.Fatal(err)
	} else {
		for _, c := range v.Configs {
			if c.Key == "max.message.bytes" && (c.MaybeValue() != "10000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig) {
				t.Errorf("topic max.message.bytes %q from %v, want 10000 from DYNAMIC_DEFAULT_BROKER_CONFIG", c.MaybeValue(), c.Source)
			}
		}
	}
	err = cl.ProduceSync(testCtx(t, 10*time.Second), &kgo.Record{Topic: topic, Value: big}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("a 20 kB record under a dynamic message.max.bytes of 10000: %v, want MESSAGE_TOO_LARGE", err)
	}

	// The broker's own beats the default.
	if err := alter("1", kadm.SetConfig, "message.max.bytes", "50000"); err != nil {
		t.Fatalf("set message.max.bytes on broker 1: %v", err)
	}
	c, _ = brokerConfig(t, adm, "1", "message.max.bytes")
	if c.MaybeValue() != "50000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig || len(c.Synonyms) < 3 ||
		c.Synonyms[1].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("broker 1: message.max.bytes %+v, want 50000 from DYNAMIC_BROKER_CONFIG over the default's 10000", c)
	}
	produceAll(t, cl, &kgo.Record{Topic: topic, Value: big})

	// What Kafka refuses.
	for _, tt := range []struct {
		name, key, value string
		want             *kerr.Error
	}{
		{"1", "log.dirs", "/elsewhere", kerr.InvalidRequest},
		{"", "listeners", "PLAINTEXT://127.0.0.1:1", kerr.InvalidRequest},
		{"", "message.max.bytes", "lots", kerr.InvalidRequest}, // as Kafka 4.4: TestConfigRangesKafkaReference
		{"", "no.such.config", "1", kerr.InvalidConfig},
	} {
		if err := alter(tt.name, kadm.SetConfig, tt.key, tt.value); !errors.Is(err, tt.want) {
			t.Errorf("set %s=%s on %q: %v, want %v", tt.key, tt.value, tt.name, err, tt.want)
		}
	}

	// Kept across a restart; then deleted, the static value is back.
	n.Restart()
	cl2 := newKgo(t, n.Addr())
	adm2 := kadm.NewClient(cl2)
	c, _ = brokerConfig(t, adm2, "1", "message.max.bytes")
	if c.MaybeValue() != "50000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("after a restart: message.max.bytes %q from %v, want 50000 from DYNAMIC_BROKER_CONFIG", c.MaybeValue(), c.Source)
	}
	adm = adm2
	for _, name := range []string{"1", ""} {
		if err := alter(name, kadm.DeleteConfig, "message.max.bytes", ""); err != nil {
			t.Fatalf("delete message.max.bytes on %q: %v", name, err)
		}
	}
	// The broker applies a change through its etcd watch (as Kafka's
	// brokers do through the metadata log): poll.
	testutil.Eventually(t, 30*time.Second, func() error {
		c, _ := brokerConfig(t, adm2, "1", "message.max.bytes")
		if c.Source != kmsg.ConfigSourceDefaultConfig {
			return fmt.Errorf("after deleting both: message.max.bytes %q from %v, want the default", c.MaybeValue(), c.Source)
		}
		return nil
	})
}

// A dynamic default set on one broker reaches the others through the
// watch: every broker of a cluster applies it.
func TestClusterDynamicDefaultReachesEveryBroker(t *testing.T) {
	c := testutil.StartCluster(t, 3, nil)
	adm := kadm.NewClient(newClusterKgo(t, c))
	rs, err := adm.AlterBrokerConfigs(testCtx(t, 10*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: strp("123456")}})
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range c.Nodes {
		a := newAdmin(t, node.Addr())
		id := node.NodeID()
		testutil.Eventually(t, 30*time.Second, func() error {
			rcs, err := a.DescribeBrokerConfigs(testCtx(t, 10*time.Second), id)
			if err != nil {
				return err
			}
			for _, rc := range rcs {
				for _, cfg := range rc.Configs {
					if cfg.Key == "log.retention.ms" && cfg.MaybeValue() == "123456" {
						return nil
					}
				}
			}
			return errors.New("log.retention.ms not yet 123456")
		})
	}
}

// kafka-configs.sh from Kafka 4.4 sets, describes and deletes the
// cluster-wide default and a broker's own config.
func TestKafkaConfigsToolBrokers(t *testing.T) {
	t.Parallel()
	n := testutil.StartBroker(t, nil)
	ctx := testCtx(t, 3*time.Minute)
	run := func(args ...string) string {
		t.Helper()
		return runKafkaTool(t, ctx, "", "org.apache.kafka.tools.ConfigCommand", append([]string{"--bootstrap-server", n.Addr()}, args...)...)
	}
	run("--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "log.cleaner.backoff.ms=20000")
	run("--entity-type", "brokers", "--entity-name", "1", "--alter", "--add-config", "log.retention.ms=7200000")
	out := run("--entity-type", "brokers", "--entity-default", "--describe")
	if !strings.Contains(out, "log.cleaner.backoff.ms=20000") {
		t.Errorf("describe --entity-default:\n%s\nwant log.cleaner.backoff.ms=20000", out)
	}
	out = run("--entity-type", "brokers", "--entity-name", "1", "--describe")
	if !strings.Contains(out, "log.retention.ms=7200000") {
		t.Errorf("describe broker 1:\n%s\nwant log.retention.ms=7200000", out)
	}
	run("--entity-type", "brokers", "--entity-name", "1", "--alter", "--delete-config", "log.retention.ms")
	out = run("--entity-type", "brokers", "--entity-name", "1", "--describe")
	if strings.Contains(out, "log.retention.ms=7200000") {
		t.Errorf("after --delete-config, describe broker 1 still shows it:\n%s", out)
	}
}
