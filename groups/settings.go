package groups

import "time"

// GroupSettings are the settings of one group that its group configs
// (Kafka's GROUP config resource: consumer.session.timeout.ms and the
// others) decide, with the broker's values for the ones it does not set.
type GroupSettings struct {
	ConsumerSessionTimeout    time.Duration // consumer.session.timeout.ms
	ConsumerHeartbeatInterval time.Duration // consumer.heartbeat.interval.ms

	StreamsSessionTimeout        time.Duration // streams.session.timeout.ms
	StreamsHeartbeatInterval     time.Duration // streams.heartbeat.interval.ms
	StreamsNumStandbys           int           // streams.num.standby.replicas
	StreamsAcceptableRecoveryLag int64         // streams.acceptable.recovery.lag
	StreamsTaskOffsetInterval    time.Duration // streams.task.offset.interval.ms
	StreamsInitialDelay          time.Duration // streams.initial.rebalance.delay.ms
}

// settings returns the settings in effect for group now: Config's when
// GroupSettings is nil, and any left zero by it (Kafka's defaults for the
// streams settings, which Config does not carry).
func (c *Coordinator) settings(group string) GroupSettings {
	s := GroupSettings{StreamsAcceptableRecoveryLag: 10000}
	if c.cfg.GroupSettings != nil {
		s = c.cfg.GroupSettings(group)
	}
	if s.ConsumerSessionTimeout <= 0 {
		s.ConsumerSessionTimeout = c.cfg.ConsumerSessionTimeout
	}
	if s.ConsumerHeartbeatInterval <= 0 {
		s.ConsumerHeartbeatInterval = c.cfg.ConsumerHeartbeatInterval
	}
	if s.StreamsSessionTimeout <= 0 {
		s.StreamsSessionTimeout = 45 * time.Second
	}
	if s.StreamsHeartbeatInterval <= 0 {
		s.StreamsHeartbeatInterval = 5 * time.Second
	}
	if s.StreamsTaskOffsetInterval <= 0 {
		s.StreamsTaskOffsetInterval = time.Minute
	}
	return s
}
