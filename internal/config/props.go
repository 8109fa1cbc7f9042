package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Props is a validated set of broker properties: the ones set explicitly
// (from the file, the environment or overrides) and Kafka's defaults for
// the rest. A Props is immutable and safe for concurrent use.
type Props struct {
	set map[string]setValue // the effective values: static, then the dynamic layers over them

	// The dynamic broker configs (WithDynamic), canonical values by name:
	// the cluster-wide default and this broker's own. nil without.
	dynDefault, dynBroker map[string]string
	static                map[string]setValue // set before the dynamic layers; nil without

	listeners  []Listener // parsed at validation, controller listeners removed
	advertised []Listener
	quorum     *Quorum        // the KRaft quorum (quorum.go); nil without
	settings   BrokerSettings // decoded once by build
}

type setValue struct {
	raw    string // as given (trimmed)
	norm   string // Kafka's canonical form
	origin string // where it came from, for messages: "file x:12", "env KAFKA_X", "override"
	source kmsg.ConfigSource
}

// Load reads broker properties the way Kafka and its container image do:
// first the .properties file (if file is not empty), then the environment
// (KAFKA_FOO_BAR=v sets foo.bar, see envKey), then overrides ("key=value",
// highest precedence). Every key must be a known property and every value
// must parse; the error names the key, the value and where it came from.
func Load(file string, overrides []string, environ []string) (*Props, error) {
	var in []input
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		for _, p := range parseProperties(string(b)) {
			in = append(in, input{key: p.key, value: p.value, origin: fmt.Sprintf("%s line %d", file, p.line)})
		}
	}
	in = append(in, envInputs(environ)...)
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("config: --override %q: expected key=value", o)
		}
		in = append(in, input{key: strings.TrimSpace(k), value: v, origin: "--override"})
	}
	return build(in)
}

// New returns properties with the given values set, as if each were an
// --override. It is meant for tests and embedding; it validates exactly
// as Load does.
func New(overrides map[string]string) (*Props, error) {
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	in := make([]input, 0, len(keys))
	for _, k := range keys {
		in = append(in, input{key: k, value: overrides[k], origin: "override"})
	}
	return build(in)
}

// With returns a copy of p with more properties set (as overrides).
func (p *Props) With(overrides map[string]string) (*Props, error) {
	var in []input
	for k, v := range p.set {
		in = append(in, input{key: k, value: v.raw, origin: v.origin, source: v.source})
	}
	sort.Slice(in, func(i, j int) bool { return in[i].key < in[j].key })
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		in = append(in, input{key: k, value: overrides[k], origin: "override"})
	}
	return build(in)
}

type input struct {
	key, value, origin string
	source             kmsg.ConfigSource // 0: STATIC_BROKER_CONFIG
}

