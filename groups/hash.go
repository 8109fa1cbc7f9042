package groups

import kproto "github.com/samsa-io/samsa/protocol"

// PartitionFor is the __consumer_offsets partition of a group, as Kafka
// computes it (protocol.CoordinatorPartition).
func PartitionFor(group string, partitions int32) int32 {
	return kproto.CoordinatorPartition(group, partitions)
}
