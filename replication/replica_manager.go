package replication

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/samsa-io/samsa/internal/elr"
	"github.com/samsa-io/samsa/logstore"
)

// StateStore is where partition states live (etcd, through the
// controller): the replica manager writes ISR changes there and asks it
// which brokers are registered.
type StateStore interface {
	// WriteState writes st for a partition, conditioned on st.Version
	// still being the stored revision, and returns the new revision; a
	// lost race is an error (re-read, never overwrite).
	WriteState(ctx context.Context, topic string, partition int32, st State) (int64, error)
	// WriteStates writes several partitions' states in one transaction,
	// each conditioned as WriteState, and returns the new revision;
	// when one lost its race nothing is written and it fails.
	WriteStates(ctx context.Context, ws []StateWrite) (int64, error)
	// BrokerEpochs returns the registration epoch of every registered
	// broker.
	BrokerEpochs(ctx context.Context) (map[int32]int64, error)
}

// StateWrite is one partition's state for StateStore.WriteStates.
type StateWrite struct {
	Topic     string
	Partition int32
	State     State
}

// ReplicaManagerConfig configures a ReplicaManager.
type ReplicaManagerConfig struct {
	// NodeID is this broker's id.
	NodeID int32
	// Fetchers follow the partitions this broker does not lead; nil: it
	// follows nothing.
	Fetchers *Manager
	// Store receives ISR changes.
	Store StateStore
	// Partitions lists every partition with a log here.
	Partitions func() []*Partition
	// BrokerEpoch is this broker's registration epoch (the store's
	// revision of its registration); nil: 0. A state written before it,
	// by this broker's previous incarnation, is not led from.
	BrokerEpoch func() int64
	// LagTime is replica.lag.time.max.ms: a follower not caught up for
	// this long leaves the ISR. Default 30s.
	LagTime time.Duration
	// CheckpointInterval is replica.high.watermark.checkpoint.interval.ms.
	// Default 5s.
	CheckpointInterval time.Duration
	// OnISRChange, when set, is told of each ISR change written for a
	// partition led here: whether members left and whether members
	// joined (the broker's IsrShrinks and IsrExpands metrics).
	OnISRChange func(shrunk, expanded bool)
	// MovedToTiered, when set, rebuilds a followed partition's log from
	// its remote log (Replica.OnMovedToTiered).
	MovedToTiered func(ctx context.Context, p *Partition, leaderLogStart int64) error
	Logger        *slog.Logger
}

// ReplicaManager leads and follows this broker's partitions (Kafka's
// ReplicaManager): roles as the controller's states say, appends as
// leader, the follower fetches a leader counts, the high watermark, the
// ISR loop and the high watermark checkpoints.
type ReplicaManager struct {
	cfg  ReplicaManagerConfig
	kick chan struct{}
	now  func() time.Time // the clock of the ISR decisions (tests set it)
}

