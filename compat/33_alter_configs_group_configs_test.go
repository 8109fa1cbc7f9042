package compat

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestGroupConfigsKafkaReference puts the same DescribeConfigs,
// IncrementalAlterConfigs and AlterConfigs requests on the GROUP resource
// (good values, values out of Kafka's and the broker's ranges, unknown
// names, the empty group) to Apache Kafka 4.4 and to samsa, and compares
// every answer: codes, messages, values, sources and synonyms.
func TestGroupConfigsKafkaReference(t *testing.T) {
	t.Parallel()
	probeKafkaAndSamsa(t, nil, groupConfigProbe)
}

// compareProbes fails the test for every answer samsa gives that differs
// from Kafka's to the same question (probe maps: question -> answer).
// probeKafkaAndSamsa puts probe to Apache Kafka 4.4 and then to a samsa
// broker, both started with props, and compares their answers.
func probeKafkaAndSamsa(t *testing.T, props map[string]string, probe func(t *testing.T, addr string) map[string]string) {
	t.Helper()
	kb, _ := startKafkaRefWith(t, props)
	n := admBroker(t, props)
	kafka, samsa := probe(t, kb.Addr), probe(t, n.Addr())
	compareProbes(t, kafka, samsa)
}

// compareProbes fails t unless samsa answered every probe as Kafka did
// (and Kafka answered any).
func compareProbes(t *testing.T, kafka, samsa map[string]string) {
	t.Helper()
	if len(kafka) == 0 {
		t.Error("probes: no answers from Kafka to compare with")
	}
	if len(kafka) != len(samsa) {
		t.Errorf("probes: %d answers from Kafka, %d from samsa", len(kafka), len(samsa))
	}
	for _, k := range slices.Sorted(maps.Keys(kafka)) {
		if samsa[k] != kafka[k] {
			t.Errorf("%s:\n samsa %s\n Kafka %s", k, samsa[k], kafka[k])
		}
	}
}

// probeIncremental sends one IncrementalAlterConfigs of a resource and
// returns its answer: the code, and the code and message as a probe
// records them. kv are name, value pairs: a value "-" deletes the name,
// "+v" appends v, any other sets it.
func probeIncremental(c *admConn, typ kmsg.ConfigResourceType, name string, validateOnly bool, kv ...string) (int16, string) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	eachPair(kv, func(k, v string) {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name = k
		switch {
		case v == "-":
			cfg.Op = kmsg.IncrementalAlterConfigOpDelete
		case strings.HasPrefix(v, "+"):
			cfg.Op, cfg.Value = kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr(v[1:])
		default:
			cfg.Value = kmsg.StringPtr(v)
		}
		rr.Configs = append(rr.Configs, cfg)
	})
	req.Resources = append(req.Resources, rr)
	r := c.roundTrip(req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	return r.ErrorCode, probeAnswer(r.ErrorCode, r.ErrorMessage)
}

// probeAlter sends one AlterConfigs of a resource (kv: name, value
// pairs) and returns its answer as a probe records it.
func probeAlter(c *admConn, typ kmsg.ConfigResourceType, name string, kv ...string) string {
	req := kmsg.NewPtrAlterConfigsRequest()
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	eachPair(kv, func(k, v string) {
		cfg := kmsg.NewAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rr.Configs = append(rr.Configs, cfg)
	})
	req.Resources = append(req.Resources, rr)
	r := c.roundTrip(req, 2).(*kmsg.AlterConfigsResponse).Resources[0]
	return probeAnswer(r.ErrorCode, r.ErrorMessage)
}

// eachPair calls f with each name, value pair of kv.
func eachPair(kv []string, f func(k, v string)) {
	for i := 0; i+1 < len(kv); i += 2 {
		f(kv[i], kv[i+1])
	}
}

// probeAnswer is an error code and message as a probe records them.
func probeAnswer(code int16, msg *string) string {
	return fmt.Sprintf("error %d %q", code, derefStr(msg))
}

