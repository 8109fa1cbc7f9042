package txn

import (
	"context"
	"time"
)

// every calls fn every interval until the coordinator closes: the abort
// loop (AbortTimedOut, every AbortInterval) and the expiry loop
// (ExpireIDs, every RemoveInterval).
func (c *Coordinator) every(interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.rt.Context().Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// AbortTimedOut aborts every Ongoing transaction whose timeout has passed,
// with its producer's epoch bumped. The abort loop calls it; so can tests.
func (c *Coordinator) AbortTimedOut() {
	shards, _ := c.activeShards()
	now := c.nowMs()
	for _, s := range shards {
		s.mu.Lock()
		var due []*txnMeta
		for _, m := range s.txns {
			if m.state == Ongoing && !m.pending && m.startMs+int64(m.timeoutMs) < now {
				due = append(due, m)
			}
		}
		s.mu.Unlock()
		for _, m := range due {
			c.goShard(func() {
				s.mu.Lock()
				defer s.mu.Unlock()
				if s.txns[m.id] != m || m.state != Ongoing || m.pending || m.startMs+int64(m.timeoutMs) >= c.nowMs() {
					return
				}
				c.log.Info("aborting a timed out transaction", "transactional_id", m.id, "producer_id", m.pid,
					"epoch", m.epoch, "timeout_ms", m.timeoutMs)
				if err := s.fenceAndAbort(m); err != nil {
					c.log.Warn("aborting a timed out transaction failed", "transactional_id", m.id, "err", err)
				}
			})
		}
	}
}

// ExpireIDs writes a tombstone for every id with no transaction under way
// whose last change is older than transactional.id.expiration.ms, and
// forgets it (Kafka's removeExpiredTransactionalIds).
func (c *Coordinator) ExpireIDs() {
	shards, _ := c.activeShards()
	for _, s := range shards {
		s.mu.Lock()
		now := c.nowMs()
		var due []*txnMeta
		for _, m := range s.txns {
			if !m.pending && (m.state == Empty || m.state == CompleteCommit || m.state == CompleteAbort) &&
				m.updateMs+c.cfg.IDExpiration.Milliseconds() <= now {
				due = append(due, m)
			}
		}
		for _, m := range due {
			id := m.id
			if s.txns[id] != m || m.pending {
				continue
			}
			m.pending = true
			s.mu.Unlock()
			err := s.sh.Append(func(ctx context.Context) error {
				return c.cfg.Log.Append(ctx, s.id, s.epoch, recordKey(id), nil)
			})
			s.mu.Lock()
			m.pending = false
			if err != nil {
				c.log.Warn("removing an expired transactional id failed", "transactional_id", id, "err", err)
				continue
			}
			if s.txns[id] == m {
				delete(s.txns, id)
				c.log.Info("removed an expired transactional id", "transactional_id", id)
			}
		}
		s.mu.Unlock()
	}
}
