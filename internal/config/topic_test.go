package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidateTopicConfigs(t *testing.T) {
	tests := []struct {
		m        map[string]string
		sentinel error
		key      string
	}{
		{map[string]string{"retention.ms": "1000", "cleanup.policy": "compact, delete", "min.cleanable.dirty.ratio": "0.1"}, nil, ""},
		{map[string]string{"retention.ms": "-1", "retention.bytes": "-1", "segment.bytes": "1048576"}, nil, ""},
		{map[string]string{"segment.bytes": "1048576", "internal.segment.bytes": "1024"}, nil, ""},
		{map[string]string{"max.decompressed.message.bytes": "1", "remote.copy.lag.ms": "-1", "errors.deadletterqueue.group.enable": "true"}, nil, ""},
		{map[string]string{"leader.replication.throttled.replicas": "0:1,1:2", "follower.replication.throttled.replicas": "*"}, nil, ""},
		{map[string]string{"message.timestamp.type": "LogAppendTime", "compression.type": "zstd", "compression.zstd.level": "-5"}, nil, ""},
		{map[string]string{"foo": "1"}, ErrUnknownConfig, "foo"},
		{map[string]string{"log.retention.ms": "1"}, ErrUnknownConfig, "log.retention.ms"}, // a broker property, not a topic config
		{map[string]string{"retention.ms": "x"}, ErrInvalidConfig, "retention.ms"},
		{map[string]string{"retention.ms": "-2"}, ErrInvalidConfig, "retention.ms"},
		{map[string]string{"segment.bytes": "1048575"}, ErrInvalidConfig, "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"},
		{map[string]string{"segment.bytes": "1024"}, ErrInvalidConfig, "segment.bytes"},
		{map[string]string{"internal.segment.bytes": "1k"}, ErrInvalidConfig, "internal.segment.bytes"},
		{map[string]string{"max.decompressed.message.bytes": "2147483640"}, ErrInvalidConfig, "Value must be no more than 2147483639"},
		{map[string]string{"segment.bytes": "4294967296"}, ErrInvalidConfig, "segment.bytes"},
		{map[string]string{"cleanup.policy": "remove"}, ErrInvalidConfig, "cleanup.policy"},
		{map[string]string{"compression.type": "brotli"}, ErrInvalidConfig, "compression.type"},
		{map[string]string{"compression.gzip.level": "0"}, ErrInvalidConfig, "compression.gzip.level"},
		{map[string]string{"min.cleanable.dirty.ratio": "1.5"}, ErrInvalidConfig, "min.cleanable.dirty.ratio"},
		{map[string]string{"preallocate": "maybe"}, ErrInvalidConfig, "preallocate"},
		{map[string]string{"leader.replication.throttled.replicas": "a:b"}, ErrInvalidConfig, "leader.replication.throttled.replicas"},
		{map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, ErrInvalidConfig, "min.compaction.lag.ms"},
	}
	for _, tt := range tests {
		err := ValidateTopicConfigs(tt.m)
		if tt.sentinel == nil {
			if err != nil {
				t.Errorf("%v: %v", tt.m, err)
			}
			continue
		}
		if !errors.Is(err, tt.sentinel) {
			t.Errorf("%v: err = %v, want %v", tt.m, err, tt.sentinel)
			continue
		}
		if !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%v: error %q does not name %q", tt.m, err, tt.key)
		}
	}
}

func TestTopicConfigs(t *testing.T) {
	p := mustNew(t, map[string]string{"log.retention.hours": "2", "message.max.bytes": "2000", "log.cleanup.policy": "compact"})
	m := p.TopicConfigs(map[string]string{"segment.ms": " 500 ", "cleanup.policy": "delete , compact"})
	want := map[string]string{
		"retention.ms":          "7200000",
		"max.message.bytes":     "2000",
		"cleanup.policy":        "delete,compact",
		"segment.ms":            "500",
		"segment.bytes":         "1073741824",
		"flush.ms":              "9223372036854775807",
		"remote.storage.enable": "false",
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %q, want %q", k, m[k], v)
		}
	}
	if len(m) != len(topicDefs)+len(confluentTopicDefs) {
		t.Errorf("%d configs, want %d", len(m), len(topicDefs)+len(confluentTopicDefs))
	}
	// Kafka 4.x's topic configs, all described.
	for _, name := range []string{"cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
		"compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
		"follower.replication.throttled.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
		"local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
		"message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
		"min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
		"remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes",
		"retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
		"unclean.leader.election.enable"} {
		if _, ok := m[name]; !ok {
			t.Errorf("missing topic config %s", name)
		}
	}
}

func TestTopicSettings(t *testing.T) {
	p := mustNew(t, map[string]string{"log.segment.bytes": "1048576", "log.message.timestamp.type": "LogAppendTime"})
	s, err := p.TopicSettings(map[string]string{"retention.bytes": "100", "cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.25"})
	if err != nil {
		t.Fatal(err)
	}
	if s.SegmentBytes != 1048576 || !s.LogAppendTime || s.RetentionBytes != 100 || !s.CleanupCompact || !s.CleanupDelete ||
		s.MinCleanableDirtyRatio != 0.25 || s.RetentionMs != 604800000 || s.MaxMessageBytes != 1048588 || s.FlushMessages != 1<<63-1 ||
		s.CompressionType != "producer" || s.IndexIntervalBytes != 4096 || s.MinInsyncReplicas != 1 {
		t.Fatalf("settings = %+v", s)
	}
	if _, err := p.TopicSettings(map[string]string{"segment.ms": "0"}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
}

// internal.segment.bytes, Kafka's test-only config, overrides segment.bytes
// and is described only where a topic sets it, as Kafka describes it.
func TestInternalSegmentBytes(t *testing.T) {
	p := mustNew(t, map[string]string{"log.segment.bytes": "2097152"})
	for _, tt := range []struct {
		overrides map[string]string
		want      int32
	}{
		{nil, 2097152},
		{map[string]string{"segment.bytes": "1048576"}, 1048576},
		{map[string]string{"segment.bytes": "1048576", "internal.segment.bytes": "1024"}, 1024},
		{map[string]string{"internal.segment.bytes": "700"}, 700},
	} {
		s, err := p.TopicSettings(tt.overrides)
		if err != nil || s.SegmentBytes != tt.want {
			t.Errorf("%v: segment bytes %d (%v), want %d", tt.overrides, s.SegmentBytes, err, tt.want)
		}
		described := slices.ContainsFunc(p.DescribeTopic(tt.overrides, true, false), func(e Entry) bool { return e.Name == "internal.segment.bytes" })
		if _, set := tt.overrides["internal.segment.bytes"]; described != set {
			t.Errorf("%v: internal.segment.bytes described %v", tt.overrides, described)
		}
	}
	if slices.Contains(TopicConfigNames(), "internal.segment.bytes") {
		t.Error("internal.segment.bytes is among the described topic configs")
	}
}
