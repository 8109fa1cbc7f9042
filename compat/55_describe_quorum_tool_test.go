package compat

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// kafka-metadata-quorum.sh (Kafka 4.4's MetadataQuorumCommand) describes
// samsa's metadata quorum, its etcd cluster: with three brokers on one
// etcd member, the member is the leader and only voter, caught up, and the
// other brokers are observers; DescribeQuorum of another partition is
// UNKNOWN_TOPIC_OR_PARTITION as Kafka answers.
func TestDescribeQuorumTool(t *testing.T) {
	t.Parallel()
	cl := testutil.StartCluster(t, 3, nil)
	addr := cl.Nodes[1].Addr()
	ctx := testCtx(t, 3*time.Minute)
	status := runKafkaTool(t, ctx, "", "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", addr, "describe", "--status")
	for _, re := range []string{
		`ClusterId:\s+\S+`,
		`LeaderId:\s+1\b`,
		`LeaderEpoch:\s+[1-9]`,
		`HighWatermark:\s+[1-9]`,
		`MaxFollowerLag:\s+0\b`,
		`CurrentVoters:\s+\[\{"id": 1,`,
		`CurrentObservers:\s+\[.*"id": 2.*"id": 3|CurrentObservers:\s+\[.*"id": 3.*"id": 2`,
	} {
		if !regexp.MustCompile(re).MatchString(status) {
			t.Errorf("describe --status:\n%s\nwant a match for %s", status, re)
		}
	}
	repl := runKafkaTool(t, ctx, "", "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", addr, "describe", "--replication")
	for _, want := range []string{"Leader", "Observer"} {
		if !strings.Contains(repl, want) {
			t.Errorf("describe --replication:\n%s\nwant %s", repl, want)
		}
	}

	c := admDial(t, addr)
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := c.roundTrip(req, 2).(*kmsg.DescribeQuorumResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 3 {
		t.Errorf("DescribeQuorum of __cluster_metadata-1: %+v, want UNKNOWN_TOPIC_OR_PARTITION", resp)
	}
}
