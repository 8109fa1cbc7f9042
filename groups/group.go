package groups

import "time"

// A group is of one of four kinds, each its own type over a groupCore,
// as in Kafka's group coordinator: classicGroup (classic_group.go,
// join.go), consumerGroup (KIP-848, consumer_*.go), shareGroup (KIP-932,
// share_*.go) and streamsGroup (KIP-1071, streams_*.go). The coordinator
// dispatches a request by the kind of the group it names. The core is
// what every kind has: the shard and id, and the offsets committed to the
// group (offsets.go, txn_offsets.go), which stay when the group changes
// kind (an empty classic group becomes a group of another kind; a
// consumer group is upgraded from a classic one, or downgraded to one,
// consumer_classic.go).

type topicPartition struct {
	topic     string
	partition int32
}

// offset is one committed offset.
type offset struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitMs    int64
}

// groupCore is the part of a group every kind has. Every field is
// guarded by its shard's mu.
type groupCore struct {
	s  *shard
	id string

	offsets    map[topicPartition]offset
	txnOffsets map[int64]map[topicPartition]offset // by producer id: TxnOffsetCommits awaiting their marker
	// commitConns is, by member id, the newest connection a commit of
	// the member came on (commitConnection); nil until one does.
	commitConns map[string]uint64
	// txnCommitConns is, by producer id, the newest connection a
	// TxnOffsetCommit of the producer came on (txnCommitConnection).
	txnCommitConns map[int64]uint64
}

func newCore(s *shard, id string) *groupCore {
	return &groupCore{s: s, id: id, offsets: make(map[topicPartition]offset)}
}

func (c *groupCore) core() *groupCore { return c }

// group is a group of any kind.
type group interface {
	core() *groupCore
	// listing is how ListGroups shows the group: its type (classic,
	// consumer, share, streams), protocol type and state; dead for a
	// group no longer listed.
	listing() (typ, protocolType, state string, dead bool)
	// empty reports whether the group has no members: DeleteGroups may
	// delete it.
	empty() bool
	// expiry reports whether the offsets retention check applies to the
	// group now, and since when it has been empty (zero: each offset
	// expires by its commit time).
	expiry() (since time.Time, applies bool)
	// stateTombstones delete the records of the group's own state
	// (the classic group metadata record aside).
	stateTombstones() []Record
	// memberCount and isMember say who commits offsets as a member
	// (commitConnection).
	memberCount() int
	isMember(id string) bool
	// validateCommit checks an offset commit (txn: a TxnOffsetCommit) of
	// tps by a member at a generation or member epoch.
	validateCommit(memberID, instanceID string, generation int32, tps []topicPartition, txn bool) error
	// validateFetch checks an OffsetFetch by a member at an epoch.
	validateFetch(memberID string, epoch int32) error
	// subscribedTo reports whether a member subscribes to a topic,
	// whose offsets OffsetDelete keeps; known is false where the
	// coordinator cannot tell (a classic group of another protocol type).
	subscribedTo() (subscribes func(topic string) bool, known bool)
	// afterLoad starts the timers of a group loaded from the log.
	afterLoad()
	// shutdown answers every waiting request NOT_COORDINATOR and stops
	// the group's timers (its shard is being unloaded, or it is deleted).
	shutdown()
}

// emptySince is when a consumer or streams group last became empty or
// got its first member, which the offsets retention counts from.
type emptySince struct {
	since    time.Time
	nonEmpty bool
}

// set records whether the group has members now.
func (e *emptySince) set(members int) {
	if (members > 0) != e.nonEmpty {
		e.nonEmpty, e.since = members > 0, time.Now()
	}
}
