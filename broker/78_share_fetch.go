package broker

// ShareFetch v1-v2 and ShareAcknowledge v1-v2 (KIP-932): a share group
// member fetches from the partition leaders, which hand each record to one
// member at a time under an acquisition lock (package share), and takes
// acknowledgements piggybacked on its fetches or on their own. Both keep a
// share session per member (its partitions and epoch). v2 adds the
// record_limit acquire mode (KIP-1206) and lock renewal (KIP-1222).

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/security"
	"github.com/samsa-io/samsa/share"
)

// shareFetchPartMax bounds what one partition of a ShareFetch reads into
// memory (past its first batch).
const shareFetchPartMax = 8 << 20

// sharePart is one partition of a ShareFetch or ShareAcknowledge answer.
type sharePart struct {
	tp       share.TP
	t        *topic
	p        *partition
	err      error // of the partition
	ackErr   error // of its acknowledgements
	acked    bool  // the request carried acknowledgements for it
	records  []byte
	acquired []share.Acquired
}

// shareRequest checks the group and member of a share request and opens
// its session: the error is the answer's top-level one.
func (b *Broker) shareRequest(r *request, group, member *string, epoch int32, fetch bool) (*share.Session, error) {
	switch {
	case group == nil || *group == "":
		return nil, kerr.InvalidRequest
	case member == nil || *member == "":
		return nil, kerr.InvalidRequest
	}
	if err := b.groupRefusal(r, security.OpRead, *group); err != nil {
		return nil, err
	}
	return b.share.OpenSession(*group, *member, epoch, fetch, r.connID)
}

// sharePartition resolves a partition of a share request: the topic by id,
// the partition, and that this broker leads it.
func (b *Broker) sharePartition(r *request, sp *sharePart) {
	sp.t = b.meta.topicByID(sp.tp.TopicID)
	if sp.t == nil {
		sp.err = kerr.UnknownTopicID
		return
	}
	if err := b.topicRefusal(r, security.OpRead, sp.t.name); err != nil {
		sp.err = err
		return
	}
	if sp.tp.Partition < 0 || int(sp.tp.Partition) >= len(sp.t.parts) {
		sp.err = kerr.UnknownTopicOrPartition
		return
	}
	sp.p = sp.t.parts[sp.tp.Partition]
	if _, _, err := b.replicas.Leading(sp.p, -1); err != nil {
		sp.err = kerr.NotLeaderForPartition
	}
}

// shareAck applies acknowledgements to a partition's share-partition.
func (b *Broker) shareAck(group, member string, sp *sharePart, acks []share.AckBatch, renew bool) {
	sp.acked = true
	if sp.err != nil {
		sp.ackErr = sp.err
		return
	}
	k := share.Key{Group: group, TopicID: sp.tp.TopicID, Partition: sp.tp.Partition}
	spp := b.share.Lookup(k)
	if spp == nil {
		sp.ackErr = kerr.InvalidRecordState
		return
	}
	sp.ackErr = spp.Acknowledge(member, acks, renew, time.Now())
}

