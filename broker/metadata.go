package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/internal/elr"
	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/replication"
)

// topic is the cached metadata of one topic.
type topic struct {
	name    string
	id      [16]byte
	configs map[string]string // overrides, as stored in etcd
	parts   []*partition      // by partition id
	minISR  int               // min.insync.replicas in effect
	deletes bool              // cleanup.policy includes delete: DeleteRecords allowed
	// keySchemas and valueSchemas are set when confluent.key.schema.validation
	// or .value. is on (schema_validation.go).
	keySchemas, valueSchemas *schemaCheck
	// cleaner is set when cleanup.policy includes compact: the cleaner's
	// settings (UpTo is each partition's last stable offset at the pass).
	cleaner *logstore.CompactOptions
	metrics *topicMetrics // the topic's counters
	props   *config.Props // the broker properties its settings were derived from
	// src is the store's topic it was synced from (shared, never
	// modified): while the store's cache holds the same one and props
	// stay, a sync leaves the topic as it is. nil when its last sync
	// failed somewhere, so that the next one tries again.
	src *controller.Topic
	// leaderThrottled: leader.replication.throttled.replicas;
	// followerThrottled: follower.replication.throttled.replicas.
	leaderThrottled, followerThrottled config.Throttled
	// remote is set when remote.storage.enable is on (tiered storage).
	remote *tieredTopic
}

// effectiveMinISR is the min.insync.replicas partition p of t is held
// to: at most its replication factor, as Kafka's effectiveMinIsr (a
// topic of one replica with min.insync.replicas=2 takes acks=all).
func (t *topic) effectiveMinISR(p *partition) int {
	return elr.EffectiveMinISR(t.minISR, p.ReplicationFactor())
}

// metadata is the broker's cache of cluster metadata, kept in step with etcd
// by syncMetadata.
type metadata struct {
	syncMu sync.Mutex // serialises syncMetadata

	mu     sync.RWMutex
	topics map[string]*topic   // guarded by mu
	byID   map[[16]byte]*topic // guarded by mu

	brokersMu    sync.Mutex
	brokers      []controller.BrokerInfo // guarded by brokersMu
	brokersAge   time.Time               // guarded by brokersMu
	brokersStale bool                    // guarded by brokersMu; a registration changed
}

func (m *metadata) init() {
	m.topics = make(map[string]*topic)
	m.byID = make(map[[16]byte]*topic)
}

func (m *metadata) topic(name string) *topic {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.topics[name]
}

func (m *metadata) topicByID(id [16]byte) *topic {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.byID[id]
}

// partition returns the partition, or nil.
func (m *metadata) partition(name string, p int32) *partition {
	t := m.topic(name)
	if t == nil || p < 0 || int(p) >= len(t.parts) {
		return nil
	}
	return t.parts[p]
}

