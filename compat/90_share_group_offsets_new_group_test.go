package compat

// AlterShareGroupOffsets for a group id never seen creates the empty share
// group with those start offsets, as Kafka 4.4 does; the offsets can then
// be described, deleted and set again (kafka-share-groups.sh
// --reset-offsets on a new group), a share consumer starts from them, and
// DeleteGroups deletes the group. The answers are compared with Kafka 4.4's.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// shareOffsetsNewGroup runs the scenario against e and returns what each
// step answered, to be compared.
func shareOffsetsNewGroup(t *testing.T, e shareEnv) []string {
	const topic, group, tooled = "share-new-offsets", "share-new-group", "share-new-tooled"
	e.createTopic(t, topic, 2)
	e.produce(t, topic, 2, 10, 10)
	var out []string
	note := noter(t, &out)
	ctx := testCtx(t, 5*time.Minute)

	alter := func(offsets map[int32]int64) {
		t.Helper()
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range []int32{0, 1} {
			if o, ok := offsets[p]; ok {
				rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
				rp.Partition, rp.StartOffset = p, o
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, e.cl)
		if err != nil {
			t.Fatalf("AlterShareGroupOffsets: %v", err)
		}
		var parts []string
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d:%d", rt.Topic, rp.Partition, rp.ErrorCode))
			}
		}
		note("alter %v: error %d, partitions %v", offsets, resp.ErrorCode, parts)
	}
	describeOffsets := func(g string, named ...int32) {
		t.Helper()
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = g
		if named != nil {
			rg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: named}}
		}
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(ctx, e.cl)
		if err != nil || len(resp.Groups) != 1 {
			t.Fatalf("DescribeShareGroupOffsets: %v %+v", err, resp)
		}
		var parts []string
		for _, rt := range resp.Groups[0].Topics {
			for _, rp := range rt.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d:start %d lag %d error %d", rt.Topic, rp.Partition, rp.StartOffset, rp.Lag, rp.ErrorCode))
			}
		}
		slices.Sort(parts)
		note("describe offsets of %s %v: error %d, partitions %v", g, named, resp.Groups[0].ErrorCode, parts)
	}
	describeGroup := func(g string) {
		t.Helper()
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{g}
		resp, err := req.RequestWith(ctx, e.cl)
		if err != nil || len(resp.Groups) != 1 {
			t.Fatalf("ShareGroupDescribe: %v %+v", err, resp)
		}
		d := resp.Groups[0]
		note("describe %s: error %d, state %q, %d members", g, d.ErrorCode, d.GroupState, len(d.Members))
	}

	// The group coordinator is ready once it answers that the group is
	// not there.
	testutil.Eventually(t, 60*time.Second, func() error {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		resp, err := req.RequestWith(ctx, e.cl)
		if err != nil || len(resp.Groups) != 1 {
			return fmt.Errorf("ShareGroupDescribe: %v", err)
		}
		if c := resp.Groups[0].ErrorCode; c != kerr.GroupIDNotFound.Code {
			return fmt.Errorf("ShareGroupDescribe of a group never seen: error %d", c)
		}
		return nil
	})
	describeOffsets(group)
	describeOffsets(group, 0, 1)
	alter(map[int32]int64{0: 3, 1: 5})
	describeGroup(group)
	describeOffsets(group)

	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt.Topic = topic
	req.Topics = append(req.Topics, dt)
	dresp, err := req.RequestWith(ctx, e.cl)
	if err != nil {
		t.Fatalf("DeleteShareGroupOffsets: %v", err)
	}
	var topics []string
	for _, rt := range dresp.Topics {
		topics = append(topics, fmt.Sprintf("%s:%d", rt.Topic, rt.ErrorCode))
	}
	note("delete offsets: error %d, topics %v", dresp.ErrorCode, topics)
	describeOffsets(group)

	// A share consumer starts where the offsets say.
	alter(map[int32]int64{0: 8, 1: 6})
	l := newRdShareLedger()
	m := startRdShareMember(t, e.bootstrap, group, topic, "from-alter", "accept", l)
	l.awaitRead(t, 6, 90*time.Second)
	testutil.Eventually(t, 60*time.Second, func() error {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = group
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(ctx, e.cl)
		if err != nil || len(resp.Groups) != 1 {
			return fmt.Errorf("DescribeShareGroupOffsets: %v", err)
		}
		n := 0
		for _, rt := range resp.Groups[0].Topics {
			for _, rp := range rt.Partitions {
				if rp.Lag != 0 {
					return fmt.Errorf("%s-%d: lag %d", rt.Topic, rp.Partition, rp.Lag)
				}
				n++
			}
		}
		if n != 2 {
			return fmt.Errorf("%d partitions with state", n)
		}
		return nil
	})
	m.leave()
	l.mu.Lock()
	var reads []string
	for k := range l.reads {
		reads = append(reads, fmt.Sprintf("%d-%d", k[0], k[1]))
	}
	l.mu.Unlock()
	slices.Sort(reads)
	note("the share consumer read %v", reads)

	// kafka-share-groups.sh --reset-offsets on a group never seen.
	tool := kafkaToolIn(t, ctx, strings.Split(e.bootstrap, ",")[0], t.TempDir())
	if o, err := tool("", "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
		"--reset-offsets", "--group", tooled, "--topic", topic, "--to-earliest", "--execute"); err != nil {
		note("kafka-share-groups.sh --reset-offsets on a new group failed: %v", err)
	} else {
		t.Logf("kafka-share-groups.sh --reset-offsets:\n%s", o)
	}
	describeOffsets(tooled)

	for _, g := range []string{group, tooled} {
		dg := kmsg.NewPtrDeleteGroupsRequest()
		dg.Groups = []string{g}
		resp, err := dg.RequestWith(ctx, e.cl)
		if err != nil || len(resp.Groups) != 1 {
			t.Fatalf("DeleteGroups: %v %+v", err, resp)
		}
		note("delete group %s: error %d", g, resp.Groups[0].ErrorCode)
		describeGroup(g)
	}
	return out
}

