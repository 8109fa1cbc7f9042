package config

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

//go:generate go run ./kafkagen

// KafkaDef is one broker property as Apache Kafka defines it, generated
// from Kafka's ConfigDef into kafka_defs.go.
type KafkaDef struct {
	Name       string
	Type       kmsg.ConfigType
	Default    *string // nil: Kafka's null, or no default when Required
	Required   bool    // Kafka has no default and needs a value
	Valid      string  // Kafka's validator as it prints itself: "[0,...]", "[broker, controller]"; "" for none
	Importance string  // high, medium or low
	Dynamic    bool    // Kafka can change it at run time
	Internal   bool    // defined as internal: left out of Kafka's documentation
	Doc        string  // the first sentence of Kafka's documentation
}

const tPassword = kmsg.ConfigTypePassword

var kafkaIndex = indexByName(kafkaDefs, func(d *KafkaDef) string { return d.Name })

// kafkaChecks are the checks of Kafka's validators of its broker
// properties, by name (none for a property without one samsa reads).
var kafkaChecks = func() map[string]func(string) error {
	m := make(map[string]func(string) error)
	for _, d := range kafkaDefs {
		if c := kafkaCheck(d.Name, d.Type, d.Valid, true); c != nil {
			m[d.Name] = c
		}
	}
	return m
}()

// KafkaDefs returns every broker property Apache Kafka (KafkaVersion)
// defines, sorted by name.
func KafkaDefs() []KafkaDef { return append([]KafkaDef(nil), kafkaDefs...) }

// KafkaBrokerDef returns Kafka's definition of a broker property.
func KafkaBrokerDef(name string) (KafkaDef, bool) { return lookup(kafkaIndex, name) }

// listenerPrefix is Kafka's prefix of per-listener settings:
// listener.name.<listener>.<property>, and for SASL settings
// listener.name.<listener>.<mechanism>.<property>.
const listenerPrefix = "listener.name."

// kafkaListenerDef returns Kafka's definition of the property that a
// per-listener name (listener.name.internal.ssl.keystore.location)
// overrides, and the listener it names.
func kafkaListenerDef(name string) (*KafkaDef, string, bool) {
	rest, ok := strings.CutPrefix(name, listenerPrefix)
	if !ok {
		return nil, "", false
	}
	listener, prop, ok := strings.Cut(rest, ".")
	if !ok || listener == "" {
		return nil, "", false
	}
	if d := kafkaIndex[prop]; d != nil {
		return d, strings.ToUpper(listener), true
	}
	// <mechanism>.<property>: sasl.jaas.config and the callback handlers
	// are set per mechanism (listener.name.sasl_ssl.plain.sasl.jaas.config).
	if _, prop, ok := strings.Cut(prop, "."); ok {
		if d := kafkaIndex[prop]; d != nil && strings.HasPrefix(prop, "sasl.") {
			return d, strings.ToUpper(listener), true
		}
	}
	return nil, "", false
}

// KafkaTopicDefs returns every topic config Apache Kafka (KafkaVersion)
// defines, internal ones included, sorted by name.
func KafkaTopicDefs() []KafkaDef { return append([]KafkaDef(nil), kafkaTopicDefs...) }
