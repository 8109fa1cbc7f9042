package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ReconfigError is Kafka's refusal of a dynamic broker reconfiguration by
// a check beyond each config's own validator: InvalidConfig says Kafka
// answers INVALID_CONFIG (its controller's checks), else INVALID_REQUEST
// (the broker's), with Msg as Kafka words it.
type ReconfigError struct {
	InvalidConfig bool
	Msg           string
}

func (e *ReconfigError) Error() string { return e.Msg }

// threadPools are the sizes Kafka resizes at run time within half and
// double the current size (DynamicThreadPool, the network threads of
// DynamicListenerConfig, DynamicRemoteLogConfig).
var threadPools = []string{
	"num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads",
	"num.network.threads", "remote.log.manager.copier.thread.pool.size",
	"remote.log.manager.expiration.thread.pool.size", "remote.log.manager.follower.thread.pool.size",
	"remote.log.reader.threads",
}

// groupIntervals are the group coordinator's assignment intervals, each
// bounded by its max (GroupCoordinatorConfig's requirements).
var groupIntervals = []string{"group.consumer", "group.share", "group.streams"}

// CheckReconfiguration makes Kafka 4.4's checks of a dynamic broker config
// change that involve the broker's current values or other configs: cur
// is the broker's configuration before the change and next after it;
// perBroker says the change is to one broker's configs (not the cluster
// default), and touched names the configs the request sets or deletes.
func CheckReconfiguration(cur, next *Props, perBroker bool, touched []string) error {
	// The controller refuses these first (ELR is always on in samsa, as
	// Kafka 4.4 formats its metadata).
	for _, name := range touched {
		if name != "min.insync.replicas" {
			continue
		}
		if perBroker {
			return &ReconfigError{InvalidConfig: true, Msg: "Broker-level min.insync.replicas cannot be altered while ELR is enabled."}
		}
		if _, ok := next.Lookup(name); !ok {
			return &ReconfigError{InvalidConfig: true, Msg: "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."}
		}
	}
	// Building the new KafkaConfig: its requirements, unwrapped.
	for _, g := range groupIntervals {
		if next.long(g+".assignment.interval.ms") > next.long(g+".max.assignment.interval.ms") {
			return &ReconfigError{Msg: g + ".assignment.interval.ms must be less than or equal to " + g + ".max.assignment.interval.ms"}
		}
	}
	if threads := next.long("log.cleaner.threads"); threads == 0 {
		return &ReconfigError{Msg: "/ by zero"} // Kafka divides by it first
	} else if next.long("log.cleaner.dedupe.buffer.size")/threads <= 1<<20 {
		return &ReconfigError{Msg: "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."}
	}
	if next.long("max.connections.per.ip") == 0 && strings.TrimSpace(next.value("max.connections.per.ip.overrides")) == "" {
		return &ReconfigError{Msg: "requirement failed: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."}
	}
	// The reconfigurables' validations, wrapped as Kafka wraps them.
	for _, name := range threadPools {
		was, now := cur.long(name), next.long(name)
		if was == now {
			continue
		}
		what := fmt.Sprintf("Dynamic thread count update validation failed for %s=%d", name, now)
		switch {
		case now <= 0:
			return invalidDynamic(what + ", value should be at least 1")
		case now < was/2:
			return invalidDynamic(fmt.Sprintf("%s, value should be at least half the current value %d", what, was))
		case now > was*2:
			return invalidDynamic(fmt.Sprintf("%s, value should not be greater than double the current value %d", what, was))
		}
	}
	if was, now := cur.long("log.cleaner.threads"), next.long("log.cleaner.threads"); now < was/2 {
		return invalidDynamic(fmt.Sprintf("Log cleaner threads cannot be reduced to less than half the current value %d", was))
	} else if now > was*2 {
		return invalidDynamic(fmt.Sprintf("Log cleaner threads cannot be increased to more than double the current value %d", was))
	}
	// The listeners' connection quotas, when one of them changes.
	if cur.long("max.connections") != next.long("max.connections") || cur.long("max.connection.creation.rate") != next.long("max.connection.creation.rate") {
		for _, name := range []string{"max.connections", "max.connection.creation.rate"} {
			if v := next.long(name); v <= 0 {
				return invalidDynamic(fmt.Sprintf("Invalid %s %d", name, v))
			}
		}
	}
	for _, r := range []struct{ total, local, lag string }{
		{"log.retention.ms", "log.local.retention.ms", "log.remote.copy.lag.ms"},
		{"log.retention.bytes", "log.local.retention.bytes", "log.remote.copy.lag.bytes"},
	} {
		total, local := next.RetentionMs(), next.long(r.local)
		if r.total == "log.retention.bytes" {
			total = next.long(r.total)
		}
		effective := local
		if local == -2 {
			effective = total
		} else if total != -1 && local == -1 {
			return invalidDynamic(fmt.Sprintf("Invalid value -1 for configuration %s: Value must not be -1 as %s value is set as %d.", r.local, r.total, total))
		} else if total != -1 && local > total {
			return invalidDynamic(fmt.Sprintf("Invalid value %d for configuration %s: Value must not be more than %s property value: %d", local, r.local, r.total, total))
		}
		if lag := next.long(r.lag); lag > 0 && effective >= 0 && lag > effective {
			return invalidDynamic(fmt.Sprintf("Invalid value %d for configuration %s: Value must not exceed %s (effective value: %d)", lag, r.lag, r.local, effective))
		}
	}
	return nil
}

// invalidDynamic is a reconfigurable's ConfigException as Kafka's
// DynamicBrokerConfig wraps it: ConfigException("Invalid dynamic
// configuration", e) prints e as the value.
func invalidDynamic(msg string) error {
	return &ReconfigError{Msg: "Invalid value org.apache.kafka.common.config.ConfigException: " + msg + " for configuration Invalid dynamic configuration"}
}

// value is key's value: set, else samsa's default, else Kafka's ("" for
// null), for samsa's properties and the Kafka-only ones alike.
func (p *Props) value(key string) string {
	if v, ok := p.set[key]; ok {
		return v.norm
	}
	if d := brokerIndex[key]; d != nil && d.Default != nil {
		return *d.Default
	}
	if d := kafkaIndex[key]; d != nil && d.Default != nil {
		return *d.Default
	}
	return ""
}

// long is value as an integer (a DOUBLE truncated); 0 when unparsable.
func (p *Props) long(key string) int64 {
	v := p.value(key)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	f, _ := strconv.ParseFloat(v, 64)
	return int64(f)
}
