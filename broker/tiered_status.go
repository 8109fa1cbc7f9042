package broker

// What tiered storage shows of the partitions led here: the KIP-405 and
// KIP-963 gauges on /metrics, and samsa's own config resource type 101
// (REMOTE_LOG) for `samsa topic describe` and the console, which read it
// with DescribeConfigs as `samsa link` reads CLUSTER_LINK (link_configs.go):
//
//   - the resource is a topic by name, described by each broker for the
//     partitions of it that it leads (internal/admin asks the leaders),
//     under DESCRIBE_CONFIGS on the topic;
//   - read-only entries "partition.<p>", a JSON tieredStatus, and
//     "remote.fetch.bytes.per.sec" and "remote.copy.bytes.per.sec", this
//     broker's one-minute rates for the topic (RemoteFetchBytesPerSec and
//     RemoteCopyBytesPerSec's OneMinuteRate in Kafka's JMX);
//   - no entries for a topic without remote.storage.enable, or on a
//     broker without remote.log.storage.system.enable.
//
// Kafka has no such resource: DescribeLogDirs reports a partition's
// local log only (UnifiedLog.size()), and so does samsa's.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/admin"
	"github.com/samsa-io/samsa/internal/config"
)

// remoteLogResourceType is samsa's REMOTE_LOG config resource.
const remoteLogResourceType = admin.RemoteLogResourceType

// tieredStatus is a tiered partition led here, from the remote log
// metadata this broker last read or wrote and its local log. Its JSON is
// a REMOTE_LOG entry's value, as internal/admin reads it.
type tieredStatus struct {
	topic     string
	Partition int32 `json:"partition"`
	admin.RemoteLog
}

// tieredStatuses lists the tiered partitions led here whose remote log
// metadata this broker holds, of topic ("" for every topic).
func (b *Broker) tieredStatuses(topic string) []tieredStatus {
	if b.tiered == nil {
		return nil
	}
	var out []tieredStatus
	for _, r := range b.tieredReplicas() {
		if !r.Leader || topic != "" && r.Topic != topic {
			continue
		}
		md, ok := b.tiered.Cached(r.TopicID, r.Partition)
		if !ok {
			continue
		}
		st := tieredStatus{topic: r.Topic, Partition: r.Partition, RemoteLog: admin.RemoteLog{LocalBytes: r.Log.Size(),
			LocalStartOffset: r.Log.LocalStartOffset(), RemoteBytes: md.Size(), RemoteSegments: int64(len(md.Segments)),
			RemoteStartOffset: md.StartOffset(), CopiedEndOffset: md.CopiedEnd()}}
		for _, sr := range r.Log.RolledSegments(r.LastStableOffset) {
			if sr.Next > st.CopiedEndOffset {
				st.CopyLagBytes, st.CopyLagSegments = st.CopyLagBytes+sr.Size, st.CopyLagSegments+1
			}
		}
		logStart := r.Log.StartOffset()
		for _, s := range md.Segments {
			if s.EndOffset <= logStart {
				st.DeleteLagBytes, st.DeleteLagSegments = st.DeleteLagBytes+s.LogSize(), st.DeleteLagSegments+1
			}
		}
		for _, s := range md.Deleting {
			st.DeleteLagBytes, st.DeleteLagSegments = st.DeleteLagBytes+s.LogSize(), st.DeleteLagSegments+1
		}
		out = append(out, st)
	}
	return out
}