// topicList returns every topic, sorted by name.
func (m *metadata) topicList() []*topic {
	m.mu.RLock()
	ts := slices.Collect(maps.Values(m.topics))
	m.mu.RUnlock()
	slices.SortFunc(ts, func(a, b *topic) int {
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	return ts
}

func (m *metadata) allPartitions() []*partition {
	var ps []*partition
	for _, t := range m.topicList() {
		for _, p := range t.parts {
			if p.Log != nil {
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// closeAll closes every log: cleanly, or, with clean false, as a crash
// would leave it (Kill).
func (m *metadata) closeAll(clean bool) error {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []*partition
	for _, t := range m.topics {
		for _, p := range t.parts {
			if p.Log != nil {
				ps = append(ps, p)
			}
		}
	}
	var online []*logstore.Log
	var errs []error
	for _, p := range ps {
		if clean && !p.Offline() {
			online = append(online, p.Log)
			continue
		}
		// Kill, or its directory failed: closed as a crash leaves it,
		// the next start recovers it (or finds the disk still bad).
		errs = append(errs, p.Log.Abandon())
	}
	if len(online) > 0 {
		// One syncfs per log directory rather than an fsync per file.
		errs = append(errs, logstore.CloseAll(online, closeParallel))
	}
	err := errors.Join(errs...)
	m.topics = map[string]*topic{}
	m.byID = map[[16]byte]*topic{}
	return err
}

// prepareClose makes every online log durable as a clean close leaves it,
// without the marker (logstore.PrepareCloseAll), while the broker still
// serves: the final closeAll then writes only what changed since. A log
// that fails here is closed uncleanly by closeAll, which reports it.
func (m *metadata) prepareClose() {
	var logs []*logstore.Log
	for _, p := range m.allPartitions() {
		if !p.Offline() {
			logs = append(logs, p.Log)
		}
	}
	_ = logstore.PrepareCloseAll(logs, closeParallel)
}

// closeParallel is how many logs a shutdown writes at once, as Kafka's
// shutdown closes its logs with a bounded pool.
const closeParallel = 8

// LiveBrokers are the registered brokers as this broker knows them: the
// ones Metadata lists and CreateTopics places replicas on.
func (b *Broker) LiveBrokers(ctx context.Context) ([]controller.BrokerInfo, error) {
	return b.liveBrokers(ctx)
}

// RegistrationAccepted reports whether the controller has accepted this
// broker's current registration: at once for a clean restart, and after an
// unclean one (KIP-966) only once it has taken the broker out of every ISR
// and ELR. Until then the broker joins no ISR.
func (b *Broker) RegistrationAccepted(ctx context.Context) (bool, error) {
	e := b.store.BrokerEpoch()
	if e == 0 {
		return false, nil
	}
	accepted, err := b.store.AcceptedEpochs(ctx)
	if err != nil {
		return false, err
	}
	return accepted[b.nodeID] == e, nil
}

// liveBrokers returns the registered brokers, re-read from etcd at most once
// a second or after a registration changed. etcd is asked outside the lock
// and with a short timeout: while etcd is unreachable, Metadata answers from
// the last list it had, as Kafka answers from its metadata cache.
func (b *Broker) liveBrokers(ctx context.Context) ([]controller.BrokerInfo, error) {
	m := &b.meta
	m.brokersMu.Lock()
	cached := m.brokers
	fresh := cached != nil && !m.brokersStale && time.Since(m.brokersAge) < time.Second
	m.brokersMu.Unlock()
	if fresh {
		return cached, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	bs, err := b.store.Brokers(cctx)
	cancel()
	if err != nil {
		if cached != nil {
			return cached, nil
		}
		return nil, err
	}
	slices.SortFunc(bs, func(a, b controller.BrokerInfo) int { return int(a.ID) - int(b.ID) })
	m.brokersMu.Lock()
	m.brokers, m.brokersAge, m.brokersStale = bs, time.Now(), false
	m.brokersMu.Unlock()
	return bs, nil
}

// brokersFor is liveBrokers, read again from etcd when the list cached
// lacks what a request needs (enough reports false): a broker that
// registered a moment ago, of which this broker's watch has not told it
// yet, counts at once, as Kafka's controller counts every broker it has
// registered. CreateTopics of replication factor 3, sent as soon as the
// third broker of a cluster started answered, was refused
// INVALID_REPLICATION_FACTOR by a broker that still counted two.
func (b *Broker) brokersFor(ctx context.Context, enough func([]controller.BrokerInfo) bool) ([]controller.BrokerInfo, error) {
	bs, err := b.liveBrokers(ctx)
	if err != nil || enough(bs) {
		return bs, err
	}
	b.meta.forgetBrokers()
	return b.liveBrokers(ctx)
}

// hasBrokers is brokersFor's enough for a request placing rf replicas
// (0: none) on any brokers and naming the brokers of assignment.
func hasBrokers(rf int, assignment ...[]int32) func([]controller.BrokerInfo) bool {
	return func(bs []controller.BrokerInfo) bool {
		if rf > len(bs) {
			return false
		}
		for _, rs := range assignment {
			for _, id := range rs {
				if !slices.ContainsFunc(bs, func(bi controller.BrokerInfo) bool { return bi.ID == id }) {
					return false
				}
			}
		}
		return true
	}
}

// syncMetadata reads every topic from etcd and brings the cache and the
// local logs in line: new topics and partitions get their logs opened,
// deleted (or re-created) topics get theirs deleted, config changes reach
// the logs. Handlers call it after a write of theirs to etcd, which the
// sync then shows.
func (b *Broker) syncMetadata(ctx context.Context) error {
	_, err := b.syncMetadataFrom(ctx, b.store.ReloadTopics)
	return err
}

// syncCachedMetadata is syncMetadata from the store's topic cache, which
// its watch keeps current, without reading etcd: after a change of one
// partition state it decodes that state only, and it leaves the topics
// that did not change as they are.
func (b *Broker) syncCachedMetadata(ctx context.Context) (int64, error) {
	return b.syncMetadataFrom(ctx, b.store.CachedTopics)
}

// syncMetadataFrom is syncMetadata with the topics that read returns; it
// returns the etcd revision they reflect.
func (b *Broker) syncMetadataFrom(ctx context.Context, read func(context.Context) (map[string]*controller.Topic, int64, error)) (int64, error) {
	m := &b.meta
	// Read under the lock: an older snapshot applied after a newer one
	// would drop the logs of a topic created in between.
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	topics, rev, err := read(ctx)
	if err != nil {
		return 0, err
	}
	m.mu.RLock()
	old := maps.Clone(m.topics)
	m.mu.RUnlock()

	next := make(map[string]*topic, len(topics))
	var errs []error
	for name, et := range topics {
		t := old[name]
		props := b.cfg()
		if t != nil && t.src == et && t.props == props {
			next[name] = t
			continue
		}
		if t != nil && t.id != et.ID {
			b.dropTopic(t)
			t = nil
		}
		failed := len(errs)
		ts, err := props.TopicSettings(et.Configs)
		if err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", name, err))
		}
		nt := &topic{name: name, id: et.ID, configs: et.Configs, minISR: int(ts.MinInsyncReplicas),
			deletes: ts.CleanupDelete, metrics: b.metrics.forTopic(name), props: props,
			leaderThrottled: ts.LeaderThrottled, followerThrottled: ts.FollowerThrottled,
			keySchemas: newSchemaCheck(ts.KeySchemaValidation, ts.KeySubjectStrategy), valueSchemas: newSchemaCheck(ts.ValueSchemaValidation, ts.ValueSubjectStrategy)}
		if ts.RemoteStorage {
			nt.remote = &tieredTopic{copyDisabled: ts.RemoteCopyDisabled, retentionMs: ts.RetentionMs, retentionBytes: ts.RetentionBytes,
				localRetentionMs: ts.LocalRetentionMs, localRetentionBytes: ts.LocalRetentionBytes}
			if !ts.CleanupDelete {
				// A compact-only tiered log: no remote segment expires
				// (logConfig's rule); local retention still bounds the disk.
				nt.remote.retentionMs, nt.remote.retentionBytes = -1, -1
			}
		}
		if ts.CleanupCompact {
			nt.cleaner = &logstore.CompactOptions{
				MinCleanableRatio:  ts.MinCleanableDirtyRatio,
				DeleteRetentionMs:  ts.DeleteRetentionMs,
				MinCompactionLagMs: ts.MinCompactionLagMs,
			}
		}
		cfg := logConfig(ts, props.Settings().ProducerIDExpirationMs)
		if t != nil {
			nt.parts = slices.Clone(t.parts)
		}
		// A topic's settings change with its overrides, and with the
		// broker defaults under them (a dynamic broker config).
		configChanged := t != nil && (!maps.Equal(t.configs, et.Configs) || t.props != props)
		var opening []*partition // new here: their logs are opened below, all at once
		for i, replicas := range et.Assignment {
			var st controller.PartitionState
			if i < len(et.Partitions) {
				st = et.Partitions[i]
			}
			open := func() *partition {
				p := replication.NewPartition(name, et.ID, int32(i), nil)
				p.SetState(replState(st), replicas)
				p.SetMinISR(nt.minISR)
				if slices.Contains(replicas, b.nodeID) {
					opening = append(opening, p)
				}
				return p
			}
			if i >= len(nt.parts) {
				nt.parts = append(nt.parts, open())
				continue
			}
			p := nt.parts[i]
			if (p.Log != nil) != slices.Contains(replicas, b.nodeID) {
				// A reassignment moved the replica here, or away.
				if p.Log != nil {
					b.log.Info("replica moved off this broker; deleting its log", "partition", p.String(), "replicas", replicas)
					b.dropPartition(p)
				}
				nt.parts[i] = open()
				continue
			}
			p.SetState(replState(st), replicas)
			p.SetMinISR(nt.minISR)
			if configChanged && p.Log != nil {
				p.Log.SetConfig(cfg)
			}
			b.replicas.ApplyRole(p)
		}
		errs = append(errs, b.openLogs(opening, cfg)...)
		if len(errs) == failed {
			nt.src = et
		}
		next[name] = nt
	}
	for name, t := range old {
		if _, ok := next[name]; !ok {
			b.dropTopic(t)
		}
	}
	byID := make(map[[16]byte]*topic, len(next))
	for _, t := range next {
		byID[t.id] = t
	}
	m.mu.Lock()
	m.topics, m.byID = next, byID
	m.mu.Unlock()
	b.syncCoordinator() // leadership of __consumer_offsets partitions may have moved
	b.syncTxnCoordinator()
	b.syncRegistry()
	b.syncShareCoordinator()
	b.retainSharePartitions() // 78_share_fetch.go
	return rev, errors.Join(errs...)
}

// logOpeners is how many partition logs a metadata sync opens at once: a
// broker restarting with 10,000 partitions, or given them by new topics,
// waits for each log's reads and fsyncs, and they overlap.
const logOpeners = 8

// openLogs opens the logs of partitions new here (not yet shared), several
// at once, and then has each lead or follow as its state says. It returns
// an error for each log that did not open; that partition has no log.
func (b *Broker) openLogs(parts []*partition, cfg logstore.Config) []error {
	logs := make([]*logstore.Log, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(logOpeners, len(parts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p := parts[i]
				logs[i], errs[i] = b.openPartitionLog(p.Topic, p.TopicID, p.ID, cfg)
			}
		}()
	}
	for i := range parts {
		next <- i
	}
	close(next)
	wg.Wait()
	var out []error
	for i, p := range parts {
		if errs[i] != nil {
			out = append(out, fmt.Errorf("open %s: %w", p, errs[i]))
			continue
		}
		p.Log = logs[i] // before the partition is shared
		p.InitHighWatermark()
		b.replicas.ApplyRole(p)
	}
	return out
}

// forgetBrokers marks the cached broker list stale, so the next request
// re-reads it (and still has it, should etcd not answer).
func (m *metadata) forgetBrokers() {
	m.brokersMu.Lock()
	m.brokersStale = true
	m.brokersMu.Unlock()
}

// dropTopic deletes the local logs of a topic that etcd no longer has.
func (b *Broker) dropTopic(t *topic) {
	b.metrics.dropTopic(t.name)
	b.dropRemoteLog(t)
	for _, p := range t.parts {
		b.dropPartition(p)
	}
}

// dropPartition stops replicating p and deletes its local log (its topic
// is deleted, or its replica moved off this broker).
func (b *Broker) dropPartition(p *partition) {
	if p.Log == nil {
		return
	}
	b.replicas.StopFollowing(p)
	if err := p.Log.Delete(); err != nil {
		b.log.Warn("deleting partition log", "partition", p.String(), "err", err)
		os.RemoveAll(p.Log.Dir())
	}
	p.Signal()
}

// logConfig turns a topic's settings into the log's; an idle producer id's
// state is kept for producerIDExpirationMs (producer.id.expiration.ms).
func logConfig(ts config.TopicSettings, producerIDExpirationMs int64) logstore.Config {
	cfg := logstore.Config{
		SegmentBytes:         int64(ts.SegmentBytes),
		SegmentMs:            ts.SegmentMs,
		RetentionMs:          ts.RetentionMs,
		RetentionBytes:       ts.RetentionBytes,
		IndexIntervalBytes:   ts.IndexIntervalBytes,
		MaxMessageBytes:      ts.MaxMessageBytes,
		FlushMessages:        ts.FlushMessages,
		FlushMs:              ts.FlushMs,
		SegmentIndexBytes:    ts.SegmentIndexBytes,
		TimestampBeforeMaxMs: ts.MessageTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  ts.MessageTimestampAfterMaxMs,
		Compact:              ts.CleanupCompact,
		RemoteStorage:        ts.RemoteStorage,
	}
	// An unknown name cannot pass the config check: producer, then.
	cfg.Compression, _ = logstore.ParseCompression(ts.CompressionType)
	cfg.ProducerIDExpirationMs = producerIDExpirationMs
	if !ts.CleanupDelete {
		// retention.ms and retention.bytes delete segments only under
		// cleanup.policy=delete: a compact-only log (__consumer_offsets, a
		// Streams changelog) keeps every key's latest record however old.
		cfg.RetentionMs, cfg.RetentionBytes = -1, -1
	}
	if ts.LogAppendTime {
		cfg.TimestampType = logstore.LogAppendTime
	}
	return cfg
}
