package config

// Group configs: Kafka 4.4's GroupConfig, the per-group settings set with
// AlterConfigs/IncrementalAlterConfigs on the GROUP resource (type 32) and
// stored per group (controller's /config/groups/<group>). Each one stands
// for a broker property (its synonym, group.<name> for most), whose value
// a group without the override takes. Values set are checked as Kafka
// checks them (GroupConfig.validate): the type, the key's own range, and
// the range the broker allows (group.consumer.min/max.session.timeout.ms
// and their kin); the values in effect are clamped to the broker's range
// again, since the broker's range may change after a group config was set.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupDef is one group config.
type GroupDef struct {
	Name     string
	Type     kmsg.ConfigType
	Default  string // Kafka's default, the value when neither the group nor the broker sets it
	Min      int64  // the lowest value of a number (Kafka's ConfigDef range)
	HasMin   bool
	Internal bool   // settable, but left out of DescribeConfigs, as Kafka's internal configs
	Synonym  string // the broker property it stands for; "" for none
	Doc      string
	// The broker properties bounding a number (Kafka's validateValues),
	// "" for none.
	MinProp, MaxProp string
}

// groupDefs is Kafka 4.4's GroupConfig.CONFIG_DEF, in its order.
var groupDefs = []GroupDef{
	{Name: "consumer.session.timeout.ms", Type: tInt, Default: "45000", Min: 1, HasMin: true, Synonym: "group.consumer.session.timeout.ms",
		MinProp: "group.consumer.min.session.timeout.ms", MaxProp: "group.consumer.max.session.timeout.ms",
		Doc: "The timeout to detect client failures when using the consumer group protocol."},
	{Name: "consumer.heartbeat.interval.ms", Type: tInt, Default: "5000", Min: 1, HasMin: true, Synonym: "group.consumer.heartbeat.interval.ms",
		MinProp: "group.consumer.min.heartbeat.interval.ms", MaxProp: "group.consumer.max.heartbeat.interval.ms",
		Doc: "The heartbeat interval given to the members of a consumer group."},
	{Name: "consumer.assignment.interval.ms", Type: tInt, Default: "1000", Min: 0, HasMin: true, Synonym: "group.consumer.assignment.interval.ms",
		MinProp: "group.consumer.min.assignment.interval.ms", MaxProp: "group.consumer.max.assignment.interval.ms",
		Doc: "The interval between assignment updates for a consumer group."},
	{Name: "consumer.assignor.offload.enable", Type: tBool, Default: "true", Internal: true, Synonym: "group.consumer.assignor.offload.enable",
		Doc: "Whether to offload consumer group assignment to a background thread."},
	{Name: "share.session.timeout.ms", Type: tInt, Default: "45000", Min: 1, HasMin: true, Synonym: "group.share.session.timeout.ms",
		MinProp: "group.share.min.session.timeout.ms", MaxProp: "group.share.max.session.timeout.ms",
		Doc: "The timeout to detect client failures when using the share group protocol."},
	{Name: "share.heartbeat.interval.ms", Type: tInt, Default: "5000", Min: 1, HasMin: true, Synonym: "group.share.heartbeat.interval.ms",
		MinProp: "group.share.min.heartbeat.interval.ms", MaxProp: "group.share.max.heartbeat.interval.ms",
		Doc: "The heartbeat interval given to the members of a share group."},
	{Name: "share.record.lock.duration.ms", Type: tInt, Default: "30000", Min: 1000, HasMin: true, Synonym: "group.share.record.lock.duration.ms",
		MinProp: "group.share.min.record.lock.duration.ms", MaxProp: "group.share.max.record.lock.duration.ms",
		Doc: "The record acquisition lock duration in milliseconds for share groups."},
	{Name: "share.delivery.count.limit", Type: tInt, Default: "5", Min: 2, HasMin: true, Synonym: "group.share.delivery.count.limit",
		MinProp: "group.share.min.delivery.count.limit", MaxProp: "group.share.max.delivery.count.limit",
		Doc: "The maximum number of delivery attempts for a record delivered to a share group."},
	{Name: "share.partition.max.record.locks", Type: tInt, Default: "2000", Min: 100, HasMin: true, Synonym: "group.share.partition.max.record.locks",
		MinProp: "group.share.min.partition.max.record.locks", MaxProp: "group.share.max.partition.max.record.locks",
		Doc: "Share-group record lock limit per share-partition."},
	{Name: "share.auto.offset.reset", Type: tString, Default: "latest",
		Doc: "Where a share group starts when a partition has no start offset: latest, earliest or by_duration:<ISO-8601 duration>."},
	{Name: "share.isolation.level", Type: tString, Default: "read_uncommitted",
		Doc: "Whether a share group reads transactional records only once committed (read_committed) or all of them (read_uncommitted)."},
	{Name: "share.renew.acknowledge.enable", Type: tBool, Default: "true",
		Doc: "Whether share consumers may renew acquisition locks."},
	{Name: "share.assignment.interval.ms", Type: tInt, Default: "1000", Min: 0, HasMin: true, Synonym: "group.share.assignment.interval.ms",
		MinProp: "group.share.min.assignment.interval.ms", MaxProp: "group.share.max.assignment.interval.ms",
		Doc: "The interval between assignment updates for a share group."},
	{Name: "share.assignor.offload.enable", Type: tBool, Default: "true", Internal: true, Synonym: "group.share.assignor.offload.enable",
		Doc: "Whether to offload share group assignment to a background thread."},
	{Name: "streams.session.timeout.ms", Type: tInt, Default: "45000", Min: 1, HasMin: true, Synonym: "group.streams.session.timeout.ms",
		MinProp: "group.streams.min.session.timeout.ms", MaxProp: "group.streams.max.session.timeout.ms",
		Doc: "The timeout to detect client failures when using the streams group protocol."},
	{Name: "streams.heartbeat.interval.ms", Type: tInt, Default: "5000", Min: 1, HasMin: true, Synonym: "group.streams.heartbeat.interval.ms",
		MinProp: "group.streams.min.heartbeat.interval.ms", MaxProp: "group.streams.max.heartbeat.interval.ms",
		Doc: "The heartbeat interval given to the members."},
	{Name: "streams.num.standby.replicas", Type: tInt, Default: "0", Min: 0, HasMin: true, Synonym: "group.streams.num.standby.replicas",
		MaxProp: "group.streams.max.standby.replicas",
		Doc:     "The number of standby replicas for each task."},
	{Name: "streams.initial.rebalance.delay.ms", Type: tInt, Default: "3000", Min: 0, HasMin: true, Synonym: "group.streams.initial.rebalance.delay.ms",
		Doc: "How long the coordinator waits for more streams clients to join a new group before the first assignment."},
	{Name: "streams.assignment.interval.ms", Type: tInt, Default: "1000", Min: 0, HasMin: true, Synonym: "group.streams.assignment.interval.ms",
		MinProp: "group.streams.min.assignment.interval.ms", MaxProp: "group.streams.max.assignment.interval.ms",
		Doc: "The interval between assignment updates for a streams group."},
	{Name: "streams.assignor.offload.enable", Type: tBool, Default: "true", Internal: true, Synonym: "group.streams.assignor.offload.enable",
		Doc: "Whether to offload streams group assignment to a background thread."},
	{Name: "streams.task.offset.interval.ms", Type: tInt, Default: "60000", Min: 1, HasMin: true, Internal: true, Synonym: "group.streams.task.offset.interval.ms",
		MinProp: "group.streams.min.task.offset.interval.ms",
		Doc:     "How often warmup tasks report their changelog offsets."},
	{Name: "streams.num.warmup.replicas", Type: tInt, Default: "2", Min: 0, HasMin: true, Internal: true, Synonym: "group.streams.num.warmup.replicas",
		MaxProp: "group.streams.max.warmup.replicas",
		Doc:     "The maximum number of warmup task replicas."},
	{Name: "streams.rack.aware.assignment.tags", Type: tList, Default: "", Synonym: "group.streams.rack.aware.assignment.tags",
		Doc: "The client tag keys used to spread standby replicas across Kafka Streams instances."},
	{Name: "streams.acceptable.recovery.lag", Type: tLong, Default: "10000", Min: 0, HasMin: true, Internal: true, Synonym: "group.streams.acceptable.recovery.lag",
		Doc: "The largest lag at which a client counts as caught up for an active task."},
	{Name: "streams.assignor.name", Type: tString, Synonym: "group.streams.assignors",
		Doc: "The task assignor of a streams group, one of group.streams.assignors; the first of them when unset."},
	{Name: "errors.deadletterqueue.topic.name", Type: tString, Default: "",
		Doc: "The topic that records a share group rejects are copied to; none when empty."},
	{Name: "errors.deadletterqueue.copy.record.enable", Type: tBool, Default: "false",
		Doc: "Whether records written to the dead-letter topic carry the original record."},
}

