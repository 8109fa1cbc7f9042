package broker

// Fetch v4-v18. v4: isolation level, last stable offset, aborted
// transactions. v5: log start offset. v7: sessions (KIP-227). v9: current
// leader epoch (KIP-320). v11: rack, preferred read replica (KIP-392: with
// replica.selector.class Kafka's RackAwareReplicaSelector, a leader sends
// a consumer in another rack to an in-sync replica in its own, and a
// follower serves a consumer's v11+ fetch up to its high watermark). v12: flexible,
// last fetched epoch, diverging epoch. v13: topic ids. v15: replica state.
// v16: node endpoints. v17: replica directory id. v18: high watermark in
// replica state.
//
// Records leave as the reads' regions (file ranges go by sendfile, bytes
// regions are written): the handler returns a protocol.FramedResponse
// built around them, whatever their kind (see logstore.SegmentSource).
// The first partition with data returns at least one whole batch even past
// the byte limits (KIP-74); a fetch offset inside a batch returns that batch.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/protocol"
	"github.com/samsa-io/samsa/replication"
	"github.com/samsa-io/samsa/security"
)

// fetchPart is one partition of one fetch, in response order.
type fetchPart struct {
	key         fetchKey
	t           *topic // nil: unknown
	p           *partition
	offset      int64
	maxBytes    int32
	leaderEpoch int32
	sp          *sessPart               // nil outside sessions
	follower    bool                    // a follower's fetch: reads up to the log end, not the HW
	committed   bool                    // read_committed: reads up to the last stable offset
	lastEpoch   int32                   // a follower's last fetched epoch (v12+; -1 none)
	diverging   *replication.Divergence // a follower's log diverged: answered, not read
	denied      error                   // not authorized: answered before anything else, never read
	refused     error                   // a follower's fetch refused before any read
	closest     bool                    // a consumer's v11+ fetch: a follower may serve it (KIP-392)
	rack        string                  // the consumer's client.rack (v11+)
	rackOf      func(id int32) string   // the brokers' racks, with a rack-aware replica.selector.class
	preferred   int32                   // the replica the consumer should fetch from instead; -1 none

	// result of the latest read
	err      error
	hw       int64
	lso      int64 // last stable offset
	logStart int64
	read     logstore.ReadResult
	// aborted is set when read came from the object store at
	// read_committed: its aborted transactions, from the remote indexes.
	aborted []logstore.AbortedTxn
}

