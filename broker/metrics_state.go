package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// stateCollector computes the broker's gauges from its partitions, the
// controller's election and the group coordinator when /metrics is
// scraped: nothing is kept up to date on the request path.
type stateCollector struct{ b *Broker }

func gauge(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descLeaderCount    = gauge("kafka_server_replicamanager_leadercount", "Partitions led by this broker (LeaderCount).")
	descPartitionCount = gauge("kafka_server_replicamanager_partitioncount", "Partitions with a replica on this broker (PartitionCount).")
	descUnderReplic    = gauge("kafka_server_replicamanager_underreplicatedpartitions", "Partitions led here whose ISR is smaller than their replica set (UnderReplicatedPartitions).")
	descUnderMinISR    = gauge("kafka_server_replicamanager_underminisrpartitioncount", "Partitions led here whose ISR is below min.insync.replicas (UnderMinIsrPartitionCount).")
	descAtMinISR       = gauge("kafka_server_replicamanager_atminisrpartitioncount", "Partitions led here whose ISR is exactly min.insync.replicas (AtMinIsrPartitionCount).")
	descOfflineReplica = gauge("kafka_server_replicamanager_offlinereplicacount", "Replicas on this broker whose log directory failed (OfflineReplicaCount).")
	descActiveCtrl     = gauge("kafka_controller_kafkacontroller_activecontrollercount", "1 on the broker elected controller, else 0 (ActiveControllerCount).")
	descOfflineParts   = gauge("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a leader, counted by the active controller (OfflinePartitionsCount).")
	descGlobalTopics   = gauge("kafka_controller_kafkacontroller_globaltopiccount", "Topics in the cluster, counted by the active controller (GlobalTopicCount).")
	descGlobalParts    = gauge("kafka_controller_kafkacontroller_globalpartitioncount", "Partitions in the cluster, counted by the active controller (GlobalPartitionCount).")
	descPartUnderRepl  = gauge("kafka_cluster_partition_underreplicated", "1 when the partition, led here, has an ISR smaller than its replica set (Partition UnderReplicated).", "topic", "partition")
	descLogSize        = gauge("kafka_log_log_size", "Bytes of the partition's log on this broker (Log Size).", "topic", "partition")
	descLogEnd         = gauge("kafka_log_log_logendoffset", "Log end offset of the partition's log on this broker (LogEndOffset).", "topic", "partition")
	descLogStart       = gauge("kafka_log_log_logstartoffset", "Log start offset of the partition's log on this broker (LogStartOffset).", "topic", "partition")
	descNumGroups      = gauge("kafka_coordinator_group_groupmetadatamanager_numgroups", "Consumer groups coordinated by this broker (NumGroups).")
	descNumOffsets     = gauge("kafka_coordinator_group_groupmetadatamanager_numoffsets", "Committed offsets of the groups coordinated here (NumOffsets).")
	descFetchSessions  = gauge("kafka_server_fetchsessioncache_numincrementalfetchsessions", "Incremental fetch sessions (KIP-227) this broker holds, consumers' and followers' (FetchSessionCache NumIncrementalFetchSessions).")
	descFetchSessParts = gauge("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached", "Partitions in the incremental fetch sessions this broker holds (FetchSessionCache NumIncrementalFetchPartitionsCached).")
	descGroupLag       = gauge("kafka_server_group_consumerlag", "High watermark minus the committed offset, per group and partition, for the groups coordinated here and the partitions with a replica here (samsa's own; Kafka has no broker-side lag metric).", "group", "topic", "partition")

	descLinkLag        = gauge("samsa_cluster_link_lag_records", "Records of the source partition a mirror partition led here has not copied yet: the source's high watermark at the last fetch minus the mirror's end (samsa's own).", "link", "topic", "partition")
	descLinkLagSeconds = gauge("samsa_cluster_link_lag_seconds", "Seconds since a mirror partition led here last had all its source had, while it lags (samsa's own).", "link", "topic", "partition")
	descLinkSourceEnd  = gauge("samsa_cluster_link_source_end_offset", "The source partition's high watermark at the last fetch of the mirror partition led here (samsa's own).", "link", "topic", "partition")

	stateDescs = []*prometheus.Desc{descLinkLag, descLinkLagSeconds, descLinkSourceEnd, descLeaderCount, descPartitionCount, descUnderReplic, descUnderMinISR, descAtMinISR,
		descOfflineReplica, descActiveCtrl, descOfflineParts, descGlobalTopics, descGlobalParts, descPartUnderRepl,
		descLogSize, descLogEnd, descLogStart, descNumGroups, descNumOffsets, descGroupLag, descFetchSessions, descFetchSessParts}
)

func (stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append(stateDescs, tieredDescs...) {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	emit := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	isCtrl := b.store != nil && b.store.IsController()
	var leaders, parts, under, underMin, atMin, offline, noLeader, global int
	topics := b.meta.topicList()
	for _, t := range topics {
		for _, p := range t.parts {
			leader, _, replicas, isr := p.State()
			global++
			if leader < 0 {
				noLeader++
			}
			if p.Log == nil {
				continue
			}
			parts++
			id := strconv.Itoa(int(p.ID))
			if p.Offline() {
				offline++
				continue
			}
			emit(descLogSize, float64(p.Log.Size()), t.name, id)
			emit(descLogEnd, float64(p.Log.EndOffset()), t.name, id)
			emit(descLogStart, float64(p.Log.StartOffset()), t.name, id)
			if leader != b.nodeID {
				continue
			}
			leaders++
			u := 0.0
			if len(isr) < len(replicas) {
				under++
				u = 1
			}
			emit(descPartUnderRepl, u, t.name, id)
			switch m := t.effectiveMinISR(p); {
			case len(isr) < m:
				underMin++
			case len(isr) == m:
				atMin++
			}
		}
	}
	b.collectTiered(emit)
	emit(descLeaderCount, float64(leaders))
	sessions, cached := b.sessions.stats()
	emit(descFetchSessions, float64(sessions))
	emit(descFetchSessParts, float64(cached))
	emit(descPartitionCount, float64(parts))
	emit(descUnderReplic, float64(under))
	emit(descUnderMinISR, float64(underMin))
	emit(descAtMinISR, float64(atMin))
	emit(descOfflineReplica, float64(offline))
	ctrl := 0.0
	if isCtrl {
		ctrl = 1
	} else {
		// Kafka's other brokers report the controller's counts as 0.
		noLeader, global, topics = 0, 0, nil
	}
	emit(descActiveCtrl, ctrl)
	emit(descOfflineParts, float64(noLeader))
	emit(descGlobalTopics, float64(len(topics)))
	emit(descGlobalParts, float64(global))

	if b.linkMgr != nil {
		for _, st := range b.linkMgr.Status() {
			id := strconv.Itoa(int(st.Partition))
			emit(descLinkLag, float64(st.Lag), st.Link, st.Topic, id)
			emit(descLinkLagSeconds, float64(st.LagSeconds), st.Link, st.Topic, id)
			emit(descLinkSourceEnd, float64(st.SourceEnd), st.Link, st.Topic, id)
		}
	}
	if b.groups == nil {
		return
	}
	offsets := 0
	groups := b.groups.CommittedOffsets(func(group, topic string, partition int32, offset int64) {
		offsets++
		p := b.meta.partition(topic, partition)
		if p == nil || p.Log == nil || offset < 0 {
			return
		}
		emit(descGroupLag, float64(max(p.HighWatermark()-offset, 0)), group, topic, strconv.Itoa(int(partition)))
	})
	emit(descNumGroups, float64(groups))
	emit(descNumOffsets, float64(offsets))
}
