package compat

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/poll"
)

// TestConfigRangesKafkaReference asks Apache Kafka 4.4 and samsa the same
// CreateTopics, IncrementalAlterConfigs and AlterConfigs requests for every
// topic config Kafka defines, with the edges of its valid range or values
// (min-1, min, max, max+1, a value of the wrong type, a value not in its
// set), and the same IncrementalAlterConfigs for every dynamic broker
// config with a range or a set of values, and compares every answer: code
// and message, Kafka's checks of a reconfiguration beyond each config's
// validator included (a thread pool resized within half and double its
// size, min.insync.replicas under ELR, the requirements between related
// configs).
func TestConfigRangesKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	n := admBroker(t, nil)
	// Kafka 4.4 formats its metadata with ELR on, which writes
	// min.insync.replicas as a cluster-wide dynamic default: the same here.
	_, cl := admAdmin(t, n.Addr())
	alterConfig(t, cl, kmsg.ConfigResourceTypeBroker, "", "min.insync.replicas", "1")
	kafka, samsa := configRangeProbe(t, kb.Addr), configRangeProbe(t, n.Addr())
	t.Logf("%d answers compared", len(kafka))
	compareProbes(t, kafka, samsa)
}

// rangeBounds matches the ranges Kafka's validators print: "[1,...]",
// "[1,...,9]", "[1,...,9] or -1".
var rangeBounds = regexp.MustCompile(`^\[(-?[0-9.]+),\.\.\.(?:,(-?[0-9.]+))?\]( or -1)?$`)

// valueSet matches the sets Kafka's validators print: "[a, b]" and
// "(case insensitive) [A, B]".
var valueSet = regexp.MustCompile(`^(?:\(case insensitive\) )?\[([A-Za-z0-9_, .-]+)\]$`)

// edgeValues are the values probed for a config of type typ valid in valid
// (Kafka's validator as it prints itself).
func edgeValues(typ kmsg.ConfigType, valid string) []string {
	var out []string
	switch typ {
	case kmsg.ConfigTypeBoolean:
		return []string{"true", "FALSE", "yes", ""}
	case kmsg.ConfigTypeInt:
		out = append(out, "abc", "1.5", "2147483647", "2147483648")
	case kmsg.ConfigTypeShort:
		out = append(out, "abc", "32767", "32768")
	case kmsg.ConfigTypeLong:
		out = append(out, "abc", "9223372036854775807", "9223372036854775808")
	case kmsg.ConfigTypeDouble:
		out = append(out, "abc", "0.25", "NaN")
	}
	if m := rangeBounds.FindStringSubmatch(valid); m != nil {
		out = append(out, around(typ, m[1])...)
		if m[2] != "" {
			out = append(out, around(typ, m[2])...)
		}
		if m[3] != "" {
			out = append(out, "-1", "-2")
		}
		return out
	}
	if m := valueSet.FindStringSubmatch(valid); m != nil {
		vals := strings.Split(m[1], ", ")
		out = append(out, vals[0], strings.ToLower(vals[0]), strings.ToUpper(vals[0]), "bogus", "")
		if typ == kmsg.ConfigTypeList {
			out = append(out, strings.Join(vals, ","), vals[0]+",bogus", vals[0]+","+vals[0], " "+vals[0]+" ")
		}
	}
	return out
}

// around is n-1, n and n+1, and for a DOUBLE n-0.1 and n+0.1 too.
func around(typ kmsg.ConfigType, n string) []string {
	f, _ := new(big.Float).SetString(n)
	var out []string
	for _, d := range []float64{-1, 0, 1} {
		out = append(out, new(big.Float).Add(f, big.NewFloat(d)).Text('f', -1))
	}
	if typ == kmsg.ConfigTypeDouble {
		for _, d := range []float64{-0.1, 0.1} {
			g, _ := new(big.Float).Add(f, big.NewFloat(d)).Float64()
			out = append(out, fmt.Sprint(g))
		}
	}
	return out
}

// topicProbeExtras are values probed beyond the edges of a config's range.
var topicProbeExtras = map[string][]string{
	"leader.replication.throttled.replicas":   {"*", "0:1,1:2", "0:x", "0-1", ""},
	"follower.replication.throttled.replicas": {"*", "0:1", "*,0:1", "a:b"},
	"internal.segment.bytes":                  {"1", "1024", "0", "-1", "abc"},
	"retention.bytes":                         {"-2", "-1", "0", "abc"},
	"segment.bytes":                           {"14", "1024"},
	"compression.type":                        {"zstd", "ZSTD", "brotli"},
	"min.compaction.lag.ms":                   {"9223372036854775807"},
	"max.compaction.lag.ms":                   {"1"},
	"remote.storage.enable":                   {"true"},
}