func TestShareOffsetsNewGroup(t *testing.T) {
	sameAnswers(t, "samsa", shareOffsetsNewGroup(t, newShareEnv(t, shareCluster(t).Addrs()...)), shareOffsetsNewGroupKafka)
}

// shareOffsetsNewGroupKafka is what Apache Kafka 4.4 answered
// (TestShareOffsetsNewGroupKafkaReference).
var shareOffsetsNewGroupKafka = []string{
	"describe offsets of share-new-group []: error 0, partitions []",
	"describe offsets of share-new-group [0 1]: error 0, partitions [share-new-offsets-0:start -1 lag -1 error 0 share-new-offsets-1:start -1 lag -1 error 0]",
	"alter map[0:3 1:5]: error 0, partitions [share-new-offsets-0:0 share-new-offsets-1:0]",
	`describe share-new-group: error 0, state "Empty", 0 members`,
	"describe offsets of share-new-group []: error 0, partitions [share-new-offsets-0:start 3 lag 7 error 0 share-new-offsets-1:start 5 lag 5 error 0]",
	"delete offsets: error 0, topics [share-new-offsets:0]",
	"describe offsets of share-new-group []: error 0, partitions []",
	"alter map[0:8 1:6]: error 0, partitions [share-new-offsets-0:0 share-new-offsets-1:0]",
	"the share consumer read [0-8 0-9 1-6 1-7 1-8 1-9]",
	"describe offsets of share-new-tooled []: error 0, partitions [share-new-offsets-0:start 0 lag 10 error 0 share-new-offsets-1:start 0 lag 10 error 0]",
	"delete group share-new-group: error 0",
	`describe share-new-group: error 69, state "", 0 members`,
	"delete group share-new-tooled: error 0",
	`describe share-new-tooled: error 69, state "", 0 members`,
}

// TestShareOffsetsNewGroupKafkaReference runs the scenario against Apache
// Kafka 4.4 and checks shareOffsetsNewGroupKafka is what it answers.
func TestShareOffsetsNewGroupKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	sameAnswers(t, "Kafka 4.4", shareOffsetsNewGroup(t, newShareEnv(t, kb.Addr)), shareOffsetsNewGroupKafka)
}

// shareKnownTopicNewPartition: offsets altered for partition 0 only of a
// new group, then a share consumer (share.auto.offset.reset latest, the
// default): partition 0 starts where the alter said, and partition 1, new
// to the group on a topic it knows, at offset 0 (KAFKA-20742), so its
// records produced before are read too.
func shareKnownTopicNewPartition(t *testing.T, e shareEnv) []string {
	const topic, group = "share-known-topic", "share-known-group"
	e.createTopic(t, topic, 2)
	e.produce(t, topic, 2, 10, 10)
	ctx := testCtx(t, 3*time.Minute)
	var out []string
	testutil.Eventually(t, 60*time.Second, func() error { // the coordinator may still load
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		rp.Partition, rp.StartOffset = 0, 8
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, e.cl)
		if err != nil {
			return err
		}
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			return fmt.Errorf("AlterShareGroupOffsets: %+v", resp)
		}
		return nil
	})
	l := newRdShareLedger()
	startRdShareMember(t, e.bootstrap, group, topic, "known", "accept", l)
	l.awaitRead(t, 12, 90*time.Second)
	awaitNoShareLag(t, e.cl, group, 2)
	l.mu.Lock()
	var reads []string
	for k := range l.reads {
		reads = append(reads, fmt.Sprintf("%d-%d", k[0], k[1]))
	}
	l.mu.Unlock()
	slices.Sort(reads)
	out = append(out, fmt.Sprintf("the share consumer read %v", reads))
	return out
}

var shareKnownTopicNewPartitionKafka = []string{
	"the share consumer read [0-8 0-9 1-0 1-1 1-2 1-3 1-4 1-5 1-6 1-7 1-8 1-9]",
}

func TestShareKnownTopicNewPartition(t *testing.T) {
	sameAnswers(t, "samsa", shareKnownTopicNewPartition(t, newShareEnv(t, shareCluster(t).Addrs()...)), shareKnownTopicNewPartitionKafka)
}

func TestShareKnownTopicNewPartitionKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	sameAnswers(t, "Kafka 4.4", shareKnownTopicNewPartition(t, newShareEnv(t, kb.Addr)), shareKnownTopicNewPartitionKafka)
}