func build(in []input) (*Props, error) {
	p := &Props{set: make(map[string]setValue)}
	var errs []error
	for _, i := range in {
		v := strings.TrimSpace(i.value)
		typ, check, err := propType(i.key)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w (%s)", err, i.origin))
			continue
		}
		norm, err := checkValue(typ, check, v)
		if err != nil {
			errs = append(errs, &propError{
				msg:   fmt.Sprintf("%v %q for property %q (%s): %v", ErrInvalidConfig, i.value, i.key, i.origin, err),
				kafka: named(i.key, err),
			})
			continue
		}
		src := i.source
		if src == 0 {
			src = kmsg.ConfigSourceStaticBrokerConfig
		}
		p.set[i.key] = setValue{raw: v, norm: norm, origin: i.origin, source: src}
	}
	if len(errs) == 0 {
		errs = append(errs, p.crossCheck()...)
		errs = append(errs, p.tieredCheck()...)
	}
	if len(errs) == 0 {
		var err error
		if p.settings, err = decodeSettings(p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// propError is a property value refused: samsa's message, naming the
// value, the key and where it was set, wrapping the *ConfigError with
// Kafka's (or ErrInvalidConfig, when the refusal is samsa's own).
type propError struct {
	msg   string
	kafka error
}

func (e *propError) Error() string { return e.msg }

func (e *propError) Unwrap() error {
	if errors.Is(e.kafka, ErrInvalidConfig) {
		return e.kafka
	}
	return ErrInvalidConfig
}

// propType returns the type and check of a property name: samsa's
// definition, else Kafka's (a property samsa accepts and ignores), else
// Kafka's for a per-listener name (listener.name.<l>.<property>). A name
// neither defines is ErrUnknownConfig.
//
// The check is Kafka's validator of the property (kafkaChecks), then
// samsa's own.
func propType(key string) (kmsg.ConfigType, func(string) error, error) {
	if d, ok := brokerIndex[key]; ok {
		return d.Type, both(kafkaChecks[key], d.check), nil
	}
	if d, ok := kafkaIndex[key]; ok {
		return d.Type, kafkaChecks[key], nil
	}
	if d, ok := rsmIndex[key]; ok {
		return d.Type, d.check, nil
	}
	if removedInKafka4(key) || pluginProp(key) {
		return kmsg.ConfigTypeString, nil, nil
	}
	if d, ok := samsaListenerDef(key); ok {
		return d.Type, both(kafkaChecks[d.Name], d.check), nil
	}
	if d, _, ok := kafkaListenerDef(key); ok {
		return d.Type, kafkaChecks[d.Name], nil
	}
	return 0, nil, fmt.Errorf("%w property %q", ErrUnknownConfig, key)
}

// removedBrokerProps are broker properties of Kafka 3.x that Kafka 4.0
// removed (ZooKeeper, the old message formats, the ZooKeeper controller's
// settings): a server.properties or compose file written for Kafka 3
// still names them, and Kafka 4 starts with them (it warns about unused
// names), so samsa accepts them as it accepts every Kafka property it
// does not implement: ignored, and named in the start-up warning.
var removedBrokerProps = map[string]bool{
	"leader.imbalance.per.broker.percentage":      true,
	"log.message.format.version":                  true,
	"log.message.timestamp.difference.max.ms":     true,
	"inter.broker.protocol.version":               true,
	"control.plane.listener.name":                 true,
	"broker.id.generation.enable":                 true,
	"reserved.broker.max.id":                      true,
	"controlled.shutdown.max.retries":             true,
	"controlled.shutdown.retry.backoff.ms":        true,
	"offsets.commit.required.acks":                true,
	"delegation.token.master.key":                 true,
	"quota.producer.default":                      true,
	"quota.consumer.default":                      true,
	"auto.include.jmx.reporter":                   true,
	"zookeeper.metadata.migration.enable":         true,
	"zookeeper.metadata.migration.min.batch.size": true,
}

// removedInKafka4 reports whether key is a broker property Kafka 4.0
// removed: one of removedBrokerProps or any zookeeper.* setting.
func removedInKafka4(key string) bool {
	return removedBrokerProps[key] || strings.HasPrefix(key, "zookeeper.")
}

// Ignored returns, sorted, the properties set explicitly that samsa
// accepts and does not act on: Kafka's properties that samsa does not
// implement (per-listener ones included) and samsa's own definitions
// marked Ignored. The broker names them in one warning line at start.
func (p *Props) Ignored() []string {
	var out []string
	for k := range p.set {
		d, ok := brokerIndex[k]
		if !ok {
			d, ok = samsaListenerDef(k)
		}
		if rsmIndex[k] != nil {
			continue
		}
		if !ok || d.Ignored || (kraftProps[k] && p.quorum == nil) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// invalid builds an error about the value of a set (or defaulted) key.
func (p *Props) invalid(key string, format string, args ...any) error {
	origin := "default"
	if v, ok := p.set[key]; ok {
		origin = v.origin
	}
	return fmt.Errorf("%w %q for property %q (%s): %s", ErrInvalidConfig, p.String(key), key, origin, fmt.Sprintf(format, args...))
}

// crossCheck validates what involves more than one property.
func (p *Props) crossCheck() []error {
	var errs []error
	_, nodeSet := p.set["node.id"]
	if b, ok := p.set["broker.id"]; ok && nodeSet && b.norm != "-1" && b.norm != p.set["node.id"].norm {
		errs = append(errs, p.invalid("broker.id", "differs from node.id %s", p.set["node.id"].norm))
	}

	protos, err := parseProtocolMap(p.String("listener.security.protocol.map"))
	if err != nil { // already checked; defensive
		return append(errs, p.invalid("listener.security.protocol.map", "%v", err))
	}
	controller := map[string]bool{}
	for _, n := range p.List("controller.listener.names") {
		controller[strings.ToUpper(n)] = true
	}
	resolve := func(key string, ls []Listener) ([]Listener, error) {
		var out []Listener
		for _, l := range ls {
			if controller[l.Name] {
				continue
			}
			proto, ok := protos[l.Name]
			if !ok {
				return nil, p.invalid(key, "no security protocol for listener %s in listener.security.protocol.map", l.Name)
			}
			l.Protocol = proto
			out = append(out, l)
		}
		return out, nil
	}

	ls, _ := parseListeners(p.String("listeners"))
	if p.listeners, err = resolve("listeners", ls); err != nil {
		errs = append(errs, err)
	} else if len(p.listeners) == 0 {
		errs = append(errs, p.invalid("listeners", "no broker listener (all are controller.listener.names)"))
	}
	if adv, ok := p.set["advertised.listeners"]; ok && len(splitList(adv.norm)) > 0 {
		als, _ := parseListeners(adv.norm)
		if p.advertised, err = resolve("advertised.listeners", als); err != nil {
			errs = append(errs, err)
		}
		for _, a := range p.advertised {
			if !slices.ContainsFunc(p.listeners, func(l Listener) bool { return l.Name == a.Name }) {
				errs = append(errs, p.invalid("advertised.listeners", "listener %s is not in listeners", a.Name))
			}
		}
	} else {
		for _, l := range p.listeners {
			if l.Host == "" || l.Host == "0.0.0.0" || l.Host == "::" {
				l.Host = "127.0.0.1"
			}
			p.advertised = append(p.advertised, l)
		}
	}
	if v := p.String("security.inter.broker.protocol"); v != "PLAINTEXT" && !p.IsSet("inter.broker.listener.name") &&
		!slices.ContainsFunc(p.listeners, func(l Listener) bool { return l.Name == v }) {
		errs = append(errs, p.invalid("security.inter.broker.protocol", "no listener named %s in listeners (or set inter.broker.listener.name)", v))
	}
	if n, ok := p.set["inter.broker.listener.name"]; ok {
		if !slices.ContainsFunc(p.listeners, func(l Listener) bool { return l.Name == strings.ToUpper(n.norm) }) {
			errs = append(errs, p.invalid("inter.broker.listener.name", "no such listener in listeners"))
		}
	}
	return append(errs, p.checkQuorum()...)
}

// ---- plain accessors ----------------------------------------------------

// samsaListenerDef returns samsa's definition of the property that a
// per-listener name (listener.name.<listener>.ssl.keystore.location)
// overrides, when samsa acts on it.
func samsaListenerDef(key string) (*Def, bool) {
	rest, ok := strings.CutPrefix(key, listenerPrefix)
	if !ok {
		return nil, false
	}
	_, prop, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, false
	}
	if d, ok := brokerIndex[prop]; ok {
		return d, true
	}
	// <mechanism>.sasl.jaas.config
	if _, prop, ok := strings.Cut(prop, "."); ok && strings.HasPrefix(prop, "sasl.") {
		d, ok := brokerIndex[prop]
		return d, ok
	}
	return nil, false
}

// MechanismString is ListenerString for a SASL mechanism's setting:
// listener.name.<listener>.<mechanism>.<key>, else the listener's value.
func (p *Props) MechanismString(listener, mechanism, key string) string {
	if v, ok := p.set[listenerPrefix+strings.ToLower(listener)+"."+strings.ToLower(mechanism)+"."+key]; ok {
		return v.norm
	}
	return p.ListenerString(listener, key)
}

// ListenerString is String for one listener: Kafka's per-listener
// override listener.name.<listener lower-cased>.<key> when set, else key.
func (p *Props) ListenerString(listener, key string) string {
	if v, ok := p.set[listenerPrefix+strings.ToLower(listener)+"."+key]; ok {
		return v.norm
	}
	return p.String(key)
}

// Lookup returns the value of key in Kafka's canonical form and whether it
// was set explicitly.
func (p *Props) Lookup(key string) (string, bool) {
	v, ok := p.set[key]
	return v.norm, ok
}

// String returns the value of key: the set value, else the default, else
// "" (for Kafka's null default). It panics on a name samsa does not
// define, so that a misspelt lookup fails the first test that reaches it
// instead of reading as zero. Prefer Settings.
func (p *Props) String(key string) string {
	d := brokerIndex[key]
	if d == nil {
		panic(fmt.Sprintf("config: lookup of undefined broker property %q", key))
	}
	if v, ok := p.set[key]; ok {
		return v.norm
	}
	if d.Default != nil {
		return *d.Default
	}
	return ""
}

// Int64 returns the value of an INT, SHORT or LONG property; 0 when it is
// null. It panics on an undefined name, as String does.
func (p *Props) Int64(key string) int64 {
	n, _ := strconv.ParseInt(p.String(key), 10, 64)
	return n
}

// Int32 returns the value of an INT or SHORT property; 0 when null. It
// panics on an undefined name, as String does.
func (p *Props) Int32(key string) int32 {
	n, _ := strconv.ParseInt(p.String(key), 10, 32)
	return int32(n)
}

// Float64 returns the value of a DOUBLE property.
func (p *Props) Float64(key string) float64 {
	f, _ := strconv.ParseFloat(p.String(key), 64)
	return f
}

// Bool returns the value of a BOOLEAN property.
func (p *Props) Bool(key string) bool { return p.String(key) == "true" }

// List returns the elements of a LIST property (nil when empty or null).
func (p *Props) List(key string) []string { return splitList(p.String(key)) }

// IsSet reports whether key was set explicitly.
func (p *Props) IsSet(key string) bool {
	_, ok := p.set[key]
	return ok
}

// Source returns where key's effective value comes from:
// DYNAMIC_BROKER_CONFIG or DYNAMIC_DEFAULT_BROKER_CONFIG (WithDynamic),
// STATIC_BROKER_CONFIG for one set in the properties, DEFAULT_CONFIG
// otherwise.
func (p *Props) Source(key string) kmsg.ConfigSource {
	if v, ok := p.set[key]; ok {
		return v.source
	}
	return kmsg.ConfigSourceDefaultConfig
}

// Origin says where a key's value came from: "<file> line N",
// "environment variable KAFKA_...", "--override", "override" (New/With),
// or "default".
func (p *Props) Origin(key string) string {
	if v, ok := p.set[key]; ok {
		return v.origin
	}
	return "default"
}

// Explicit returns the explicitly set properties (canonical values),
// for logging at start-up.
func (p *Props) Explicit() map[string]string {
	out := make(map[string]string, len(p.set))
	for k, v := range p.set {
		out[k] = v.norm
	}
	return out
}

// ---- derived values -----------------------------------------------------

// NodeID returns node.id, or broker.id when only that is set (Kafka keeps
// them equal); samsa's default is 1.
func (p *Props) NodeID() int32 {
	if _, ok := p.set["node.id"]; !ok {
		if b, ok := p.set["broker.id"]; ok && b.norm != "-1" {
			return p.Int32("broker.id")
		}
	}
	return p.Int32("node.id")
}

// LogDirs returns log.dirs, or log.dir when log.dirs is not set.
func (p *Props) LogDirs() []string {
	if ds := p.List("log.dirs"); len(ds) > 0 {
		return ds
	}
	return []string{p.String("log.dir")}
}

// CordonedLogDirsError is a cordoned.log.dirs that names a directory not
// in log.dirs, or "*" beside other entries; Msg is Kafka's message.
type CordonedLogDirsError struct{ Msg string }

func (e *CordonedLogDirsError) Error() string { return "config: cordoned.log.dirs: " + e.Msg }

// CordonedLogDirs returns cordoned.log.dirs (KIP-1066) as entries of
// LogDirs: every one of them for "*". Entries are compared with log.dirs'
// after filepath.Clean. The error is a *CordonedLogDirsError.
func (p *Props) CordonedLogDirs() ([]string, error) {
	list, dirs := p.List("cordoned.log.dirs"), p.LogDirs()
	if slices.Contains(list, "*") {
		if len(list) > 1 {
			return nil, &CordonedLogDirsError{"When cordoned.log.dirs is set to *, it must not contain other values"}
		}
		return slices.Clone(dirs), nil
	}
	var out, missing []string
	for _, c := range list {
		i := slices.IndexFunc(dirs, func(d string) bool { return filepath.Clean(d) == filepath.Clean(c) })
		if i < 0 {
			missing = append(missing, c)
			continue
		}
		out = append(out, dirs[i])
	}
	if len(missing) > 0 {
		return nil, &CordonedLogDirsError{"All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : " + strings.Join(missing, ", ")}
	}
	return out, nil
}

// Listeners returns the listeners to bind, without the KRaft controller
// listeners (controller.listener.names), in the order given. Load and New
// validate them, so the error is only for a Props not built by them.
func (p *Props) Listeners() ([]Listener, error) {
	if len(p.listeners) == 0 {
		return nil, errors.New("config: no listeners (Props not built by Load or New)")
	}
	return slices.Clone(p.listeners), nil
}

// AdvertisedListeners returns the endpoints published in Metadata:
// advertised.listeners when set, else listeners with 127.0.0.1 in place of
// an empty or wildcard host. A Port of 0 (from a listener on port 0) means
// "the port the listener of that Name is bound to". The error is as for
// Listeners.
func (p *Props) AdvertisedListeners() ([]Listener, error) {
	if len(p.advertised) == 0 {
		return nil, errors.New("config: no advertised listeners (Props not built by Load or New)")
	}
	return slices.Clone(p.advertised), nil
}

// InterBrokerListener returns the advertised listener brokers use to reach
// each other: inter.broker.listener.name, else the one named after
// security.inter.broker.protocol, else the first.
func (p *Props) InterBrokerListener() Listener {
	want := strings.ToUpper(p.String("inter.broker.listener.name"))
	if want == "" {
		want = p.String("security.inter.broker.protocol")
	}
	for _, l := range p.advertised {
		if l.Name == want {
			return l
		}
	}
	if len(p.advertised) > 0 {
		return p.advertised[0]
	}
	return Listener{}
}

// EtcdEndpoints returns etcd.endpoints; empty means embedded etcd.
func (p *Props) EtcdEndpoints() []string { return p.List("etcd.endpoints") }

// RetentionMs is the broker-wide retention time: log.retention.ms, else
// log.retention.minutes, else log.retention.hours; -1 means no limit.
func (p *Props) RetentionMs() int64 { return p.topicLong("retention.ms") }

// RollMs is the broker-wide segment roll time: log.roll.ms, else log.roll.hours.
func (p *Props) RollMs() int64 { return p.topicLong("segment.ms") }

// RollJitterMs is log.roll.jitter.ms, else log.roll.jitter.hours.
func (p *Props) RollJitterMs() int64 { return p.topicLong("segment.jitter.ms") }

// FlushMs is log.flush.interval.ms, else log.flush.scheduler.interval.ms.
func (p *Props) FlushMs() int64 { return p.topicLong("flush.ms") }

func (p *Props) topicLong(topicKey string) int64 {
	n, _ := strconv.ParseInt(p.brokerTopicDefault(topicIndex[topicKey]), 10, 64)
	return n
}
