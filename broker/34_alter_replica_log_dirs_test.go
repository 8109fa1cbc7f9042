package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterLogDirRequest moves partition of topic into dir.
func alterLogDirRequest(v int16, dir, topic string, partition int32) *kmsg.AlterReplicaLogDirsRequest {
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	req.Version = v
	rd := kmsg.NewAlterReplicaLogDirsRequestDir()
	rd.Dir = dir
	rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	rd.Topics = append(rd.Topics, rt)
	req.Dirs = append(req.Dirs, rd)
	return req
}

func alterLogDirCode(resp kmsg.Response) int16 {
	return resp.(*kmsg.AlterReplicaLogDirsResponse).Topics[0].Partitions[0].ErrorCode
}

// dirOf is the log dir DescribeLogDirs places topic's partition 0 in.
func (b *handlerBroker) dirOf(topic string) string {
	b.t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	var in []string
	for _, d := range b.do(req).(*kmsg.DescribeLogDirsResponse).Dirs {
		if len(d.Topics) > 0 {
			in = append(in, d.Dir)
		}
	}
	if len(in) != 1 {
		b.t.Fatalf("%s-0 is in log dirs %v, want one", topic, in)
	}
	return in[0]
}

// AlterReplicaLogDirs v1-v2 (v2 flexible) moves a replica to the other of
// the broker's two log dirs at once, its records kept; a move to where it
// is already is NONE; a dir not in log.dirs is LOG_DIR_NOT_FOUND, an
// unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; alice gets
// CLUSTER_AUTHORIZATION_FAILED on each partition until she may Alter the
// cluster.
func TestAlterReplicaLogDirsHandler(t *testing.T) {
	t.Parallel()
	dirs := [2]string{t.TempDir(), t.TempDir()}
	b := startHandlerBroker(t, map[string]string{"log.dirs": dirs[0] + "," + dirs[1]})
	b.createTopic("rd", 1)
	b.produce("rd", 0, "kept")
	other := func() string {
		if b.dirOf("rd") == dirs[0] {
			return dirs[1]
		}
		return dirs[0]
	}
	for v := int16(1); v <= 2; v++ {
		to := other()
		wantCode(t, "a move", alterLogDirCode(b.do(alterLogDirRequest(v, to, "rd", 0))), nil)
		if got := b.dirOf("rd"); got != to {
			t.Errorf("v%d: rd-0 in %s after the move to %s", v, got, to)
		}
		if off := b.produce("rd", 0, "after"); off != int64(v) {
			t.Errorf("v%d: produced at offset %d after the move, want %d", v, off, v)
		}
		wantCode(t, "where it is", alterLogDirCode(b.do(alterLogDirRequest(v, to, "rd", 0))), nil)
	}
	wantCode(t, "a dir not in log.dirs", alterLogDirCode(b.do(alterLogDirRequest(2, t.TempDir(), "rd", 0))), kerr.LogDirNotFound)
	wantCode(t, "an unknown topic", alterLogDirCode(b.do(alterLogDirRequest(2, dirs[0], "nope", 0))), kerr.UnknownTopicOrPartition)
	wantCode(t, "partition 1 of 1", alterLogDirCode(b.do(alterLogDirRequest(2, dirs[0], "rd", 1))), kerr.UnknownTopicOrPartition)

	b.wantAuthz(alterLogDirRequest(2, other(), "rd", 0), alterLogDirCode,
		authzStep{want: kerr.ClusterAuthorizationFailed},
		authzStep{grants: []grant{clusterGrant(kmsg.ACLOperationDescribe)}, want: kerr.ClusterAuthorizationFailed},
		authzStep{grants: []grant{clusterGrant(kmsg.ACLOperationAlter)}})
}
