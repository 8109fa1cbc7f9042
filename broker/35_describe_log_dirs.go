package broker

// DescribeLogDirs (35) v1-v5: for each of log.dirs, the partitions whose
// replica lives there with their size (v3: a top-level error code; v4:
// TotalBytes and UsableBytes of the directory's file system; v5:
// IsCordoned, cordon.go). An offline
// directory (a storage failure) answers KAFKA_STORAGE_ERROR with no
// partitions, as Kafka does. samsa moves no replica between directories
// in the background, so no replica is a future one (IsFuture false).

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

func (b *Broker) handleDescribeLogDirs(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	var want map[string][]int32 // nil: every partition
	if req.Topics != nil {
		want = make(map[string][]int32, len(req.Topics))
		for _, rt := range req.Topics {
			want[rt.Topic] = append(want[rt.Topic], rt.Partitions...)
		}
	}
	online := b.onlineLogDirs()
	byDir := map[string]map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for _, t := range b.meta.topicList() {
		parts, asked := want[t.name]
		if want != nil && !asked {
			continue
		}
		for _, p := range t.parts {
			if p.Log == nil || p.Offline() || want != nil && !slices.Contains(parts, p.ID) {
				continue
			}
			dir := filepath.Dir(p.Log.Dir())
			sp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			sp.Partition, sp.Size = p.ID, p.Log.Size()
			// Kafka: how far the log end is below the high watermark.
			sp.OffsetLag = max(p.HighWatermark()-p.Log.EndOffset(), 0)
			if byDir[dir] == nil {
				byDir[dir] = map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
			}
			byDir[dir][t.name] = append(byDir[dir][t.name], sp)
		}
	}
	cordoned := b.cordonedDirs()
	for _, dir := range b.logDirs {
		sd := kmsg.NewDescribeLogDirsResponseDir()
		sd.Dir, sd.IsCordoned = dir, slices.Contains(cordoned, dir)
		sd.TotalBytes, sd.UsableBytes = -1, -1
		if !slices.Contains(online, dir) {
			sd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, sd)
			continue
		}
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err == nil {
			sd.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
			sd.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
		}
		topics := byDir[dir]
		names := make([]string, 0, len(topics))
		for name := range topics {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			st := kmsg.NewDescribeLogDirsResponseDirTopic()
			st.Topic = name
			st.Partitions = topics[name]
			slices.SortFunc(st.Partitions, func(a, b kmsg.DescribeLogDirsResponseDirTopicPartition) int { return int(a.Partition - b.Partition) })
			sd.Topics = append(sd.Topics, st)
		}
		resp.Dirs = append(resp.Dirs, sd)
	}
	return resp, nil
}