// Tiered storage's gauges: Kafka's per topic over its partitions led
// here (KIP-405, KIP-963, BrokerTopicMetrics), samsa's per partition.
var (
	descRemoteLogSize  = gauge("kafka_server_brokertopicmetrics_remotelogsizebytes", "Bytes of the remote segments of the partitions led here (RemoteLogSizeBytes).", "topic")
	descRemoteCount    = gauge("kafka_server_brokertopicmetrics_remotelogmetadatacount", "Remote segments of the partitions led here (RemoteLogMetadataCount).", "topic")
	descRemoteSizeTime = gauge("kafka_server_brokertopicmetrics_remotelogsizecomputationtime", "Milliseconds the last computation of the remote log's size took, over the partitions led here: samsa sums the remote log metadata it holds (RemoteLogSizeComputationTime).", "topic")
	descCopyLagBytes   = gauge("kafka_server_brokertopicmetrics_remotecopylagbytes", "Bytes of rolled segments below the last stable offset not copied yet, over the partitions led here (RemoteCopyLagBytes).", "topic")
	descCopyLagSegs    = gauge("kafka_server_brokertopicmetrics_remotecopylagsegments", "Rolled segments below the last stable offset not copied yet, over the partitions led here (RemoteCopyLagSegments).", "topic")
	descDeleteLagBytes = gauge("kafka_server_brokertopicmetrics_remotedeletelagbytes", "Bytes of remote segments below the log start offset or being deleted, not deleted yet, over the partitions led here (RemoteDeleteLagBytes).", "topic")
	descDeleteLagSegs  = gauge("kafka_server_brokertopicmetrics_remotedeletelagsegments", "Remote segments below the log start offset or being deleted, not deleted yet, over the partitions led here (RemoteDeleteLagSegments).", "topic")
	descPartRemoteSize = gauge("samsa_tiered_remote_log_size_bytes", "Bytes of the remote segments of the partition led here (samsa's own; kafka_log_log_size is its local log).", "topic", "partition")
	descPartCopyLag    = gauge("samsa_tiered_remote_copy_lag_bytes", "Bytes of the partition led here rolled below the last stable offset and not copied yet (samsa's own).", "topic", "partition")

	tieredDescs = []*prometheus.Desc{descRemoteLogSize, descRemoteCount, descRemoteSizeTime, descCopyLagBytes, descCopyLagSegs,
		descDeleteLagBytes, descDeleteLagSegs, descPartRemoteSize, descPartCopyLag}
)

// collectTiered emits the tiered storage gauges.
func (b *Broker) collectTiered(emit func(d *prometheus.Desc, v float64, labels ...string)) {
	began := time.Now()
	statuses := b.tieredStatuses("")
	took := float64(time.Since(began).Microseconds()) / 1000
	var sums tieredStatus
	for i, st := range statuses {
		id := strconv.Itoa(int(st.Partition))
		emit(descPartRemoteSize, float64(st.RemoteBytes), st.topic, id)
		emit(descPartCopyLag, float64(st.CopyLagBytes), st.topic, id)
		sums.RemoteBytes += st.RemoteBytes
		sums.RemoteSegments += st.RemoteSegments
		sums.CopyLagBytes += st.CopyLagBytes
		sums.CopyLagSegments += st.CopyLagSegments
		sums.DeleteLagBytes += st.DeleteLagBytes
		sums.DeleteLagSegments += st.DeleteLagSegments
		if i+1 < len(statuses) && statuses[i+1].topic == st.topic {
			continue // tieredReplicas lists a topic's partitions together
		}
		for _, g := range []struct {
			d *prometheus.Desc
			v int64
		}{{descRemoteLogSize, sums.RemoteBytes}, {descRemoteCount, sums.RemoteSegments}, {descCopyLagBytes, sums.CopyLagBytes},
			{descCopyLagSegs, sums.CopyLagSegments}, {descDeleteLagBytes, sums.DeleteLagBytes}, {descDeleteLagSegs, sums.DeleteLagSegments}} {
			emit(g.d, float64(g.v), st.topic)
		}
		emit(descRemoteSizeTime, took, st.topic)
		sums = tieredStatus{}
	}
}

// describeRemoteLog answers DescribeConfigs for REMOTE_LOG resource topic.
func (b *Broker) describeRemoteLog(topic string) ([]config.Entry, error) {
	t := b.meta.topic(topic)
	if t == nil {
		return nil, fmt.Errorf("%w: topic %s does not exist", kerr.UnknownTopicOrPartition, topic)
	}
	if t.remote == nil || b.tiered == nil {
		return nil, nil
	}
	var out []config.Entry
	add := func(k, v string) {
		out = append(out, config.Entry{Name: k, Value: kmsg.StringPtr(v), Source: int8(kmsg.ConfigSourceDynamicTopicConfig),
			ReadOnly: true, Type: int8(kmsg.ConfigTypeString)})
	}
	for _, st := range b.tieredStatuses(topic) {
		v, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		add("partition."+strconv.Itoa(int(st.Partition)), string(v))
	}
	tm, now := b.metrics.forTopic(topic), time.Now()
	add("remote.fetch.bytes.per.sec", strconv.FormatFloat(tm.remoteFetchRate.perSecond(now), 'f', 1, 64))
	add("remote.copy.bytes.per.sec", strconv.FormatFloat(tm.remoteCopyRate.perSecond(now), 'f', 1, 64))
	return out, nil
}
