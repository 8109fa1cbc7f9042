package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/replication"
)

// partition is one partition of a topic as this broker sees it. log is nil
// when this broker holds no replica of it.
type partition struct {
	topic   string
	topicID [16]byte
	id      int32
	log     *logstore.Log // immutable after creation

	hw      atomic.Int64 // high watermark, published after the bytes are written
	savedHW atomic.Int64 // high watermark last checkpointed (0: none)

	// roleMu is held for reading by appends as leader and for writing by
	// a change of role, so that no append of an old leadership lands after
	// the follower's truncation began (Kafka's leaderIsrUpdateLock).
	roleMu sync.RWMutex

	mu          sync.Mutex
	replicas    []int32             // guarded by mu
	isr         []int32             // guarded by mu
	joining     []int32             // guarded by mu; being added to the ISR in etcd: counted for the HW already
	leader      int32               // guarded by mu
	leaderEpoch int32               // guarded by mu
	version     int64               // guarded by mu; etcd revision of the state (compare value of ISR writes)
	ctrlEpoch   int32               // guarded by mu; controller epoch of the state
	lead        *replication.Leader // guarded by mu; follower tracking while led here
	leadEpoch   int32               // guarded by mu; the leader epoch lead was made for
	replica     *replication.Replica
	moved       chan struct{} // guarded by mu; closed and replaced when the log or HW moves
}

func (p *partition) String() string { return p.topic + "-" + strconv.Itoa(int(p.id)) }

// state returns the leader, leader epoch, replicas and ISR.
func (p *partition) state() (leader, epoch int32, replicas, isr []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader, p.leaderEpoch, p.replicas, p.isr
}

// movedCh returns the channel that is closed at the next change.
func (p *partition) movedCh() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.moved
}

// signal wakes everything waiting for this partition to change.
func (p *partition) signal() {
	p.mu.Lock()
	close(p.moved)
	p.moved = make(chan struct{})
	p.mu.Unlock()
}

// advanceHW moves the high watermark of a partition led here to the
// smallest log end offset over the ISR (the log end offset itself when the
// ISR is this broker alone), never backwards, and wakes the waiters: a
// follower's long poll, an acks=all produce. Appends call it: their new
// records wake followers even when the high watermark stays.
func (p *partition) advanceHW() {
	p.computeHW()
	p.signal()
}

// updateHW is advanceHW that wakes the waiters only when the high
// watermark moved (a follower's fetch).
func (p *partition) updateHW() {
	if p.computeHW() {
		p.signal()
	}
}

// computeHW moves the high watermark and reports whether it moved.
func (p *partition) computeHW() bool {
	p.mu.Lock()
	lead, isr := p.lead, p.isr
	if len(p.joining) > 0 {
		// Kafka's maximal ISR: a follower being added must hold what is
		// acknowledged from now on, as it may lead once the write lands.
		isr = append(slices.Clone(isr), p.joining...)
	}
	p.mu.Unlock()
	if lead == nil || p.log == nil {
		return false
	}
	hw, ok := lead.HighWatermark(isr, p.log.EndOffset())
	if !ok {
		return false
	}
	for {
		cur := p.hw.Load()
		if hw <= cur {
			return false
		}
		if p.hw.CompareAndSwap(cur, hw) {
			return true
		}
	}
}

// setFollowerHW records the high watermark a follower learnt from its
// leader (capped at its own log end offset).
func (p *partition) setFollowerHW(hw int64) {
	if p.hw.Swap(hw) != hw {
		p.signal()
	}
}

// truncatedTo keeps the high watermark of a follower whose log was cut
// to end within its log (Kafka's truncateTo lowers it too): should it lead
// next, its high watermark must not sit above records it no longer has.
func (p *partition) truncatedTo(end int64) {
	for {
		cur := p.hw.Load()
		if cur <= end || p.hw.CompareAndSwap(cur, end) {
			return
		}
	}
}

// highWatermark is the offset below which records are visible to consumers.
func (p *partition) highWatermark() int64 { return p.hw.Load() }

