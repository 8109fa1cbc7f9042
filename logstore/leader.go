package logstore

// AssignEpoch records that leader epoch starts at the current log end
// offset, as Kafka does when a replica becomes leader
// (UnifiedLog.maybeAssignEpochStartOffset), so that OffsetForLeaderEpoch
// answers the current epoch with the log end offset even before the first
// append in it. An epoch not newer than the latest is ignored.
func (l *Log) AssignEpoch(epoch int32) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if epoch <= l.epochs.latest() {
		return nil
	}
	if l.epochs.assign(epoch, l.end.Load()) {
		return l.epochs.persist()
	}
	return nil
}
