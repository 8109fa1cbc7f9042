package broker

import (
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
	return tiered.NewManager(tiered.ManagerConfig{
		NodeID:   b.nodeID,
		Store:    store,
		Meta:     b.store,
		Interval: b.settings.RemoteLogManagerInterval,
		Replicas: b.tieredReplicas,
		Logger:   b.log,
	}), nil
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
				LocalRetentionMs: tt.localRetentionMs, LocalRetentionBytes: tt.localRetentionBytes}
			if _, epoch, err := b.replicas.Leading(p, -1); err == nil {
				r.Leader, r.LeaderEpoch, r.LastStableOffset = true, epoch, p.LastStableOffset()
			}
			out = append(out, r)
		}
	}
	return out
}
