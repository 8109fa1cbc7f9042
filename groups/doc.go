// Package groups is the group coordinator of the classic consumer group
// protocol: JoinGroup, SyncGroup, Heartbeat and LeaveGroup drive Kafka's
// state machine (Empty, PreparingRebalance, CompletingRebalance, Stable,
// Dead), and offset commits and group metadata are records in the
// compacted __consumer_offsets topic, in Kafka's own key and value schemas.
//
// A Coordinator owns the groups of the __consumer_offsets partitions its
// broker leads (SetOwned). Each such partition is a shard: its state is
// rebuilt by replaying the partition's log, and every change is appended to
// it, in order, by the shard's writer before it takes effect.
package groups
