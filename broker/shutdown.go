package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/samsa-io/samsa/controller"
)

// drainTimeout bounds a controlled shutdown's wait for the controller.
const drainTimeout = 30 * time.Second

// DrainLeadership is the first half of Kafka's controlled shutdown
// (controlled.shutdown.enable): the broker registers as shutting down,
// the controller moves the leadership of each partition it leads to
// another live in-sync replica, and DrainLeadership returns once the
// broker leads no partition that another replica could lead, or after
// drainTimeout, or when ctx ends. The broker keeps serving meanwhile, so
// clients and followers move to the new leaders without an error they
// would have to wait out. Close calls it first; it returns at once when
// controlled shutdown is off or the broker never started.
func (b *Broker) DrainLeadership(ctx context.Context) error {
	if b.store == nil || b.replicas == nil || !b.settings.ControlledShutdown {
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	if err := b.store.BeginControlledShutdown(ctx); err != nil {
		return err
	}
	movable := b.movableLeaderships(ctx)
	if movable == 0 {
		return nil
	}
	b.log.Info("controlled shutdown: moving leadership to other replicas", "node", b.nodeID, "partitions", movable)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for movable > 0 {
		select {
		case <-ctx.Done():
			b.log.Warn("controlled shutdown: stopping while still leading", "node", b.nodeID, "partitions", movable, "err", ctx.Err())
			return ctx.Err()
		case <-tick.C:
		}
		movable = b.movableLeaderships(ctx)
	}
	b.log.Info("controlled shutdown: leadership moved", "node", b.nodeID, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// movableLeaderships counts the partitions this broker leads whose ISR has
// another live broker not shutting down: those the controller will move.
func (b *Broker) movableLeaderships(ctx context.Context) int {
	brokers, err := b.liveBrokers(ctx)
	if err != nil {
		return 0
	}
	eligible := make(map[int32]bool, len(brokers))
	for _, bi := range brokers {
		eligible[bi.ID] = !bi.ShuttingDown && bi.ID != b.nodeID
	}
	n := 0
	for _, p := range b.meta.allPartitions() {
		leader, _, _, isr := p.State()
		if leader == b.nodeID && slices.ContainsFunc(isr, func(r int32) bool { return eligible[r] }) {
			n++
		}
	}
	return n
}

// livenessLoop connects to every other registered broker's inter-broker
// port every samsa.broker.liveness.probe.ms (controller: Suspect). A port
// that refused two probes in a row is suspected; once a majority of the other brokers
// suspect it, the registration is fenced without waiting for its lease.
// A port that times out is no evidence (a slow or cut-off broker): only
// the lease decides then, unless the peer first closed the connection
// this broker holds open to it. A process that dies has its kernel close
// its connections; in a container whose network went with it, its address
// then drops packets rather than refusing them: a held connection closed
// by the peer, and probes failing after it, count as refusals. A paused or
// slow broker closes nothing, and a cut-off one's close does not arrive.
func (b *Broker) livenessLoop(ctx context.Context) {
	every := b.settings.LivenessProbe
	if every <= 0 {
		return
	}
	listener := b.interBrokerListener()
	peers := map[int32]*peerProbe{}
	fenced := map[int32]bool{} // peers this broker has fenced a registration of
	tick := time.NewTicker(every)
	defer tick.Stop()
	defer func() {
		for _, p := range peers {
			p.release()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		brokers, err := b.liveBrokers(ctx)
		if err != nil {
			continue
		}
		b.probePeers(ctx, brokers, listener, peers, fenced, max(every, time.Second))
	}
}

// peerProbe is what the probes found of one registration of a peer.
type peerProbe struct {
	epoch     int64
	answered  bool // its port accepted a connection once
	refused   int  // probes refused in a row since
	suspected bool
	refusedOK bool // this round's verdict, set by the probe
	answerOK  bool
	// silentSince is when the first of the probes that have failed in a
	// row (refused or timed out) began; zero after an answer.
	silentSince time.Time
	reported    string    // the positions last reported unreachable; "" when none is
	held        *heldConn // a probe's connection kept open; nil until one answered
}

// heldConn is a connection kept open to a peer's port, and whether the
// peer closed it (a read returned: a broker sends nothing unasked).
type heldConn struct {
	c    net.Conn
	gone atomic.Bool
}

// hold keeps c open as p's held connection, replacing one the peer
// closed; a second connection is closed.
func (p *peerProbe) hold(c net.Conn) {
	if p.held != nil && !p.held.gone.Load() {
		c.Close()
		return
	}
	p.release()
	h := &heldConn{c: c}
	p.held = h
	go func() {
		var one [1]byte
		_, _ = c.Read(one[:])
		h.gone.Store(true)
	}()
}

// release closes the held connection.
func (p *peerProbe) release() {
	if p.held != nil {
		p.held.c.Close()
		p.held = nil
	}
}

// vanished reports whether the peer closed the held connection.
func (p *peerProbe) vanished() bool { return p.held != nil && p.held.gone.Load() }

func (b *Broker) probePeers(ctx context.Context, brokers []controller.BrokerInfo, listener string, peers map[int32]*peerProbe, fenced map[int32]bool, timeout time.Duration) {
	done := make(chan struct{})
	n := 0
	current := make(map[int32]bool, len(brokers))
	for _, bi := range brokers {
		if bi.ID == b.nodeID {
			continue
		}
		current[bi.ID] = true
		p := peers[bi.ID]
		if p == nil || p.epoch != bi.Epoch {
			if p != nil && p.suspected {
				_ = b.store.Unsuspect(ctx, bi.ID)
			}
			if p != nil && p.reported != "" {
				_ = b.store.WithdrawUnreachable(ctx, bi.ID)
			}
			if p != nil {
				p.release()
			}
			p = &peerProbe{epoch: bi.Epoch}
			peers[bi.ID] = p
		}
		host, port := endpointFor(bi, listener)
		addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if p.silentSince.IsZero() {
			p.silentSince = time.Now() // kept only if this probe fails
		}
		n++
		go func() {
			defer func() { done <- struct{}{} }()
			var c net.Conn
			c, p.refusedOK = b.probe(ctx, addr, timeout)
			if p.answerOK = c != nil; p.answerOK {
				p.hold(c)
			}
		}()
	}
	for range n {
		<-done
	}
	for id, p := range peers {
		if !current[id] {
			if p.suspected {
				_ = b.store.Unsuspect(ctx, id)
			}
			if p.reported != "" {
				_ = b.store.WithdrawUnreachable(ctx, id)
			}
			p.release()
			delete(peers, id)
		}
	}
	for id, p := range peers {
		b.reportUnreachable(ctx, id, p)
	}
	others := len(current) // the brokers other than a target: the rest and this one
	quorum := others/2 + 1
	for id, p := range peers {
		switch {
		case p.answerOK:
			p.answered, p.refused = true, 0
			if p.suspected {
				p.suspected = false
				_ = b.store.Unsuspect(ctx, id)
			}
			continue
		case (p.refusedOK || p.vanished()) && (p.answered || !fenced[id]):
			// A registration is suspected without having answered only
			// if none of the peer's was fenced here before: a broker that
			// advertises an address its peers cannot reach is fenced
			// once, not every time it registers again.
			p.refused++
		default:
			continue
		}
		if p.refused < 2 {
			continue
		}
		if !p.suspected {
			if err := b.store.Suspect(ctx, id, p.epoch); err != nil {
				continue
			}
			p.suspected = true
			b.log.Info("peer's port refuses connections, or closed ours and answers no more; suspecting it", "broker", id, "broker_epoch", p.epoch)
		}
		suspects, err := b.store.Suspects(ctx, id, p.epoch)
		if err != nil || len(suspects) < quorum {
			continue
		}
		ok, err := b.store.FenceBroker(ctx, id, p.epoch)
		if err != nil {
			b.log.Warn("fencing a dead peer failed", "broker", id, "err", err)
		}
		if ok {
			fenced[id] = true
		}
	}
}

// reportUnreachable reports peer id unreachable once its probes have failed
// for samsa.replica.leader.unreachable.ms (and again when this broker's
// positions in the partitions it follows from it change), and withdraws the
// report once a probe is answered: see controller.ReportUnreachable.
func (b *Broker) reportUnreachable(ctx context.Context, id int32, p *peerProbe) {
	if p.answerOK {
		p.silentSince = time.Time{}
		if p.reported != "" && b.store.WithdrawUnreachable(ctx, id) == nil {
			b.log.Info("peer reachable again; report withdrawn", "broker", id, "broker_epoch", p.epoch)
			p.reported = ""
		}
		return
	}
	after := b.settings.LeaderUnreachable
	if after <= 0 || time.Since(p.silentSince) < after {
		return
	}
	var pos []controller.FollowerPosition
	for _, rp := range b.fetchers.Positions(id) {
		pos = append(pos, controller.FollowerPosition{Topic: rp.Topic, Partition: rp.Partition,
			LeaderEpoch: rp.LeaderEpoch, LogEnd: rp.LogEnd, HighWatermark: rp.HighWatermark})
	}
	slices.SortFunc(pos, func(a, c controller.FollowerPosition) int {
		return cmp.Or(strings.Compare(a.Topic, c.Topic), cmp.Compare(a.Partition, c.Partition))
	})
	key := fmt.Sprint(p.epoch, pos)
	if key == p.reported {
		return
	}
	if err := b.store.ReportUnreachable(ctx, id, p.epoch, pos); err != nil {
		return
	}
	if p.reported == "" {
		b.log.Warn("peer unreachable: its port has not answered; reporting it", "broker", id, "broker_epoch", p.epoch,
			"silent_for", time.Since(p.silentSince).Round(time.Millisecond), "partitions_followed", len(pos))
	}
	p.reported = key
}

// probe connects to addr: the connection when it connected (the caller
// keeps or closes it), refused when the port refused it (nothing listens).
func (b *Broker) probe(ctx context.Context, addr string, timeout time.Duration) (conn net.Conn, refused bool) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dial := b.dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	c, err := dial(ctx, "tcp", addr)
	if err == nil {
		return c, false
	}
	return nil, errors.Is(err, syscall.ECONNREFUSED)
}

// interBrokerListener is inter.broker.listener.name, or the first listener.
func (b *Broker) interBrokerListener() string {
	if l := b.settings.InterBrokerListenerName; l != "" {
		return l
	}
	if len(b.lnNames) > 0 {
		return b.lnNames[0]
	}
	return ""
}
