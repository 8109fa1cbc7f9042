package broker

// AlterReplicaLogDirs (34) v1-v2 moves a replica between this broker's
// log.dirs (kafka-reassign-partitions.sh with "log_dirs", and
// kafka-log-dirs.sh users). A replica hosted here moves at once: its log is
// closed, its directory renamed into the destination (copied, then
// removed, across file systems) and opened there; requests on the
// partition meanwhile get KAFKA_STORAGE_ERROR and retry, and the broker
// takes up its role again from etcd's state. Kafka copies into a "future"
// replica in the background instead; samsa's move blocks the request for
// as long as the copy takes (a rename: no time). A replica not hosted here
// yet is answered REPLICA_NOT_AVAILABLE, as Kafka does, and the directory
// is remembered for when it is created (a reassignment that adds it). A
// directory not in log.dirs is LOG_DIR_NOT_FOUND; an offline one
// KAFKA_STORAGE_ERROR; a cordoned one (cordon.go) INVALID_REPLICA_ASSIGNMENT.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/replication"
)

func (b *Broker) handleAlterReplicaLogDirs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	online, cordoned := b.onlineLogDirs(), b.cordonedDirs()
	byTopic := map[string]int{}
	for _, rd := range req.Dirs {
		dir := filepath.Clean(rd.Dir)
		var dirErr error
		switch {
		case !slices.Contains(b.logDirs, dir):
			dirErr = kerr.LogDirNotFound
		case !slices.Contains(online, dir):
			dirErr = kerr.KafkaStorageError
		case slices.Contains(cordoned, dir):
			dirErr = kerr.InvalidReplicaAssignment // Kafka: "Log directory <dir> is cordoned"
		}
		for _, rt := range rd.Topics {
			i, ok := byTopic[rt.Topic]
			if !ok {
				st := kmsg.NewAlterReplicaLogDirsResponseTopic()
				st.Topic = rt.Topic
				resp.Topics = append(resp.Topics, st)
				i = len(resp.Topics) - 1
				byTopic[rt.Topic] = i
			}
			for _, p := range rt.Partitions {
				err := dirErr
				if err == nil {
					err = b.moveReplica(ctx, rt.Topic, p, dir)
				}
				sp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, errCode(err)
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
			}
		}
	}
	return resp, nil
}

// moveReplica moves this broker's replica of topic-p into log directory
// dest (see the file comment).
func (b *Broker) moveReplica(ctx context.Context, topic string, p int32, dest string) error {
	m := &b.meta
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	t := m.topic(topic)
	if t == nil || p < 0 || int(p) >= len(t.parts) {
		return kerr.UnknownTopicOrPartition
	}
	old := t.parts[p]
	if old.Log == nil {
		b.preferDir(topic, p, dest)
		return kerr.ReplicaNotAvailable
	}
	if old.Offline() {
		return kerr.KafkaStorageError
	}
	from := old.Log.Dir()
	if filepath.Dir(from) == dest {
		return nil
	}
	et, err := b.store.Topic(ctx, topic)
	if err != nil {
		return err
	}
	if int(p) >= len(et.Assignment) {
		return kerr.UnknownTopicOrPartition
	}
	// The old object stops here: its waiters and requests see it offline.
	b.replicas.StopFollowing(old)
	old.SetOffline()
	old.Signal()
	if old.ReplicationFactor() > 1 {
		_ = old.Log.SaveHighWatermark(old.HighWatermark())
	}
	props := b.cfg()
	ts, err := props.TopicSettings(t.configs)
	if err != nil {
		return err
	}
	cfg := logConfig(ts, props.Settings().ProducerIDExpirationMs)
	if err := old.Log.Close(); err != nil {
		b.log.Warn("closing a log to move it", "partition", old.String(), "err", err)
	}
	to := filepath.Join(dest, filepath.Base(from))
	moveErr := moveDir(from, to)
	dirs := []string{dest}
	if moveErr != nil {
		b.log.Warn("moving a replica between log dirs failed; reopening it where it was", "partition", old.String(), "to", to, "err", moveErr)
		dirs = []string{filepath.Dir(from)}
	}
	l, err := b.openPartitionLogIn(dirs, topic, t.id, p, cfg)
	np := replication.NewPartition(topic, t.id, p, nil)
	np.SetState(replState(et.Partitions[p]), et.Assignment[p])
	if err != nil {
		return fmt.Errorf("%w: reopening %s-%d: %v", logstore.ErrStorage, topic, p, err)
	}
	np.Log = l // before the partition is shared
	np.InitHighWatermark()
	nt := *t
	nt.parts = slices.Clone(t.parts)
	nt.parts[p] = np
	m.mu.Lock()
	m.topics[topic], m.byID[t.id] = &nt, &nt
	m.mu.Unlock()
	b.replicas.ApplyRole(np)
	if moveErr != nil {
		return fmt.Errorf("%w: %v", logstore.ErrStorage, moveErr)
	}
	b.log.Info("replica moved to another log dir", "partition", np.String(), "from", filepath.Dir(from), "to", dest)
	return nil
}

// preferDir remembers where a replica not hosted yet is to be created.
func (b *Broker) preferDir(topic string, p int32, dir string) {
	b.offlineMu.Lock()
	defer b.offlineMu.Unlock()
	if b.preferredDirs == nil {
		b.preferredDirs = map[string]string{}
	}
	b.preferredDirs[logstore.PartitionDirName(topic, p)] = dir
}

// preferredDir is the directory AlterReplicaLogDirs chose for topic-p
// before it was hosted here, if it is online and the replica is nowhere
// yet.
func (b *Broker) preferredDir(topic string, p int32, online []string) (string, bool) {
	name := logstore.PartitionDirName(topic, p)
	b.offlineMu.Lock()
	dir, ok := b.preferredDirs[name]
	b.offlineMu.Unlock()
	if !ok || !slices.Contains(online, dir) {
		return "", false
	}
	for _, d := range online {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return "", false
		}
	}
	return dir, true
}

// moveDir renames from to to, or copies it and removes from when they are
// on different file systems.
func moveDir(from, to string) error {
	err := os.Rename(from, to)
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	if err := copyDir(from, to); err != nil {
		os.RemoveAll(to)
		return err
	}
	return os.RemoveAll(from)
}

func copyDir(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	d, err := os.Open(to)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