// NewReplicaManager returns a ReplicaManager; Run runs its loops.
func NewReplicaManager(cfg ReplicaManagerConfig) *ReplicaManager {
	if cfg.LagTime <= 0 {
		cfg.LagTime = 30 * time.Second
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Partitions == nil {
		cfg.Partitions = func() []*Partition { return nil }
	}
	if cfg.BrokerEpoch == nil {
		cfg.BrokerEpoch = func() int64 { return 0 }
	}
	return &ReplicaManager{cfg: cfg, kick: make(chan struct{}, 1), now: time.Now}
}

// Leading returns p's log if this broker leads it, checking a client's
// current leader epoch (-1: none), with the leader epoch; an error wrapping
// logstore.ErrStorage (KAFKA_STORAGE_ERROR) when the replica is offline.
func (m *ReplicaManager) Leading(p *Partition, currentEpoch int32) (*logstore.Log, int32, error) {
	p.mu.Lock()
	leader, epoch := p.leader, p.leaderEpoch
	led := p.lead != nil && p.leadEpoch == epoch
	p.mu.Unlock()
	if p.Offline() {
		return nil, epoch, fmt.Errorf("%w: replica of %s offline", logstore.ErrStorage, p)
	}
	// Led once ApplyRole took it on: not from a state of this broker's
	// previous incarnation, not before its epoch is in the log.
	if leader != m.cfg.NodeID || p.Log == nil || !led {
		return nil, epoch, ErrNotLeader
	}
	if err := CheckLeaderEpoch(currentEpoch, epoch); err != nil {
		return nil, epoch, err
	}
	return p.Log, epoch, nil
}

// Following returns p's log when this broker follows p in the leader
// epoch a consumer gave (-1: none), for a read from the closest replica
// (KIP-392): the caller reads up to p's high watermark, which a follower
// learns from its leader.
func (m *ReplicaManager) Following(p *Partition, currentEpoch int32) (*logstore.Log, int32, error) {
	p.mu.Lock()
	leader, epoch, following := p.leader, p.leaderEpoch, p.replica != nil && p.lead == nil
	member := slices.Contains(p.replicas, m.cfg.NodeID)
	p.mu.Unlock()
	if p.Offline() {
		return nil, epoch, fmt.Errorf("%w: replica of %s offline", logstore.ErrStorage, p)
	}
	if leader < 0 || leader == m.cfg.NodeID || p.Log == nil || !following || !member {
		return nil, epoch, ErrNotLeader
	}
	if err := CheckLeaderEpoch(currentEpoch, epoch); err != nil {
		return nil, epoch, err
	}
	return p.Log, epoch, nil
}

// PreferredReadReplica is the replica a consumer in clientRack should
// fetch p from at fetchOffset, as Kafka's RackAwareReplicaSelector picks
// it: among the in-sync replicas in that rack whose log reaches the
// offset, the leader if it is one, else the one furthest along; -1 (the
// leader) when none is, when clientRack is empty or when p is not led
// here.
func (m *ReplicaManager) PreferredReadReplica(p *Partition, clientRack string, fetchOffset int64, rackOf func(id int32) string) int32 {
	if clientRack == "" {
		return -1
	}
	p.mu.Lock()
	ls, leader, isr := p.lead, p.leader, p.isr
	p.mu.Unlock()
	if ls == nil || leader != m.cfg.NodeID || rackOf(leader) == clientRack {
		return -1
	}
	best, bestLEO := int32(-1), int64(-1)
	for _, id := range isr {
		if id == leader || rackOf(id) != clientRack {
			continue
		}
		if leo := ls.FollowerLEO(id); leo >= fetchOffset && leo > bestLEO {
			best, bestLEO = id, leo
		}
	}
	return best
}

// AppendAsLeader appends a producer's records to a partition led here, in
// the current leader epoch, and moves the high watermark; ErrNotLeader
// when leadership moved, even between the caller's check and the append;
// logstore.ErrStorage when the replica is offline.
func (m *ReplicaManager) AppendAsLeader(p *Partition, records []byte, now time.Time) (logstore.AppendResult, error) {
	return m.AppendVerified(p, records, now, nil)
}

// AppendVerified is AppendAsLeader of a transactional batch verified with
// guard (logstore.Log.AppendVerified).
func (m *ReplicaManager) AppendVerified(p *Partition, records []byte, now time.Time, guard *logstore.VerificationGuard) (logstore.AppendResult, error) {
	return m.appendLeader(p, records, now, -1, guard)
}

// AppendInEpoch is AppendAsLeader for a writer that took the partition on
// in leader epoch epoch (a coordinator that loaded its state from the
// log then): ErrFencedLeaderEpoch once the partition has a newer epoch,
// even one led here again, whose log may hold what other leaders wrote
// meanwhile.
func (m *ReplicaManager) AppendInEpoch(p *Partition, records []byte, now time.Time, epoch int32) (logstore.AppendResult, error) {
	return m.appendLeader(p, records, now, epoch, nil)
}

// appendLeader appends to a partition led here in leader epoch
// wantEpoch (-1: whichever is current).
func (m *ReplicaManager) appendLeader(p *Partition, records []byte, now time.Time, wantEpoch int32, guard *logstore.VerificationGuard) (logstore.AppendResult, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	l, epoch, err := m.Leading(p, wantEpoch)
	if err != nil {
		return logstore.AppendResult{}, err
	}
	res, err := l.AppendVerified(records, epoch, now, guard)
	if err != nil {
		return res, err
	}
	if !res.Duplicate {
		p.appended(int64(len(records)))
	}
	return res, nil
}

// markerBytes is about the size of a marker's control batch, what its
// append counts for the fetches parked on the partition.
const markerBytes = 78

// AppendMarker appends a transaction marker (logstore.Log.AppendMarker)
// to a partition led here, in the current leader epoch, as AppendAsLeader
// appends records.
func (m *ReplicaManager) AppendMarker(p *Partition, mk logstore.Marker, now time.Time) (logstore.AppendResult, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	l, epoch, err := m.Leading(p, -1)
	if err != nil {
		return logstore.AppendResult{}, err
	}
	res, err := l.AppendMarker(mk, epoch, now)
	if err != nil {
		return res, err
	}
	p.appended(markerBytes)
	return res, nil
}

// ApplyRole makes this broker lead or follow p as its state says: a new
// leader stops fetching, records its leader epoch at its log end (the
// epoch's start offset) and starts tracking its followers; a follower
// fetches from the leader, truncating first where its log diverged.
func (m *ReplicaManager) ApplyRole(p *Partition) {
	if p.Log == nil {
		return
	}
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	leader, epoch, version := p.leader, p.leaderEpoch, p.version
	p.mu.Unlock()
	switch {
	case leader == m.cfg.NodeID && version != 0 && version <= m.cfg.BrokerEpoch():
		// Written before this broker registered: its previous
		// incarnation led (it restarted, or lost its lease and took a
		// new one). Kafka's broker leads only once the controller has
		// dealt with the new incarnation; the controller elects anew
		// (RunController), and this broker leads from that state.
		fallthrough
	case p.Offline():
		m.StopFollowing(p)
		p.mu.Lock()
		p.lead = nil
		p.mu.Unlock()
		p.Signal()
	case leader == m.cfg.NodeID:
		p.mu.Lock()
		same := p.lead != nil && p.leadEpoch == epoch
		ls, replicas := p.lead, p.replicas
		p.mu.Unlock()
		if same {
			ls.SetReplicas(replicas, m.now()) // a reassignment may have changed them
			p.advanceHW()                     // the ISR may have changed
			return
		}
		if m.cfg.Fetchers != nil {
			m.cfg.Fetchers.Unfollow(p.Topic, p.ID)
		}
		if err := p.Log.AssignEpoch(epoch); err != nil {
			m.cfg.Logger.Warn("recording leader epoch", "partition", p.String(), "epoch", epoch, "err", err)
		}
		p.mu.Lock()
		p.lead = NewLeader(m.cfg.NodeID, p.replicas, p.Log.EndOffset(), m.now())
		p.leadEpoch = epoch
		p.mu.Unlock()
		p.advanceHW()
	case leader >= 0 && m.cfg.Fetchers != nil:
		p.mu.Lock()
		p.lead = nil
		if p.replica == nil {
			p.replica = &Replica{Topic: p.Topic, TopicID: p.TopicID, Partition: p.ID, Log: p.Log,
				OnFetched: p.setFollowerHW, OnTruncated: p.truncatedTo}
			if rebuild := m.cfg.MovedToTiered; rebuild != nil {
				p.replica.OnMovedToTiered = func(ctx context.Context, start int64) error { return rebuild(ctx, p, start) }
			}
		}
		r := p.replica
		p.mu.Unlock()
		m.cfg.Fetchers.Follow(r, leader, epoch)
		p.Signal() // waiters on the old leadership see it gone
	default:
		m.StopFollowing(p)
		p.mu.Lock()
		p.lead = nil
		p.mu.Unlock()
		p.Signal()
	}
}

// StopFollowing stops fetching p (its topic is deleted, or it has no
// leader); it returns once no append of the fetcher is in flight.
func (m *ReplicaManager) StopFollowing(p *Partition) {
	if m.cfg.Fetchers != nil {
		m.cfg.Fetchers.Unfollow(p.Topic, p.ID)
	}
}

// FollowerFetched validates and records a follower's fetch of a partition
// led here (Leader.Fetched): a valid one moves the high watermark, and a
// follower that caught up outside the ISR wakes the ISR loop; a diverging
// or out-of-range one is answered and counts for nothing. Until the
// leadership of the current epoch is in place (its epoch recorded in the
// log), the fetch is refused with ErrNotLeader.
func (m *ReplicaManager) FollowerFetched(p *Partition, id int32, brokerEpoch, offset int64, lastFetchedEpoch int32) (FetchCheck, error) {
	p.mu.Lock()
	ls := p.lead
	current := ls != nil && p.leadEpoch == p.leaderEpoch && p.leader == m.cfg.NodeID
	p.mu.Unlock()
	if !current {
		return FetchCheck{}, ErrNotLeader
	}
	c := ls.Fetched(id, brokerEpoch, offset, lastFetchedEpoch, p.Log, m.now())
	if !c.Counted() {
		return c, nil
	}
	p.updateHW()
	_, _, _, isr := p.State()
	if !slices.Contains(isr, id) && offset >= p.HighWatermark() && offset >= ls.EpochStart() {
		m.Kick()
	}
	return c, nil
}

// Kick asks the ISR loop for a pass now.
func (m *ReplicaManager) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// AwaitHW waits until p's high watermark reaches need (an acks=all write
// is then committed): ErrNotLeader once this broker stops leading p, the
// context's error at its end.
func (m *ReplicaManager) AwaitHW(ctx context.Context, p *Partition, need int64) error {
	for {
		ch := p.Moved()
		if p.HighWatermark() >= need {
			return nil
		}
		if _, _, err := m.Leading(p, -1); err != nil {
			return ErrNotLeader
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AwaitEpochCommitted waits until the high watermark of a partition led
// here reaches the start of the current leader epoch: everything the
// previous leaders acknowledged is then visible (Raft's rule that a new
// leader first commits in its own term). A group coordinator taking over
// __consumer_offsets should load only after it. ErrNotLeader when the
// leadership goes first.
func (m *ReplicaManager) AwaitEpochCommitted(ctx context.Context, p *Partition) error {
	for {
		ch := p.Moved()
		ls := p.leadState()
		if ls == nil {
			return ErrNotLeader
		}
		if p.HighWatermark() >= ls.EpochStart() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Run shrinks and expands the ISR of the partitions led here, every half
// LagTime (as Kafka's isr-expiration task) and when a follower catches up,
// and checkpoints high watermarks every CheckpointInterval, until ctx
// ends. Each ISR change is a store write conditioned on the state's
// revision; it is applied here only once written.
func (m *ReplicaManager) Run(ctx context.Context) {
	t := time.NewTicker(max(m.cfg.LagTime/2, 50*time.Millisecond))
	defer t.Stop()
	cp := time.NewTicker(max(m.cfg.CheckpointInterval, 100*time.Millisecond))
	defer cp.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-cp.C:
			m.CheckpointHWs()
			continue
		case <-t.C:
		case <-m.kick:
		}
		m.changeISRs(ctx, m.cfg.Partitions())
	}
}

// isrChange is an ISR change of a partition led here, to be written.
type isrChange struct {
	p             *Partition
	st            State // with the new ISR
	from, joining []int32
}

// isrBatch is how many ISR changes go to the store in one transaction
// (etcd's default --max-txn-ops is 128): after a restart a leader of
// thousands of partitions takes its followers back in a few writes, not
// one each.
const isrBatch = 100

func (m *ReplicaManager) maybeChangeISR(ctx context.Context, p *Partition) {
	m.changeISRs(ctx, []*Partition{p})
}

// changeISRs writes the ISR changes that the partitions led here need, in
// batches of isrBatch, and applies each once written.
func (m *ReplicaManager) changeISRs(ctx context.Context, parts []*Partition) {
	var epochs map[int32]int64
	eligible := func(id int32, epoch int64) bool {
		if epochs == nil {
			var err error
			if epochs, err = m.cfg.Store.BrokerEpochs(ctx); err != nil {
				epochs = map[int32]int64{}
			}
		}
		live, ok := epochs[id]
		return ok && (epoch <= 0 || live == epoch)
	}
	var batch []isrChange
	for _, p := range parts {
		p.mu.Lock()
		ls, isr, oldELR, minISR := p.lead, p.isr, p.elr, p.effectiveMinISRLocked()
		st := State{Leader: p.leader, LeaderEpoch: p.leaderEpoch, ControllerEpoch: p.ctrlEpoch, Version: p.version}
		p.mu.Unlock()
		if ls == nil || st.Leader != m.cfg.NodeID || st.Version == 0 {
			continue
		}
		want, changed := ls.WantISR(isr, p.Log.EndOffset(), p.HighWatermark(), m.now(), m.cfg.LagTime, eligible)
		if !changed {
			continue
		}
		st.ISR = want
		// The leader leads: no last known leader; the ELR as the
		// controller would keep it.
		st.ELR = elr.Next(isr, oldELR, want, minISR, nil)
		c := isrChange{p: p, st: st, from: isr}
		for _, r := range want {
			if !slices.Contains(isr, r) {
				c.joining = append(c.joining, r)
			}
		}
		p.mu.Lock()
		p.joining = c.joining
		p.mu.Unlock()
		if batch = append(batch, c); len(batch) == isrBatch {
			m.writeISRs(ctx, batch)
			batch = batch[:0]
		}
	}
	m.writeISRs(ctx, batch)
}

// writeISRs writes the changes, in one transaction when there are
// several; when one of them lost its race, one by one.
func (m *ReplicaManager) writeISRs(ctx context.Context, batch []isrChange) {
	if len(batch) == 0 {
		return
	}
	defer func() {
		for _, c := range batch {
			c.p.mu.Lock()
			c.p.joining = nil
			c.p.mu.Unlock()
		}
	}()
	if len(batch) > 1 {
		ws := make([]StateWrite, len(batch))
		for i, c := range batch {
			ws[i] = StateWrite{Topic: c.p.Topic, Partition: c.p.ID, State: c.st}
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		rev, err := m.cfg.Store.WriteStates(wctx, ws)
		cancel()
		if err == nil {
			for _, c := range batch {
				m.isrWritten(c, rev)
			}
			return
		}
	}
	for _, c := range batch {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		rev, err := m.cfg.Store.WriteState(wctx, c.p.Topic, c.p.ID, c.st)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				m.cfg.Logger.Info("ISR change not written", "partition", c.p.String(), "isr", c.st.ISR, "err", err)
			}
			continue
		}
		m.isrWritten(c, rev)
	}
}

// isrWritten applies an ISR change the store took at revision rev.
func (m *ReplicaManager) isrWritten(c isrChange, rev int64) {
	p, st := c.p, c.st
	m.cfg.Logger.Info("ISR changed", "partition", p.String(), "from", c.from, "to", st.ISR, "leader_epoch", st.LeaderEpoch)
	if m.cfg.OnISRChange != nil {
		shrunk := slices.ContainsFunc(c.from, func(r int32) bool { return !slices.Contains(st.ISR, r) })
		m.cfg.OnISRChange(shrunk, len(c.joining) > 0)
	}
	p.mu.Lock()
	if p.version == st.Version && p.leaderEpoch == st.LeaderEpoch {
		p.isr, p.version = slices.Clone(st.ISR), rev
		p.elr, p.lastKnown = slices.Clone(st.ELR), nil
	}
	p.mu.Unlock()
	p.advanceHW()
}

// CheckpointHWs saves the high watermark of every replicated partition
// whose high watermark moved since it was last saved (Kafka's
// replication-offset-checkpoint, here one file per partition directory).
// The broker calls it at Close too.
func (m *ReplicaManager) CheckpointHWs() {
	for _, p := range m.cfg.Partitions() {
		if p.Log == nil || p.Offline() || p.ReplicationFactor() < 2 {
			continue
		}
		hw := p.HighWatermark()
		if hw == p.savedHW.Load() {
			continue
		}
		if err := p.Log.SaveHighWatermark(hw); err != nil {
			m.cfg.Logger.Warn("saving the high watermark", "partition", p.String(), "err", err)
			continue
		}
		p.savedHW.Store(hw)
	}
}
