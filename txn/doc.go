// Package txn is the transaction coordinator (KIP-98, with the checks of
// KIP-890 part 1 and the transactions version 2 of part 2): the state of every transactional id whose
// __transaction_state partition this broker leads, kept as records of that
// compacted topic so that a new coordinator rebuilds it by reading the log.
//
// The coordinator of a transactional id is the leader of partition
// abs(javaHashCode(id)) % transaction.state.log.num.partitions, as in
// Kafka. Each record is Kafka's: the key a TransactionLogKey
//
//	int16 version (0) | string transactional_id
//
// and the value a TransactionLogValue (version 1, flexible), or null when
// the id expired:
//
//	int16 version | int64 producer_id | int16 producer_epoch |
//	int32 timeout_ms | int8 state | [topic, [partition]] |
//	int64 last_update_ms | int64 start_ms |
//	tags: 0 previous_producer_id, 1 next_producer_id,
//	      2 client_transaction_version, 3 next_producer_epoch
//
// The states are Kafka's: Empty, Ongoing, PrepareCommit, PrepareAbort,
// CompleteCommit, CompleteAbort, Dead and PrepareEpochFence (which, as in
// Kafka, lives only in memory: the fencing is written as the PrepareAbort
// it leads to). Every change is appended to the partition, and committed
// (acks=all), before it takes effect; while a change is being written the
// transactional id answers CONCURRENT_TRANSACTIONS.
//
// Once a PrepareCommit or PrepareAbort is written, the coordinator sends
// WriteTxnMarkers to the leader of every partition of the transaction
// (through the Markers interface the broker supplies) until each has its
// marker, then writes CompleteCommit or CompleteAbort. A broker that
// becomes leader of a partition loads it and finishes every transaction it
// finds prepared.
//
// Transactions version 2 (KIP-890 part 2; the record's
// client_transaction_version): the producer never adds its partitions;
// the partition leader of a Produce v12, or the group coordinator of a
// TxnOffsetCommit v5, adds them for it (AddPartitions with TV2). EndTxn
// v5 bumps the epoch in the PrepareCommit or PrepareAbort it writes, so
// the markers carry the new epoch and fence every late write of the old
// one, and answers that epoch; a producer whose epochs are used up gets
// next_producer_id, which the completion makes its id at epoch 0. A retry
// of an end is known by the epoch before the bump (or, after a rotation,
// the previous producer id at the top epoch). A TV1 producer (EndTxn v4
// and older) keeps the TV1 flow beside it.
//
// Timeouts: an Ongoing transaction older than its timeout is aborted with
// the producer's epoch bumped (the producer is fenced), every
// transaction.abort.timed.out.transaction.cleanup.interval.ms; an id idle
// (Empty or Complete*) for transactional.id.expiration.ms is removed with a
// tombstone, every transaction.remove.expired.transaction.cleanup.interval.ms.
package txn
