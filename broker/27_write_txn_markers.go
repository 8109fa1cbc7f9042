package broker

// WriteTxnMarkers v1-v2 (v0 removed in Kafka 4.0; v1 flexible; v2: the
// marker's transaction version, KIP-1228: from 2 the marker's producer
// epoch must be newer than the producer's, bar a retry). The
// transaction coordinator asks each partition leader to end a producer's
// transaction: the leader appends a COMMIT or ABORT control batch
// (logstore.Log.AppendMarker, Kafka's checks of the producer and
// coordinator epochs) to every partition named, and answers once each
// marker is replicated to the ISR (acks=all, within Kafka's default
// request.timeout.ms), per partition: NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, INVALID_PRODUCER_EPOCH,
// TRANSACTION_COORDINATOR_FENCED, REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR.
// Markers with the same producer id are answered as one, as Kafka's map
// by producer id does.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/logstore"
)

// txnMarkerTimeout is how long a marker waits for the ISR: Kafka's
// request.timeout.ms default, which its WriteTxnMarkers handler uses.
const txnMarkerTimeout = 30 * time.Second

// TxnMarkerHook is told of every transaction marker committed (replicated
// to the ISR) to a partition of __consumer_offsets led here: the group
// coordinator then applies (commit) or drops (abort) the offsets that
// producerID's TxnOffsetCommit left pending in that partition. It runs on
// the request's goroutine before the WriteTxnMarkers answer is sent; it
// must not block for long.
type TxnMarkerHook func(partition int32, producerID int64, producerEpoch int16, commit bool)

// SetTxnMarkerHook installs the hook (nil removes it).
func (b *Broker) SetTxnMarkerHook(h TxnMarkerHook) {
	if h == nil {
		b.txnHook.Store(nil)
		return
	}
	b.txnHook.Store(&h)
}

// pendingMarker is a marker appended to a partition and not yet known to
// be replicated.
type pendingMarker struct {
	p      *partition
	t      *topic
	mk     logstore.Marker
	need   int64 // high watermark that commits it
	minISR int
}

// appendTxnMarker appends mk to partition p of t, led here, with the
// checks of an acks=all produce (leadership, min.insync.replicas).
func (b *Broker) appendTxnMarker(t *topic, p *partition, mk logstore.Marker, now time.Time) (pendingMarker, error) {
	if _, _, err := b.replicas.Leading(p, -1); err != nil {
		return pendingMarker{}, err
	}
	if _, _, _, isr := p.State(); len(isr) < t.effectiveMinISR(p) {
		return pendingMarker{}, kerr.NotEnoughReplicas
	}
	res, err := b.replicas.AppendMarker(p, mk, now)
	if err != nil {
		return pendingMarker{}, err
	}
	return pendingMarker{p: p, t: t, mk: mk, need: res.LastOffset + 1, minISR: t.effectiveMinISR(p)}, nil
}

// awaitTxnMarker waits until the marker is replicated to the ISR, then
// tells the hook of a __consumer_offsets marker.
func (b *Broker) awaitTxnMarker(ctx context.Context, m pendingMarker) error {
	switch err := b.replicas.AwaitHW(ctx, m.p, m.need); {
	case err == nil:
		if _, _, _, isr := m.p.State(); len(isr) < m.minISR {
			return kerr.NotEnoughReplicasAfterAppend
		}
	case errors.Is(err, errNotLeader):
		return err
	default:
		return kerr.RequestTimedOut
	}
	if m.t.name == offsetsTopic {
		if h := b.txnHook.Load(); h != nil {
			(*h)(m.p.ID, m.mk.ProducerID, m.mk.ProducerEpoch, m.mk.Commit)
		}
	}
	return nil
}

func (b *Broker) handleWriteTxnMarkers(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	now := time.Now()
	type waiter struct {
		m          pendingMarker
		mi, ti, pi int // indexes in resp
	}
	var waits []waiter
	byProducer := map[int64]int{}
	for _, rm := range req.Markers {
		mi, ok := byProducer[rm.ProducerID]
		if !ok {
			sm := kmsg.NewWriteTxnMarkersResponseMarker()
			sm.ProducerID = rm.ProducerID
			resp.Markers = append(resp.Markers, sm)
			mi = len(resp.Markers) - 1
			byProducer[rm.ProducerID] = mi
		}
		mk := logstore.Marker{ProducerID: rm.ProducerID, ProducerEpoch: rm.ProducerEpoch,
			CoordinatorEpoch: rm.CoordinatorEpoch, Commit: rm.Committed, TransactionVersion: rm.TransactionVersion}
		for _, rt := range rm.Topics {
			st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			t := b.meta.topic(rt.Topic)
			for _, part := range rt.Partitions {
				sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = part
				var err error
				var pm pendingMarker
				if t == nil || part < 0 || int(part) >= len(t.parts) {
					err = kerr.UnknownTopicOrPartition
				} else {
					pm, err = b.appendTxnMarker(t, t.parts[part], mk, now)
				}
				sp.ErrorCode = produceErrCode(err)
				st.Partitions = append(st.Partitions, sp)
				if err == nil {
					waits = append(waits, waiter{m: pm, mi: mi, ti: len(resp.Markers[mi].Topics), pi: len(st.Partitions) - 1})
				}
			}
			resp.Markers[mi].Topics = append(resp.Markers[mi].Topics, st)
		}
	}
	if len(waits) > 0 {
		wctx, cancel := context.WithTimeout(ctx, txnMarkerTimeout)
		defer cancel()
		for _, w := range waits {
			if err := b.awaitTxnMarker(wctx, w.m); err != nil {
				resp.Markers[w.mi].Topics[w.ti].Partitions[w.pi].ErrorCode = errCode(err)
			}
		}
	}
	return resp, nil
}
