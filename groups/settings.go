package groups

import "time"

// GroupSettings are the settings of one group that its group configs
// (Kafka's GROUP config resource: consumer.session.timeout.ms and the
// others) decide, with the broker's values for the ones it does not set.
type GroupSettings struct {
	ConsumerSessionTimeout    time.Duration // consumer.session.timeout.ms
	ConsumerHeartbeatInterval time.Duration // consumer.heartbeat.interval.ms
}

// settings returns the settings in effect for group now: Config's when
// GroupSettings is nil, and any left zero by it.
func (c *Coordinator) settings(group string) GroupSettings {
	var s GroupSettings
	if c.cfg.GroupSettings != nil {
		s = c.cfg.GroupSettings(group)
	}
	if s.ConsumerSessionTimeout <= 0 {
		s.ConsumerSessionTimeout = c.cfg.ConsumerSessionTimeout
	}
	if s.ConsumerHeartbeatInterval <= 0 {
		s.ConsumerHeartbeatInterval = c.cfg.ConsumerHeartbeatInterval
	}
	return s
}