// checkLeaderEpoch validates a client's current leader epoch (KIP-320):
// -1 skips the check, an older epoch is fenced, a newer one is unknown.
func checkLeaderEpoch(current, ours int32) error {
	switch {
	case current < 0 || current == ours:
		return nil
	case current < ours:
		return errFencedLeaderEpoch
	default:
		return errUnknownLeaderEpoch
	}
}

// leaderHere returns the partition's log if this broker leads it, checking
// the client's leader epoch.
func (b *Broker) leaderHere(p *partition, currentEpoch int32) (*logstore.Log, int32, error) {
	leader, epoch, _, _ := p.state()
	if leader != b.nodeID || p.log == nil {
		return nil, epoch, errNotLeader
	}
	if err := checkLeaderEpoch(currentEpoch, epoch); err != nil {
		return nil, epoch, err
	}
	return p.log, epoch, nil
}

// replicationFactor is the number of replicas.
func (p *partition) replicationFactor() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.replicas)
}

// setState records the partition's state from etcd. A new leader or
// epoch wakes the requests parked on the partition, so that they answer
// NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH now, not at their timeout.
func (p *partition) setState(st controller.PartitionState, replicas []int32) {
	p.mu.Lock()
	changed := p.leader != st.Leader || p.leaderEpoch != st.LeaderEpoch || !slices.Equal(p.isr, st.ISR)
	if st.Version != 0 && st.Version < p.version {
		// An older read than one already applied (a local ISR write).
		p.mu.Unlock()
		return
	}
	p.leader, p.leaderEpoch = st.Leader, st.LeaderEpoch
	p.replicas, p.isr = slices.Clone(replicas), slices.Clone(st.ISR)
	p.version, p.ctrlEpoch = st.Version, st.ControllerEpoch
	if changed && p.moved != nil {
		close(p.moved)
		p.moved = make(chan struct{})
	}
	p.mu.Unlock()
}

// leadState returns the follower tracking of a partition led here, or nil.
func (p *partition) leadState() *replication.Leader {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lead
}

// appendAsLeader appends a producer's records to a partition led here, in
// the current leader epoch, and moves the high watermark; NOT_LEADER when
// leadership moved, even between the caller's check and the append.
func (b *Broker) appendAsLeader(p *partition, records []byte, now time.Time) (logstore.AppendResult, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	l, epoch, err := b.leaderHere(p, -1)
	if err != nil {
		return logstore.AppendResult{}, err
	}
	res, err := l.Append(records, epoch, now)
	if err != nil {
		return res, err
	}
	if !res.Duplicate {
		p.advanceHW()
	}
	return res, nil
}

// applyRole makes this broker lead or follow p as its state says: a new
// leader stops fetching, records its leader epoch at its log end (the
// epoch's start offset) and starts tracking its followers; a follower
// fetches from the leader, truncating first where its log diverged.
func (b *Broker) applyRole(p *partition, st controller.PartitionState) {
	if p.log == nil {
		return
	}
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	// The state setState kept: st may be an older read than an ISR change
	// this broker wrote itself.
	p.mu.Lock()
	st.Leader, st.LeaderEpoch = p.leader, p.leaderEpoch
	p.mu.Unlock()
	switch {
	case st.Leader == b.nodeID:
		p.mu.Lock()
		same := p.lead != nil && p.leadEpoch == st.LeaderEpoch
		p.mu.Unlock()
		if same {
			p.advanceHW() // the ISR may have changed
			return
		}
		if b.fetchers != nil {
			b.fetchers.Unfollow(p.topic, p.id)
		}
		if err := p.log.AssignEpoch(st.LeaderEpoch); err != nil {
			b.log.Warn("recording leader epoch", "partition", p.String(), "epoch", st.LeaderEpoch, "err", err)
		}
		p.mu.Lock()
		p.lead = replication.NewLeader(b.nodeID, p.replicas, p.log.EndOffset(), time.Now())
		p.leadEpoch = st.LeaderEpoch
		p.mu.Unlock()
		p.advanceHW()
	case st.Leader >= 0 && b.fetchers != nil:
		p.mu.Lock()
		p.lead = nil
		if p.replica == nil {
			p.replica = &replication.Replica{Topic: p.topic, TopicID: p.topicID, Partition: p.id, Log: p.log,
				OnFetched: p.setFollowerHW, OnTruncated: p.truncatedTo}
		}
		r := p.replica
		p.mu.Unlock()
		b.fetchers.Follow(r, st.Leader, st.LeaderEpoch)
	default:
		if b.fetchers != nil {
			b.fetchers.Unfollow(p.topic, p.id)
		}
		p.mu.Lock()
		p.lead = nil
		p.mu.Unlock()
	}
}

