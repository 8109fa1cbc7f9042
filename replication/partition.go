package replication

import (
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/samsa-io/samsa/internal/elr"
	"github.com/samsa-io/samsa/logstore"
)

// Errors of the replica manager; the broker maps them to Kafka's codes.
var (
	ErrNotLeader          = errors.New("replication: not the leader of this partition")
	ErrFencedLeaderEpoch  = errors.New("replication: fenced leader epoch")
	ErrUnknownLeaderEpoch = errors.New("replication: unknown leader epoch")
)

// State is a partition's state as the controller records it (in etcd).
type State struct {
	Leader      int32 // -1: none
	LeaderEpoch int32
	ISR         []int32
	// ELR and LastKnownELR are KIP-966's eligible leader replicas and last
	// known leader (controller.PartitionState): a leader's ISR write keeps
	// them by internal/elr's rules.
	ELR, LastKnownELR []int32
	ControllerEpoch   int32 // epoch of the controller that last elected a leader
	// Version is the store's revision of the state: the compare value of
	// an ISR write (ZooKeeper's znode version).
	Version int64
}

// Partition is one partition of a topic as this broker sees it (Kafka's
// Partition): the state the controller gave it, its log when this broker
// holds a replica, the high watermark and, while it is led here, the
// tracking of its followers. Methods are safe for concurrent use.
type Partition struct {
	Topic   string
	TopicID [16]byte
	ID      int32
	// Log is nil when this broker holds no replica; set before the
	// partition is shared, never changed after.
	Log *logstore.Log

	hw      atomic.Int64 // high watermark, published after the bytes are written
	savedHW atomic.Int64 // high watermark last checkpointed (0: none)
	offline atomic.Bool  // its log directory failed: not served here any more

	// roleMu is held for reading by appends as leader and for writing by
	// a change of role, so that no append of an old leadership lands after
	// the follower's truncation began (Kafka's leaderIsrUpdateLock).
	roleMu sync.RWMutex

	mu          sync.Mutex
	replicas    []int32               // guarded by mu
	isr         []int32               // guarded by mu
	elr         []int32               // guarded by mu; KIP-966's eligible leader replicas
	lastKnown   []int32               // guarded by mu; KIP-966's last known leader
	minISR      int                   // guarded by mu; min.insync.replicas of its topic (0: 1)
	joining     []int32               // guarded by mu; being added to the ISR: counted for the HW already
	leader      int32                 // guarded by mu
	leaderEpoch int32                 // guarded by mu
	version     int64                 // guarded by mu; store revision of the state
	ctrlEpoch   int32                 // guarded by mu; controller epoch of the state
	lead        *Leader               // guarded by mu; follower tracking while led here
	leadEpoch   int32                 // guarded by mu; the leader epoch lead was made for
	replica     *Replica              // guarded by mu; what the fetchers follow
	moved       chan struct{}         // guarded by mu; closed and replaced at a change (Moved)
	watchers    map[*FetchWaiter]bool // guarded by mu; parked fetches (Watch)
}

// NewPartition returns partition id of a topic, with its log (nil: no
// replica here) and no state yet (no leader).
func NewPartition(topic string, topicID [16]byte, id int32, log *logstore.Log) *Partition {
	return &Partition{Topic: topic, TopicID: topicID, ID: id, Log: log, leader: -1, moved: make(chan struct{})}
}

func (p *Partition) String() string { return p.Topic + "-" + strconv.Itoa(int(p.ID)) }

// State returns the leader, leader epoch, replicas and ISR.
func (p *Partition) State() (leader, epoch int32, replicas, isr []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader, p.leaderEpoch, p.replicas, p.isr
}

// ReplicationFactor is the number of replicas.
func (p *Partition) ReplicationFactor() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.replicas)
}

// Moved returns the channel that is closed at the next change: the log or
// the high watermark moved, the leadership or ISR changed.
func (p *Partition) Moved() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.moved
}

// Signal wakes everything waiting for this partition to change.
func (p *Partition) Signal() {
	p.mu.Lock()
	p.signalLocked()
	p.mu.Unlock()
}

// signalLocked is Signal. Caller holds p.mu.
func (p *Partition) signalLocked() {
	close(p.moved)
	p.moved = make(chan struct{})
	p.notifyLocked(0, true, true)
}

// SetOffline takes the replica offline for good (its log directory
// failed, Kafka's offline replica): it is no longer led, followed or
// served here, and every waiter on it wakes. Call ReplicaManager.ApplyRole
// after it to stop its fetcher.
func (p *Partition) SetOffline() {
	p.offline.Store(true)
	p.Signal()
}

// Offline reports whether SetOffline was called.
func (p *Partition) Offline() bool { return p.offline.Load() }

// HighWatermark is the offset below which records are visible to consumers.
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// LastStableOffset is the offset below which read_committed readers read
// (KIP-98): the high watermark, or the first offset of the oldest
// transaction below it that is undecided or whose marker is not yet below
// the high watermark.
func (p *Partition) LastStableOffset() int64 {
	hw := p.hw.Load()
	if p.Log == nil {
		return hw
	}
	return p.Log.LastStableOffset(hw)
}

