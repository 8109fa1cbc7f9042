package config

import (
	"errors"
	"testing"
)

// A group config in effect is clamped to the broker's range, which may
// have narrowed since it was set; the broker's value stands for the ones
// not set, and what Kafka refuses is ErrInvalidConfig with its message.
func TestGroupValue(t *testing.T) {
	p, err := New(map[string]string{"group.consumer.max.session.timeout.ms": "50000", "group.streams.num.standby.replicas": "1"})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{"consumer.session.timeout.ms": "55000"}
	if got := p.GroupValue(m, "consumer.session.timeout.ms"); got != "50000" {
		t.Errorf("consumer.session.timeout.ms above the broker's maximum: %s, want 50000", got)
	}
	if got := p.GroupInt(m, "streams.num.standby.replicas"); got != 1 {
		t.Errorf("streams.num.standby.replicas unset: %d, want the broker's 1", got)
	}
	if got := p.GroupValue(nil, "streams.assignor.name"); got != "sticky" {
		t.Errorf("streams.assignor.name unset: %q, want sticky", got)
	}
	err = p.ValidateGroupConfigs(m)
	var ge *ConfigError
	if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ge) || ge.Msg != "consumer.session.timeout.ms must be in the range 45000 to 50000 inclusive." {
		t.Errorf("ValidateGroupConfigs(%v) = %v", m, err)
	}
}
