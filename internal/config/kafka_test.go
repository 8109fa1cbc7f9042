package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The generated table is Kafka 4.4's: its size and a few entries as
// KafkaConfig.configDef prints them (kafka-server-start.sh --help-config
// style: type, default, valid values, dynamic).
func TestKafkaDefsTable(t *testing.T) {
	if KafkaVersion != "4.4.0" {
		t.Fatalf("KafkaVersion = %q", KafkaVersion)
	}
	defs := KafkaDefs()
	if len(defs) != 379 {
		t.Errorf("%d Kafka broker properties, want 379 (Kafka 4.4.0's KafkaConfig.configDef)", len(defs))
	}
	if !slices.IsSortedFunc(defs, func(a, b KafkaDef) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("kafkaDefs is not sorted by name")
	}
	for i := 1; i < len(defs); i++ {
		if defs[i].Name == defs[i-1].Name {
			t.Errorf("%s listed twice", defs[i].Name)
		}
	}
	s := func(v string) *string { return &v }
	checks := []KafkaDef{
		{Name: "node.id", Type: kmsg.ConfigTypeInt, Required: true, Valid: "[0,...]", Importance: "high"},
		{Name: "process.roles", Type: kmsg.ConfigTypeList, Required: true, Valid: "[broker, controller]", Importance: "high"},
		{Name: "log.segment.bytes", Type: kmsg.ConfigTypeInt, Default: s("1073741824"), Valid: "[1048576,...]", Importance: "high", Dynamic: true},
		{Name: "num.network.threads", Type: kmsg.ConfigTypeInt, Default: s("3"), Valid: "[1,...]", Importance: "high", Dynamic: true},
		{Name: "message.max.bytes", Type: kmsg.ConfigTypeInt, Default: s("1048588"), Valid: "[0,...]", Importance: "high", Dynamic: true},
		{Name: "broker.rack", Type: kmsg.ConfigTypeString, Importance: "medium"},
		{Name: "sasl.jaas.config", Type: kmsg.ConfigTypePassword, Importance: "medium", Dynamic: true},
		{Name: "metric.reporters", Type: kmsg.ConfigTypeList, Default: s("org.apache.kafka.common.metrics.JmxReporter"), Importance: "low", Dynamic: true},
	}
	for _, want := range checks {
		got, ok := KafkaBrokerDef(want.Name)
		if !ok {
			t.Errorf("%s: not in the table", want.Name)
			continue
		}
		got.Doc = ""
		if got.Name != want.Name || got.Type != want.Type || got.Required != want.Required || got.Valid != want.Valid ||
			got.Importance != want.Importance || got.Dynamic != want.Dynamic || (got.Default == nil) != (want.Default == nil) ||
			(got.Default != nil && *got.Default != *want.Default) {
			t.Errorf("%s: got %+v (default %v), want %+v", want.Name, got, deref(got.Default), want)
		}
	}
	for _, name := range []string{"ssl.keystore.location", "sasl.enabled.mechanisms", "replica.selector.class", "group.consumer.heartbeat.interval.ms", "controller.quorum.voters"} {
		if _, ok := KafkaBrokerDef(name); !ok {
			t.Errorf("%s: not in the table", name)
		}
	}
}

// samsa's own definitions agree with Kafka's on type and default, except
// where samsa says it differs.
func TestSamsaDefsAgreeWithKafka(t *testing.T) {
	differs := map[string]bool{ // documented in doc.go and README.md
		"node.id": true, "listeners": true, "log.dir": true,
		"process.roles": true, // Kafka requires it; samsa runs one broker without it
		// -1 (the kernel's autotuning): a fixed 100 KB SO_SNDBUF costs a
		// sendfile wake-up per 200 KB of a Fetch (make bench, pinned)
		"socket.send.buffer.bytes": true, "socket.receive.buffer.bytes": true,
	}
	typeDiffers := map[string]bool{
		"log.dir": true, // a LIST in Kafka 4.4; samsa reads one directory from it (log.dirs is the list)
	}
	for _, d := range brokerDefs {
		k, ok := kafkaIndex[d.Name]
		if !ok {
			continue
		}
		if d.Type != k.Type && !typeDiffers[d.Name] {
			t.Errorf("%s: samsa type %v, Kafka's %v", d.Name, d.Type, k.Type)
		}
		if differs[d.Name] {
			continue
		}
		if deref(d.Default) != deref(k.Default) {
			t.Errorf("%s: samsa default %s, Kafka's %s", d.Name, deref(d.Default), deref(k.Default))
		}
	}
}

