package replication

import (
	"fmt"
	"time"

	"github.com/samsa-io/samsa/logstore"
)

// AppendMirrored appends batches a cluster link fetched from its source
// (logstore.Log.AppendMirrored) to a mirror partition led here in leader
// epoch epoch, and moves the high watermark as AppendAsLeader does: the
// mirror's own followers replicate the batches from here as any other.
// ErrFencedLeaderEpoch once the partition has a newer epoch (the link's
// fetcher for the old one must stop), ErrNotLeader when it is led
// elsewhere.
func (m *ReplicaManager) AppendMirrored(p *Partition, records []byte, now time.Time, epoch int32) (logstore.AppendResult, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	l, cur, err := m.Leading(p, epoch)
	if err != nil {
		return logstore.AppendResult{}, err
	}
	res, err := l.AppendMirrored(records, cur, now)
	if err != nil {
		return res, err
	}
	p.appended(int64(len(records)))
	return res, nil
}

// StartMirrorAt restarts a mirror partition led here in leader epoch
// epoch at offset, at or past its log end offset (the source's log start
// moved past what the mirror holds), or anywhere while it holds nothing:
// the log is emptied and starts there, and the followers, fetching below
// the new start, do the same.
func (m *ReplicaManager) StartMirrorAt(p *Partition, offset int64, epoch int32) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	l, cur, err := m.Leading(p, epoch)
	if err != nil {
		return err
	}
	if end := l.EndOffset(); offset < end && l.StartOffset() < end {
		return fmt.Errorf("%w: mirror start %d below the log end offset %d", logstore.ErrUnexpectedOffset, offset, end)
	}
	if err := l.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	if err := l.AssignEpoch(cur); err != nil {
		return err
	}
	p.advanceHW()
	return nil
}

// AdvanceMirrorStart moves the log start offset of a mirror partition led
// here up to offset (the source's log start moved: retention or
// DeleteRecords there), never past its high watermark; it returns the
// log start offset.
func (m *ReplicaManager) AdvanceMirrorStart(p *Partition, offset int64, epoch int32) (int64, error) {
	l, _, err := m.Leading(p, epoch)
	if err != nil {
		return -1, err
	}
	offset = min(offset, p.HighWatermark())
	if offset <= l.StartOffset() {
		return l.StartOffset(), nil
	}
	low, err := l.DeleteRecordsBefore(offset)
	if err != nil {
		return -1, err
	}
	p.Signal()
	return low, nil
}
