package broker

// Group configs (Kafka 4.4's GROUP config resource, type 32): set with
// AlterConfigs and IncrementalAlterConfigs, kept in etcd as the entity
// configs of kind groups (controller.EntityGroups), read by DescribeConfigs.
// Every broker holds all of them (a watch reloads the set), since a
// group's coordinator may move; the coordinator asks for a group's
// settings when it uses them (groupSettings), so a change acts from the
// next heartbeat on. Validation is config.ValidateGroupConfigs (Kafka's
// GroupConfig.validate), against the broker properties in effect. As in
// Kafka 4.4, DeleteGroups leaves a group's configs in place
// (TestOddsKafkaReference).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/groups"
)

// groupCfgSet is every group's configs, as read from etcd at rev.
type groupCfgSet struct {
	rev int64
	all map[string]map[string]string
}

// startGroupConfigs loads the group configs and watches them.
func (b *Broker) startGroupConfigs(ctx context.Context) error {
	if err := b.loadGroupConfigs(ctx); err != nil {
		return err
	}
	b.store.WatchGroupConfigs(b.ctx, 0, func() {
		if h := b.groupCfgWatchHook.Load(); h != nil {
			(*h)()
		}
		if err := b.loadGroupConfigs(b.ctx); err != nil && b.ctx.Err() == nil {
			b.log.Warn("reloading group configs failed", "err", err)
		}
	})
	return nil
}

// loadGroupConfigs reads every group's configs from etcd and keeps them,
// unless a read at a later revision is kept already (reloads race).
//
// The broker that altered a group's configs has them at once; the others
// get them through their watch, which may lag. What must follow the
// configs in effect when it happens (a new share-partition's start from
// share.auto.offset.reset, its isolation level) calls it first.
func (b *Broker) loadGroupConfigs(ctx context.Context) error {
	all, rev, err := b.store.EntityConfigsRev(ctx, controller.EntityGroups)
	if err != nil {
		return err
	}
	next := &groupCfgSet{rev: rev, all: all}
	for {
		cur := b.groupCfgs.Load()
		if cur != nil && cur.rev >= rev {
			return nil
		}
		if b.groupCfgs.CompareAndSwap(cur, next) {
			return nil
		}
	}
}

// SetGroupConfigWatchHook installs a function that runs before each
// reload of the group configs the etcd watch triggers: a test seam that
// holds the watch back, as a loaded broker's lags. nil removes it.
func (b *Broker) SetGroupConfigWatchHook(h func()) {
	if h == nil {
		b.groupCfgWatchHook.Store(nil)
		return
	}
	b.groupCfgWatchHook.Store(&h)
}

// groupConfig returns the overrides of a group (nil for none).
func (b *Broker) groupConfig(group string) map[string]string {
	if m := b.groupCfgs.Load(); m != nil {
		return m.all[group]
	}
	return nil
}

// groupSettings is groups.Config.GroupSettings: the group's configs in
// effect, over the broker properties in effect.
func (b *Broker) groupSettings(group string) groups.GroupSettings {
	m, p := b.groupConfig(group), b.cfg()
	return groups.GroupSettings{
		ConsumerSessionTimeout:    p.GroupDuration(m, "consumer.session.timeout.ms"),
		ConsumerHeartbeatInterval: p.GroupDuration(m, "consumer.heartbeat.interval.ms"),

		StreamsSessionTimeout:        p.GroupDuration(m, "streams.session.timeout.ms"),
		StreamsHeartbeatInterval:     p.GroupDuration(m, "streams.heartbeat.interval.ms"),
		StreamsNumStandbys:           int(p.GroupInt(m, "streams.num.standby.replicas")),
		StreamsAcceptableRecoveryLag: p.GroupInt(m, "streams.acceptable.recovery.lag"),
		StreamsTaskOffsetInterval:    p.GroupDuration(m, "streams.task.offset.interval.ms"),
		StreamsInitialDelay:          p.GroupDuration(m, "streams.initial.rebalance.delay.ms"),
	}
}

// checkGroupResource refuses the GROUP resource "" as Kafka does.
func checkGroupResource(name string) error {
	if name == "" {
		return &codedError{kerr.InvalidRequest, "Group name must not be empty"}
	}
	return nil
}

// codedError is a Kafka error code sent with Kafka's own message.
type codedError struct {
	code *kerr.Error
	msg  string
}

func (e *codedError) Error() string { return e.msg }
func (e *codedError) Unwrap() error { return e.code }

// alterGroupConfigs applies edit to a group's configs in one
// compare-and-set on its etcd key, validated first (INVALID_CONFIG with
// Kafka's message); an empty result removes the key.
func (b *Broker) alterGroupConfigs(ctx context.Context, name string, validateOnly bool, edit func(cur map[string]string) (map[string]string, error)) error {
	if name == "" {
		return &codedError{kerr.InvalidRequest, "Default group resources are not allowed."}
	}
	err := b.store.UpdateEntityConfig(ctx, controller.EntityGroups, name, validatedEdit(edit, func(_, next map[string]string) error { return b.cfg().ValidateGroupConfigs(next) }, validateOnly))
	if err != nil || validateOnly {
		return ignoreValidateOnly(err)
	}
	// In effect here at once; the watch brings it to the other brokers.
	return b.loadGroupConfigs(ctx)
}