var groupIndex = indexByName(groupDefs, func(d *GroupDef) string { return d.Name })

// anyValue is the value of a broker property samsa or Kafka defines: as
// set, else the default ("" for null), with its source.
func (p *Props) anyValue(name string) (string, kmsg.ConfigSource) {
	if v, ok := p.set[name]; ok {
		return v.norm, v.source
	}
	if d := brokerIndex[name]; d != nil && d.Default != nil {
		return *d.Default, kmsg.ConfigSourceDefaultConfig
	}
	if d := kafkaIndex[name]; d != nil && d.Default != nil {
		return *d.Default, kmsg.ConfigSourceDefaultConfig
	}
	return "", kmsg.ConfigSourceDefaultConfig
}

func (p *Props) anyInt(name string) int64 {
	v, _ := p.anyValue(name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// groupBrokerValue is the value group config d takes without an override.
func (p *Props) groupBrokerValue(d *GroupDef) (string, kmsg.ConfigSource) {
	if d.Synonym == "" {
		return d.Default, kmsg.ConfigSourceDefaultConfig
	}
	v, src := p.anyValue(d.Synonym)
	if d.Name == "streams.assignor.name" {
		// group.streams.assignors is a list; its first is the default.
		v, _, _ = strings.Cut(v, ",")
	}
	return v, src
}

var isoDuration = regexp.MustCompile(`^-?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// parseGroupValue checks v against d's type and own range and returns its
// canonical form.
func parseGroupValue(d *GroupDef, v string) (string, error) {
	v = strings.TrimSpace(v)
	norm, err := parseTyped(d.Type, v)
	if err != nil {
		kind := map[kmsg.ConfigType]string{tInt: "INT", tLong: "LONG", tBool: "BOOLEAN"}[d.Type]
		if d.Type == tBool {
			return "", configErr("Invalid value %s for configuration %s: Expected value to be either true or false", v, d.Name)
		}
		return "", configErr("Invalid value %s for configuration %s: Not a number of type %s", v, d.Name, kind)
	}
	if d.HasMin {
		if n, _ := strconv.ParseInt(norm, 10, 64); n < d.Min {
			return "", configErr("Invalid value %s for configuration %s: Value must be at least %d", v, d.Name, d.Min)
		}
	}
	switch d.Name {
	case "share.auto.offset.reset":
		dur, ok := strings.CutPrefix(norm, "by_duration:")
		if !(norm == "latest" || norm == "earliest" || ok && isoDuration.MatchString(dur) && !strings.HasPrefix(dur, "-") && dur != "P" && !strings.HasSuffix(dur, "T")) {
			return "", configErr("Invalid value %s for configuration %s: Invalid value `%s` for configuration %s. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", v, d.Name, v, d.Name)
		}
	case "share.isolation.level":
		if norm != "read_committed" && norm != "read_uncommitted" {
			return "", configErr("Invalid value %s for configuration %s: String must be one of: read_committed, read_uncommitted", v, d.Name)
		}
	}
	return norm, nil
}

// ValidateGroupConfigs checks a group's whole set of overrides as Kafka's
// GroupConfig.validate does, against the broker properties of p. The
// error is a *ConfigError with Kafka's message.
func (p *Props) ValidateGroupConfigs(m map[string]string) error {
	norm := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		d := groupIndex[k]
		if d == nil {
			return configErr("Unknown group config name: %s", k)
		}
		v, err := parseGroupValue(d, m[k])
		if err != nil {
			return err
		}
		norm[k] = v
	}
	if tags, ok := norm["streams.rack.aware.assignment.tags"]; ok {
		list := splitList(tags)
		slices.Sort(list)
		if len(slices.Compact(list)) != len(splitList(tags)) {
			return configErr("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
		}
	}
	for _, d := range groupDefs {
		v, ok := norm[d.Name]
		if !ok || (d.MinProp == "" && d.MaxProp == "") {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		switch {
		case d.MinProp != "" && d.MaxProp != "":
			lo, hi := p.anyInt(d.MinProp), p.anyInt(d.MaxProp)
			if n < lo || n > hi {
				return configErr("%s must be in the range %d to %d inclusive.", d.Name, lo, hi)
			}
		case d.MaxProp != "":
			if hi := p.anyInt(d.MaxProp); n > hi {
				return configErr("%s must be less than or equal to %d", d.Name, hi)
			}
		default:
			if lo := p.anyInt(d.MinProp); n < lo {
				return configErr("%s must be greater than or equal to %d", d.Name, lo)
			}
		}
	}
	if a, ok := norm["streams.assignor.name"]; ok {
		names, _ := p.anyValue("group.streams.assignors")
		if !slices.Contains(splitList(names), a) {
			return configErr("streams.assignor.name '%s' is not a registered task assignor. Registered assignors are: [%s].", a, strings.Join(splitList(names), ", "))
		}
	}
	for _, kind := range []string{"consumer", "share", "streams"} {
		sk, hk := kind+".session.timeout.ms", kind+".heartbeat.interval.ms"
		_, sok := norm[sk]
		_, hok := norm[hk]
		if !sok && !hok {
			continue
		}
		s, h := p.groupInt(norm, sk), p.groupInt(norm, hk)
		if s <= h {
			return configErr("%s must be greater than %s", sk, hk)
		}
	}
	if t := norm["errors.deadletterqueue.topic.name"]; strings.HasPrefix(t, "__") {
		return configErr("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
	}
	return nil
}

// groupInt is the number a group config has with overrides m (unclamped),
// else from the broker.
func (p *Props) groupInt(m map[string]string, name string) int64 {
	v, ok := m[name]
	if !ok {
		v, _ = p.groupBrokerValue(groupIndex[name])
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n
}

// GroupValue is the value of group config name in effect for a group
// with overrides m: the override (a number clamped to the broker's range),
// else the broker's value. It panics on a name Kafka does not define.
func (p *Props) GroupValue(m map[string]string, name string) string {
	d := groupIndex[name]
	if d == nil {
		panic(fmt.Sprintf("config: lookup of undefined group config %q", name))
	}
	v, ok := m[name]
	if !ok {
		v, _ = p.groupBrokerValue(d)
		return v
	}
	norm, err := parseGroupValue(d, v)
	if err != nil {
		v, _ = p.groupBrokerValue(d)
		return v
	}
	if d.Type == tInt && (d.MinProp != "" || d.MaxProp != "") {
		n, _ := strconv.ParseInt(norm, 10, 64)
		if d.MinProp != "" {
			n = max(n, p.anyInt(d.MinProp))
		}
		if d.MaxProp != "" {
			n = min(n, p.anyInt(d.MaxProp))
		}
		norm = strconv.FormatInt(n, 10)
	}
	return norm
}

// GroupDuration is a millisecond group config in effect, as GroupValue.
func (p *Props) GroupDuration(m map[string]string, name string) time.Duration {
	n, _ := strconv.ParseInt(p.GroupValue(m, name), 10, 64)
	return time.Duration(n) * time.Millisecond
}

// GroupInt is a numeric group config in effect, as GroupValue.
func (p *Props) GroupInt(m map[string]string, name string) int64 {
	n, _ := strconv.ParseInt(p.GroupValue(m, name), 10, 64)
	return n
}

// DescribeGroup describes the group configs of a group with overrides m
// as Kafka does: every config but the internal ones not set, the value in effect,
// source GROUP_CONFIG for an override, else that of the broker property
// it stands for (DEFAULT_CONFIG for the ones with none); the synonyms are
// the override, then the broker property.
func (p *Props) DescribeGroup(m map[string]string, includeSynonyms, includeDocs bool) []Entry {
	var out []Entry
	for i := range groupDefs {
		d := &groupDefs[i]
		if _, set := m[d.Name]; d.Internal && !set {
			continue
		}
		var chain []Synonym
		if v, ok := m[d.Name]; ok {
			if norm, err := parseGroupValue(d, v); err == nil {
				chain = append(chain, Synonym{Name: d.Name, Value: str(norm), Source: int8(kmsg.ConfigSourceGroupConfig)})
			}
		}
		bv, bsrc := p.groupBrokerValue(d)
		syn := d.Synonym
		if syn == "" {
			syn = d.Name
		}
		chain = append(chain, Synonym{Name: syn, Value: str(bv), Source: int8(bsrc)})
		e := p.entry(d.Name, str(p.GroupValue(m, d.Name)), int8(d.Type), false, false, d.Doc, chain, includeSynonyms, includeDocs)
		out = append(out, e)
	}
	return out
}
