package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrNotDynamic is a dynamic broker config change that Kafka refuses: a
// property it cannot change at run time, or one it changes only per
// broker set at the cluster-wide default. Kafka answers INVALID_REQUEST.
var ErrNotDynamic = errors.New("config: cannot update dynamically")

// WithDynamic returns p (its static properties) with Kafka's dynamic
// broker configs over them, as AlterConfigs on a BROKER resource stores
// them: the cluster-wide default (resource name "") and then this
// broker's own. Each value is checked as a static one is.
func (p *Props) WithDynamic(clusterDefault, perBroker map[string]string) (*Props, error) {
	static := p.static
	if static == nil {
		static = p.set
	}
	in := make([]input, 0, len(static)+len(clusterDefault)+len(perBroker))
	for _, k := range slices.Sorted(maps.Keys(static)) {
		v := static[k]
		in = append(in, input{key: k, value: v.raw, origin: v.origin, source: v.source})
	}
	for _, k := range slices.Sorted(maps.Keys(clusterDefault)) {
		in = append(in, input{key: k, value: clusterDefault[k], origin: "dynamic cluster-wide default (etcd)", source: kmsg.ConfigSourceDynamicDefaultBrokerConfig})
	}
	for _, k := range slices.Sorted(maps.Keys(perBroker)) {
		in = append(in, input{key: k, value: perBroker[k], origin: "dynamic broker config (etcd)", source: kmsg.ConfigSourceDynamicBrokerConfig})
	}
	q, err := build(in)
	if err != nil {
		return nil, err
	}
	q.static = static
	q.dynDefault, q.dynBroker = normalizedLayer(q, clusterDefault), normalizedLayer(q, perBroker)
	return q, nil
}

func normalizedLayer(q *Props, layer map[string]string) map[string]string {
	if len(layer) == 0 {
		return nil
	}
	out := make(map[string]string, len(layer))
	for k, v := range layer {
		typ, check, err := propType(k)
		if err != nil {
			continue
		}
		if norm, err := checkValue(typ, check, strings.TrimSpace(v)); err == nil {
			out[k] = norm
		}
	}
	return out
}

// ValidateDynamic checks a dynamic broker config set as Kafka's
// DynamicBrokerConfig does before storing it: every name a broker
// property (ErrUnknownConfig otherwise), every one Kafka can change at
// run time, and none of the per-broker ones (listeners and their
// security) at the cluster-wide default (ErrNotDynamic); the values are
// checked by WithDynamic.
func ValidateDynamic(configs map[string]string, clusterDefault bool) error {
	var static, perBroker []string
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		dynamic, ok := dynamicName(name)
		if !ok {
			return fmt.Errorf("%w broker config %q", ErrUnknownConfig, name)
		}
		switch {
		case !dynamic:
			static = append(static, name)
		case clusterDefault && perBrokerOnly(name):
			perBroker = append(perBroker, name)
		}
	}
	if len(static) > 0 {
		return fmt.Errorf("%w: these configs cannot be updated dynamically: %s", ErrNotDynamic, strings.Join(static, ","))
	}
	if len(perBroker) > 0 {
		return fmt.Errorf("%w: these configs cannot be updated at the cluster-wide default, a broker id must be given: %s", ErrNotDynamic, strings.Join(perBroker, ","))
	}
	return nil
}

// dynamicName reports whether name is a broker property and whether Kafka
// changes it at run time.
func dynamicName(name string) (dynamic, known bool) {
	if d, ok := brokerIndex[name]; ok {
		return d.Dynamic || kafkaDynamic(name), true
	}
	if d, ok := kafkaIndex[name]; ok {
		return d.Dynamic, true
	}
	if _, listener, ok := kafkaListenerDef(name); ok && listener != "" {
		return true, true // listener.name.<l>.*: per-listener security, dynamic per broker
	}
	if _, ok := samsaListenerDef(name); ok {
		return true, true
	}
	return false, false
}

func kafkaDynamic(name string) bool {
	d, ok := kafkaIndex[name]
	return ok && d.Dynamic
}

// perBrokerOnly are Kafka's DynamicBrokerConfig.PerBrokerConfigs: the
// listeners and their security, which only a broker's own resource sets.
func perBrokerOnly(name string) bool {
	switch name {
	case "listeners", "advertised.listeners", "listener.security.protocol.map", "cordoned.log.dirs":
		return true
	}
	return strings.HasPrefix(name, listenerPrefix) || strings.HasPrefix(name, "ssl.") || strings.HasPrefix(name, "sasl.")
}

// DynamicLayer returns the dynamic configs of one layer (the cluster-wide
// default, or this broker's own), canonical values by name.
func (p *Props) DynamicLayer(clusterDefault bool) map[string]string {
	if clusterDefault {
		return maps.Clone(p.dynDefault)
	}
	return maps.Clone(p.dynBroker)
}

// IsPassword reports whether name is a PASSWORD-typed broker property
// (ssl.keystore.password, sasl.jaas.config, their per-listener forms):
// one whose value is stored encrypted and never described.
func IsPassword(name string) bool {
	typ, _, err := propType(name)
	return err == nil && typ == kmsg.ConfigTypePassword
}