func groupConfigProbe(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	c := admDial(t, addr)
	group := "gcfg-probe"
	cfgs := configProber{t: t, c: c, out: out, typ: kmsg.ConfigResourceTypeGroupConfig}
	incr, alter, describe, list := cfgs.incr, cfgs.alter, cfgs.describe, cfgs.list
	describe("no configs", group, nil)
	incr("set two", group, false, "consumer.session.timeout.ms", "50000", "streams.num.standby.replicas", "1")
	describe("two set", group, map[string]string{"consumer.session.timeout.ms": "50000", "streams.num.standby.replicas": "1"})
	describe("one named", group, nil, "consumer.session.timeout.ms")
	describe("an internal one named", group, nil, "streams.num.warmup.replicas")
	incr("session below the broker's minimum", group, false, "consumer.session.timeout.ms", "5000")
	incr("session above the broker's maximum", group, false, "consumer.session.timeout.ms", "70000")
	incr("heartbeat above the broker's maximum", group, false, "consumer.heartbeat.interval.ms", "60000")
	incr("heartbeat not a number", group, false, "consumer.heartbeat.interval.ms", "abc")
	incr("boolean not a boolean", group, false, "share.renew.acknowledge.enable", "yes")
	incr("unknown name", group, false, "bogus.config", "1")
	incr("an internal one", group, false, "streams.num.warmup.replicas", "1")
	incr("standbys above the broker's maximum", group, false, "streams.num.standby.replicas", "9")
	incr("lock duration below its minimum", group, false, "share.record.lock.duration.ms", "500")
	incr("delivery count limit above the broker's maximum", group, false, "share.delivery.count.limit", "11")
	incr("bad auto offset reset", group, false, "share.auto.offset.reset", "bad")
	incr("auto offset reset by duration", group, false, "share.auto.offset.reset", "by_duration:PT1H")
	incr("bad isolation level", group, false, "share.isolation.level", "dirty")
	incr("registered assignor", group, false, "streams.assignor.name", "sticky")
	incr("unregistered assignor", group, false, "streams.assignor.name", "bogus")
	incr("internal dlq topic", group, false, "errors.deadletterqueue.topic.name", "__dlq")
	incr("dlq topic", group, false, "errors.deadletterqueue.topic.name", "dlq")
	incr("append a rack tag", group, false, "streams.rack.aware.assignment.tags", "+zone")
	incr("rack tags", group, false, "streams.rack.aware.assignment.tags", "zone,region")
	incr("duplicate rack tags", group, false, "streams.rack.aware.assignment.tags", "zone,zone")
	incr("heartbeat as long as the session", group, false, "streams.session.timeout.ms", "45000", "streams.heartbeat.interval.ms", "45000")
	incr("the default group", "", false, "consumer.session.timeout.ms", "50000")
	incr("validate only", "gcfg-probe-other", true, "consumer.session.timeout.ms", "50000")
	describe("after validate only", "gcfg-probe-other", nil)
	describe("many set", group, map[string]string{"streams.rack.aware.assignment.tags": "zone,region", "errors.deadletterqueue.topic.name": "dlq"})
	list("all types")
	list("groups", int8(kmsg.ConfigResourceTypeGroupConfig))
	list("brokers and loggers", int8(kmsg.ConfigResourceTypeBroker), int8(kmsg.ConfigResourceTypeBrokerLogger))
	list("client metrics", int8(kmsg.ConfigResourceTypeClientMetrics))
	list("an unknown type", 99)
	alter("replace the set", group, "consumer.heartbeat.interval.ms", "6000")
	describe("replaced", group, map[string]string{"consumer.heartbeat.interval.ms": "6000", "consumer.session.timeout.ms": "45000"})
	incr("delete the last", group, false, "consumer.heartbeat.interval.ms", "-")
	describe("all deleted", group, map[string]string{"consumer.heartbeat.interval.ms": "5000"})
	describe("the default group", "", nil)
	return out
}