// followerFetched validates and records a follower's fetch of a partition
// led here (replication.Leader.Fetched): a valid one moves the high
// watermark, and a follower that caught up outside the ISR wakes the ISR
// loop; a diverging or out-of-range one is answered and counts for
// nothing. Until the leadership of the current epoch is in place (its
// epoch recorded in the log), the fetch is refused as NOT_LEADER.
func (b *Broker) followerFetched(p *partition, id int32, brokerEpoch, offset int64, lastFetchedEpoch int32) (replication.FetchCheck, error) {
	p.mu.Lock()
	ls := p.lead
	current := ls != nil && p.leadEpoch == p.leaderEpoch && p.leader == b.nodeID
	p.mu.Unlock()
	if !current {
		return replication.FetchCheck{}, errNotLeader
	}
	c := ls.Fetched(id, brokerEpoch, offset, lastFetchedEpoch, p.log, time.Now())
	if !c.Counted() {
		return c, nil
	}
	p.updateHW()
	_, _, _, isr := p.state()
	if !slices.Contains(isr, id) && offset >= p.highWatermark() && offset >= ls.EpochStart() {
		b.kickISR()
	}
	return c, nil
}

// kickISR asks the ISR loop for a pass now.
func (b *Broker) kickISR() {
	select {
	case b.isrKick <- struct{}{}:
	default:
	}
}

// isrLoop shrinks and expands the ISR of the partitions led here, every
// half replica.lag.time.max.ms (as Kafka's isr-expiration task) and when a
// follower catches up. Each change is an etcd write conditioned on the
// state's revision; it is applied here only once written.
func (b *Broker) isrLoop(ctx context.Context) {
	lag := time.Duration(b.props.Int64("replica.lag.time.max.ms")) * time.Millisecond
	if lag <= 0 {
		lag = 30 * time.Second
	}
	t := time.NewTicker(max(lag/2, 50*time.Millisecond))
	defer t.Stop()
	every := time.Duration(b.props.Int64("replica.high.watermark.checkpoint.interval.ms")) * time.Millisecond
	cp := time.NewTicker(max(every, 100*time.Millisecond))
	defer cp.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-cp.C:
			b.checkpointHWs()
			continue
		case <-t.C:
		case <-b.isrKick:
		}
		for _, p := range b.meta.allPartitions() {
			b.maybeChangeISR(ctx, p, lag)
		}
	}
}

func (b *Broker) maybeChangeISR(ctx context.Context, p *partition, lag time.Duration) {
	p.mu.Lock()
	ls, isr := p.lead, p.isr
	st := controller.PartitionState{Leader: p.leader, LeaderEpoch: p.leaderEpoch, ControllerEpoch: p.ctrlEpoch, Version: p.version}
	p.mu.Unlock()
	if ls == nil || st.Leader != b.nodeID || st.Version == 0 {
		return
	}
	var brokers []controller.BrokerInfo
	eligible := func(id int32, epoch int64) bool {
		if brokers == nil {
			brokers, _ = b.liveBrokers(ctx)
		}
		for _, bi := range brokers {
			if bi.ID == id {
				return epoch <= 0 || bi.Epoch == epoch
			}
		}
		return false
	}
	want, changed := ls.WantISR(isr, p.log.EndOffset(), p.highWatermark(), time.Now(), lag, eligible)
	if !changed {
		return
	}
	st.ISR = want
	var joining []int32
	for _, r := range want {
		if !slices.Contains(isr, r) {
			joining = append(joining, r)
		}
	}
	p.mu.Lock()
	p.joining = joining
	p.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	rev, err := b.store.UpdatePartitionState(wctx, p.topic, p.id, st)
	cancel()
	defer func() {
		p.mu.Lock()
		p.joining = nil
		p.mu.Unlock()
	}()
	if err != nil {
		if ctx.Err() == nil {
			b.log.Info("ISR change not written", "partition", p.String(), "isr", want, "err", err)
		}
		return
	}
	b.log.Info("ISR changed", "partition", p.String(), "from", isr, "to", want, "leader_epoch", st.LeaderEpoch)
	p.mu.Lock()
	if p.version == st.Version && p.leaderEpoch == st.LeaderEpoch {
		p.isr, p.version = slices.Clone(want), rev
	}
	p.mu.Unlock()
	p.advanceHW()
}

