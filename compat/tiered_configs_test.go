package compat

// Tiered storage's configuration (KIP-405, KIP-950, issue 26) as Kafka
// 4.4 validates it. Kafka answers only what it can without a
// RemoteStorageManager plugin on its class path (the broker's
// remote.log.storage.system.enable off); samsa's answers with it on are
// checked against Kafka's rules and messages in TestTieredConfigsEnabled
// (and internal/config's TestValidateTopicChange).

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/s3test"
)

// tieredServerProps are a Kafka server.properties' settings of Aiven's
// tiered storage plugin with its S3 backend (system enable left to the
// caller), naming a store nobody serves.
func tieredServerProps(enable string) map[string]string {
	st := s3test.Store{Endpoint: "http://127.0.0.1:1", Bucket: "tiered"}
	return st.TieredProps("remote.log.storage.system.enable", enable)
}

// tieredConfigProbe creates topics and alters them with tiered storage's
// topic configs, recording each answer (code and message).
func tieredConfigProbe(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	c := admDial(t, addr)
	create := func(what, topic string, validateOnly bool, kv ...string) {
		out["create: "+what] = probeCreate(c, topic, validateOnly, kv...)
	}
	incr := func(what, topic string, kv ...string) {
		_, out["incremental: "+what] = probeIncremental(c, kmsg.ConfigResourceTypeTopic, topic, false, kv...)
	}
	create("remote storage", "tiered-a", false, "remote.storage.enable", "true")
	create("remote storage, compacted", "tiered-x", true, "remote.storage.enable", "true", "cleanup.policy", "compact")
	create("local retention unbounded, retention bounded", "tiered-x", true, "local.retention.ms", "-1", "retention.ms", "1000")
	create("local retention above retention", "tiered-x", true, "local.retention.bytes", "2000", "retention.bytes", "1000")
	create("copy disabled, local retention differs", "tiered-x", true, "remote.log.copy.disable", "true", "local.retention.ms", "10", "retention.ms", "1000")
	create("local retention", "tiered-b", false, "local.retention.bytes", "5", "remote.log.delete.on.disable", "false")
	incr("remote storage on", "tiered-b", "remote.storage.enable", "true")
	incr("remote storage off", "tiered-b", "remote.storage.enable", "false")
	incr("local retention unbounded", "tiered-b", "local.retention.ms", "-1", "retention.ms", "5")
	incr("copy disabled, local retention differs", "tiered-b", "remote.log.copy.disable", "true")
	incr("copy disabled, same retention", "tiered-b", "remote.log.copy.disable", "true", "local.retention.bytes", "-2")
	incr("remote storage off, deleting", "tiered-b", "remote.storage.enable", "false", "remote.log.delete.on.disable", "true")
	return out
}

// TestTieredConfigsKafkaReference: with the Aiven S3 plugin's properties
// in its server.properties and tiered storage off, Kafka 4.4 and samsa
// start, and answer tiered storage's topic configs alike.
func TestTieredConfigsKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRefWith(t, tieredServerProps("false"))
	n := admBroker(t, tieredServerProps("false"))
	compareProbes(t, tieredConfigProbe(t, kb.Addr), tieredConfigProbe(t, n.Addr()))
}

// TestTieredConfigsEnabled: with remote.log.storage.system.enable=true a
// topic may be created with remote.storage.enable=true, and Kafka's rules
// for tiered topics hold over the broker's defaults (local retention
// within retention, no turning it off without deleting the remote
// data), but for one: compacted topics may be tiered, where Kafka
// refuses them.
func TestTieredConfigsEnabled(t *testing.T) {
	t.Parallel()
	props := tieredServerProps("true")
	props["log.retention.ms"] = "100000"
	n := admBroker(t, props)
	got := tieredConfigProbe(t, n.Addr())
	const ok = `error 0 "<nil>"`
	// A compacted tiered topic: Kafka 4.4 answers error 40 "Remote log
	// storage only supports topics with cleanup.policy=delete or
	// cleanup.policy being an empty list."; samsa compacts remote
	// segments too (tiered/compact.go).
	want := map[string]string{
		"create: remote storage":                               ok,
		"create: remote storage, compacted":                    ok,
		"create: local retention unbounded, retention bounded": ok,
		"create: local retention above retention":              ok,
		"create: copy disabled, local retention differs":       ok,
		"create: local retention":                              ok,
		"incremental: remote storage on":                       ok,
		"incremental: remote storage off":                      `error 40 "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote data and turn to read only, please set ` + "`remote.storage.enable=true,remote.log.copy.disable=true`. If you want to disable remote storage and delete all remote data, please set `remote.storage.enable=false,remote.log.delete.on.disable=true`." + `"`,
		"incremental: local retention unbounded":               `error 40 "Invalid value -1 for configuration local.retention.ms: Value must not be -1 as retention.ms value is set as 5."`,
		"incremental: copy disabled, local retention differs":  "error 40 \"When `remote.log.copy.disable` is set to true, the `local.retention.bytes` and `retention.bytes` must be set to the identical value because there will be no more logs copied to the remote storage.\"",
		"incremental: copy disabled, same retention":           ok,
		"incremental: remote storage off, deleting":            ok,
	}
	if len(got) != len(want) {
		t.Errorf("%d answers, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], w)
		}
	}
	// Over the broker's retention (log.retention.ms 100000).
	c := admDial(t, n.Addr())
	if _, a := probeIncremental(c, kmsg.ConfigResourceTypeTopic, "tiered-a", false, "remote.storage.enable", "true", "local.retention.ms", "200000"); a != `error 40 "Invalid value 200000 for configuration local.retention.ms: Value must not be more than retention.ms property value: 100000"` {
		t.Errorf("local.retention.ms over the broker's retention: %s", a)
	}
}
