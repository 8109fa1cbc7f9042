package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// TopicSettings are the effective topic configs of one topic, typed, for
// the log store and the broker. Build them with Props.TopicSettings.
type TopicSettings struct {
	CleanupDelete, CleanupCompact  bool   // cleanup.policy
	CompressionType                string // compression.type
	GzipLevel, LZ4Level, ZstdLevel int32
	DeleteRetentionMs              int64
	FileDeleteDelayMs              int64
	FlushMessages                  int64 // math.MaxInt64: never
	FlushMs                        int64 // math.MaxInt64: never
	IndexIntervalBytes             int32
	MaxCompactionLagMs             int64
	MaxMessageBytes                int32
	MessageTimestampAfterMaxMs     int64
	MessageTimestampBeforeMaxMs    int64
	LogAppendTime                  bool // message.timestamp.type=LogAppendTime
	MinCleanableDirtyRatio         float64
	MinCompactionLagMs             int64
	MinInsyncReplicas              int32
	Preallocate                    bool
	RetentionBytes                 int64 // <0: no limit
	RetentionMs                    int64 // <0: no limit
	SegmentBytes                   int32
	SegmentIndexBytes              int32
	SegmentJitterMs                int64
	SegmentMs                      int64
	UncleanLeaderElection          bool
	// Tiered storage (KIP-405): remote.storage.enable,
	// remote.log.copy.disable, and local.retention.ms/bytes with -2
	// resolved to retention.ms/bytes.
	RemoteStorage       bool
	RemoteCopyDisabled  bool
	LocalRetentionMs    int64 // <0: no limit
	LocalRetentionBytes int64 // <0: no limit
	// LeaderThrottled are the replicas whose follower fetches this topic's
	// leaders throttle (leader.replication.throttled.replicas).
	LeaderThrottled Throttled
	// FollowerThrottled are the replicas whose fetchers throttle their
	// fetches of this topic (follower.replication.throttled.replicas).
	FollowerThrottled Throttled
	// KeySchemaValidation and ValueSchemaValidation are Confluent
	// Server's confluent.key.schema.validation and .value.; the subject
	// name strategies its confluent.key.subject.name.strategy and .value.
	KeySchemaValidation, ValueSchemaValidation bool
	KeySubjectStrategy, ValueSubjectStrategy   string
}

// Throttled is a [partition]:[broker] list of replication throttles, or
// all of them ("*").
type Throttled struct {
	all  bool
	list map[[2]int32]bool
}

// Has reports whether the replica of partition on broker is throttled.
func (t Throttled) Has(partition, broker int32) bool {
	return t.all || t.list[[2]int32{partition, broker}]
}

func parseThrottled(v string) Throttled {
	var t Throttled
	for _, e := range splitList(v) {
		if e == "*" {
			return Throttled{all: true}
		}
		ps, bs, _ := strings.Cut(e, ":")
		p, err1 := strconv.ParseInt(strings.TrimSpace(ps), 10, 32)
		b, err2 := strconv.ParseInt(strings.TrimSpace(bs), 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		if t.list == nil {
			t.list = map[[2]int32]bool{}
		}
		t.list[[2]int32{int32(p), int32(b)}] = true
	}
	return t
}

// TopicSettings validates overrides and returns the effective, typed
// topic configs (override, else broker properties, else Kafka's default).
func (p *Props) TopicSettings(overrides map[string]string) (TopicSettings, error) {
	if err := ValidateTopicConfigs(overrides); err != nil {
		return TopicSettings{}, err
	}
	m := p.TopicConfigs(overrides)
	var firstErr error
	i64 := func(k string) int64 {
		n, err := strconv.ParseInt(m[k], 10, 64)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%w %q for topic config %q: %v", ErrInvalidConfig, m[k], k, err)
		}
		return n
	}
	i32 := func(k string) int32 { return int32(i64(k)) }
	policy := splitList(m["cleanup.policy"])
	ratio, _ := strconv.ParseFloat(m["min.cleanable.dirty.ratio"], 64)
	s := TopicSettings{
		CleanupDelete:               slices.Contains(policy, "delete"),
		CleanupCompact:              slices.Contains(policy, "compact"),
		CompressionType:             m["compression.type"],
		GzipLevel:                   i32("compression.gzip.level"),
		LZ4Level:                    i32("compression.lz4.level"),
		ZstdLevel:                   i32("compression.zstd.level"),
		DeleteRetentionMs:           i64("delete.retention.ms"),
		FileDeleteDelayMs:           i64("file.delete.delay.ms"),
		FlushMessages:               i64("flush.messages"),
		FlushMs:                     i64("flush.ms"),
		IndexIntervalBytes:          i32("index.interval.bytes"),
		MaxCompactionLagMs:          i64("max.compaction.lag.ms"),
		MaxMessageBytes:             i32("max.message.bytes"),
		MessageTimestampAfterMaxMs:  i64("message.timestamp.after.max.ms"),
		MessageTimestampBeforeMaxMs: i64("message.timestamp.before.max.ms"),
		LogAppendTime:               m["message.timestamp.type"] == "LogAppendTime",
		MinCleanableDirtyRatio:      ratio,
		MinCompactionLagMs:          i64("min.compaction.lag.ms"),
		MinInsyncReplicas:           i32("min.insync.replicas"),
		Preallocate:                 m["preallocate"] == "true",
		RetentionBytes:              i64("retention.bytes"),
		RetentionMs:                 i64("retention.ms"),
		SegmentBytes:                segmentBytes(m, i32),
		SegmentIndexBytes:           i32("segment.index.bytes"),
		SegmentJitterMs:             i64("segment.jitter.ms"),
		SegmentMs:                   i64("segment.ms"),
		UncleanLeaderElection:       m["unclean.leader.election.enable"] == "true",
		RemoteStorage:               m["remote.storage.enable"] == "true",
		RemoteCopyDisabled:          m["remote.log.copy.disable"] == "true",
		LocalRetentionMs:            localRetention(i64("local.retention.ms"), i64("retention.ms")),
		LocalRetentionBytes:         localRetention(i64("local.retention.bytes"), i64("retention.bytes")),
		LeaderThrottled:             parseThrottled(m["leader.replication.throttled.replicas"]),
		FollowerThrottled:           parseThrottled(m["follower.replication.throttled.replicas"]),
		KeySchemaValidation:         m["confluent.key.schema.validation"] == "true",
		ValueSchemaValidation:       m["confluent.value.schema.validation"] == "true",
		KeySubjectStrategy:          m["confluent.key.subject.name.strategy"],
		ValueSubjectStrategy:        m["confluent.value.subject.name.strategy"],
	}
	return s, firstErr
}

// segmentBytes is internal.segment.bytes when set (Kafka's LogConfig
// segmentSize, for tests), else segment.bytes.
func segmentBytes(m map[string]string, i32 func(string) int32) int32 {
	if m["internal.segment.bytes"] != "" {
		return i32("internal.segment.bytes")
	}
	return i32("segment.bytes")
}

// localRetention is local.retention.ms or .bytes in effect: -2 is the
// topic's retention.
func localRetention(local, total int64) int64 {
	if local == -2 {
		return total
	}
	return local
}
