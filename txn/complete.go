package txn

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// startCompletion sends the markers of m, which is PrepareCommit or
// PrepareAbort, in the background and then writes its completion. Called
// with s.mu held.
func (s *shard) startCompletion(m *txnMeta) {
	s.c.goShard(func() { s.complete(m) })
}

// complete delivers m's markers to every partition of the transaction,
// retrying those that fail, then writes CompleteCommit or CompleteAbort.
// It gives up when the shard is unloaded (the next coordinator completes
// the transaction from the log) or a newer coordinator fenced it.
func (s *shard) complete(m *txnMeta) {
	s.mu.Lock()
	if !s.active() || s.txns[m.id] != m || (m.state != PrepareCommit && m.state != PrepareAbort) {
		s.mu.Unlock()
		return
	}
	commit := m.state == PrepareCommit
	marker := Marker{ProducerID: m.pid, ProducerEpoch: m.epoch, Commit: commit, CoordinatorEpoch: s.epoch,
		TransactionVersion: max(m.tv, TV1), Partitions: m.sortedPartitions()}
	s.mu.Unlock()

	start := time.Now()
	for len(marker.Partitions) > 0 {
		res := s.c.cfg.Markers.Write(s.ctx, marker)
		var left []TopicPartition
		for _, tp := range marker.Partitions {
			err, ok := res[tp]
			switch {
			case ok && err == nil, errors.Is(err, ErrPartitionGone):
			case errors.Is(err, kerr.TransactionCoordinatorFenced):
				s.c.log.Warn("transaction markers fenced by a newer coordinator", "transactional_id", m.id,
					"partition", tp, "coordinator_epoch", s.epoch)
				return
			default:
				left = append(left, tp)
			}
		}
		marker.Partitions = left
		if len(left) == 0 {
			break
		}
		if time.Since(start) > 10*time.Second {
			s.c.log.Warn("transaction markers still undelivered", "transactional_id", m.id, "partitions", len(left),
				"err", res[left[0]])
			start = time.Now()
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(s.c.cfg.MarkerRetryDelay):
		}
	}
	for {
		s.mu.Lock()
		if !s.active() || s.txns[m.id] != m || m.pending {
			s.mu.Unlock()
			return
		}
		target := m.clone()
		target.state = CompleteAbort
		if commit {
			target.state = CompleteCommit
		}
		target.partitions = map[TopicPartition]struct{}{}
		target.updateMs = s.c.nowMs()
		if m.nextPid >= 0 {
			// TV2 with the epochs used up: the producer goes on with its
			// next id (the markers carried the old one at the top epoch).
			target.prevPid, target.pid, target.epoch, target.nextPid = m.pid, m.nextPid, 0, -1
		}
		err := s.write(m, target)
		s.mu.Unlock()
		if err == nil || errors.Is(err, kerr.NotCoordinator) {
			return
		}
		s.c.log.Warn("writing a transaction's completion failed; retrying", "transactional_id", m.id, "err", err)
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(s.c.cfg.MarkerRetryDelay):
		}
	}
}
