package config

import "testing"

// CheckReconfiguration refuses what Kafka 4.4 refuses beyond each
// config's validator, with its code and words (compat's
// TestConfigRangesKafkaReference asks both brokers); a change within the
// rules passes.
func TestCheckReconfiguration(t *testing.T) {
	base, err := New(map[string]string{"node.id": "1"})
	if err != nil {
		t.Fatal(err)
	}
	wrapped := func(msg string) string {
		return "Invalid value org.apache.kafka.common.config.ConfigException: " + msg + " for configuration Invalid dynamic configuration"
	}
	for _, c := range []struct {
		name          string
		perBroker     bool
		def, mine     map[string]string
		want          string // "" for no refusal
		invalidConfig bool
	}{
		{"io threads halved", false, map[string]string{"num.io.threads": "4"}, nil, "", false},
		{"io threads doubled", true, nil, map[string]string{"num.io.threads": "16"}, "", false},
		{"io threads below half", false, map[string]string{"num.io.threads": "3"}, nil,
			wrapped("Dynamic thread count update validation failed for num.io.threads=3, value should be at least half the current value 8"), false},
		{"network threads past double", true, nil, map[string]string{"num.network.threads": "7"},
			wrapped("Dynamic thread count update validation failed for num.network.threads=7, value should not be greater than double the current value 3"), false},
		{"default under a broker's own value", false, map[string]string{"background.threads": "1"}, map[string]string{"background.threads": "10"}, "", false},
		{"broker min.insync.replicas", true, nil, map[string]string{"min.insync.replicas": "2"},
			"Broker-level min.insync.replicas cannot be altered while ELR is enabled.", true},
		{"cluster min.insync.replicas", false, map[string]string{"min.insync.replicas": "2"}, nil, "", false},
		{"cleaner threads 0", false, map[string]string{"log.cleaner.threads": "0"}, nil, "/ by zero", false},
		{"cleaner threads past the dedupe buffer", false, map[string]string{"log.cleaner.threads": "128"}, nil,
			"requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.", false},
		{"cleaner threads tripled", false, map[string]string{"log.cleaner.threads": "3"}, nil,
			wrapped("Log cleaner threads cannot be increased to more than double the current value 1"), false},
		{"per-ip zero without overrides", false, map[string]string{"max.connections.per.ip": "0"}, nil,
			"requirement failed: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.", false},
		{"per-ip zero with overrides", false, map[string]string{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:5"}, nil, "", false},
		{"max.connections 0", true, nil, map[string]string{"max.connections": "0"}, wrapped("Invalid max.connections 0"), false},
		{"assignment interval past its max", false, map[string]string{"group.share.assignment.interval.ms": "2147483647"}, nil,
			"group.share.assignment.interval.ms must be less than or equal to group.share.max.assignment.interval.ms", false},
		{"local retention -1", false, map[string]string{"log.local.retention.ms": "-1"}, nil,
			wrapped("Invalid value -1 for configuration log.local.retention.ms: Value must not be -1 as log.retention.ms value is set as 604800000."), false},
		{"local retention -1, retention -1", false, map[string]string{"log.local.retention.ms": "-1", "log.retention.ms": "-1"}, nil, "", false},
		{"local retention past retention", false, map[string]string{"log.local.retention.ms": "604800001"}, nil,
			wrapped("Invalid value 604800001 for configuration log.local.retention.ms: Value must not be more than log.retention.ms property value: 604800000"), false},
		{"copy lag past local retention", false, map[string]string{"log.remote.copy.lag.ms": "604800001"}, nil,
			wrapped("Invalid value 604800001 for configuration log.remote.copy.lag.ms: Value must not exceed log.local.retention.ms (effective value: 604800000)"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			next, err := base.WithDynamic(c.def, c.mine)
			if err != nil {
				t.Fatal(err)
			}
			var touched []string
			for k := range c.def {
				touched = append(touched, k)
			}
			for k := range c.mine {
				touched = append(touched, k)
			}
			err = CheckReconfiguration(base, next, c.perBroker, touched)
			got, gotCode := "", false
			if re, ok := err.(*ReconfigError); ok {
				got, gotCode = re.Msg, re.InvalidConfig
			} else if err != nil {
				t.Fatalf("error %T %v", err, err)
			}
			if got != c.want || gotCode != c.invalidConfig {
				t.Errorf("got %q (INVALID_CONFIG %v)\nwant %q (INVALID_CONFIG %v)", got, gotCode, c.want, c.invalidConfig)
			}
		})
	}
}