// InitHighWatermark sets the high watermark of a partition whose log was
// just opened: the log end offset when it is the only replica, else the
// one last checkpointed (a replicated partition learns the rest from the
// ISR's fetches, or from its leader).
func (p *Partition) InitHighWatermark() {
	if p.Log == nil {
		return
	}
	if p.ReplicationFactor() == 1 {
		p.hw.Store(p.Log.EndOffset())
		return
	}
	hw := p.Log.SavedHighWatermark()
	p.hw.Store(hw)
	p.savedHW.Store(hw)
}

// SetState records the partition's state from the controller. A new
// leader, epoch or ISR wakes the requests parked on the partition, so that
// they answer NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH now, not at
// their timeout. A state older than one already applied (this broker's
// own ISR write) is ignored.
func (p *Partition) SetState(st State, replicas []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st.Version != 0 && st.Version < p.version {
		return
	}
	changed := p.leader != st.Leader || p.leaderEpoch != st.LeaderEpoch || !slices.Equal(p.isr, st.ISR)
	p.leader, p.leaderEpoch = st.Leader, st.LeaderEpoch
	p.replicas, p.isr = slices.Clone(replicas), slices.Clone(st.ISR)
	p.elr, p.lastKnown = slices.Clone(st.ELR), slices.Clone(st.LastKnownELR)
	p.version, p.ctrlEpoch = st.Version, st.ControllerEpoch
	if changed {
		p.signalLocked()
	}
}

// ELR returns KIP-966's eligible leader replicas and last known leader.
func (p *Partition) ELR() (elr, lastKnown []int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.elr, p.lastKnown
}

// SetMinISR records the min.insync.replicas of the partition's topic:
// while led here, its high watermark does not advance while the ISR is
// smaller (Kafka 3.7 and later, KIP-966), and an ISR write keeps the ELR
// by it.
func (p *Partition) SetMinISR(n int) {
	p.mu.Lock()
	changed := p.minISR != n
	p.minISR = n
	p.mu.Unlock()
	if changed {
		p.updateHW()
	}
}

// effectiveMinISRLocked is the min ISR the partition is held to (at most
// its replication factor). Caller holds p.mu.
func (p *Partition) effectiveMinISRLocked() int {
	return elr.EffectiveMinISR(p.minISR, len(p.replicas))
}

// CheckLeaderEpoch validates a client's current leader epoch (KIP-320)
// against ours: -1 skips the check, an older epoch is fenced, a newer one
// is unknown.
func CheckLeaderEpoch(current, ours int32) error {
	switch {
	case current < 0 || current == ours:
		return nil
	case current < ours:
		return ErrFencedLeaderEpoch
	default:
		return ErrUnknownLeaderEpoch
	}
}

// leadState returns the follower tracking of a partition led here, or nil.
func (p *Partition) leadState() *Leader {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lead
}

// advanceHW moves the high watermark of a partition led here to the
// smallest log end offset over the ISR (the log end offset itself when the
// ISR is this broker alone), never backwards, and wakes the waiters: a
// follower's long poll, an acks=all produce. Appends call it: their new
// records wake followers even when the high watermark stays.
func (p *Partition) advanceHW() {
	p.computeHW()
	p.Signal()
}

// appended moves the high watermark after an append of n bytes as
// leader, and tells whom it concerns: followers' parked fetches of the
// new bytes, everything waiting on the high watermark if it moved.
func (p *Partition) appended(n int64) {
	hwMoved := p.computeHW()
	p.mu.Lock()
	if hwMoved {
		close(p.moved)
		p.moved = make(chan struct{})
	}
	p.notifyLocked(n, hwMoved, false)
	p.mu.Unlock()
}

// updateHW is advanceHW that wakes the waiters only when the high
// watermark moved (a follower's fetch).
func (p *Partition) updateHW() {
	if p.computeHW() {
		p.Signal()
	}
}

// computeHW moves the high watermark and reports whether it moved.
func (p *Partition) computeHW() bool {
	p.mu.Lock()
	lead, isr := p.lead, p.isr
	if len(isr) < p.effectiveMinISRLocked() {
		// Under min ISR the high watermark stays (Kafka's
		// maybeIncrementLeaderHW): what the ISR left behind stays
		// committed on the replicas that left it, the ELR.
		p.mu.Unlock()
		return false
	}
	if len(p.joining) > 0 {
		// Kafka's maximal ISR: a follower being added must hold what is
		// acknowledged from now on, as it may lead once the write lands.
		isr = append(slices.Clone(isr), p.joining...)
	}
	p.mu.Unlock()
	if lead == nil || p.Log == nil {
		return false
	}
	hw, ok := lead.HighWatermark(isr, p.Log.EndOffset())
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
func (p *Partition) setFollowerHW(hw int64) {
	if p.hw.Swap(hw) != hw {
		if p.Log != nil {
			p.Log.HighWatermarkMoved(hw)
		}
		p.Signal()
	}
}

// truncatedTo keeps the high watermark of a follower whose log was cut
// to end within its log (Kafka's truncateTo lowers it too): should it lead
// next, its high watermark must not sit above records it no longer has.
func (p *Partition) truncatedTo(end int64) {
	for {
		cur := p.hw.Load()
		if cur <= end || p.hw.CompareAndSwap(cur, end) {
			return
		}
	}
}
