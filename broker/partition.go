package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/replication"
)

// partition is one partition as this broker sees it; the replica manager
// (replication.ReplicaManager, b.replicas) leads and follows it.
type partition = replication.Partition

// replState is the replica manager's form of a partition state from etcd.
func replState(st controller.PartitionState) replication.State {
	return replication.State{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR, ELR: st.ELR,
		LastKnownELR: st.LastKnownELR, ControllerEpoch: st.ControllerEpoch, Version: st.Version}
}

// storeState is the store's form of a state the replica manager writes.
func storeState(st replication.State) controller.PartitionState {
	return controller.PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR, ELR: st.ELR,
		LastKnownELR: st.LastKnownELR, ControllerEpoch: st.ControllerEpoch, Version: st.Version}
}

// stateStore gives the replica manager the controller's etcd store.
type stateStore struct{ b *Broker }

func (s stateStore) WriteState(ctx context.Context, topic string, p int32, st replication.State) (int64, error) {
	return s.b.store.UpdatePartitionState(ctx, topic, p, storeState(st))
}

func (s stateStore) WriteStates(ctx context.Context, ws []replication.StateWrite) (int64, error) {
	us := make([]controller.StateUpdate, len(ws))
	for i, w := range ws {
		us[i] = controller.StateUpdate{Topic: w.Topic, Partition: w.Partition, State: storeState(w.State)}
	}
	return s.b.store.UpdatePartitionStates(ctx, us)
}

func (s stateStore) BrokerEpochs(ctx context.Context) (map[int32]int64, error) {
	bs, err := s.b.liveBrokers(ctx)
	if err != nil {
		return nil, err
	}
	// A registration the controller has not accepted yet (KIP-966: it
	// may follow an unclean shutdown, which takes the broker out of every
	// ISR first) does not join an ISR.
	accepted, err := s.b.store.AcceptedEpochs(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int64, len(bs))
	for _, bi := range bs {
		if accepted[bi.ID] == bi.Epoch {
			out[bi.ID] = bi.Epoch
		}
	}
	return out, nil
}

// newReplicaManager returns the replica manager over this broker's
// partitions and follower fetchers.
func (b *Broker) newReplicaManager() *replication.ReplicaManager {
	return replication.NewReplicaManager(replication.ReplicaManagerConfig{
		NodeID:             b.nodeID,
		Fetchers:           b.fetchers,
		Store:              stateStore{b},
		Partitions:         b.meta.allPartitions,
		BrokerEpoch:        b.store.BrokerEpoch,
		LagTime:            b.settings.ReplicaLagTimeMax,
		CheckpointInterval: b.settings.ReplicaHWCheckpointInterval,
		OnISRChange:        b.metrics.isrChanged,
		MovedToTiered:      b.rebuildFromRemote,
		Logger:             b.log,
	})
}

// newFetchers returns the follower fetchers, reaching leaders through
// inter.broker.listener.name (the first listener by default).
func (b *Broker) newFetchers() *replication.Manager {
	listener := b.interBrokerListener()
	return replication.NewManager(replication.Config{
		NodeID:            b.nodeID,
		BrokerEpoch:       b.store.BrokerEpoch,
		PartitionMaxBytes: b.settings.ReplicaFetchMaxBytes,
		MinBytes:          b.settings.ReplicaFetchMinBytes,
		MaxWait:           b.settings.ReplicaFetchWaitMax,
		Timeout:           b.settings.ReplicaSocketTimeout,
		Logger:            b.log,
		Dial:              b.peerDial.DialContext,
		OnAppend:          func(n int) { b.metrics.replicationBytesIn.Add(float64(n)) },
		FollowerThrottle: func(topic string, partition int32) (int64, bool) {
			t := b.meta.topic(topic)
			return b.cfg().Settings().FollowerThrottledRate, t != nil && t.followerThrottled.Has(partition, b.nodeID)
		},
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
		// The topic's min.insync.replicas over the broker's (dynamic) default.
		MinISR: func(configs map[string]string) int {
			ts, err := b.cfg().TopicSettings(configs)
			if err != nil {
				ts, _ = b.cfg().TopicSettings(nil) // a bad override: the default
			}
			return int(ts.MinInsyncReplicas)
		},
		UncleanElection:   b.settings.UncleanLeaderElection,
		AutoRebalance:     b.settings.AutoLeaderRebalance,
		RebalanceInterval: b.settings.LeaderImbalanceCheckInterval,
	})
}

// openPartitionLog opens (or creates) the log of partition p of a topic in
// one of log.dirs (logstore.Placer: where it is, else in the directory
// holding the fewest partitions, counting those being created at once).
func (b *Broker) openPartitionLog(name string, id [16]byte, p int32, cfg logstore.Config) (*logstore.Log, error) {
	dirs := b.onlineLogDirs()
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w: every log directory is offline", logstore.ErrStorage)
	}
	if dir, ok := b.preferredDir(name, p, dirs); ok {
		dirs = []string{dir} // AlterReplicaLogDirs chose it before the replica came
	}
	return b.openPartitionLogIn(dirs, name, id, p, cfg)
}

// openPartitionLogIn is openPartitionLog within the given directories.
func (b *Broker) openPartitionLogIn(dirs []string, name string, id [16]byte, p int32, cfg logstore.Config) (*logstore.Log, error) {
	cfg.FS, cfg.OnFailure, cfg.OnFlush = b.logFS, b.logFailed, b.metrics.flushed
	return b.placer.OpenPartition(dirs, name, p, id, cfg, b.log)
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
	for _, d := range logstore.ListPartitionDirs(b.logDirs) {
		if d.TopicID == ([16]byte{}) {
			continue
		}
		t := m.topic(d.Topic)
		if t != nil && t.id == d.TopicID && int(d.Partition) < len(t.parts) {
			if p := t.parts[d.Partition]; p.Log != nil && p.Log.Dir() == d.Path {
				continue
			}
		}
		b.log.Info("removing the log of a deleted partition", "dir", d.Path)
		if err := os.RemoveAll(d.Path); err != nil {
			b.log.Warn("removing the log of a deleted partition", "dir", d.Path, "err", err)
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
