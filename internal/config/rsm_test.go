package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// tieredProps are the broker properties of a Kafka server.properties with
// Aiven's plugin and its S3 backend.
func tieredProps(extra ...string) map[string]string {
	m := map[string]string{
		"remote.log.storage.system.enable":                         "true",
		"remote.log.storage.manager.class.name":                    AivenRSMClass,
		"remote.log.storage.manager.class.path":                    "/opt/tiered-storage/core/*:/opt/tiered-storage/s3/*",
		"rsm.config.storage.backend.class":                         AivenS3BackendClass,
		"rsm.config.chunk.size":                                    "4194304",
		"rsm.config.storage.s3.bucket.name":                        "tiered",
		"rsm.config.storage.s3.endpoint.url":                       "http://127.0.0.1:9000",
		"rsm.config.storage.s3.region":                             "eu-west-1",
		"rsm.config.storage.s3.path.style.access.enabled":          "true",
		"rsm.config.storage.aws.access.key.id":                     "AKIA",
		"rsm.config.storage.aws.secret.access.key":                 "secret",
		"rsm.config.fetch.chunk.cache.class":                       "io.aiven.kafka.tieredstorage.fetch.cache.MemoryChunkCache",
		"rlmm.config.remote.log.metadata.topic.replication.factor": "1",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			delete(m, extra[i])
		} else {
			m[extra[i]] = extra[i+1]
		}
	}
	return m
}

// TestTieredBrokerProps: the tiered storage properties of a Kafka
// server.properties with Aiven's S3 plugin are accepted and read; with
// remote.log.storage.system.enable=true the plugin, its S3 backend, a
// bucket and a chunk size are required; other plugin properties are
// accepted and named as ignored.
func TestTieredBrokerProps(t *testing.T) {
	p := mustNew(t, tieredProps())
	if !p.Bool("remote.log.storage.system.enable") || p.RSM("rsm.config.storage.s3.bucket.name") != "tiered" ||
		p.RSM("rsm.config.storage.s3.path.style.access.enabled") != "true" || p.RSM("rsm.config.chunk.size") != "4194304" {
		t.Fatalf("read back %v %q", p.Bool("remote.log.storage.system.enable"), p.RSM("rsm.config.storage.s3.bucket.name"))
	}
	if got := p.RSM("rsm.config.key.prefix"); got != "" {
		t.Errorf("key.prefix default = %q", got)
	}
	ign := p.Ignored()
	for _, k := range []string{"rsm.config.fetch.chunk.cache.class", "rlmm.config.remote.log.metadata.topic.replication.factor"} {
		if !slices.Contains(ign, k) {
			t.Errorf("%s not named ignored in %v", k, ign)
		}
	}
	if slices.Contains(ign, "rsm.config.storage.s3.bucket.name") || slices.Contains(ign, "remote.log.storage.system.enable") {
		t.Errorf("acted-on properties named ignored: %v", ign)
	}
	// Off, the plugin's properties may be anything or absent.
	mustNew(t, tieredProps("remote.log.storage.system.enable", "false", "rsm.config.storage.backend.class", "x.Y", "rsm.config.chunk.size", ""))

	bad := []struct {
		extra []string
		want  string
	}{
		{[]string{"remote.log.storage.manager.class.name", ""}, "remote.log.storage.manager.class.name"},
		{[]string{"remote.log.storage.manager.class.name", "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"}, "remote.log.storage.manager.class.name"},
		{[]string{"remote.log.storage.manager.impl.prefix", "x."}, "remote.log.storage.manager.impl.prefix"},
		{[]string{"rsm.config.storage.backend.class", "io.aiven.kafka.tieredstorage.storage.gcs.GcsStorage"}, "rsm.config.storage.backend.class"},
		{[]string{"rsm.config.storage.s3.bucket.name", ""}, "rsm.config.storage.s3.bucket.name is required"},
		{[]string{"rsm.config.chunk.size", ""}, "rsm.config.chunk.size is required"},
		{[]string{"rsm.config.chunk.size", "0"}, "rsm.config.chunk.size"},
		{[]string{"rsm.config.chunk.size", "big"}, "rsm.config.chunk.size"},
		{[]string{"rsm.config.storage.s3.path.style.access.enabled", "yes"}, "path.style.access.enabled"},
		{[]string{"rsm.config.storage.s3.endpoint.url", "127.0.0.1:9000"}, "endpoint.url"},
		{[]string{"remote.log.storage.system.enable", "maybe"}, "remote.log.storage.system.enable"},
	}
	for _, tt := range bad {
		_, err := New(tieredProps(tt.extra...))
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want ErrInvalidConfig naming %q", tt.extra, err, tt.want)
		}
	}
}