func (b *Broker) handleFetch(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	byID := req.Version >= 13

	var (
		sess        *fetchSession
		incremental bool
		parts       []*fetchPart
	)
	keyOf := func(topic string, id [16]byte, p int32) fetchKey {
		if byID {
			return fetchKey{id: id, part: p}
		}
		return fetchKey{topic: topic, part: p}
	}
	switch {
	case req.Version < 7 || (req.SessionID == 0 && req.SessionEpoch == -1):
		// sessionless full fetch
	case req.SessionEpoch == -1:
		b.sessions.remove(req.SessionID)
	case req.SessionEpoch == 0:
		if req.SessionID != 0 {
			b.sessions.remove(req.SessionID)
		}
		if sess = b.sessions.create(); sess != nil {
			sess.byID = byID
		}
	default:
		sess = b.sessions.get(req.SessionID)
		if sess == nil {
			resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
			return resp, nil
		}
		incremental = true
	}
	if sess != nil {
		sess.mu.Lock()
		defer sess.mu.Unlock()
		if incremental && sess.epoch != req.SessionEpoch {
			resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
			return resp, nil
		}
		if sess.byID != byID {
			// A session keeps to topic names or to topic ids (KIP-516).
			resp.ErrorCode = kerr.FetchSessionTopicIDError.Code
			return resp, nil
		}
		sess.lastUsed.Store(time.Now().UnixNano())
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				sess.upsert(keyOf(rt.Topic, rt.TopicID, rp.Partition), rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset)
			}
		}
		var forgotten []fetchKey
		for _, ft := range req.ForgottenTopics {
			for _, p := range ft.Partitions {
				forgotten = append(forgotten, keyOf(ft.Topic, ft.TopicID, p))
			}
		}
		sess.forget(forgotten...)
		for _, k := range sess.order {
			sp := sess.parts[k]
			parts = append(parts, &fetchPart{key: k, offset: sp.fetchOffset, maxBytes: sp.maxBytes, leaderEpoch: sp.leaderEpoch, lastEpoch: sp.lastEpoch, sp: sp})
		}
		sess.epoch = nextEpoch(req.SessionEpoch)
		resp.SessionID = sess.id
	} else {
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				parts = append(parts, &fetchPart{key: keyOf(rt.Topic, rt.TopicID, rp.Partition),
					offset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, leaderEpoch: rp.CurrentLeaderEpoch, lastEpoch: rp.LastFetchedEpoch})
			}
		}
	}
	// A follower's fetch carries its broker id (and, v15+, its broker
	// epoch, KIP-903): its fetch offset is its log end offset, validated
	// against this leader's epochs before it counts (KIP-320/595).
	replicaID, replicaEpoch := req.ReplicaID, int64(-1)
	if req.Version >= 15 {
		replicaID, replicaEpoch = req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	var rackOf func(int32) string
	if replicaID < 0 && req.Version >= 11 && req.Rack != "" && b.cfg().Settings().RackAwareReads() {
		rackOf = b.rackOf(ctx)
	}
	// A fetch claiming a replica id from a principal without
	// ClusterAction is refused whole, and touches no follower's state.
	followerDenied := replicaID >= 0 && b.clusterRefusal(r, security.OpClusterAction) != nil // authz.go
	for _, fp := range parts {
		fp.t, fp.p = b.lookupFetchPartition(fp.key, byID)
		fp.denied = b.fetchDenied(r, fp.key, fp.t, byID, replicaID, followerDenied) // authz.go
		fp.committed = req.IsolationLevel == 1 && replicaID < 0
		fp.preferred = -1
		if req.Version < 12 {
			fp.lastEpoch = -1
		}
		if replicaID < 0 {
			fp.closest, fp.rack, fp.rackOf = req.Version >= 11, req.Rack, rackOf
		}
		if replicaID < 0 || fp.p == nil || fp.denied != nil {
			continue
		}
		fp.follower = true
		if _, _, err := b.replicas.Leading(fp.p, fp.leaderEpoch); err != nil {
			continue // readFetch answers it
		}
		c, err := b.replicas.FollowerFetched(fp.p, replicaID, replicaEpoch, fp.offset, fp.lastEpoch)
		switch {
		case err != nil:
			fp.refused = err
		case !c.Replica:
			fp.p = nil // not a replica of this partition
		case c.Diverging != nil:
			fp.diverging = c.Diverging
		case c.Err != nil:
			fp.refused = c.Err
		}
	}

	// The response carries at most min(MaxBytes, fetch.max.bytes), and
	// always one whole batch (KIP-74).
	maxBytes := b.fetchMaxBytes
	if req.Version >= 3 {
		maxBytes = min(max(req.MaxBytes, 0), maxBytes)
	}
	if replicaID < 0 {
		maxBytes = b.fetchQuotaBytes(r, maxBytes) // 48_client_quotas.go
	}
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	if size, errs := b.readFetch(parts, maxBytes, byID); size < int64(req.MinBytes) && !errs && req.MaxWaitMillis > 0 && len(parts) > 0 {
		parked := time.Now()
		b.awaitFetch(ctx, parts, maxBytes, byID, size, int64(req.MinBytes), deadline)
		r.parked += time.Since(parked)
	}
	if replicaID < 0 {
		// consumer_byte_rate and request_percentage: a client over
		// either quota gets an empty answer (the session kept) and its
		// throttle time.
		size := 0
		for _, fp := range parts {
			size += int(fp.read.Size) + fetchPartOverhead
		}
		if t := b.fetchThrottle(r, size); t > 0 {
			releaseFetch(parts)
			resp.ThrottleMillis = t
			return resp, nil
		}
	}

	// Build the response: kmsg structs with the records as regions.
	var regions [][][]logstore.Region
	for _, fp := range parts {
		b.metrics.fetched(fp.t, fp.follower, fp.read.Size, fp.err)
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = fp.key.part
		rp.ErrorCode = errCode(fp.err)
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = fp.hw, fp.lso, fp.logStart
		rp.PreferredReadReplica = fp.preferred
		rp.RecordBatches = []byte{}
		if fp.diverging != nil && fp.err == nil {
			rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = fp.diverging.Epoch, fp.diverging.EndOffset
		}
		if req.IsolationLevel == 1 {
			// read_committed: the aborted transactions with records in
			// what is returned; Kafka sends an empty (not null) list when
			// there are none.
			rp.AbortedTransactions = abortedTxns(fp)
		}
		if fp.sp != nil {
			changed := fp.read.Size > 0 || rp.ErrorCode != 0 || fp.diverging != nil || fp.hw != fp.sp.sentHW || fp.logStart != fp.sp.sentLogStart
			fp.sp.sentHW, fp.sp.sentLogStart, fp.sp.sentErr = fp.hw, fp.logStart, rp.ErrorCode
			if incremental && !changed {
				continue
			}
		}
		n := len(resp.Topics)
		if n == 0 || resp.Topics[n-1].Topic != fp.key.topic || resp.Topics[n-1].TopicID != fp.key.id {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = fp.key.topic, fp.key.id
			resp.Topics = append(resp.Topics, rt)
			regions = append(regions, nil)
			n++
		}
		resp.Topics[n-1].Partitions = append(resp.Topics[n-1].Partitions, rp)
		regions[n-1] = append(regions[n-1], fp.read.Regions) // nil: RecordBatches, empty
	}
	if sess != nil {
		sess.rotate(parts)
	}
	b.addFetchLeaders(ctx, r, resp)
	resp.SetVersion(r.hdr.Version)
	fr, err := protocol.NewFetchResponse(r.hdr, resp, regions, func() { releaseFetch(parts) })
	if err != nil {
		return nil, err
	}
	return fr, nil
}

