package broker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/protocol"
	"github.com/samsa-io/samsa/txn"
)

// txnTopic is Kafka's transaction state topic.
const txnTopic = "__transaction_state"

// newTxnCoordinator builds the transaction coordinator from the broker's
// settings.
func (b *Broker) newTxnCoordinator() *txn.Coordinator {
	s := b.settings
	return txn.New(txn.Config{
		Log:            txnLog{b},
		Markers:        markerSender{b},
		Partitions:     s.TxnStateNumPartitions,
		Logger:         b.log.With("component", "txn"),
		NewProducerID:  b.nextProducerID,
		MaxTimeout:     s.TxnMaxTimeout,
		IDExpiration:   s.TxnIDExpiration,
		AbortInterval:  s.TxnAbortInterval,
		RemoveInterval: s.TxnRemoveInterval,
		AppendTimeout:  s.OffsetsCommitTimeout,
	})
}

// syncTxnCoordinator tells the transaction coordinator which
// __transaction_state partitions this broker leads now.
func (b *Broker) syncTxnCoordinator() {
	if b.txn == nil {
		return
	}
	b.txn.SetOwned(b.ledPartitions(txnTopic))
}

// ensureTxnTopic creates __transaction_state on first use, with
// transaction.state.log.num.partitions partitions,
// transaction.state.log.replication.factor replicas (capped by the live
// brokers) and transaction.state.log.min.isr, compacted, as Kafka does.
func (b *Broker) ensureTxnTopic(ctx context.Context) error {
	s := b.settings
	return b.ensureInternalTopic(ctx, internalTopic{
		name:       txnTopic,
		partitions: s.TxnStateNumPartitions,
		rf:         int(s.TxnStateReplicationFactor),
		configs: func(rf int) map[string]string {
			return map[string]string{
				"cleanup.policy":                 "compact",
				"compression.type":               "uncompressed",
				"min.insync.replicas":            strconv.Itoa(min(int(s.TxnStateMinISR), rf)),
				"segment.bytes":                  strconv.Itoa(int(s.TxnStateSegmentBytes)),
				"unclean.leader.election.enable": "false",
			}
		},
		sync: b.syncTxnCoordinator,
	})
}

// txnLog is __transaction_state as the coordinator writes and reads it.
type txnLog struct{ b *Broker }

// Append writes one record in leader epoch epoch, once the ISR has
// transaction.state.log.min.isr members, and waits until it is committed.
func (l txnLog) Append(ctx context.Context, partition, epoch int32, key, value []byte) error {
	b := l.b
	t := b.meta.topic(txnTopic)
	if t == nil {
		return kerr.UnknownTopicOrPartition
	}
	if p := b.meta.partition(txnTopic, partition); p != nil {
		if _, _, _, isr := p.State(); len(isr) < t.effectiveMinISR(p) {
			return kerr.NotEnoughReplicas
		}
	}
	now := time.Now()
	return b.appendInternal(ctx, txnTopic, partition, epoch, []logstore.Record{{Timestamp: now.UnixMilli(), Key: key, Value: value}}, now)
}

func (l txnLog) Replay(ctx context.Context, partition int32, fn func(key, value []byte)) error {
	return l.b.replayInternal(ctx, txnTopic, partition, func(h logstore.BatchHeader, r logstore.Record) {
		if !h.IsControl() && r.Key != nil {
			fn(r.Key, r.Value)
		}
	})
}

// markerSender delivers the coordinator's markers with WriteTxnMarkers
// requests to each partition's leader, over the network as Kafka's
// coordinator does (to this broker too).
type markerSender struct{ b *Broker }

