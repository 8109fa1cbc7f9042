package broker

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/tiered"
)

// tieredTopic is what tiered storage needs of a topic with
// remote.storage.enable.
type tieredTopic struct {
	copyDisabled                          bool  // remote.log.copy.disable
	retentionMs, retentionBytes           int64 // over the whole log
	localRetentionMs, localRetentionBytes int64 // -2 resolved
}

// newTieredManager returns the remote log manager of a broker with
// remote.log.storage.system.enable, over the S3 bucket its rsm.config.*
// properties name (Aiven's plugin's names) and the remote log metadata
// in etcd; nil when tiered storage is off.
func (b *Broker) newTieredManager() (*tiered.Manager, error) {
	if !b.settings.RemoteStorageSystem {
		return nil, nil
	}
	store, err := tiered.NewS3(tiered.S3ConfigFrom(b.props))
	if err != nil {
		return nil, err
	}
	chunk, _ := strconv.ParseInt(b.props.RSM("rsm.config.chunk.size"), 10, 64)
	cache, _ := strconv.ParseInt(b.props.RSM("rsm.config.fetch.chunk.cache.size"), 10, 64)
	return tiered.NewManager(tiered.ManagerConfig{
		NodeID:            b.nodeID,
		Store:             store,
		Meta:              b.store,
		Interval:          b.settings.RemoteLogManagerInterval,
		RollEvery:         b.retentionTick,
		Workers:           func() int { return int(b.cfg().Settings().RemoteLogCopierThreads) },
		CopyRate:          func() int64 { return b.cfg().Settings().RemoteCopyMaxBytesPerSec },
		FetchRate:         func() int64 { return b.cfg().Settings().RemoteFetchMaxBytesPerSec },
		CopyQuotaWindow:   time.Duration(b.settings.RemoteCopyQuotaWindowSec) * time.Second,
		CopyQuotaSamples:  int(b.settings.RemoteCopyQuotaWindows),
		FetchQuotaWindow:  time.Duration(b.settings.RemoteFetchQuotaWindowSec) * time.Second,
		FetchQuotaSamples: int(b.settings.RemoteFetchQuotaWindows),
		Replicas:          b.tieredReplicas,
		ChunkSize:         chunk,
		CacheBytes:        cache,
		Observe:           b.metrics.tiered,
		Logger:            b.log,
	}), nil
}

// rebuildFromRemote restarts the log of a partition followed here above
// its remote log, when its leader moved the follower's fetch offset to
// tiered storage (replication.Replica.OnMovedToTiered).
func (b *Broker) rebuildFromRemote(ctx context.Context, p *partition, leaderLogStart int64) error {
	if b.tiered == nil {
		return errors.New("broker: tiered storage is off here (remote.log.storage.system.enable)")
	}
	err := b.tiered.RebuildFollower(ctx, p.Topic, p.TopicID, p.ID, p.Log, leaderLogStart)
	tm := b.metrics.forTopic(p.Topic)
	tm.auxStateBuilds.Inc()
	if err != nil {
		tm.auxStateBuildsFailed.Inc()
	}
	return err
}

// readRemote answers a consumer's fetch below the local log of a tiered
// partition from the object store, waiting at most
// remote.fetch.max.wait.ms: past it the partition is answered without
// records, and the consumer fetches again.
func (b *Broker) readRemote(fp *fetchPart, maxBytes int32, maxOffset int64, minOne bool) (logstore.ReadResult, error) {
	ctx, cancel := context.WithTimeout(b.ctx, b.cfg().Settings().RemoteFetchMaxWait)
	defer cancel()
	rr, err := b.tiered.Read(ctx, fp.p.Topic, fp.p.TopicID, fp.p.ID, fp.offset, maxBytes, maxOffset, minOne)
	if err == nil && rr.Size == 0 && rr.NextOffset > fp.offset {
		// Compaction left no record at or after the offset in the
		// remote log: the records go on in the local log.
		return fp.p.Log.Read(rr.NextOffset, maxBytes, maxOffset, minOne)
	}
	if err == nil && fp.committed && rr.Size > 0 {
		fp.aborted, err = b.tiered.AbortedTxns(ctx, fp.p.Topic, fp.p.TopicID, fp.p.ID, fp.p.Log, fp.offset, rr.NextOffset)
		if err != nil {
			rr.Release()
		}
	}
	if errors.Is(err, context.DeadlineExceeded) && b.ctx.Err() == nil {
		b.log.Debug("remote fetch timed out", "partition", fp.p.String(), "offset", fp.offset)
		return logstore.ReadResult{}, nil
	}
	return rr, err
}

