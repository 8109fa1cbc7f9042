package logstore

import "time"

// AppendMirrored appends batches fetched from another cluster's partition
// (a cluster link's mirror, issue 29) at the offsets they have there, as
// AppendAsFollower appends a leader's: base offsets, producer ids, epochs
// and sequences, timestamps, compression, control batches and the gaps
// compaction left are kept, and the producer state and transaction index
// follow them, so that read_committed reads the mirror as it would read
// the source. Only the partition leader epoch, which is outside the CRC,
// is rewritten in place to leaderEpoch, this cluster's epoch of the mirror
// partition, so that its own replicas truncate and diverge by this
// cluster's epochs and never by the source's.
func (l *Log) AppendMirrored(records []byte, leaderEpoch int32, now time.Time) (AppendResult, error) {
	batches, err := SplitBatches(records)
	if err != nil {
		return AppendResult{}, err
	}
	for _, b := range batches {
		SetPartitionLeaderEpoch(b, leaderEpoch)
	}
	return l.AppendAsFollower(records, now)
}
