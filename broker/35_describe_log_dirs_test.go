package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeLogDirs v1-v5: the one log dir with the partitions asked for and
// their sizes, v4 its file system's total and usable bytes; all topics when
// none is named; alice (no ACLs) gets CLUSTER_AUTHORIZATION_FAILED (v3+,
// top level).
func TestDescribeLogDirsHandler(t *testing.T) {
	b := startHandlerTest(t, map[string]int32{"ld": 2})
	b.produce("ld", 1, "some bytes")
	describe := func(v int16, topic string) *kmsg.DescribeLogDirsRequest {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = v
		if topic != "" {
			rt := kmsg.NewDescribeLogDirsRequestTopic()
			rt.Topic, rt.Partitions = topic, []int32{0, 1}
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	for v := int16(1); v <= 5; v++ {
		resp := b.do(describe(v, "ld")).(*kmsg.DescribeLogDirsResponse)
		wantCode(t, "DescribeLogDirs", resp.ErrorCode, nil)
		if len(resp.Dirs) != 1 {
			t.Fatalf("v%d: %d dirs, want 1", v, len(resp.Dirs))
		}
		d := resp.Dirs[0]
		wantCode(t, "the dir", d.ErrorCode, nil)
		if len(d.Topics) != 1 || d.Topics[0].Topic != "ld" || len(d.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: topics %+v, want ld's two partitions", v, d.Topics)
		}
		for _, p := range d.Topics[0].Partitions {
			if (p.Size > 0) != (p.Partition == 1) || p.IsFuture {
				t.Errorf("v%d: ld-%d size %d future %v", v, p.Partition, p.Size, p.IsFuture)
			}
		}
		if v >= 4 && (d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes) {
			t.Errorf("v%d: total %d usable %d bytes", v, d.TotalBytes, d.UsableBytes)
		}
	}
	all := b.do(describe(4, "")).(*kmsg.DescribeLogDirsResponse)
	found := false
	for _, rt := range all.Dirs[0].Topics {
		found = found || rt.Topic == "ld"
	}
	if !found {
		t.Errorf("all topics: %+v, want ld among them", all.Dirs[0].Topics)
	}
	wantCode(t, "as alice", b.as("alice", describe(4, "ld")).(*kmsg.DescribeLogDirsResponse).ErrorCode, kerr.ClusterAuthorizationFailed)
}
