package broker

import "context"

// SetCreateTopicHook makes createTopic call h just before it writes a
// topic to etcd (nil: nothing).
func (b *Broker) SetCreateTopicHook(h func(name string)) {
	if h == nil {
		b.createTopicHook.Store(nil)
		return
	}
	b.createTopicHook.Store(&h)
}

// InternalTopicCreators are the ways the broker creates a topic it needs
// on first use, by the topic they create; "streams-internal" stands for a
// streams group's internal topic.
var InternalTopicCreators = map[string]func(b *Broker, ctx context.Context) error{
	offsetsTopic:    (*Broker).ensureOffsetsTopic,
	txnTopic:        (*Broker).ensureTxnTopic,
	shareStateTopic: (*Broker).ensureShareStateTopic,
	"_schemas": func(b *Broker, ctx context.Context) error {
		return (&schemasLog{b: b, topic: "_schemas"}).Ensure(ctx)
	},
	"streams-internal": func(b *Broker, ctx context.Context) error {
		return b.createInternalTopic(ctx, &topicSpec{name: "streams-internal", partitions: 2, replication: 2})
	},
}

// HasTopic reports whether the broker's metadata has the topic.
func (b *Broker) HasTopic(name string) bool { return b.meta.topic(name) != nil }

// ApplyCordon puts cordoned.log.dirs=dirs in effect as a reload of the
// dynamic broker configs does.
func (b *Broker) ApplyCordon(ctx context.Context, dirs string) error {
	p, err := b.props.WithDynamic(nil, map[string]string{"cordoned.log.dirs": dirs})
	if err != nil {
		return err
	}
	b.applyCordon(ctx, p)
	return nil
}

// PlacerCordoned are the directories the broker places no new partition
// in.
func (b *Broker) PlacerCordoned() []string { return b.placer.Cordoned() }

// LogDirs are the broker's log directories.
func (b *Broker) LogDirs() []string { return b.logDirs }