func (b *Broker) handleShareFetch(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	resp.AcquisitionLockTimeoutMillis = b.shareLockMillis(req.GroupID)
	sess, err := b.shareRequest(r, req.GroupID, req.MemberID, req.ShareSessionEpoch, true)
	if err != nil {
		resp.ErrorCode = errCode(err)
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		return resp, nil
	}
	group, member := *req.GroupID, *req.MemberID
	final := req.ShareSessionEpoch == share.FinalEpoch

	// The request's partitions join the session, the forgotten leave it;
	// acknowledgements are applied before anything is fetched.
	parts := map[share.TP]*sharePart{}
	var add, forget []share.TP
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := share.TP{TopicID: t.TopicID, Partition: p.Partition}
			add = append(add, tp)
			sp := &sharePart{tp: tp}
			parts[tp] = sp
			b.sharePartition(r, sp)
			if len(p.AcknowledgementBatches) > 0 {
				acks := make([]share.AckBatch, len(p.AcknowledgementBatches))
				for i, a := range p.AcknowledgementBatches {
					acks[i] = share.AckBatch{First: a.FirstOffset, Last: a.LastOffset, Types: a.AcknowledgeTypes}
				}
				b.shareAck(group, member, sp, acks, req.IsRenewAck)
			}
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forget = append(forget, share.TP{TopicID: t.TopicID, Partition: p})
		}
	}
	if final {
		b.share.CloseSession(sess)
	} else {
		b.share.Update(sess, add, forget)
		for _, tp := range sess.Partitions() {
			if parts[tp] == nil {
				sp := &sharePart{tp: tp}
				b.sharePartition(r, sp)
				parts[tp] = sp
			}
		}
		// A renewing request fetches nothing (KIP-1222).
		if !req.IsRenewAck {
			b.shareAcquire(ctx, req, group, member, parts)
		}
	}
	b.persistShare(ctx, group, parts)

	full := req.ShareSessionEpoch == share.InitialEpoch
	var leaders []int32
	byTopic := map[[16]byte]int{}
	for _, tp := range sortedTPs(parts) {
		sp := parts[tp]
		if !full && !sp.acked && sp.err == nil && len(sp.acquired) == 0 {
			continue
		}
		i, ok := byTopic[tp.TopicID]
		if !ok {
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = tp.TopicID
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			byTopic[tp.TopicID] = i
		}
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = tp.Partition
		rp.ErrorCode = errCode(sp.err)
		rp.AcknowledgeErrorCode = errCode(sp.ackErr)
		if sp.ackErr != nil {
			rp.AcknowledgeErrorMessage = kmsg.StringPtr(sp.ackErr.Error())
		}
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
		if errors.Is(sp.err, kerr.NotLeaderForPartition) {
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = b.leaderOf(sp.t, tp.Partition, &leaders)
		} else if sp.p != nil {
			_, epoch, _, _ := sp.p.State()
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = b.nodeID, epoch
		}
		rp.Records = sp.records
		if rp.Records == nil {
			rp.Records = []byte{}
		}
		for _, a := range sp.acquired {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.Count
			rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	for _, bi := range b.leaderEndpoints(ctx, leaders, r.listener) {
		ne := kmsg.NewShareFetchResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port = bi.ID, bi.Host, bi.Port
		if bi.Rack != "" {
			ne.Rack = kmsg.StringPtr(bi.Rack)
		}
		resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
	}
	return resp, nil
}

func sortedTPs(parts map[share.TP]*sharePart) []share.TP {
	tps := make([]share.TP, 0, len(parts))
	for tp := range parts {
		tps = append(tps, tp)
	}
	share.SortTPs(tps)
	return tps
}

// shareAcquire fills parts with the records member acquires: it reads the
// log of each partition from its share-partition's next offset, and waits
// up to MaxWaitMillis while none can be had.
func (b *Broker) shareAcquire(ctx context.Context, req *kmsg.ShareFetchRequest, group, member string, parts map[share.TP]*sharePart) {
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = 500
	}
	tps := sortedTPs(parts)
	b.shareConfigsFresh(ctx, group, tps, parts)
	readCommitted := b.cfg().GroupValue(b.groupConfig(group), "share.isolation.level") == "read_committed"
	for {
		budget := int64(req.MaxBytes)
		if budget <= 0 {
			budget = 1<<31 - 1
		}
		left := maxRecords
		var waits []reflect.SelectCase
		for _, tp := range tps {
			sp := parts[tp]
			if sp.err != nil || left <= 0 || budget <= 0 {
				continue
			}
			spp, err := b.sharePartitionState(ctx, group, sp)
			if err != nil {
				// As Kafka's SharePartition answers a persister it
				// cannot reach: the client retries after a metadata
				// refresh.
				b.log.Warn("share-partition state not read", "group", group, "partition", sp.p.String(), "err", err)
				sp.err = kerr.LeaderNotAvailable
				continue
			}
			waits = append(waits, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(sp.p.Moved())},
				reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(spp.Changed())})
			before := len(sp.records)
			for _, a := range b.shareRead(sp, spp, member, min(budget, shareFetchPartMax), left, req.ShareAcquireMode == 1, readCommitted) {
				left -= int(a.Last - a.First + 1)
			}
			budget -= int64(len(sp.records) - before)
		}
		if left < maxRecords || len(waits) == 0 || !time.Now().Before(deadline) {
			return
		}
		timer := time.NewTimer(time.Until(deadline))
		waits = append(waits, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
		chosen, _, _ := reflect.Select(waits)
		timer.Stop()
		if chosen >= len(waits)-2 {
			return
		}
	}
}