func (m markerSender) Write(ctx context.Context, mk txn.Marker) map[txn.TopicPartition]error {
	b := m.b
	out := make(map[txn.TopicPartition]error, len(mk.Partitions))
	byLeader := map[int32][]txn.TopicPartition{}
	for _, tp := range mk.Partitions {
		p := b.meta.partition(tp.Topic, tp.Partition)
		if p == nil {
			out[tp] = txn.ErrPartitionGone
			continue
		}
		leader, _, _, _ := p.State()
		if leader < 0 {
			out[tp] = kerr.LeaderNotAvailable
			continue
		}
		byLeader[leader] = append(byLeader[leader], tp)
	}
	for leader, tps := range byLeader {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 2
		wm := kmsg.NewWriteTxnMarkersRequestMarker()
		wm.ProducerID, wm.ProducerEpoch, wm.Committed, wm.CoordinatorEpoch = mk.ProducerID, mk.ProducerEpoch, mk.Commit, mk.CoordinatorEpoch
		wm.TransactionVersion = mk.TransactionVersion
		idx := map[string]int{}
		for _, tp := range tps {
			i, ok := idx[tp.Topic]
			if !ok {
				i = len(wm.Topics)
				idx[tp.Topic] = i
				t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				t.Topic = tp.Topic
				wm.Topics = append(wm.Topics, t)
			}
			wm.Topics[i].Partitions = append(wm.Topics[i].Partitions, tp.Partition)
		}
		req.Markers = append(req.Markers, wm)
		resp := kmsg.NewPtrWriteTxnMarkersResponse()
		err := b.peers.roundTrip(ctx, leader, req, resp)
		if err == nil && len(resp.Markers) != 1 {
			err = fmt.Errorf("WriteTxnMarkers answered %d markers, want 1", len(resp.Markers))
		}
		for _, tp := range tps {
			out[tp] = kerr.RequestTimedOut
			if err != nil {
				out[tp] = err
			}
		}
		if err != nil {
			b.log.Debug("WriteTxnMarkers failed", "leader", leader, "err", err)
			continue
		}
		for _, t := range resp.Markers[0].Topics {
			for _, p := range t.Partitions {
				tp := txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}
				if _, ok := out[tp]; !ok {
					continue
				}
				switch e := kerr.ErrorForCode(p.ErrorCode); {
				case e == nil:
					out[tp] = nil
				case errors.Is(e, kerr.UnknownTopicOrPartition) && b.meta.partition(tp.Topic, tp.Partition) == nil:
					out[tp] = txn.ErrPartitionGone
				default:
					out[tp] = e
				}
			}
		}
	}
	return out
}

// peerConns are this broker's connections to the other brokers (and to
// itself) for the requests a coordinator sends: one connection per broker,
// one request at a time on it.
type peerConns struct {
	b     *Broker
	mu    sync.Mutex
	conns map[int32]*peerConn // guarded by mu
}

type peerConn struct {
	mu   sync.Mutex // held for a round trip
	conn net.Conn
	rd   *bufio.Reader
	corr int32
	buf  []byte
}

// roundTrip sends req to broker id and decodes its answer into resp. A
// failed round trip drops the connection; the next one dials again.
func (pc *peerConns) roundTrip(ctx context.Context, id int32, req kmsg.Request, resp kmsg.Response) error {
	pc.mu.Lock()
	if pc.conns == nil {
		pc.conns = map[int32]*peerConn{}
	}
	c := pc.conns[id]
	if c == nil {
		c = &peerConn{}
		pc.conns[id] = c
	}
	pc.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := pc.dial(ctx, id, c); err != nil {
		return err
	}
	err := c.roundTrip(ctx, pc.b.nodeID, req, resp)
	if err != nil {
		c.conn.Close()
		c.conn = nil
	}
	return err
}

func (pc *peerConns) dial(ctx context.Context, id int32, c *peerConn) error {
	if c.conn != nil {
		return nil
	}
	b := pc.b
	listener := b.interBrokerListener()
	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		return err
	}
	addr := ""
	for _, bi := range brokers {
		if bi.ID == id {
			host, port := endpointFor(bi, listener)
			addr = net.JoinHostPort(host, strconv.Itoa(int(port)))
		}
	}
	if addr == "" {
		return fmt.Errorf("%w: broker %d is not registered", kerr.BrokerNotAvailable, id)
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := b.peerDial.DialContext(dctx, "tcp", addr)
	if err != nil {
		return err
	}
	c.conn, c.rd = conn, bufio.NewReader(conn)
	return nil
}

func (c *peerConn) roundTrip(ctx context.Context, from int32, req kmsg.Request, resp kmsg.Response) error {
	c.corr++
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(fmt.Sprintf("samsa-broker-%d", from)))
	c.buf = f.AppendRequest(c.buf[:0], req, c.corr)
	conn := c.conn
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	if _, err := conn.Write(c.buf); err != nil {
		return err
	}
	frame, err := protocol.ReadFrame(c.rd, c.buf[:0], 16<<20)
	if err != nil {
		return err
	}
	return protocol.DecodeResponse(frame, req, c.corr, resp)
}

// close drops every peer connection.
func (pc *peerConns) close() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, c := range pc.conns {
		c.mu.Lock()
		if c.conn != nil {
			c.conn.Close()
			c.conn = nil
		}
		c.mu.Unlock()
	}
}
