package logstore

import "fmt"

// AssignEpoch records that leader epoch starts at the current log end
// offset, as Kafka does when a replica becomes leader
// (UnifiedLog.maybeAssignEpochStartOffset), so that OffsetForLeaderEpoch
// answers the current epoch with the log end offset even before the first
// append in it. An epoch not newer than the latest is ignored.
func (l *Log) AssignEpoch(epoch int32) error {
	if err := l.lockAppend(); err != nil {
		return err
	}
	defer l.appendMu.Unlock()
	if epoch <= l.epochs.latest() {
		return nil
	}
	if l.epochs.assign(epoch, l.end.Load()) {
		if err := l.epochs.persistLazy(); err != nil {
			// Recovery rebuilds epochs only from the batches it scans: an
			// epoch that never reached the checkpoint would be forgotten.
			return l.fail(fmt.Errorf("leader epoch checkpoint: %w", err))
		}
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