// shareConfigsFresh reads the group configs again from etcd when a
// partition of the fetch has no share-partition here yet: a new one
// starts where share.auto.offset.reset says at its first fetch, and reads
// as share.isolation.level says, even when the configs were altered
// through another broker a moment ago and this one's watch has not
// brought them yet. Should etcd not answer, those partitions fail with
// LEADER_NOT_AVAILABLE (the client fetches again) rather than start from
// configs that may be stale.
func (b *Broker) shareConfigsFresh(ctx context.Context, group string, tps []share.TP, parts map[share.TP]*sharePart) {
	var fresh []*sharePart
	for _, tp := range tps {
		if sp := parts[tp]; sp.err == nil && b.share.Lookup(share.Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}) == nil {
			fresh = append(fresh, sp)
		}
	}
	if len(fresh) == 0 {
		return
	}
	if err := b.loadGroupConfigs(ctx); err != nil {
		b.log.Warn("group configs not read", "group", group, "err", err)
		for _, sp := range fresh {
			sp.err = kerr.LeaderNotAvailable
		}
	}
}

// sharePartitionState is the share-partition of group on sp's partition,
// its persisted state read (or made) the first time, with the group's
// configs applied.
func (b *Broker) sharePartitionState(ctx context.Context, group string, sp *sharePart) (*share.Partition, error) {
	k := share.Key{Group: group, TopicID: sp.tp.TopicID, Partition: sp.tp.Partition}
	spp, err := b.share.Partition(ctx, k, func() int64 { return b.shareStartOffset(group, sp.p) })
	if err != nil {
		return nil, err
	}
	m, props := b.groupConfig(group), b.cfg()
	spp.SetLimits(props.GroupDuration(m, "share.record.lock.duration.ms"),
		int16(props.GroupInt(m, "share.delivery.count.limit")),
		int(props.GroupInt(m, "share.partition.max.record.locks")))
	return spp, nil
}

// shareLockMillis is the acquisition lock of group's records.
func (b *Broker) shareLockMillis(group *string) int32 {
	if group == nil {
		return b.share.LockDuration()
	}
	return int32(b.cfg().GroupDuration(b.groupConfig(*group), "share.record.lock.duration.ms").Milliseconds())
}

// shareStartOffset is where a new share-partition of group starts, as its
// share.auto.offset.reset says: latest (the high watermark, Kafka's
// default), earliest (the log start), or by_duration:<ISO-8601> (the
// first offset at most that long ago).
func (b *Broker) shareStartOffset(group string, p *partition) int64 {
	hw := p.HighWatermark()
	l := p.Log
	if l == nil {
		return hw
	}
	v := b.cfg().GroupValue(b.groupConfig(group), "share.auto.offset.reset")
	switch {
	case v == "earliest":
		return l.StartOffset()
	case strings.HasPrefix(v, "by_duration:"):
		d, ok := config.ParseDuration(strings.TrimPrefix(v, "by_duration:"))
		if !ok {
			return hw
		}
		off, _, found, err := l.OffsetForTimestamp(time.Now().Add(-d).UnixMilli())
		if err != nil || !found {
			return hw
		}
		return min(off, hw)
	}
	return hw
}

// retainSharePartitions drops the share-partitions of the partitions this
// broker no longer leads: should it lead one again, it reads the state
// the leaders in between wrote. Metadata sync calls it after every change.
func (b *Broker) retainSharePartitions() {
	if b.share == nil {
		return
	}
	b.share.Retain(func(k share.Key) bool {
		t := b.meta.topicByID(k.TopicID)
		if t == nil || k.Partition < 0 || int(k.Partition) >= len(t.parts) {
			return false
		}
		_, _, err := b.replicas.Leading(t.parts[k.Partition], -1)
		return err == nil
	})
}

// persistShare writes the state of the share-partitions a request changed.
// An acknowledgement that could not be made durable is answered with the
// write's error.
func (b *Broker) persistShare(ctx context.Context, group string, parts map[share.TP]*sharePart) {
	for tp, sp := range parts {
		if sp.p == nil || sp.err != nil {
			continue
		}
		k := share.Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
		spp := b.share.Lookup(k)
		if spp == nil {
			continue
		}
		_, epoch, _, _ := sp.p.State()
		if err := b.share.Persist(ctx, k, spp, epoch); err != nil {
			b.log.Warn("share-partition state not written", "group", group, "partition", sp.p.String(), "err", err)
			if errors.Is(err, kerr.FencedStateEpoch) || errors.Is(err, kerr.FencedLeaderEpoch) {
				b.share.Drop(k) // the state moved on without it: read it again at the next use
			}
			if sp.acked && sp.ackErr == nil {
				sp.ackErr = err
			}
		}
	}
}