// TestValidateTopicChange checks the tiered storage rules of Kafka 4.4's
// LogConfig.validate over a topic's effective configs (overrides on the
// broker's properties), with Kafka's messages.
func TestValidateTopicChange(t *testing.T) {
	on := mustNew(t, tieredProps())
	off := mustNew(t, nil)
	onShortRetention := mustNew(t, tieredProps("log.retention.ms", "1000", "log.local.retention.ms", "5000"))
	rse := map[string]string{"remote.storage.enable": "true"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		p        *Props
		existing map[string]string
		next     map[string]string
		want     string // "" accepted
	}{
		{off, nil, rse, "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."},
		{off, nil, map[string]string{"local.retention.ms": "-1", "retention.ms": "1000"}, ""}, // checked only with remote storage
		{on, nil, rse, ""},
		{on, nil, with(rse, "local.retention.ms", "1000", "local.retention.bytes", "100", "retention.bytes", "1000"), ""},
		// Kafka 4.4 refuses both: "Remote log storage only supports topics
		// with cleanup.policy=delete or cleanup.policy being an empty list."
		// samsa compacts remote segments (tiered/compact.go).
		{on, nil, with(rse, "cleanup.policy", "compact"), ""},
		{on, nil, with(rse, "cleanup.policy", "delete,compact"), ""},
		{on, nil, with(rse, "cleanup.policy", ""), ""},
		{on, nil, with(rse, "retention.bytes", "100", "local.retention.bytes", "-1"), "Invalid value -1 for configuration local.retention.bytes: Value must not be -1 as retention.bytes value is set as 100."},
		{on, nil, with(rse, "retention.bytes", "100", "local.retention.bytes", "101"), "Invalid value 101 for configuration local.retention.bytes: Value must not be more than retention.bytes property value: 100"},
		{on, nil, with(rse, "local.retention.bytes", "-1"), ""}, // retention.bytes unbounded
		{on, nil, with(rse, "retention.ms", "1000", "local.retention.ms", "-1"), "Invalid value -1 for configuration local.retention.ms: Value must not be -1 as retention.ms value is set as 1000."},
		{on, nil, with(rse, "retention.ms", "1000", "local.retention.ms", "1001"), "Value must not be more than retention.ms property value: 1000"},
		{on, nil, with(rse, "retention.ms", "-1", "local.retention.ms", "1001"), ""},
		{onShortRetention, nil, rse, "Invalid value 5000 for configuration local.retention.ms: Value must not be more than retention.ms property value: 1000"},
		{on, nil, with(rse, "remote.log.copy.disable", "true", "retention.ms", "1000", "local.retention.ms", "500"),
			"When `remote.log.copy.disable` is set to true, the `local.retention.ms` and `retention.ms` must be set to the identical value because there will be no more logs copied to the remote storage."},
		{on, nil, with(rse, "remote.log.copy.disable", "true", "retention.bytes", "1000", "local.retention.bytes", "500"), "the `local.retention.bytes` and `retention.bytes` must be set to the identical value"},
		{on, nil, with(rse, "remote.log.copy.disable", "true", "retention.ms", "1000", "local.retention.ms", "1000"), ""},
		{on, rse, map[string]string{"remote.storage.enable": "false"}, "It is invalid to disable remote storage without deleting remote data."},
		{on, rse, map[string]string{}, "It is invalid to disable remote storage without deleting remote data."},
		{on, rse, map[string]string{"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"}, ""},
		{on, rse, with(rse, "remote.log.copy.disable", "true"), ""},
		{on, nil, map[string]string{"retention.ms": "x"}, "retention.ms"},
	}
	for _, tt := range tests {
		err := tt.p.ValidateTopicChange(tt.existing, tt.next)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v (was %v): %v", tt.next, tt.existing, err)
		case tt.want != "" && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v (was %v): err = %v, want %q", tt.next, tt.existing, err, tt.want)
		}
	}
}