// remoteOffsetForTimestamp searches a tiered partition's remote log for
// ListOffsets by timestamp, before its local log as Kafka does; found is
// false when the partition has no remote part.
func (b *Broker) remoteOffsetForTimestamp(t *topic, p *partition, l *logstore.Log, ts int64) (int64, int64, bool, error) {
	if t == nil || t.remote == nil || b.tiered == nil || l.StartOffset() >= l.LocalStartOffset() {
		return -1, -1, false, nil
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second) // remote.list.offsets.request.timeout.ms
	defer cancel()
	return b.tiered.OffsetForTimestamp(ctx, p.Topic, p.TopicID, p.ID, ts, l.StartOffset())
}

// tieredOffset answers ListOffsets' EARLIEST_LOCAL (-4), LATEST_TIERED
// (-5) and EARLIEST_PENDING_UPLOAD (-6) for a partition led here, as
// Kafka 4.4's UnifiedLog: offset and leader epoch, -1 for unknown.
func (b *Broker) tieredOffset(ts int64, t *topic, p *partition, l *logstore.Log) (int64, int32, error) {
	epochOf := func(off int64) int32 {
		if off < 0 {
			return -1
		}
		return l.EpochForOffset(off)
	}
	if ts == tsEarliestLocal {
		off := l.LocalStartOffset()
		return off, epochOf(off), nil
	}
	if t == nil || t.remote == nil || b.tiered == nil {
		return -1, -1, nil
	}
	copied, err := b.tiered.CopiedEnd(b.ctx, p.TopicID, p.ID)
	if err != nil {
		return -1, -1, err
	}
	highest := copied - 1 // -1: nothing copied
	if ts == tsLatestTiered {
		return highest, epochOf(highest), nil
	}
	if highest < 0 {
		if l.LocalStartOffset() == l.StartOffset() {
			off := l.StartOffset() // nothing uploaded yet: the earliest offset
			return off, epochOf(off), nil
		}
		return -1, -1, nil
	}
	off := max(highest+1, l.StartOffset())
	return off, epochOf(off), nil
}

// tieredReplicas lists this broker's replicas of tiered topics, each
// marked with its leader epoch and last stable offset when led here.
func (b *Broker) tieredReplicas() []tiered.Replica {
	var out []tiered.Replica
	for _, t := range b.meta.topicList() {
		if t.remote == nil {
			continue
		}
		for _, p := range t.parts {
			if p == nil || p.Log == nil || p.Offline() {
				continue
			}
			tt := t.remote
			r := tiered.Replica{Topic: t.name, TopicID: t.id, Partition: p.ID, Log: p.Log, CopyDisabled: tt.copyDisabled,
				RetentionMs: tt.retentionMs, RetentionBytes: tt.retentionBytes,
				LocalRetentionMs: tt.localRetentionMs, LocalRetentionBytes: tt.localRetentionBytes, RollUpTo: -1}
			if t.deletes || t.cleaner == nil {
				r.RollUpTo = p.HighWatermark()
			}
			if _, epoch, err := b.replicas.Leading(p, -1); err == nil {
				r.Leader, r.LeaderEpoch, r.LastStableOffset = true, epoch, p.LastStableOffset()
				if t.cleaner != nil {
					opts := *t.cleaner
					opts.UpTo, opts.MaxKeys = r.LastStableOffset, b.cleanerMaxKeys()
					r.Compact = &opts
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// tiered counts a copy, remote read or remote deletion of topic.
func (m *metrics) tiered(topic string, op tiered.Op, bytes int64, failed bool) {
	tm := m.forTopic(topic)
	var n, bad, moved prometheus.Counter
	var rate *meter
	switch op {
	case tiered.OpCopy:
		n, bad, moved, rate = tm.remoteCopies, tm.remoteCopiesFailed, tm.remoteCopyBytes, &tm.remoteCopyRate
	case tiered.OpFetch:
		n, bad, moved, rate = tm.remoteFetches, tm.remoteFetchesFailed, tm.remoteFetchBytes, &tm.remoteFetchRate
	default:
		n, bad = tm.remoteDeletes, tm.remoteDeletesFailed
	}
	n.Inc()
	if failed {
		bad.Inc()
	} else if moved != nil {
		moved.Add(float64(bytes))
		rate.mark(bytes, time.Now())
	}
}

// dropRemoteLog deletes the remote segments and metadata of a deleted
// tiered topic, in the background, from each broker that held a replica
// of it (one is enough; deleting twice is harmless).
func (b *Broker) dropRemoteLog(t *topic) {
	if t.remote == nil || b.tiered == nil || !slices.ContainsFunc(t.parts, func(p *partition) bool { return p != nil && p.Log != nil }) {
		return
	}
	b.spawn(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if err := b.tiered.DeleteTopic(ctx, t.name, t.id); err != nil && ctx.Err() == nil {
			b.log.Warn("tiered storage: deleting a deleted topic's remote log", "topic", t.name, "err", err)
		}
	})
}
