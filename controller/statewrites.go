package controller

import (
	"context"
	"errors"
	"sync"
)

// stateWriters is how many of the controller's state transactions are in
// flight at once: etcd commits concurrent transactions together (one raft
// entry, one WAL fsync for several), where one after the other each
// waited for its own fsync. A broker's controlled shutdown moves
// thousands of leaderships, tens of transactions, while its own logs are
// being flushed to the same disk.
const stateWriters = 8

// writeStates writes ws in transactions of stateBatch states
// (writeStatesFenced), stateWriters of them at once: the states of one
// call are of distinct partitions, so their order does not matter. It
// returns the etcd revision of the last write that went through (0 when
// none did) and the errors; after ErrNotController it starts no other
// transaction.
func (s *Store) writeStates(ctx context.Context, ws []stateWrite) (int64, error) {
	var (
		mu      sync.Mutex
		written int64
		errs    []error
		fenced  bool
		wg      sync.WaitGroup
		slots   = make(chan struct{}, stateWriters)
	)
	for len(ws) > 0 {
		n := min(stateBatch, len(ws))
		batch := ws[:n]
		ws = ws[n:]
		slots <- struct{}{}
		mu.Lock()
		stop := fenced
		mu.Unlock()
		if stop {
			<-slots
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			rev, err := s.writeStatesFenced(ctx, batch)
			mu.Lock()
			defer mu.Unlock()
			written = max(written, rev)
			if err != nil {
				errs = append(errs, err)
				fenced = fenced || errors.Is(err, ErrNotController)
			}
		}()
	}
	wg.Wait()
	return written, errors.Join(errs...)
}
