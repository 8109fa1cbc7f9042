package broker

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/samsa-io/samsa/logstore"
)

// partition is one partition of a topic as this broker sees it. log is nil
// when this broker holds no replica of it.
type partition struct {
	topic   string
	topicID [16]byte
	id      int32
	log     *logstore.Log // immutable after creation

	hw atomic.Int64 // high watermark, published after the bytes are written

	mu          sync.Mutex
	replicas    []int32       // guarded by mu
	isr         []int32       // guarded by mu
	leader      int32         // guarded by mu
	leaderEpoch int32         // guarded by mu
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

// advanceHW moves the high watermark. With no replication yet, the ISR of a
// partition led here is this broker alone, so the high watermark is the log
// end offset.
func (p *partition) advanceHW() {
	leo := p.log.EndOffset()
	for {
		hw := p.hw.Load()
		if leo <= hw || p.hw.CompareAndSwap(hw, leo) {
			break
		}
	}
	p.signal()
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
func (p *partition) setState(leader, epoch int32, replicas, isr []int32) {
	p.mu.Lock()
	changed := p.leader != leader || p.leaderEpoch != epoch
	p.leader, p.leaderEpoch = leader, epoch
	p.replicas, p.isr = slices.Clone(replicas), slices.Clone(isr)
	if changed && p.moved != nil {
		close(p.moved)
		p.moved = make(chan struct{})
	}
	p.mu.Unlock()
}

func logDirName(topic string, p int32) string { return fmt.Sprintf("%s-%d", topic, p) }
