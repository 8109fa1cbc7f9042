// Package replication copies partitions between samsa brokers as Kafka's
// replica manager does.
//
// A follower runs one Fetcher per leader broker (Manager keeps them): it
// sends Fetch requests carrying its replica id and broker epoch (KIP-903's
// ReplicaState), appends what comes back with logstore's AppendAsFollower,
// keeps the leader's high watermark, and, whenever it starts following a
// new leader epoch, first asks the leader for the end offset of its own
// latest epoch (OffsetForLeaderEpoch, KIP-101/279) and truncates a
// divergent tail to it — never to its own high watermark.
//
// The leader side is Leader: per partition led here, each follower's log
// end offset, the leader's end offset at its previous fetch and the last
// time it was caught up (Kafka's Replica.updateFetchState). From those it
// computes the high watermark (the minimum log end offset over the ISR)
// and the ISR the partition should have: followers not caught up for
// replica.lag.time.max.ms leave, followers that reached the high watermark
// and the start of the current leader epoch join. The broker writes ISR
// changes to etcd with a revision-conditioned transaction and applies them
// only once written.
package replication