// fetchPartOverhead is what a partition adds to a fetch response besides
// its records (its fields as v12+ encodes them, roughly), which
// consumer_byte_rate counts as Kafka counts the whole response.
const fetchPartOverhead = 48

// nextEpoch is the session epoch after e, wrapping past MaxInt32 to 1.
func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

func (b *Broker) lookupFetchPartition(k fetchKey, byID bool) (*topic, *partition) {
	var t *topic
	if byID {
		t = b.meta.topicByID(k.id)
	} else {
		t = b.meta.topic(k.topic)
	}
	if t == nil || k.part < 0 || int(k.part) >= len(t.parts) {
		return nil, nil
	}
	return t, t.parts[k.part]
}

// readFetch reads every partition within the byte limits and reports the
// bytes found and whether any partition has an error.
func (b *Broker) readFetch(parts []*fetchPart, maxBytes int32, byID bool) (int64, bool) {
	var total int64
	errs := false
	for _, fp := range parts {
		n, failed := b.readPart(fp, int64(maxBytes)-total, total == 0, byID)
		total += n
		errs = errs || failed
	}
	return total, errs
}

// readPart reads one partition of a fetch, within budget bytes of the
// response (at least one whole batch when minOne: the first partition with
// data, KIP-74), and reports the bytes read and whether it has an error.
func (b *Broker) readPart(fp *fetchPart, budget int64, minOne, byID bool) (int64, bool) {
	fp.err, fp.hw, fp.lso, fp.logStart, fp.read, fp.aborted = nil, -1, -1, -1, logstore.ReadResult{}, nil
	if fp.denied != nil {
		fp.err = fp.denied
		return 0, true
	}
	if fp.p == nil {
		if byID {
			fp.err = kerr.UnknownTopicID
		} else {
			fp.err = kerr.UnknownTopicOrPartition
		}
		return 0, true
	}
	l, _, err := b.replicas.Leading(fp.p, fp.leaderEpoch)
	leading := err == nil
	if errors.Is(err, replication.ErrNotLeader) && fp.closest {
		// A follower serves a consumer up to its high watermark (KIP-392).
		if fl, _, ferr := b.replicas.Following(fp.p, fp.leaderEpoch); !errors.Is(ferr, replication.ErrNotLeader) {
			l, err = fl, ferr
		}
	}
	if err != nil {
		fp.err = err
		return 0, true
	}
	fp.hw, fp.logStart = fp.p.HighWatermark(), l.StartOffset()
	fp.lso = l.LastStableOffset(fp.hw)
	if leading && fp.rackOf != nil {
		// Kafka answers at once, without records, when the consumer
		// should fetch from a replica in its rack.
		if fp.preferred = b.replicas.PreferredReadReplica(fp.p, fp.rack, fp.offset, fp.rackOf); fp.preferred >= 0 {
			return 0, true
		}
	}
	if fp.refused != nil {
		fp.err = fp.refused
		return 0, true
	}
	if fp.diverging != nil {
		// Answered at once with where to truncate, and no records.
		return 0, true
	}
	if fp.offset < fp.logStart || fp.offset > l.EndOffset() {
		fp.err = logstore.ErrOffsetOutOfRange
		return 0, true
	}
	// Each partition gets its own limit, within what the response has
	// left (ReplicaManager.readFromLog).
	limit := max(min(int64(fp.maxBytes), budget), 0)
	if limit == 0 && !minOne {
		return 0, false
	}
	maxOffset := fp.hw
	switch {
	case fp.follower:
		maxOffset = l.EndOffset()
	case fp.committed:
		maxOffset = fp.lso
	}
	throttled := fp.follower && fp.t != nil && fp.t.leaderThrottled.Has(fp.key.part, b.nodeID)
	if throttled {
		allowed := b.replThrottle.Allowance(b.cfg().Settings().LeaderThrottledRate, time.Now())
		if allowed == 0 {
			return 0, false
		}
		limit, minOne = min(limit, allowed), true
	}
	rr, err := l.Read(fp.offset, int32(min(limit, 1<<31-1)), maxOffset, minOne)
	if errors.Is(err, logstore.ErrBelowLocalLog) && !fp.follower && fp.t != nil && fp.t.remote != nil && b.tiered != nil {
		// Tiered storage: a consumer reads below the local log from
		// the object store; a follower gets OFFSET_MOVED_TO_TIERED_STORAGE.
		rr, err = b.readRemote(fp, int32(min(limit, 1<<31-1)), maxOffset, minOne)
	}
	if err != nil {
		fp.err = err
		return 0, true
	}
	if throttled {
		b.replThrottle.Took(rr.Size)
	}
	fp.read = rr
	return rr.Size, false
}

