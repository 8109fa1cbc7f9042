package logstore

// ProducerLastSequence reports a producer's epoch and the sequence of its
// last batch in the duplicate window (-1 when it has none); ok is false
// for a producer the partition does not know. A broker-side writer of
// transactional batches (the group coordinator's TxnOffsetCommit) numbers
// its next batch from it.
func (l *Log) ProducerLastSequence(producerID int64) (epoch int16, seq int32, ok bool) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	return l.pstate.lastSequence(producerID)
}

// ProducerTxnOpen reports whether the producer has a transaction open in
// the partition at epoch: its first transactional batch is in the log and
// no marker has ended it. A partition leader then appends the producer's
// next transactional batches without asking the coordinator again
// (KIP-890 part 1 asks only for the first).
func (l *Log) ProducerTxnOpen(producerID int64, epoch int16) bool {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	return l.pstate.txnOpen(producerID, epoch)
}
