// Package replication copies partitions between samsa brokers as Kafka's
// replica manager does.
//
// A follower runs one Fetcher per leader broker (Manager keeps them): it
// sends Fetch requests carrying its replica id and broker epoch (KIP-903's
// ReplicaState) in a fetch session (KIP-227: after the first, a request
// names only the partitions whose position moved, and the answer only those
// with news), appends what comes back with logstore's AppendAsFollower and
// keeps the leader's high watermark. Each fetch carries the epoch of the
// follower's last batch; a leader whose log left that epoch earlier answers
// with where it ends (DivergingEpoch, KIP-320), and the follower cuts its
// divergent tail there — never to its own high watermark. Only when the
// leader cannot place that epoch does the follower ask with
// OffsetForLeaderEpoch (KIP-101/279).
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