// Group configs act on the groups they name, set through any broker of a
// cluster: a KIP-848 member of a group with consumer.heartbeat.interval.ms
// is told that interval, and one with consumer.session.timeout.ms shorter
// than the broker's is removed once it stops heartbeating, while a member
// of another group keeps the broker's values. kafka-configs.sh
// --entity-type groups (Kafka 4.4) sets, describes and deletes them.
func TestGroupConfigsApplied(t *testing.T) {
	t.Parallel()
	cl := testutil.StartCluster(t, 2, map[string]string{
		"group.consumer.min.session.timeout.ms":    "1000",
		"group.consumer.min.heartbeat.interval.ms": "500",
		"offsets.topic.replication.factor":         "1",
	})
	a, b := cl.Nodes[0].Addr(), cl.Nodes[1].Addr()
	admA, clA := admAdmin(t, a)
	topic := admTopic("gcfg")
	admCreate(t, admA, topic, 2, 1, nil)

	short, other := "gcfg-short", "gcfg-other"
	alterGroup(t, clA, short, "consumer.heartbeat.interval.ms", "700")
	alterGroup(t, clA, short, "consumer.session.timeout.ms", "3000")
	// The other broker has it from etcd's watch.
	admB, clB := admAdmin(t, b)
	testutil.Eventually(t, 20*time.Second, func() error {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, short
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(admCtx(t, admTimeout), clB)
		if err != nil {
			return err
		}
		for _, c := range resp.Resources[0].Configs {
			if c.Name == "consumer.session.timeout.ms" && derefStr(c.Value) == "3000" && c.Source == kmsg.ConfigSourceGroupConfig {
				return nil
			}
		}
		return fmt.Errorf("broker 2 does not describe consumer.session.timeout.ms=3000 yet: %+v", resp.Resources)
	})

	join := func(group, member string) *kmsg.ConsumerGroupHeartbeatResponse {
		var resp *kmsg.ConsumerGroupHeartbeatResponse
		testutil.Eventually(t, 30*time.Second, func() error {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.MemberEpoch = group, member, 0
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicNames = []string{topic}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			r, err := req.RequestWith(admCtx(t, admTimeout), clB)
			if err != nil {
				return err
			}
			if r.ErrorCode != 0 {
				return fmt.Errorf("join %s: %v %s", group, kerr.ErrorForCode(r.ErrorCode), derefStr(r.ErrorMessage))
			}
			resp = r
			return nil
		})
		return resp
	}
	if r := join(short, "member-short-0000000000"); r.HeartbeatIntervalMillis != 700 {
		t.Errorf("heartbeat interval of a member of %s: %d ms, want its group config's 700", short, r.HeartbeatIntervalMillis)
	}
	if r := join(other, "member-other-0000000000"); r.HeartbeatIntervalMillis != 5000 {
		t.Errorf("heartbeat interval of a member of %s: %d ms, want the broker's 5000", other, r.HeartbeatIntervalMillis)
	}
	// Neither member heartbeats again: the one with the 3 s session goes.
	members := func(group string) int {
		ds, err := admB.DescribeConsumerGroups(admCtx(t, admTimeout), group)
		if err != nil {
			t.Fatalf("DescribeConsumerGroups %s: %v", group, err)
		}
		return len(ds[group].Members)
	}
	start := time.Now()
	testutil.Eventually(t, 30*time.Second, func() error {
		if n := members(short); n != 0 {
			return fmt.Errorf("%s still has %d members", short, n)
		}
		return nil
	})
	if took := time.Since(start); members(other) != 1 {
		t.Errorf("%s lost its member within %v, under the broker's 45 s session timeout", other, took)
	}

	// kadm's ListConfigResources names the group with configs, the
	// brokers and the topic.
	listed, err := admB.ListConfigResources(admCtx(t, admTimeout))
	if err != nil {
		t.Fatalf("ListConfigResources: %v", err)
	}
	var names []string
	if listed.Err != nil {
		t.Fatalf("ListConfigResources: %v", listed.Err)
	}
	for _, r := range listed.Sorted() {
		names = append(names, fmt.Sprintf("%d:%s", r.Type, r.Name))
	}
	for _, want := range []string{"32:" + short, "4:1", "4:2", "8:1", "2:" + topic} {
		if !slices.Contains(names, want) {
			t.Errorf("ListConfigResources: %v, want %s among them", names, want)
		}
	}

	// kafka-configs.sh --entity-type groups.
	ctx := testCtx(t, 3*time.Minute)
	run := func(args ...string) string {
		t.Helper()
		return runKafkaTool(t, ctx, "", "org.apache.kafka.tools.ConfigCommand", append([]string{"--bootstrap-server", a}, args...)...)
	}
	run("--entity-type", "groups", "--entity-name", "gcfg-tool", "--alter", "--add-config", "consumer.heartbeat.interval.ms=6000,streams.num.standby.replicas=1")
	out := run("--entity-type", "groups", "--entity-name", "gcfg-tool", "--describe")
	for _, want := range []string{"consumer.heartbeat.interval.ms=6000", "streams.num.standby.replicas=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("kafka-configs --describe groups gcfg-tool:\n%s\nwant %s", out, want)
		}
	}
	run("--entity-type", "groups", "--entity-name", "gcfg-tool", "--alter", "--delete-config", "consumer.heartbeat.interval.ms")
	out = run("--entity-type", "groups", "--entity-name", "gcfg-tool", "--describe")
	if strings.Contains(out, "consumer.heartbeat.interval.ms=6000") || !strings.Contains(out, "streams.num.standby.replicas=1") {
		t.Errorf("after --delete-config consumer.heartbeat.interval.ms, describe:\n%s", out)
	}
}

// alterGroup sets one group config with IncrementalAlterConfigs (kadm has
// no call for the GROUP resource) and fails the test unless the broker
// takes it.
func alterGroup(t *testing.T, cl *kgo.Client, group, name, value string) {
	t.Helper()
	alterConfig(t, cl, kmsg.ConfigResourceTypeGroupConfig, group, name, value)
}

// alterConfig sets name=value on a resource with IncrementalAlterConfigs
// and fails the test unless it succeeds.
func alterConfig(t *testing.T, cl *kgo.Client, typ kmsg.ConfigResourceType, resource, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, resource
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(admCtx(t, admTimeout), cl)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs %s %s=%s: %v", resource, name, value, err)
	}
	if r := resp.Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs %s %s=%s: %v (%s)", resource, name, value, kerr.ErrorForCode(r.ErrorCode), derefStr(r.ErrorMessage))
	}
}