func logDirName(topic string, p int32) string { return fmt.Sprintf("%s-%d", topic, p) }

// newFetchers returns the follower fetchers, reaching leaders through
// inter.broker.listener.name (the first listener by default).
func (b *Broker) newFetchers() *replication.Manager {
	listener := b.props.String("inter.broker.listener.name")
	if listener == "" && len(b.lnNames) > 0 {
		listener = b.lnNames[0]
	}
	return replication.NewManager(replication.Config{
		NodeID:            b.nodeID,
		BrokerEpoch:       b.store.BrokerEpoch,
		PartitionMaxBytes: b.props.Int32("replica.fetch.max.bytes"),
		MinBytes:          b.props.Int32("replica.fetch.min.bytes"),
		MaxWait:           time.Duration(b.props.Int32("replica.fetch.wait.max.ms")) * time.Millisecond,
		Timeout:           time.Duration(b.props.Int32("replica.socket.timeout.ms")) * time.Millisecond,
		Logger:            b.log,
		Dial:              b.dial,
		Resolve: func(id int32) (string, bool) {
			ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
			defer cancel()
			brokers, err := b.liveBrokers(ctx)
			if err != nil {
				return "", false
			}
			for _, bi := range brokers {
				if bi.ID == id {
					host, port := endpointFor(bi, listener)
					return net.JoinHostPort(host, strconv.Itoa(int(port))), true
				}
			}
			return "", false
		},
	})
}

// runController takes part in the controller election and, once elected,
// keeps partitions led (controller.RunController).
func (b *Broker) runController(ctx context.Context) {
	b.store.RunController(ctx, controller.ControllerConfig{
		UncleanElection:   b.props.Bool("unclean.leader.election.enable"),
		AutoRebalance:     b.props.Bool("auto.leader.rebalance.enable"),
		RebalanceInterval: time.Duration(b.props.Int64("leader.imbalance.check.interval.seconds")) * time.Second,
	})
}

// partitionMetadataFile names, in each partition directory, the topic id
// the log belongs to, as Kafka's partition.metadata (KIP-516): a topic
// deleted while this broker was down and created again under the same
// name does not inherit the old records.
const partitionMetadataFile = "partition.metadata"

func readPartitionMetadata(dir string) ([16]byte, bool) {
	b, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		return [16]byte{}, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "topic_id: "); ok {
			id, err := controller.DecodeUUID(strings.TrimSpace(v))
			return id, err == nil
		}
	}
	return [16]byte{}, false
}