// abortedTxns lists the aborted transactions with records in a
// read_committed read (Kafka's FetchResponse AbortedTransactions).
func abortedTxns(fp *fetchPart) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	if fp.read.Size == 0 || fp.p == nil || fp.p.Log == nil {
		return out
	}
	aborted := fp.aborted
	if aborted == nil {
		aborted = fp.p.Log.AbortedTxns(fp.offset, fp.read.NextOffset)
	}
	for _, a := range aborted {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
		out = append(out, at)
	}
	return out
}

// releaseFetch releases every read's regions.
func releaseFetch(parts []*fetchPart) {
	for _, fp := range parts {
		fp.read.Release()
		fp.read = logstore.ReadResult{}
	}
}

// awaitFetch parks a fetch that found size bytes, fewer than minBytes,
// until enough arrived, a partition has an error, the deadline passes or
// the broker stops. It waits on each of its partitions (a
// replication.FetchWaiter, Kafka's DelayedFetch) and re-reads only the
// partitions that moved: a follower fetching 1,000 partitions reads one
// again when one is appended to, not all 1,000.
func (b *Broker) awaitFetch(ctx context.Context, parts []*fetchPart, maxBytes int32, byID bool, size, minBytes int64, deadline time.Time) {
	w := replication.NewFetchWaiter(minBytes - size)
	byPart := make(map[*partition][]*fetchPart, len(parts))
	for _, fp := range parts {
		if fp.p == nil {
			continue
		}
		if byPart[fp.p] == nil {
			fp.p.Watch(w, fp.follower)
			defer fp.p.Unwatch(w)
		}
		byPart[fp.p] = append(byPart[fp.p], fp)
	}
	// Anything between the reads and the Watch calls would be missed:
	// look again at what may have moved since.
	for _, fp := range parts {
		if fp.p != nil && fp.err == nil && (fp.p.HighWatermark() != fp.hw ||
			fp.follower && fp.p.Log != nil && fp.p.Log.EndOffset() != fp.offset) {
			w.Mark(fp.p)
		}
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case <-w.Ready():
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
		for _, p := range w.Take() {
			for _, fp := range byPart[p] {
				size -= fp.read.Size
				fp.read.Release()
				n, failed := b.readPart(fp, int64(maxBytes)-size, size == 0, byID)
				size += n
				if failed {
					return
				}
			}
		}
		if size >= minBytes {
			return
		}
		w.SetNeed(minBytes - size)
	}
}

// rackOf returns the rack of each registered broker ("" for none).
func (b *Broker) rackOf(ctx context.Context) func(int32) string {
	brokers, err := b.liveBrokers(ctx)
	racks := make(map[int32]string, len(brokers))
	if err == nil {
		for _, bi := range brokers {
			racks[bi.ID] = bi.Rack
		}
	}
	return func(id int32) string { return racks[id] }
}
