// Package groups is the group coordinator. Classic groups: JoinGroup,
// SyncGroup, Heartbeat and LeaveGroup drive Kafka's state machine (Empty,
// PreparingRebalance, CompletingRebalance, Stable, Dead). KIP-848 consumer
// groups (consumer_*.go): ConsumerGroupHeartbeat with member and group
// epochs, a target assignment computed by the server's uniform or range
// assignor, and incremental reconciliation. KIP-932 share groups
// (share_group.go). KIP-1071 streams groups (streams_*.go): the topology a
// Kafka Streams application declares, its internal topics checked (and
// named for the broker to create), tasks assigned by the sticky task
// assignor and reconciled as consumer groups' partitions are, their state
// in Kafka's StreamsGroup* records (streams_records.go). Offset commits
// and classic group metadata are records in the compacted
// __consumer_offsets topic, in Kafka's own key and value schemas.
//
// Each kind of group is its own type over a shared core (group.go): the
// core has the group's id and committed offsets, the kind its members
// and state machine; the coordinator dispatches each request by the kind
// of the group it names, and a group changes kind by being replaced over
// the same core.
//
// A Coordinator owns the groups of the __consumer_offsets partitions its
// broker leads (SetOwned). Each such partition is a shard: its state is
// rebuilt by replaying the partition's log, and every change is appended to
// it, in order, by the shard's writer before it takes effect; consumer
// groups write Kafka's ConsumerGroup* records (consumer_records.go), so a
// new coordinator knows their members, epochs and assignments.
package groups
