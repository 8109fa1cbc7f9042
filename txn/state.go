package txn

import (
	"maps"
	"slices"
	"strings"
)

// State is a transaction's state, with Kafka's numbering (the
// TransactionStatus of the log's records).
type State int8

// The states of Kafka's TransactionState.
const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is the state's name as DescribeTransactions and ListTransactions
// answer it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState is the state of a name (as ListTransactions filters give it).
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) less(o TopicPartition) int {
	if c := strings.Compare(tp.Topic, o.Topic); c != 0 {
		return c
	}
	return int(tp.Partition) - int(o.Partition)
}

// Transaction versions (Kafka's TransactionVersion, the feature
// transaction.version): TV1 is the flow of KIP-890 part 1, in which the
// producer adds its partitions and the epoch is bumped only by
// InitProducerId; TV2 (part 2) adds partitions implicitly (Produce v12,
// TxnOffsetCommit v5) and bumps the epoch at every EndTxn (v5).
const (
	TV1 int8 = 1
	TV2 int8 = 2
)

// noEpoch is RecordBatch.NO_PRODUCER_EPOCH.
const noEpoch int16 = -1

// maxEpoch: an epoch at or above it is exhausted, and the next bump takes
// a new producer id (Kafka's TransactionMetadata.isEpochExhausted).
const maxEpoch int16 = 1<<15 - 2

// txnMeta is the state of one transactional id.
type txnMeta struct {
	id         string
	pid        int64
	prevPid    int64 // the producer id before the last rotation; -1 none
	epoch      int16
	lastEpoch  int16 // the epoch before the last bump (KIP-360 retries); in memory only
	timeoutMs  int32
	state      State
	partitions map[TopicPartition]struct{}
	startMs    int64 // when the current transaction started; -1 none
	updateMs   int64
	// tv is the transaction version the producer's last transactional
	// request used (the record's ClientTransactionVersion): from 2 on
	// (KIP-890 part 2) every end bumps the epoch.
	tv int8
	// nextPid is the producer id the producer moves to once the
	// transaction being ended completes, its epochs being used up (TV2);
	// -1 none.
	nextPid int64

	// Guarded by the shard's mu, not part of the record:
	pending bool // a change is being written
}

// clone copies m for a transition (the partition set is not shared).
func (m *txnMeta) clone() txnMeta {
	c := *m
	c.partitions = maps.Clone(m.partitions)
	if c.partitions == nil {
		c.partitions = map[TopicPartition]struct{}{}
	}
	c.pending = false
	return c
}

// sortedPartitions are the transaction's partitions in order.
func (m *txnMeta) sortedPartitions() []TopicPartition {
	ps := slices.Collect(maps.Keys(m.partitions))
	slices.SortFunc(ps, TopicPartition.less)
	return ps
}
