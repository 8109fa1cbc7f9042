package admin

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RemoteLogResourceType is samsa's REMOTE_LOG config resource: a topic
// with remote.storage.enable, which each broker describes for the
// partitions of it that it leads (the broker's tiered_status.go).
const RemoteLogResourceType kmsg.ConfigResourceType = 101

// TieredTopic is what tiered storage shows of a topic: the remote log
// of each partition, by its leader, and the rates of the leaders'
// remote reads and copies.
type TieredTopic struct {
	// RemoteFetchBytesPerSec and RemoteCopyBytesPerSec are the one-minute
	// rates (Kafka's OneMinuteRate) summed over the leaders.
	RemoteFetchBytesPerSec float64 `json:"remote_fetch_bytes_per_sec"`
	RemoteCopyBytesPerSec  float64 `json:"remote_copy_bytes_per_sec"`
}

// RemoteLog is a partition's log as its leader holds it, local and
// remote.
type RemoteLog struct {
	LocalBytes        int64 `json:"local_bytes"`
	LocalStartOffset  int64 `json:"local_start_offset"`
	RemoteBytes       int64 `json:"remote_bytes"`
	RemoteSegments    int64 `json:"remote_segments"`
	RemoteStartOffset int64 `json:"remote_start_offset"` // -1: no remote segment
	CopiedEndOffset   int64 `json:"copied_end_offset"`
	// CopyLagBytes and CopyLagSegments are the rolled segments below the
	// last stable offset not uploaded yet (Kafka's RemoteCopyLagBytes).
	CopyLagBytes    int64 `json:"copy_lag_bytes"`
	CopyLagSegments int64 `json:"copy_lag_segments"`
	// DeleteLagBytes and DeleteLagSegments are the remote segments below
	// the log start offset, or being deleted, whose objects are not
	// deleted yet (Kafka's RemoteDeleteLagBytes).
	DeleteLagBytes    int64 `json:"delete_lag_bytes"`
	DeleteLagSegments int64 `json:"delete_lag_segments"`
}

// tiered fills in t.Tiered and each partition's Remote when the topic
// has remote.storage.enable=true, asking each leader of its partitions.
// A leader that does not answer leaves its partitions' Remote nil, as
// sizes leaves their Size unknown.
func (c *Client) tiered(ctx context.Context, t *Topic) {
	if !slices.ContainsFunc(t.Configs, func(e ConfigEntry) bool {
		return e.Name == "remote.storage.enable" && e.Value == "true"
	}) {
		return
	}
	t.Tiered = &TieredTopic{}
	var leaders []int32
	for _, p := range t.Partitions {
		if p.Leader >= 0 && !slices.Contains(leaders, p.Leader) {
			leaders = append(leaders, p.Leader)
		}
	}
	logs := map[int32]RemoteLog{}
	for _, id := range leaders {
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = RemoteLogResourceType, t.Name
		req.Resources = append(req.Resources, r)
		kr, err := c.KGO.Broker(int(id)).Request(ctx, req)
		if err != nil {
			continue
		}
		for _, rr := range kr.(*kmsg.DescribeConfigsResponse).Resources {
			if rr.ErrorCode != 0 {
				continue
			}
			for _, cf := range rr.Configs {
				t.Tiered.merge(logs, cf)
			}
		}
	}
	for i := range t.Partitions {
		if l, ok := logs[t.Partitions[i].ID]; ok {
			t.Partitions[i].Remote = &l
		}
	}
}

// merge takes one entry of a leader's REMOTE_LOG description; an entry
// it cannot read is left out.
func (tt *TieredTopic) merge(logs map[int32]RemoteLog, cf kmsg.DescribeConfigsResponseResourceConfig) {
	v := ""
	if cf.Value != nil {
		v = *cf.Value
	}
	rate, _ := strconv.ParseFloat(v, 64)
	switch cf.Name {
	case "remote.fetch.bytes.per.sec":
		tt.RemoteFetchBytesPerSec += rate
	case "remote.copy.bytes.per.sec":
		tt.RemoteCopyBytesPerSec += rate
	default:
		p, err := strconv.ParseInt(strings.TrimPrefix(cf.Name, "partition."), 10, 32)
		var l RemoteLog
		if err == nil && strings.HasPrefix(cf.Name, "partition.") && json.Unmarshal([]byte(v), &l) == nil {
			logs[int32(p)] = l
		}
	}
}
