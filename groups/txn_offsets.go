package groups

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/coordinator"
)

// Transactional offset commits (KIP-98, KIP-447): TxnOffsetCommit writes
// the offsets in a transactional batch of the producer to the group's
// __consumer_offsets partition, and the group holds them pending until
// that partition gets the transaction's marker: a COMMIT applies them, an
// ABORT drops them (Kafka's GroupMetadata pendingTransactionalOffsetCommits).
// Meanwhile OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT
// for those partitions.

// TxnOffsetCommit serves TxnOffsetCommit v0-v5 (v3+: the member and
// generation, validated as an offset commit's) from a connection the
// caller does not number (TxnOffsetCommitOn with conn 0).
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp, _ := c.TxnOffsetCommitOn(ctx, req, 0)
	return resp
}

// TxnOffsetCommitOn serves a TxnOffsetCommit that came on connection conn
// (numbered as OffsetCommitOn's). As a member's OffsetCommit there, a
// producer's TxnOffsetCommit that comes on an older connection than one
// its TxnOffsetCommits have come on since is refused (givenUp, and no
// answer). Under transactions version 1 the producer's epoch stays the
// same from one transaction to the next, so such a request, given up on
// in one transaction and delivered late, passes the verification of a
// later one that has the group's partition (AddOffsetsToTxn came first),
// and its offsets would replace the newer ones of that transaction at its
// marker; Kafka holds it, samsa does not. Under version 2 the epoch of
// each transaction is new, and such a request is fenced anyway.
func (c *Coordinator) TxnOffsetCommitOn(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, conn uint64) (resp *kmsg.TxnOffsetCommitResponse, givenUp bool) {
	resp = req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	counts := make([]int, len(req.Topics))
	for i, t := range req.Topics {
		counts[i] = len(t.Partitions)
	}
	codes, givenUp := commitCodes(counts, func(codes [][]int16) error { return c.txnCommit(ctx, req, conn, codes) })
	if givenUp {
		return nil, true
	}
	for i, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for j, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, false
}

func (c *Coordinator) txnCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, conn uint64, codes [][]int16) error {
	s, err := c.groupShard(req.Group)
	if err != nil {
		return err
	}
	if req.TransactionalID == "" || req.ProducerID < 0 {
		return kerr.InvalidRequest
	}
	if c.cfg.VerifyTxn != nil {
		// v5 (transactions version 2): no AddOffsetsToTxn came first; the
		// coordinator adds the group's partition to the transaction.
		if err := c.cfg.VerifyTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, s.id, req.Version >= 5); err != nil {
			return err
		}
	}
	now := time.Now()
	pending := map[topicPartition]offset{}
	var tps []topicPartition
	var recs []Record
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			epoch := int32(-1)
			if req.Version >= 2 {
				epoch = p.LeaderEpoch
			}
			tp := topicPartition{t.Topic, p.Partition}
			o, code := c.checkCommit(tp, p.Offset, epoch, p.Metadata, now)
			if code != 0 {
				codes[i][j] = code
				continue
			}
			pending[tp] = o
			tps = append(tps, tp)
			recs = append(recs, Record{offsetKey(req.Group, t.Topic, p.Partition), offsetValue(o)})
		}
	}
	s.mu.Lock()
	if !s.active() {
		s.mu.Unlock()
		return kerr.NotCoordinator
	}
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			s.mu.Unlock()
			return kerr.IllegalGeneration
		}
		g = newClassicGroup(newCore(s, req.Group), now)
		s.groups[req.Group] = g
	}
	if err := g.validateCommit(req.MemberID, instanceOf(req.InstanceID), req.Generation, tps, true); err != nil {
		s.mu.Unlock()
		return err
	}
	if !g.core().txnCommitConnection(req.ProducerID, conn) {
		s.mu.Unlock()
		return errGivenUp
	}
	if len(recs) == 0 {
		s.mu.Unlock()
		return nil
	}
	done := make(chan error, 1)
	s.enqueueWrite(write{recs: recs, pid: req.ProducerID, epoch: req.ProducerEpoch, done: func(err error) {
		if err == nil {
			s.mu.Lock()
			if s.groups[req.Group] == g {
				g.core().addPendingTxn(req.ProducerID, pending)
			}
			s.mu.Unlock()
		}
		done <- err
	}})
	s.mu.Unlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return kerr.RequestTimedOut
	}
}

// txnCommitConnection is commitConnection for the TxnOffsetCommits of
// producer pid (TxnOffsetCommitOn). Past a bound, the producers without
// offsets pending are forgotten first.
func (g *groupCore) txnCommitConnection(pid int64, conn uint64) bool {
	return newestConn(&g.txnCommitConns, pid, conn, 2*len(g.txnOffsets)+64, func(pid int64) bool {
		_, ok := g.txnOffsets[pid]
		return ok
	})
}

// addPendingTxn holds offsets of producer pid until its marker.
func (g *groupCore) addPendingTxn(pid int64, offsets map[topicPartition]offset) {
	if g.txnOffsets == nil {
		g.txnOffsets = map[int64]map[topicPartition]offset{}
	}
	p := g.txnOffsets[pid]
	if p == nil {
		p = map[topicPartition]offset{}
		g.txnOffsets[pid] = p
	}
	for tp, o := range offsets {
		p[tp] = o
	}
}

// completeTxn applies (commit) or drops the offsets producer pid left
// pending.
func (g *groupCore) completeTxn(pid int64, commit bool) {
	p, ok := g.txnOffsets[pid]
	if !ok {
		return
	}
	delete(g.txnOffsets, pid)
	if commit {
		for tp, o := range p {
			g.offsets[tp] = o
		}
	}
}

// unstable reports whether a transaction has an offset of tp pending.
func (g *groupCore) unstable(tp topicPartition) bool {
	for _, p := range g.txnOffsets {
		if _, ok := p[tp]; ok {
			return true
		}
	}
	return false
}

// CompleteTxn is told that a transaction marker of producer pid is
// committed to __consumer_offsets partition: every group of that
// partition applies (commit) or drops the offsets the producer's
// TxnOffsetCommits left pending. The broker calls it after the marker's
// append.
func (c *Coordinator) CompleteTxn(partition int32, pid int64, commit bool) {
	s, ok := c.rt.Lookup(partition)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sh.State() == coordinator.Loading {
		s.earlyMarkers = append(s.earlyMarkers, earlyMarker{pid, commit})
		return
	}
	for _, g := range s.groups {
		g.core().completeTxn(pid, commit)
	}
}
