package logstore

// AssignEpoch records that leader epoch starts at the current log end
// offset, as Kafka does when a replica becomes leader
// (UnifiedLog.maybeAssignEpochStartOffset), so that OffsetForLeaderEpoch
// answers the current epoch with the log end offset even before the first
// append in it. An epoch not newer than the latest is ignored.
//
// The checkpoint is written at the next flush, roll or clean close, not
// now (Kafka writes and fsyncs it here): a broker taking over thousands
// of leaderships, in a failover or another's controlled shutdown, wrote a
// file for each before it led them. Nothing is lost by a crash before
// then: an epoch with no batch starts at the log end, where Open drops it
// as Kafka's LogLoader does, and one with batches is rebuilt from them by
// recovery, which scans every batch past the recovery point; a flush or a
// roll makes the checkpoint durable before the recovery point passes them.
func (l *Log) AssignEpoch(epoch int32) error {
	if err := l.lockAppend(); err != nil {
		return err
	}
	defer l.appendMu.Unlock()
	if epoch <= l.epochs.latest() {
		return nil
	}
	if l.epochs.assign(epoch, l.end.Load()) {
		l.epochs.deferWrite()
	}
	return nil
}

// EpochForOffset is the leader epoch under which offset was written: the
// newest epoch that starts at or before it (Kafka's epochForOffset, used by
// ListOffsets so that clients can detect truncation, KIP-320); -1 when no
// epoch is known for it.
func (l *Log) EpochForOffset(offset int64) int32 {
	return l.epochs.epochFor(offset)
}

func (c *epochCache) epochFor(offset int64) int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	epoch := int32(-1)
	for _, e := range c.entries {
		if e.start > offset {
			break
		}
		epoch = e.epoch
	}
	return epoch
}