func configRangeProbe(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	c := admDial(t, addr)
	create := func(what, topic string, validateOnly bool, kv ...string) {
		out["create: "+what] = probeCreate(c, topic, validateOnly, kv...)
	}
	// incr sets (or with "-" deletes) k on a resource, recording the
	// answer, and returns its code.
	incr := func(what string, typ kmsg.ConfigResourceType, name string, validateOnly bool, k, v string) int16 {
		code, answer := probeIncremental(c, typ, name, validateOnly, k, v)
		out["incremental: "+what] = answer
		return code
	}
	alter := func(what, topic string, kv ...string) {
		out["alter: "+what] = probeAlter(c, kmsg.ConfigResourceTypeTopic, topic, kv...)
	}

	topic := "cfg-ranges"
	create("the probed topic", topic, false)
	for _, d := range config.KafkaTopicDefs() {
		for _, v := range append(edgeValues(d.Type, d.Valid), topicProbeExtras[d.Name]...) {
			what := fmt.Sprintf("topic %s=%q", d.Name, v)
			create(what, "cfg-ranges-new", true, d.Name, v)
			if incr(what, kmsg.ConfigResourceTypeTopic, topic, false, d.Name, v) == 0 {
				incr(what+" deleted", kmsg.ConfigResourceTypeTopic, topic, false, d.Name, "-")
			}
			alter(what, topic, d.Name, v)
		}
	}
	alter("no overrides", topic)
	create("unknown topic config", "cfg-ranges-new", true, "segment.size", "1048576")
	incr("unknown topic config", kmsg.ConfigResourceTypeTopic, topic, false, "segment.size", "1048576")
	alter("unknown topic config", topic, "segment.size", "1048576")
	create("small segments for a test", "cfg-ranges-small", false, "internal.segment.bytes", "1024")
	create("both segment sizes", "cfg-ranges-both", false, "segment.bytes", "1048576", "internal.segment.bytes", "1024")
	describeTopic(c, out, "small segments for a test", "cfg-ranges-small")
	describeTopic(c, out, "both segment sizes", "cfg-ranges-both")

	for _, d := range config.KafkaDefs() {
		if !d.Dynamic || strings.HasPrefix(d.Name, "ssl.") || strings.HasPrefix(d.Name, "sasl.") {
			continue
		}
		for _, v := range edgeValues(d.Type, d.Valid) {
			for _, res := range []string{"", "1"} {
				what := fmt.Sprintf("broker %q %s=%q", res, d.Name, v)
				incr(what, kmsg.ConfigResourceTypeBroker, res, true, d.Name, v)
			}
		}
	}
	for _, v := range []string{"abc", "1048575", "1048576"} {
		for _, res := range []string{"", "1"} {
			what := fmt.Sprintf("broker %q log.segment.bytes=%s, not validate only", res, v)
			if incr(what, kmsg.ConfigResourceTypeBroker, res, false, "log.segment.bytes", v) == 0 {
				incr(what+" deleted", kmsg.ConfigResourceTypeBroker, res, false, "log.segment.bytes", "-")
			}
		}
	}
	return out
}

// probeCreate sends a CreateTopics of one topic (one partition, one
// replica; kv: config name, value pairs) and returns its answer as a
// probe records it.
func probeCreate(c *admConn, topic string, validateOnly bool, kv ...string) string {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.ValidateOnly, req.TimeoutMillis = validateOnly, 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	eachPair(kv, func(k, v string) {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	})
	req.Topics = append(req.Topics, rt)
	r := c.roundTrip(req, 7).(*kmsg.CreateTopicsResponse).Topics[0]
	return probeAnswer(r.ErrorCode, r.ErrorMessage)
}

// describeTopic records the configs DescribeConfigs shows of topic, with
// their sources and synonyms.
func describeTopic(c *admConn, out map[string]string, what, topic string) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, rr)
	// Kafka creates a topic in the background of the CreateTopics answer:
	// its DescribeConfigs says UNKNOWN_TOPIC_OR_PARTITION until the topic
	// reaches its metadata cache (seen under load).
	var r kmsg.DescribeConfigsResponseResource
	poll.Eventually(c.t, 30*time.Second, func() error {
		r = c.roundTrip(req, 4).(*kmsg.DescribeConfigsResponse).Resources[0]
		if r.ErrorCode == kerr.UnknownTopicOrPartition.Code {
			return fmt.Errorf("describe %s: %v", topic, kerr.UnknownTopicOrPartition)
		}
		return nil
	})
	var names []string
	for _, cfg := range r.Configs {
		names = append(names, cfg.Name)
		var syn []string
		for _, s := range cfg.ConfigSynonyms {
			syn = append(syn, fmt.Sprintf("%s=%s/%d", s.Name, derefStr(s.Value), s.Source))
		}
		out["describe: "+what+": "+cfg.Name] = fmt.Sprintf("%s source %d type %d readOnly %v synonyms %v", derefStr(cfg.Value), cfg.Source, cfg.ConfigType, cfg.ReadOnly, syn)
	}
	slices.Sort(names) // Kafka's are in no order
	out["describe: "+what] = fmt.Sprintf("error %d, configs %v", r.ErrorCode, names)
}