// A Kafka property samsa does not implement is accepted, type-checked
// and reported by Ignored; a per-listener one too; a name Kafka does not
// know is still an error.
func TestKafkaOnlyPropertiesAccepted(t *testing.T) {
	p, err := New(map[string]string{
		"metric.reporters":                              "org.example.Reporter",
		"ssl.keymanager.algorithm":                      "SunX509",
		"num.replica.alter.log.dirs.threads":            "2",
		"group.share.assignment.interval.ms":            "5000",
		"listener.name.plaintext.ssl.provider":          "SunJSSE",
		"listener.name.external.plain.sasl.jaas.config": "secret",
		"num.network.threads":                           "3",
		"num.partitions":                                "3",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"group.share.assignment.interval.ms",
		"listener.name.plaintext.ssl.provider", "metric.reporters", "num.network.threads",
		"num.replica.alter.log.dirs.threads", "ssl.keymanager.algorithm"}
	if got := p.Ignored(); !slices.Equal(got, want) {
		t.Errorf("Ignored = %v\nwant      %v", got, want)
	}
	if v, ok := p.Lookup("group.share.assignment.interval.ms"); !ok || v != "5000" {
		t.Errorf("Lookup = %q %v", v, ok)
	}

	bad := []struct {
		props    map[string]string
		sentinel error
		contains string
	}{
		{map[string]string{"group.share.assignment.interval.ms": "soon"}, ErrInvalidConfig, "group.share.assignment.interval.ms"},
		{map[string]string{"leader.imbalance.per.brokers.percentage": "10"}, ErrUnknownConfig, "leader.imbalance.per.brokers.percentage"}, // no Kafka knows it
		{map[string]string{"listener.name.plaintext.no.such.thing": "1"}, ErrUnknownConfig, "listener.name.plaintext.no.such.thing"},
		{map[string]string{"listener.name.plaintext.sasl.server.max.receive.size": "lots"}, ErrInvalidConfig, "listener.name.plaintext.sasl.server.max.receive.size"},
		{map[string]string{"security.inter.broker.protocol": "SASL_SSL"}, ErrInvalidConfig, "no listener named SASL_SSL"},
		{map[string]string{"authorizer.class.name": "com.example.MyAuthorizer"}, ErrInvalidConfig, "must be one of"},
		// Kafka's validators, for the properties samsa defines and the
		// ones only Kafka does, per listener too.
		{map[string]string{"log.segment.bytes": "1048575"}, ErrInvalidConfig, "Value must be at least 1048576"},
		{map[string]string{"alter.log.dirs.replication.quota.window.num": "0"}, ErrInvalidConfig, "Value must be at least 1"},
		{map[string]string{"max.decompressed.message.bytes": "2147483640"}, ErrInvalidConfig, "Value must be no more than 2147483639"},
		{map[string]string{"listener.name.plaintext.ssl.client.auth": "maybe"}, ErrInvalidConfig, "String must be one of: required, requested, none"},
		{map[string]string{"log.cleanup.policy": "delete,delete"}, ErrInvalidConfig, "Configuration 'log.cleanup.policy' values must not be duplicated."},
		{map[string]string{"remote.log.storage.manager.class.name": ""}, ErrInvalidConfig, "String may not be empty"},
	}
	for _, c := range bad {
		_, err := New(c.props)
		if !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.contains) {
			t.Errorf("New(%v) = %v, want %v naming %q", c.props, err, c.sentinel, c.contains)
		}
	}
}

func TestLookupOfUndefinedNamePanics(t *testing.T) {
	p := mustNew(t, nil)
	for _, name := range []string{"no.such.property", "metric.reporters"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Int64(%q) did not panic", name)
				}
			}()
			p.Int64(name)
		}()
	}
}

// samsa's topic configs are Kafka 4.4's LogConfig's: the same names,
// types, defaults and internal ones, and each refuses what Kafka's
// validator refuses (TestConfigRangesKafkaReference asks Kafka itself).
func TestTopicDefsAreKafkas(t *testing.T) {
	if len(topicDefs) != len(kafkaTopicDefs) {
		t.Errorf("%d topic configs, Kafka has %d", len(topicDefs), len(kafkaTopicDefs))
	}
	for _, k := range kafkaTopicDefs {
		d, ok := topicIndex[k.Name]
		if !ok {
			t.Errorf("%s: Kafka's topic config is missing", k.Name)
			continue
		}
		def := "" // Kafka's null: internal.segment.bytes
		if k.Default != nil {
			def = *k.Default
		}
		if d.Type != k.Type || d.Default != def || d.internal != k.Internal {
			t.Errorf("%s: type %v default %q internal %v; Kafka's %v %q %v", k.Name, d.Type, d.Default, d.internal, k.Type, def, k.Internal)
		}
	}
	for _, tt := range []struct{ name, value, err string }{
		{"segment.bytes", "1048575", "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"},
		{"segment.bytes", "1048576", ""},
		{"internal.segment.bytes", "1", ""},
		{"compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{"compression.gzip.level", "-1", ""},
		{"min.cleanable.dirty.ratio", "2", "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{"min.cleanable.dirty.ratio", "NaN", ""},
		{"cleanup.policy", "compact,shred", "Invalid value shred for configuration cleanup.policy: String must be one of: compact, delete"},
		{"message.timestamp.type", "createtime", "Invalid value createtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{"segment.ms", "0", "Invalid value 0 for configuration segment.ms: Value must be at least 1"},
		{"segment.ms", "9223372036854775808", "Invalid value 9223372036854775808 for configuration segment.ms: Not a number of type LONG"},
		{"preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or false"},
	} {
		err := ValidateTopicConfigs(map[string]string{tt.name: tt.value})
		if got := fmt.Sprint(err); tt.err == "" && err != nil || tt.err != "" && got != tt.err {
			t.Errorf("%s=%s: %v, want %q", tt.name, tt.value, err, tt.err)
		}
	}
}