// openPartitionLog opens (or creates) the log of partition p of a topic,
// first removing a directory left by an older topic of the same name.
func (b *Broker) openPartitionLog(name string, id [16]byte, p int32, cfg logstore.Config) (*logstore.Log, error) {
	dir := filepath.Join(b.logDir, logDirName(name, p))
	if old, ok := readPartitionMetadata(dir); ok && old != id {
		b.log.Info("removing the log of a deleted topic of the same name", "dir", dir)
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	l, err := logstore.Open(dir, cfg, b.log)
	if err != nil {
		return nil, err
	}
	if old, ok := readPartitionMetadata(dir); !ok || old != id {
		data := "version: 0\ntopic_id: " + controller.EncodeUUID(id) + "\n"
		tmp := filepath.Join(dir, partitionMetadataFile+".tmp")
		err := os.WriteFile(tmp, []byte(data), 0o644)
		if err == nil {
			err = os.Rename(tmp, filepath.Join(dir, partitionMetadataFile))
		}
		if err != nil {
			b.log.Warn("writing partition.metadata", "dir", dir, "err", err)
		}
	}
	return l, nil
}

// removeOrphanLogs deletes the partition directories (those with a
// partition.metadata) of topics deleted while this broker was down, or
// re-created since, or whose replicas moved off this broker: a deletion
// reaches every replica's files even when a broker missed it. Run after the
// first metadata sync, before the broker serves.
func (b *Broker) removeOrphanLogs() {
	m := &b.meta
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	ents, err := os.ReadDir(b.logDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		i := strings.LastIndexByte(e.Name(), '-')
		if i <= 0 {
			continue
		}
		pn, err := strconv.Atoi(e.Name()[i+1:])
		if err != nil || pn < 0 {
			continue
		}
		dir := filepath.Join(b.logDir, e.Name())
		id, ok := readPartitionMetadata(dir)
		if !ok {
			continue
		}
		t := m.topic(e.Name()[:i])
		if t != nil && t.id == id && pn < len(t.parts) && t.parts[pn].log != nil {
			continue
		}
		b.log.Info("removing the log of a deleted partition", "dir", dir)
		if err := os.RemoveAll(dir); err != nil {
			b.log.Warn("removing the log of a deleted partition", "dir", dir, "err", err)
		}
	}
}

// StopReplicaFetchers stops this broker's follower fetchers for good, as
// if it were cut off from every leader while still registered: its
// leaders then drop it from their ISRs after replica.lag.time.max.ms. For
// tests.
func (b *Broker) StopReplicaFetchers() {
	if b.fetchers != nil {
		b.fetchers.Close()
	}
}

// hwCheckpointFile holds, in each partition directory, the partition's
// high watermark as last saved (Kafka keeps them in
// replication-offset-checkpoint): a replicated partition restarts knowing
// what was committed instead of showing consumers nothing until the ISR
// has fetched, and a group coordinator loading __consumer_offsets sees the
// commits made before the restart.
const hwCheckpointFile = "high-watermark-checkpoint"

// savedHW is the checkpointed high watermark of a log, within its bounds;
// the log start offset when none was saved.
func savedHW(l *logstore.Log) int64 {
	b, err := os.ReadFile(filepath.Join(l.Dir(), hwCheckpointFile))
	if err != nil {
		return l.StartOffset()
	}
	hw, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return l.StartOffset()
	}
	return max(min(hw, l.EndOffset()), l.StartOffset())
}

// checkpointHWs saves the high watermark of every replicated partition
// whose high watermark moved since it was last saved
// (replica.high.watermark.checkpoint.interval.ms, and at Close).
func (b *Broker) checkpointHWs() {
	for _, p := range b.meta.allPartitions() {
		if p.replicationFactor() < 2 {
			continue
		}
		hw := p.highWatermark()
		if hw == p.savedHW.Load() {
			continue
		}
		dir := p.log.Dir()
		tmp := filepath.Join(dir, hwCheckpointFile+".tmp")
		err := os.WriteFile(tmp, []byte(strconv.FormatInt(hw, 10)+"\n"), 0o644)
		if err == nil {
			err = os.Rename(tmp, filepath.Join(dir, hwCheckpointFile))
		}
		if err != nil {
			if b.ctx.Err() == nil {
				b.log.Warn("saving the high watermark", "partition", p.String(), "err", err)
			}
			continue
		}
		p.savedHW.Store(hw)
	}
}

// awaitEpochCommitted waits until the high watermark of a partition led
// here reaches the start of the current leader epoch: everything the
// previous leaders acknowledged is then visible (Raft's rule that a new
// leader first commits in its own term). A group coordinator taking over
// __consumer_offsets should load only after it. NOT_LEADER when the
// leadership goes first.
func (b *Broker) awaitEpochCommitted(ctx context.Context, p *partition) error {
	for {
		ch := p.movedCh()
		ls := p.leadState()
		if ls == nil {
			return errNotLeader
		}
		if p.highWatermark() >= ls.EpochStart() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
