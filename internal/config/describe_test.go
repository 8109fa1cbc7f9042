package config

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func find(t *testing.T, es []Entry, name string) Entry {
	t.Helper()
	for _, e := range es {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return Entry{}
}

func syns(es ...any) []Synonym {
	var out []Synonym
	for i := 0; i < len(es); i += 3 {
		var v *string
		if s, ok := es[i+1].(string); ok {
			v = &s
		}
		out = append(out, Synonym{Name: es[i].(string), Value: v, Source: int8(es[i+2].(kmsg.ConfigSource))})
	}
	if out == nil {
		out = []Synonym{}
	}
	return out
}

const (
	topicSrc   = kmsg.ConfigSourceDynamicTopicConfig
	staticSrc  = kmsg.ConfigSourceStaticBrokerConfig
	defaultSrc = kmsg.ConfigSourceDefaultConfig
)

func TestDescribeTopic(t *testing.T) {
	p := mustNew(t, map[string]string{
		"log.retention.ms":    "1000",
		"log.retention.hours": "5",
		"log.segment.bytes":   "2097152",
		"log.roll.hours":      "3",
	})
	es := p.DescribeTopic(map[string]string{"retention.ms": "2000", "cleanup.policy": "compact"}, true, true)
	if len(es) != len(TopicConfigNames()) {
		t.Fatalf("%d entries", len(es))
	}
	for i := 1; i < len(es); i++ {
		if es[i-1].Name >= es[i].Name {
			t.Fatalf("not sorted: %s before %s", es[i-1].Name, es[i].Name)
		}
	}
	tests := []struct {
		name   string
		value  string
		source kmsg.ConfigSource
		syns   []Synonym
	}{
		// override, then the static broker synonyms in precedence order, then the default
		{"retention.ms", "2000", topicSrc, syns(
			"retention.ms", "2000", topicSrc,
			"log.retention.ms", "1000", staticSrc,
			"log.retention.hours", "5", staticSrc,
			"log.retention.hours", "168", defaultSrc)},
		{"cleanup.policy", "compact", topicSrc, syns(
			"cleanup.policy", "compact", topicSrc,
			"log.cleanup.policy", "delete", defaultSrc)},
		{"segment.bytes", "2097152", staticSrc, syns(
			"log.segment.bytes", "2097152", staticSrc,
			"log.segment.bytes", "1073741824", defaultSrc)},
		// Kafka drops the synonyms before the first present one (log.roll.ms):
		// the value comes from log.roll.hours, the source says default.
		{"segment.ms", "10800000", defaultSrc, syns()},
		{"max.message.bytes", "1048588", defaultSrc, syns("message.max.bytes", "1048588", defaultSrc)},
		{"flush.ms", "9223372036854775807", defaultSrc, syns()},
		{"flush.messages", "9223372036854775807", defaultSrc, syns("log.flush.interval.messages", "9223372036854775807", defaultSrc)},
		{"remote.storage.enable", "false", defaultSrc, syns()},
	}
	for _, tt := range tests {
		e := find(t, es, tt.name)
		if e.Value == nil || *e.Value != tt.value || e.Source != int8(tt.source) {
			t.Errorf("%s: value %v source %d, want %s %d", tt.name, deref(e.Value), e.Source, tt.value, tt.source)
		}
		if !reflect.DeepEqual(e.Synonyms, tt.syns) {
			t.Errorf("%s: synonyms %s, want %s", tt.name, fmtSyns(e.Synonyms), fmtSyns(tt.syns))
		}
		if e.ReadOnly || e.Sensitive || e.Doc == "" {
			t.Errorf("%s: readOnly %v sensitive %v doc %q", tt.name, e.ReadOnly, e.Sensitive, e.Doc)
		}
	}
	if e := find(t, es, "retention.ms"); e.Type != int8(kmsg.ConfigTypeLong) {
		t.Errorf("type of retention.ms = %d", e.Type)
	}
	if e := find(t, es, "cleanup.policy"); e.Type != int8(kmsg.ConfigTypeList) {
		t.Errorf("type of cleanup.policy = %d", e.Type)
	}

	// without synonyms and docs
	es = p.DescribeTopic(nil, false, false)
	e := find(t, es, "retention.ms")
	if e.Synonyms != nil || e.Doc != "" || *e.Value != "1000" || e.Source != int8(staticSrc) {
		t.Errorf("plain retention.ms = %+v", e)
	}
}

func TestDescribeBroker(t *testing.T) {
	p := mustNew(t, map[string]string{"log.retention.hours": "5", "broker.id": "3", "num.partitions": "4"})
	es := p.DescribeBroker(true, true)
	if len(es) != len(brokerDefs) {
		t.Fatalf("%d entries", len(es))
	}
	tests := []struct {
		name     string
		value    *string
		source   kmsg.ConfigSource
		readOnly bool
		syns     []Synonym
	}{
		{"num.partitions", str("4"), staticSrc, true, syns("num.partitions", "4", staticSrc, "num.partitions", "1", defaultSrc)},
		{"log.retention.hours", str("5"), staticSrc, false, syns("log.retention.hours", "5", staticSrc, "log.retention.hours", "168", defaultSrc)},
		{"log.retention.ms", nil, defaultSrc, false, syns()},
		{"node.id", str("3"), staticSrc, true, syns("node.id", "3", staticSrc, "node.id", "1", defaultSrc)},
		{"broker.id", str("3"), staticSrc, true, syns("broker.id", "3", staticSrc, "broker.id", "-1", defaultSrc)},
		{"listeners", str("PLAINTEXT://127.0.0.1:9092"), defaultSrc, false, syns("listeners", "PLAINTEXT://127.0.0.1:9092", defaultSrc)},
	}
	for _, tt := range tests {
		e := find(t, es, tt.name)
		if deref(e.Value) != deref(tt.value) || (e.Value == nil) != (tt.value == nil) || e.Source != int8(tt.source) || e.ReadOnly != tt.readOnly {
			t.Errorf("%s: value %s source %d readOnly %v", tt.name, deref(e.Value), e.Source, e.ReadOnly)
		}
		if !reflect.DeepEqual(e.Synonyms, tt.syns) {
			t.Errorf("%s: synonyms %s, want %s", tt.name, fmtSyns(e.Synonyms), fmtSyns(tt.syns))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func fmtSyns(ss []Synonym) string {
	out := "["
	for _, s := range ss {
		out += s.Name + "=" + deref(s.Value) + "(" + kmsg.ConfigSource(s.Source).String() + ") "
	}
	return out + "]"
}
