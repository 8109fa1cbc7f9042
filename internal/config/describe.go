package config

import (
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Entry is one config of a DescribeConfigs answer (and of a CreateTopics
// v5+ answer), with kmsg enum values in the int8 fields.
type Entry struct {
	Name      string
	Value     *string // nil for a sensitive config or Kafka's null
	Source    int8    // kmsg.ConfigSource
	ReadOnly  bool
	Sensitive bool
	Type      int8   // kmsg.ConfigType
	Doc       string // empty unless asked for
	Synonyms  []Synonym
}

// Synonym is one element of an Entry's synonyms, highest precedence first.
type Synonym struct {
	Name   string
	Value  *string
	Source int8 // kmsg.ConfigSource
}

var (
	srcTopic   = int8(kmsg.ConfigSourceDynamicTopicConfig)
	srcStatic  = int8(kmsg.ConfigSourceStaticBrokerConfig)
	srcDefault = int8(kmsg.ConfigSourceDefaultConfig)

	srcDynBroker  = int8(kmsg.ConfigSourceDynamicBrokerConfig)
	srcDynDefault = int8(kmsg.ConfigSourceDynamicDefaultBrokerConfig)
)

// DescribeTopic describes every topic config of a topic with the given
// overrides, sorted by name, as Kafka's ConfigHelper does:
//
//   - the value is the effective one (override, else broker synonyms, else
//     default), in canonical form;
//   - the synonyms are the override (DYNAMIC_TOPIC_CONFIG), then the
//     broker synonyms set in the properties (STATIC_BROKER_CONFIG) in
//     precedence order, then those with a default (DEFAULT_CONFIG) — with
//     Kafka's quirk that broker synonyms ranked before the first one that
//     is present are dropped, so retention.ms with only log.retention.hours
//     set reports no broker synonym and source DEFAULT_CONFIG;
//   - the source is that of the first synonym, or DEFAULT_CONFIG;
//   - an internal config (internal.segment.bytes, Confluent's
//     confluent.*.schema.validation) is described only when the topic
//     sets it.
func (p *Props) DescribeTopic(overrides map[string]string, includeSynonyms, includeDocs bool) []Entry {
	names := TopicConfigNames()
	for _, defs := range [][]TopicDef{topicDefs, confluentTopicDefs} {
		for _, d := range defs {
			if _, ok := overrides[d.Name]; ok && d.internal {
				names = append(names, d.Name)
			}
		}
	}
	sort.Strings(names)
	out := make([]Entry, 0, len(names))
	for _, name := range names {
		d := topicIndex[name]
		value := p.topicValue(d, overrides)
		var chain []Synonym
		if v, ok := overrides[name]; ok {
			if norm, err := normalizeTopicValue(d, v); err == nil {
				chain = append(chain, Synonym{Name: name, Value: str(norm), Source: srcTopic})
			}
		}
		if len(d.Synonyms) > 0 {
			names := make([]string, len(d.Synonyms))
			for i, s := range d.Synonyms {
				names[i] = s.Name
			}
			chain = append(chain, p.brokerChain(names[0], names)...)
		}
		out = append(out, p.entry(name, str(value), int8(d.Type), false, false, d.Doc, chain, includeSynonyms, includeDocs))
	}
	return out
}

// DescribeBroker describes every broker property, sorted by name, as
// Kafka does for a DescribeConfigs of this broker's id: values as set or
// defaulted (nil for null), STATIC_BROKER_CONFIG or DEFAULT_CONFIG, with
// readOnly for the properties Kafka cannot change at run time.
func (p *Props) DescribeBroker(includeSynonyms, includeDocs bool) []Entry {
	names := make([]string, 0, len(brokerDefs))
	for _, d := range brokerDefs {
		names = append(names, d.Name)
	}
	sort.Strings(names)
	out := make([]Entry, 0, len(names))
	for _, name := range names {
		d := brokerIndex[name]
		var value *string
		switch {
		case name == "node.id" || name == "broker.id":
			value = str(strconv.Itoa(int(p.NodeID())))
		case p.IsSet(name):
			value = str(p.set[name].norm)
		case d.Default != nil:
			value = str(*d.Default)
		}
		chain := p.brokerChain(name, brokerSynonyms(name))
		if (name == "node.id" || name == "broker.id") && len(chain) > 0 {
			// Kafka fills each of the two from the other; report the id.
			for i := range chain {
				if chain[i].Value == nil {
					chain[i].Value = value
				}
			}
		}
		if d.Sensitive {
			value = nil
			for i := range chain {
				chain[i].Value = nil
			}
		}
		out = append(out, p.entry(name, value, int8(d.Type), !d.Dynamic, d.Sensitive, d.Doc, chain, includeSynonyms, includeDocs))
	}
	return out
}

// DescribeBrokerDefault describes the cluster-wide dynamic defaults (a
// DescribeConfigs of the BROKER resource ""), as Kafka does: only the
// configs set there, each with its synonyms below this broker's own.
func (p *Props) DescribeBrokerDefault(includeSynonyms, includeDocs bool) []Entry {
	var out []Entry
	for _, name := range slices.Sorted(maps.Keys(p.dynDefault)) {
		var typ kmsg.ConfigType
		var doc string
		var sensitive bool
		if d := brokerIndex[name]; d != nil {
			typ, doc, sensitive = d.Type, d.Doc, d.Sensitive
		} else if d := kafkaIndex[name]; d != nil {
			typ, doc, sensitive = d.Type, d.Doc, d.Type == tPassword
		}
		value := str(p.dynDefault[name])
		chain := p.brokerChainFrom(name, brokerSynonyms(name), false)
		if sensitive {
			value = nil
			for i := range chain {
				chain[i].Value = nil
			}
		}
		out = append(out, p.entry(name, value, int8(typ), false, sensitive, doc, chain, includeSynonyms, includeDocs))
	}
	return out
}

func (p *Props) entry(name string, value *string, typ int8, readOnly, sensitive bool, doc string, chain []Synonym, includeSynonyms, includeDocs bool) Entry {
	e := Entry{Name: name, Value: value, Source: srcDefault, ReadOnly: readOnly, Sensitive: sensitive, Type: typ}
	if len(chain) > 0 {
		e.Source = chain[0].Source
	}
	if includeSynonyms {
		e.Synonyms = chain
		if e.Synonyms == nil {
			e.Synonyms = []Synonym{}
		}
	}
	if includeDocs {
		e.Doc = doc
	}
	return e
}

// brokerSynonyms lists the broker properties that stand for the same
// setting, highest precedence first (Kafka's
// DynamicBrokerConfig.brokerConfigSynonyms).
func brokerSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	case "node.id", "broker.id":
		return []string{name}
	}
	return []string{name}
}