// shareRead acquires records of one partition for member: at most
// maxRecords, from at most budget bytes of the log (one batch at least).
// A read_committed group (share.isolation.level) reads up to the last
// stable offset, and the batches of aborted transactions are archived
// without being delivered, as Kafka's share-partitions do.
func (b *Broker) shareRead(sp *sharePart, spp *share.Partition, member string, budget int64, maxRecords int, exact, readCommitted bool) []share.Acquired {
	l, _, err := b.replicas.Leading(sp.p, -1)
	if err != nil {
		sp.err = kerr.NotLeaderForPartition
		return nil
	}
	spp.SkipTo(l.StartOffset())
	now := time.Now()
	off, ok := spp.NextOffset(now)
	upper := sp.p.HighWatermark()
	if readCommitted {
		upper = l.LastStableOffset(upper)
	}
	if !ok || off >= upper {
		return nil
	}
	data, err := l.ReadBytes(off, int32(min(budget, 1<<31-1)), upper)
	if err != nil {
		if errors.Is(err, logstore.ErrOffsetOutOfRange) {
			spp.SkipTo(l.StartOffset())
			return nil
		}
		sp.err = err
		return nil
	}
	var batches []share.Batch
	var raws [][]byte
	var aborted []logstore.AbortedTxn
	for len(data) > 0 {
		h, err := logstore.ParseBatchHeader(data)
		if err != nil || h.Size() > int64(len(data)) {
			break
		}
		if readCommitted && h.IsTransactional() && !h.IsControl() && aborted == nil {
			aborted = l.AbortedTxns(off, upper)
		}
		batches = append(batches, share.Batch{Base: h.BaseOffset, Last: h.LastOffset(), Control: h.IsControl(),
			Aborted: readCommitted && h.IsTransactional() && !h.IsControl() && abortedBatch(h, aborted)})
		raws = append(raws, data[:h.Size()])
		data = data[h.Size():]
	}
	acq, used := spp.Acquire(member, batches, maxRecords, exact, now)
	for i, u := range used {
		if u {
			sp.records = append(sp.records, raws[i]...)
		}
	}
	sp.acquired = append(sp.acquired, acq...)
	return acq
}

// abortedBatch reports whether the transactional batch h belongs to one
// of the aborted transactions: its producer's, begun at or before it and
// ended by an ABORT marker after it.
func abortedBatch(h logstore.BatchHeader, aborted []logstore.AbortedTxn) bool {
	for _, a := range aborted {
		if a.ProducerID == h.ProducerID && a.FirstOffset <= h.BaseOffset && h.LastOffset() < a.LastOffset {
			return true
		}
	}
	return false
}

func (b *Broker) handleShareAcknowledge(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	resp.AcquisitionLockTimeoutMillis = b.shareLockMillis(req.GroupID)
	sess, err := b.shareRequest(r, req.GroupID, req.MemberID, req.ShareSessionEpoch, false)
	if err != nil {
		resp.ErrorCode = errCode(err)
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		return resp, nil
	}
	group, member := *req.GroupID, *req.MemberID
	parts := map[share.TP]*sharePart{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			sp := &sharePart{tp: share.TP{TopicID: t.TopicID, Partition: p.Partition}}
			parts[sp.tp] = sp
			b.sharePartition(r, sp)
			acks := make([]share.AckBatch, len(p.AcknowledgementBatches))
			for i, a := range p.AcknowledgementBatches {
				acks[i] = share.AckBatch{First: a.FirstOffset, Last: a.LastOffset, Types: a.AcknowledgeTypes}
			}
			b.shareAck(group, member, sp, acks, req.IsRenewAck)
		}
	}
	b.persistShare(ctx, group, parts)
	var leaders []int32
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			sp := parts[share.TP{TopicID: t.TopicID, Partition: p.Partition}]
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = errCode(sp.ackErr)
			if sp.ackErr != nil {
				rp.ErrorMessage = kmsg.StringPtr(sp.ackErr.Error())
			}
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			if errors.Is(sp.err, kerr.NotLeaderForPartition) {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = b.leaderOf(sp.t, p.Partition, &leaders)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.ShareSessionEpoch == share.FinalEpoch {
		b.share.CloseSession(sess)
	}
	for _, bi := range b.leaderEndpoints(ctx, leaders, r.listener) {
		ne := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port = bi.ID, bi.Host, bi.Port
		if bi.Rack != "" {
			ne.Rack = kmsg.StringPtr(bi.Rack)
		}
		resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
	}
	return resp, nil
}
