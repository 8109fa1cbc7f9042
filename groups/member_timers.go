package groups

import "time"

// memberTimers are the session and rebalance timers of a KIP-848 or
// KIP-1071 group member. Guarded by the shard's mu.
type memberTimers struct {
	session, rebalance *time.Timer
	seq                uint64 // the current session deadline; older timers do nothing
}

// arm restarts the session timer and, while revoking, keeps a rebalance
// timer (started at the first such call, as Kafka's): a member that does
// not revoke within its rebalance timeout is removed. When a timer fires
// while still current, expire runs under the shard's mu with the reason;
// it checks that the member is still the group's.
func (t *memberTimers) arm(s *shard, session, rebalance time.Duration, revoking bool, expire func(why string)) {
	if t.session != nil {
		t.session.Stop()
	}
	t.seq++
	seq := t.seq
	t.session = time.AfterFunc(session, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.active() && t.seq == seq {
			expire("session timeout")
		}
	})
	if !revoking {
		if t.rebalance != nil {
			t.rebalance.Stop()
			t.rebalance = nil
		}
		return
	}
	if t.rebalance == nil {
		var rt *time.Timer
		rt = time.AfterFunc(max(rebalance, time.Second), func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.active() && t.rebalance == rt {
				expire("rebalance timeout")
			}
		})
		t.rebalance = rt
	}
}

// stop stops both timers; any that fires later does nothing.
func (t *memberTimers) stop() {
	t.seq++
	for _, tm := range []*time.Timer{t.session, t.rebalance} {
		if tm != nil {
			tm.Stop()
		}
	}
	t.session, t.rebalance = nil, nil
}