// brokerChain builds Kafka's synonym list for broker property name with
// the given synonyms: the ones set (STATIC_BROKER_CONFIG), then the ones
// with a default (DEFAULT_CONFIG), all in synonym order, and then drops
// every element before the first one named name.
func (p *Props) brokerChain(name string, synonyms []string) []Synonym {
	return p.brokerChainFrom(name, synonyms, true)
}

// brokerChainFrom is brokerChain, with the dynamic layers first (this
// broker's own when perBroker, then the cluster-wide default), as Kafka's
// ConfigHelper lists them.
func (p *Props) brokerChainFrom(name string, synonyms []string, perBroker bool) []Synonym {
	var chain []Synonym
	if perBroker {
		for _, s := range synonyms {
			if v, ok := p.dynBroker[s]; ok {
				chain = append(chain, Synonym{Name: s, Value: str(v), Source: srcDynBroker})
			}
		}
	}
	for _, s := range synonyms {
		if v, ok := p.dynDefault[s]; ok {
			chain = append(chain, Synonym{Name: s, Value: str(v), Source: srcDynDefault})
		}
	}
	static := p.set
	if p.static != nil {
		static = p.static
	}
	for _, s := range synonyms {
		if v, ok := static[s]; ok {
			chain = append(chain, Synonym{Name: s, Value: str(v.raw), Source: srcStatic})
		} else if (s == "node.id" || s == "broker.id") && p.IsSet("node.id") != p.IsSet("broker.id") {
			// one of the pair was set: Kafka copies it into the other before
			// describing, so both show as static.
			chain = append(chain, Synonym{Name: s, Source: srcStatic})
		}
	}
	for _, s := range synonyms {
		if d := brokerIndex[s]; d != nil && d.Default != nil {
			chain = append(chain, Synonym{Name: s, Value: str(*d.Default), Source: srcDefault})
		} else if k := kafkaIndex[s]; d == nil && k != nil && k.Default != nil {
			chain = append(chain, Synonym{Name: s, Value: str(*k.Default), Source: srcDefault})
		}
	}
	for len(chain) > 0 && chain[0].Name != name {
		chain = chain[1:]
	}
	return chain
}
