package controller

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// WatchTopics calls onChange after any change under /brokers/topics/ or
// /config/topics/ (topics, partition states, config overrides) made after
// etcd revision fromRevision — the revision returned by Topics, so nothing
// between the snapshot and the watch is missed; 0 means "from now". The
// caller then re-reads Topics. Calls are coalesced (a burst of changes may
// give one call) and never concurrent; onChange should not block long.
// When etcd has compacted the history the watch needs, or the watch breaks,
// onChange is called anyway and the watch resumes. It runs until ctx ends
// or the store is closed; Close waits for it.
func (s *Store) WatchTopics(ctx context.Context, fromRevision int64, onChange func()) {
	s.watch(ctx, fromRevision, onChange, s.topicsPrefix(), s.topicConfigsPrefix())
}

// WatchBrokers is WatchTopics for broker registrations (/brokers/ids/);
// fromRevision comes from BrokersRev.
func (s *Store) WatchBrokers(ctx context.Context, fromRevision int64, onChange func()) {
	s.watch(ctx, fromRevision, onChange, s.brokersPrefix())
}

// watchCoalesce is how long a watch waits after a change before telling
// the caller, so that the events of one burst of writes bring one call.
const watchCoalesce = 10 * time.Millisecond

func (s *Store) watch(ctx context.Context, fromRevision int64, onChange func(), prefixes ...string) {
	kick := make(chan struct{}, 1)
	notify := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	s.spawnWatch(ctx, func(wctx context.Context) {
		done := make(chan struct{}, len(prefixes))
		for _, pfx := range prefixes {
			go func() {
				defer func() { done <- struct{}{} }()
				s.watchPrefix(wctx, pfx, fromRevision, notify)
			}()
		}
		for n := 0; n < len(prefixes); {
			select {
			case <-kick:
				// A burst of writes (a topic's partition states, in chunks)
				// is one change: wait a moment for the rest of it.
				select {
				case <-time.After(watchCoalesce):
				case <-wctx.Done():
				}
				onChange()
			case <-done:
				n++
			}
		}
	})
}

// spawnWatch runs f as a watch (counted in s.watches) whose context ends
// when either the caller's ctx or the store's does.
func (s *Store) spawnWatch(ctx context.Context, f func(wctx context.Context)) {
	s.spawn(func(sctx context.Context) {
		s.watches.Add(1)
		defer s.watches.Add(-1)
		wctx, cancel := context.WithCancel(sctx)
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		f(wctx)
	})
}

// watchPrefix watches one key prefix from fromRevision+1 and calls notify
// for every batch of events, for a compaction and for a broken watch, until
// ctx ends.
func (s *Store) watchPrefix(ctx context.Context, pfx string, fromRevision int64, notify func()) {
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	next := int64(0) // revision to watch from; 0 = now
	if fromRevision > 0 {
		next = fromRevision + 1
	}
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		wopts := opts
		if next > 0 {
			wopts = append(wopts[:len(opts):len(opts)], clientv3.WithRev(next))
		}
		// WithRequireLeader: a member cut off from its quorum ends the
		// watch instead of leaving it silently stale.
		wch := s.cli.Watch(clientv3.WithRequireLeader(ctx), pfx, wopts...)
		healthy := false
		for resp := range wch {
			if resp.CompactRevision != 0 {
				// History gone: the caller must re-read everything; resume
				// from the oldest revision kept.
				s.log.Info("etcd watch compacted; re-reading", "prefix", pfx, "compact_revision", resp.CompactRevision)
				next = resp.CompactRevision
				notify()
				continue
			}
			if err := resp.Err(); err != nil {
				if ctx.Err() == nil {
					s.log.Warn("etcd watch failed; resuming", "prefix", pfx, "err", err)
					notify()
				}
				continue
			}
			healthy = true
			if n := len(resp.Events); n > 0 {
				next = resp.Events[n-1].Kv.ModRevision + 1
				notify()
			}
		}
		if ctx.Err() != nil {
			return
		}
		if healthy {
			backoff = 50 * time.Millisecond
		}
		// The channel closed without ctx ending: the watch was cancelled
		// (compaction, no leader, connection lost). Something may have been
		// missed while it was down.
		notify()
		if !sleepCtx(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
