package config

import (
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrUnknownConfig and ErrInvalidConfig classify configuration errors; the
// errors returned by this package wrap one of them and name the key (and
// the value, when it is the value that is wrong). The broker maps them to
// Kafka's INVALID_CONFIG (and, for unknown topic configs, to
// INVALID_CONFIG as Kafka does).
var (
	ErrUnknownConfig = errors.New("config: unknown")
	ErrInvalidConfig = errors.New("config: invalid value")
	// ErrUnsupportedConfig is a setting Kafka knows that asks for what samsa
	// cannot do safely (a SASL or SSL listener, an authorizer).
	ErrUnsupportedConfig = errors.New("config: unsupported")
)

// TopicDef describes a topic config and the broker properties that supply
// its default, in Kafka's precedence order (Kafka's
// ServerTopicConfigSynonyms).
type TopicDef struct {
	Name     string
	Type     kmsg.ConfigType
	Default  string // Kafka's LogConfig default, used when no synonym applies
	Doc      string
	Synonyms []Synonym          // broker properties, highest precedence first; Value unset
	scale    []int64            // per synonym: multiply the broker value by this (hours/minutes to ms)
	check    func(string) error // samsa's own, after Kafka's validator (kafkaTopicDefs)
	internal bool               // Kafka's internal config: accepted, described only where set
}

const (
	perMinute = 60 * 1000
	perHour   = 60 * perMinute
)

func syn(names ...string) []Synonym {
	out := make([]Synonym, len(names))
	for i, n := range names {
		out[i] = Synonym{Name: n}
	}
	return out
}

// topicDefs lists every topic config of Kafka 4.4's LogConfig: the ones
// DescribeConfigs serves, and internal.segment.bytes. Their valid values
// are Kafka's (kafkaTopicDefs' validators); check adds samsa's own.
var topicDefs = []TopicDef{
	{Name: "cleanup.policy", Type: tList, Default: "delete", Synonyms: syn("log.cleanup.policy"),
		Doc: "The retention policy of old segments: delete (the default) removes them past the retention limits; compact keeps the latest record of each key; both may be given."},
	{Name: "compression.gzip.level", Type: tInt, Default: "-1", Synonyms: syn("compression.gzip.level"),
		Doc: "The compression level when compression.type is gzip."},
	{Name: "compression.lz4.level", Type: tInt, Default: "9", Synonyms: syn("compression.lz4.level"),
		Doc: "The compression level when compression.type is lz4."},
	{Name: "compression.type", Type: tString, Default: "producer", Synonyms: syn("compression.type"),
		Doc: "The final compression of the topic's batches: gzip, snappy, lz4, zstd, uncompressed, or producer to keep the producer's codec."},
	{Name: "compression.zstd.level", Type: tInt, Default: "3", Synonyms: syn("compression.zstd.level"),
		Doc: "The compression level when compression.type is zstd."},
	{Name: "delete.retention.ms", Type: tLong, Default: "86400000", Synonyms: syn("log.cleaner.delete.retention.ms"),
		Doc: "How long delete tombstones are kept in a compacted topic."},
	{Name: "errors.deadletterqueue.group.enable", Type: tBool, Default: "false",
		Doc: "Allow the topic to be a share group's dead-letter queue (KIP-1191); samsa: accepted and ignored."},
	{Name: "file.delete.delay.ms", Type: tLong, Default: "60000", Synonyms: syn("log.segment.delete.delay.ms"),
		Doc: "How long to wait before deleting a file from the file system."},
	{Name: "flush.messages", Type: tLong, Default: maxLong, Synonyms: syn("log.flush.interval.messages"),
		Doc: "Force an fsync of the log after this many messages. Replication, not fsync, is the recommended durability."},
	{Name: "flush.ms", Type: tLong, Default: maxLong, Synonyms: syn("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
		Doc: "Force an fsync of the log when this much time has passed since the last one."},
	{Name: "follower.replication.throttled.replicas", Type: tList, Default: "",
		Doc: "Replicas throttled on the follower side: [partition]:[broker],... or *: a broker listed here fetches the partition within its follower.replication.throttled.rate until its replica has caught up."},
	{Name: "index.interval.bytes", Type: tInt, Default: "4096", Synonyms: syn("log.index.interval.bytes"),
		Doc: "How often, in bytes of log, an entry is added to the offset index."},
	{Name: "internal.segment.bytes", Type: tInt, Default: "", internal: true,
		Doc: "For tests only, as in Kafka: the maximum size of one segment file, overriding segment.bytes without its 1 MiB minimum."},
	{Name: "leader.replication.throttled.replicas", Type: tList, Default: "",
		Doc: "Replicas throttled on the leader side: [partition]:[broker],... or *: a leader listed here answers follower fetches of the partition with no records while its leader.replication.throttled.rate is spent."},
	{Name: "local.retention.bytes", Type: tLong, Default: "-2", Synonyms: syn("log.local.retention.bytes"),
		Doc: "Local retention size with tiered storage; -2 means retention.bytes."},
	{Name: "local.retention.ms", Type: tLong, Default: "-2", Synonyms: syn("log.local.retention.ms"),
		Doc: "Local retention time with tiered storage; -2 means retention.ms."},
	{Name: "max.compaction.lag.ms", Type: tLong, Default: maxLong, Synonyms: syn("log.cleaner.max.compaction.lag.ms"),
		Doc: "The maximum time a message stays ineligible for compaction."},
	{Name: "max.decompressed.message.bytes", Type: tInt, Default: "2147483639", Synonyms: syn("max.decompressed.message.bytes"),
		Doc: "The largest decompressed record the topic accepts; samsa: accepted and ignored."},
	{Name: "max.message.bytes", Type: tInt, Default: "1048588", Synonyms: syn("message.max.bytes"),
		Doc: "The largest record batch the topic accepts (after compression)."},
	{Name: "message.timestamp.after.max.ms", Type: tLong, Default: "3600000", Synonyms: syn("log.message.timestamp.after.max.ms"),
		Doc: "How far in the future a CreateTime timestamp may be, relative to the broker's clock."},
	{Name: "message.timestamp.before.max.ms", Type: tLong, Default: maxLong, Synonyms: syn("log.message.timestamp.before.max.ms"),
		Doc: "How far in the past a CreateTime timestamp may be, relative to the broker's clock."},
	{Name: "message.timestamp.type", Type: tString, Default: "CreateTime", Synonyms: syn("log.message.timestamp.type"),
		Doc: "Whether record timestamps are the producer's CreateTime or the broker's LogAppendTime."},
	{Name: "min.cleanable.dirty.ratio", Type: tDouble, Default: "0.5", Synonyms: syn("log.cleaner.min.cleanable.ratio"),
		Doc: "The minimum ratio of dirty log to total log for the log to be compacted."},
	{Name: "min.compaction.lag.ms", Type: tLong, Default: "0", Synonyms: syn("log.cleaner.min.compaction.lag.ms"),
		Doc: "The minimum time a message stays uncompacted."},
	{Name: "min.insync.replicas", Type: tInt, Default: "1", Synonyms: syn("min.insync.replicas"),
		Doc: "The minimum number of in-sync replicas for an acks=all write to succeed."},
	{Name: "preallocate", Type: tBool, Default: "false", Synonyms: syn("log.preallocate"),
		Doc: "Preallocate the file of a new segment."},
	{Name: "remote.copy.lag.bytes", Type: tLong, Default: "-1", Synonyms: syn("log.remote.copy.lag.bytes"),
		Doc: "With tiered storage: how far behind the log end a segment must be before it is copied."},
	{Name: "remote.copy.lag.ms", Type: tLong, Default: "0", Synonyms: syn("log.remote.copy.lag.ms"),
		Doc: "With tiered storage: how old a segment must be before it is copied."},
	{Name: "remote.log.copy.disable", Type: tBool, Default: "false",
		Doc: "Stop copying segments to tiered storage."},
	{Name: "remote.log.delete.on.disable", Type: tBool, Default: "false",
		Doc: "Delete tiered data when tiered storage is disabled on the topic."},
	{Name: "remote.storage.enable", Type: tBool, Default: "false",
		Doc: "Enable tiered storage for the topic: only on a broker with remote.log.storage.system.enable=true, and only with cleanup.policy=delete."},
	{Name: "retention.bytes", Type: tLong, Default: "-1", Synonyms: syn("log.retention.bytes"),
		Doc: "The maximum size of a partition's log before old segments are deleted; -1 for no limit."},
	{Name: "retention.ms", Type: tLong, Default: "604800000", Synonyms: syn("log.retention.ms", "log.retention.minutes", "log.retention.hours"), scale: []int64{1, perMinute, perHour},
		Doc: "How long a log segment is kept before it is deleted; -1 for no limit."},
	{Name: "segment.bytes", Type: tInt, Default: "1073741824", Synonyms: syn("log.segment.bytes"),
		Doc: "The maximum size of one segment file."},
	{Name: "segment.index.bytes", Type: tInt, Default: "10485760", Synonyms: syn("log.index.size.max.bytes"),
		Doc: "The maximum size of the offset index of a segment."},
	{Name: "segment.jitter.ms", Type: tLong, Default: "0", Synonyms: syn("log.roll.jitter.ms", "log.roll.jitter.hours"), scale: []int64{1, perHour},
		Doc: "The maximum random jitter subtracted from the scheduled roll time of a segment."},
	{Name: "segment.ms", Type: tLong, Default: "604800000", Synonyms: syn("log.roll.ms", "log.roll.hours"), scale: []int64{1, perHour},
		Doc: "Roll a new segment after this long even if the current one is not full."},
	{Name: "unclean.leader.election.enable", Type: tBool, Default: "false", Synonyms: syn("unclean.leader.election.enable"),
		Doc: "Allow a replica outside the ISR to become leader, at the risk of losing data."},
}

// Subject name strategies of Confluent's serializers, as
// confluent.key.subject.name.strategy and .value. name them.
const (
	TopicNameStrategy       = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
	RecordNameStrategy      = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
	TopicRecordNameStrategy = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
)

// confluentTopicDefs are Confluent Server's topic configs of broker-side
// schema validation, under its own names: accepted and described where
// set (as Kafka's internal ones), not listed among Kafka's.
var confluentTopicDefs = []TopicDef{
	{Name: "confluent.key.schema.validation", Type: tBool, Default: "false", internal: true,
		Doc: "Refuse a batch with a record whose key does not start with the schema registry's wire format (magic byte 0, then a schema id registered under the key's subject), as Confluent Server does; needs samsa.schema.registry.listener on the partition's leader."},
	{Name: "confluent.value.schema.validation", Type: tBool, Default: "false", internal: true,
		Doc: "As confluent.key.schema.validation, for record values."},
	{Name: "confluent.key.subject.name.strategy", Type: tString, Default: TopicNameStrategy, internal: true,
		check: subjectStrategy,
		Doc:   "The subject a key's schema id must be registered under: TopicNameStrategy (topic-key), RecordNameStrategy (the schema's record name) or TopicRecordNameStrategy (topic-name), named by Confluent's class names."},
	{Name: "confluent.value.subject.name.strategy", Type: tString, Default: TopicNameStrategy, internal: true,
		check: subjectStrategy,
		Doc:   "As confluent.key.subject.name.strategy, for values (TopicNameStrategy: topic-value)."},
}

// subjectStrategy checks a subject name strategy, worded as Kafka's
// ValidString.
func subjectStrategy(v string) error {
	strategies := []string{TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy}
	if slices.Contains(strategies, v) {
		return nil
	}
	return &invalidValue{v, "String must be one of: " + strings.Join(strategies, ", ")}
}

// topicIndex indexes topicDefs, each checked by Kafka's validator
// (kafkaTopicDefs; TestTopicDefsAreKafkas: every one has one) before
// samsa's own check, and confluentTopicDefs.
var topicIndex = func() map[string]*TopicDef {
	kafka := indexByName(kafkaTopicDefs, func(d *KafkaDef) string { return d.Name })
	m := indexByName(topicDefs, func(d *TopicDef) string { return d.Name })
	for i := range confluentTopicDefs {
		m[confluentTopicDefs[i].Name] = &confluentTopicDefs[i]
	}
	for name, d := range m {
		if k := kafka[name]; k != nil {
			d.check = both(kafkaCheck(name, k.Type, k.Valid, false), d.check)
		}
	}
	return m
}()

// TopicConfigDef returns the definition of a topic config.
func TopicConfigDef(name string) (TopicDef, bool) { return lookup(topicIndex, name) }

// IsListTopicConfig reports whether name is a topic config of type LIST
// (the only ones IncrementalAlterConfigs may APPEND to or SUBTRACT from).
func IsListTopicConfig(name string) bool {
	d, ok := topicIndex[name]
	return ok && d.Type == tList
}

// TopicConfigNames returns the names of all topic configs, sorted.
// (internal.segment.bytes, internal, is not one of them).
func TopicConfigNames() []string {
	out := make([]string, 0, len(topicDefs))
	for _, d := range topicDefs {
		if !d.internal {
			out = append(out, d.Name)
		}
	}
	sort.Strings(out)
	return out
}

// ValidateTopicChange checks the overrides next of a topic whose current
// overrides are existing (nil for a new topic), as Kafka 4.4's broker does
// (LogConfig.validate with the broker's log config and
// remote.log.storage.system.enable): ValidateTopicConfigs, then, over the
// effective configs (next on this broker's properties), the rules of
// tiered storage (KIP-405, KIP-950), with Kafka's messages, but for one:
// compacted topics may be tiered here.
func (p *Props) ValidateTopicChange(existing, next map[string]string) error {
	if err := ValidateTopicConfigs(next); err != nil {
		return err
	}
	eff := p.TopicConfigs(next)
	long := func(k string) int64 { n, _ := strconv.ParseInt(eff[k], 10, 64); return n }
	if eff["remote.storage.enable"] != "true" {
		if existing["remote.storage.enable"] == "true" && eff["remote.log.delete.on.disable"] != "true" {
			return configErr("It is invalid to disable remote storage without deleting remote data. " +
				"If you want to keep the remote data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. " +
				"If you want to disable remote storage and delete all remote data, please set `remote.storage.enable=false,remote.log.delete.on.disable=true`.")
		}
		return nil
	}
	if !p.Bool("remote.log.storage.system.enable") {
		return configErr("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")
	}
	// Kafka 4.4 refuses cleanup.policy=compact here ("Remote log storage
	// only supports topics with cleanup.policy=delete or cleanup.policy
	// being an empty list.", LogConfig's
	// validateRemoteStorageRequiresDeleteCleanupPolicy); samsa compacts
	// remote segments too (tiered/compact.go), so it accepts compact and
	// compact,delete.
	for _, unit := range []string{"bytes", "ms"} {
		if err := localRetentionWithin(long, unit); err != nil {
			return err
		}
	}
	if eff["remote.log.copy.disable"] == "true" {
		for _, unit := range []string{"bytes", "ms"} {
			if l := long("local.retention." + unit); l != -2 && l != long("retention."+unit) {
				return configErr("When `remote.log.copy.disable` is set to true, the `local.retention.%s` and `retention.%s` "+
					"must be set to the identical value because there will be no more logs copied to the remote storage.", unit, unit)
			}
		}
	}
	return nil
}

// localRetentionWithin is Kafka's check that local.retention.<unit> is
// within retention.<unit> when that is bounded (retention.bytes above -1,
// retention.ms other than -1) and local.retention.<unit> is not -2 (the
// same as retention.<unit>).
func localRetentionWithin(long func(string) int64, unit string) error {
	total, local := long("retention."+unit), long("local.retention."+unit)
	if unit == "bytes" && total <= -1 || unit == "ms" && total == -1 || local == -2 {
		return nil
	}
	if local == -1 {
		return configErr("Invalid value -1 for configuration local.retention.%s: Value must not be -1 as retention.%s value is set as %d.", unit, unit, total)
	}
	if local > total {
		return configErr("Invalid value %d for configuration local.retention.%s: Value must not be more than retention.%s property value: %d", local, unit, unit, total)
	}
	return nil
}

// normalizeTopicValue validates v for topic config d and returns Kafka's
// canonical string form of it.
func normalizeTopicValue(d *TopicDef, v string) (string, error) {
	return checkValue(d.Type, d.check, strings.TrimSpace(v))
}

func checkValue(t kmsg.ConfigType, check func(string) error, v string) (string, error) {
	norm, err := parseTyped(t, v)
	if err != nil {
		return "", err
	}
	if check != nil {
		if err := check(norm); err != nil {
			return "", err
		}
	}
	return norm, nil
}

// ValidateTopicConfigs checks topic config overrides, as given to
// CreateTopics or AlterConfigs, as Kafka 4.4's LogConfig does. A nil value
// (a key deleted by IncrementalAlterConfigs) is not expected here; pass
// only set keys. The error is a *ConfigError with Kafka's message, which
// names the key; it is ErrUnknownConfig or ErrInvalidConfig. Keys are
// checked in sorted order so the error is deterministic.
func ValidateTopicConfigs(m map[string]string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d, ok := topicIndex[k]
		if !ok {
			return &ConfigError{Msg: "Unknown topic config name: " + k, unknown: true}
		}
		if _, err := normalizeTopicValue(d, m[k]); err != nil {
			return named(k, err)
		}
	}
	minLag, maxLag := int64(0), int64(1<<63-1)
	if v, ok := m["min.compaction.lag.ms"]; ok {
		minLag, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	}
	if v, ok := m["max.compaction.lag.ms"]; ok {
		maxLag, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	}
	if minLag > maxLag {
		return configErr("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", minLag, maxLag)
	}
	return nil
}

// brokerTopicDefault returns the value a topic config takes from the
// broker's properties when the topic does not override it: the first
// synonym set in the properties (converted to the topic's unit), else the
// default of the first synonym that has one, else the topic default. This
// is what Kafka's KafkaConfig.extractLogConfigMap computes.
func (p *Props) brokerTopicDefault(d *TopicDef) string {
	for i, s := range d.Synonyms {
		if v, ok := p.set[s.Name]; ok {
			return scaled(d, i, v.norm)
		}
	}
	for i, s := range d.Synonyms {
		if bd := brokerIndex[s.Name]; bd != nil && bd.Default != nil {
			return scaled(d, i, *bd.Default)
		}
	}
	return d.Default
}

func scaled(d *TopicDef, i int, v string) string {
	if i >= len(d.scale) || d.scale[i] == 1 {
		return v
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return v
	}
	ms := n * d.scale[i]
	if ms < 0 { // Kafka: a negative retention means no limit
		ms = -1
	}
	return strconv.FormatInt(ms, 10)
}

// TopicConfigs returns the effective value of every topic config for a
// topic with the given overrides, in Kafka's canonical string form. Unknown
// or invalid overrides are skipped (validate them first with
// ValidateTopicConfigs).
func (p *Props) TopicConfigs(overrides map[string]string) map[string]string {
	out := make(map[string]string, len(topicDefs))
	for i := range topicDefs {
		d := &topicDefs[i]
		out[d.Name] = p.topicValue(d, overrides)
	}
	for i := range confluentTopicDefs {
		d := &confluentTopicDefs[i]
		out[d.Name] = p.topicValue(d, overrides)
	}
	return out
}

func (p *Props) topicValue(d *TopicDef, overrides map[string]string) string {
	if v, ok := overrides[d.Name]; ok {
		if norm, err := normalizeTopicValue(d, v); err == nil {
			return norm
		}
	}
	return p.brokerTopicDefault(d)
}
