package compat

// Admin APIs through franz-go's kadm (and raw kmsg requests where a field or
// version must be set by hand), checked against what Apache Kafka answers.

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// admBrokerOverrides are the properties of the broker most admin tests share:
// auto-creation off, and a static log.segment.bytes so that topic configs can
// show the STATIC_BROKER_CONFIG source.
var admBrokerOverrides = map[string]string{
	"auto.create.topics.enable":  "false",
	"num.partitions":             "4",
	"default.replication.factor": "1",
	"log.segment.bytes":          "1048576",
}

// TestAdmin runs the admin API checks against one broker; the subtests use
// their own topics. They run one after another: concurrent topic creation
// is TestAdminConcurrentCreates' subject, so it does not make these flaky.
func TestAdmin(t *testing.T) {
	t.Parallel()
	n := admBroker(t, admBrokerOverrides)
	addr := n.Addr()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, string)
	}{
		{"CreateTopics", admTestCreateTopics},
		{"CreateTopicsErrors", admTestCreateTopicsErrors},
		{"CreateTopicsAssignment", admTestCreateTopicsAssignment},
		{"DeleteAndRecreate", admTestDeleteAndRecreate},
		{"TopicIDs", admTestTopicIDs},
		{"CreatePartitions", admTestCreatePartitions},
		{"DescribeConfigsTopic", admTestDescribeConfigsTopic},
		{"DescribeConfigsBroker", admTestDescribeConfigsBroker},
		{"AlterConfigs", admTestAlterConfigs},
		{"IncrementalAlterConfigs", admTestIncrementalAlterConfigs},
		{"DescribeCluster", admTestDescribeCluster},
		{"AutoCreateOff", admTestAutoCreateOff},
		{"OffsetForLeaderEpoch", admTestOffsetForLeaderEpoch},
		{"ApiVersions", admTestApiVersions},
		{"LogAppendTime", admTestLogAppendTime},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, addr) })
	}
}

func admTestCreateTopics(t *testing.T, addr string) {
	adm, cl := admAdmin(t, addr)
	topic := admTopic("adm-create")
	r := admCreate(t, adm, topic, 3, 1, map[string]*string{
		"retention.ms":   kadm.StringPtr("3600000"),
		"cleanup.policy": kadm.StringPtr("compact"),
	})
	if r.ID == (kadm.TopicID{}) {
		t.Errorf("CreateTopics: topic id is zero")
	}
	if r.NumPartitions != 3 || r.ReplicationFactor != 1 {
		t.Errorf("CreateTopics: partitions %d rf %d, want 3 and 1", r.NumPartitions, r.ReplicationFactor)
	}
	// v5+: the response carries the topic's configs, overrides with source
	// DYNAMIC_TOPIC_CONFIG.
	if c, ok := r.Configs["retention.ms"]; !ok || c.MaybeValue() != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("CreateTopics response config retention.ms = %+v (present %v), want 3600000 from DYNAMIC_TOPIC_CONFIG", c, ok)
	}
	if c, ok := r.Configs["cleanup.policy"]; !ok || c.MaybeValue() != "compact" {
		t.Errorf("CreateTopics response config cleanup.policy = %+v (present %v), want compact", c, ok)
	}

	md := admMetadata(t, cl, topic)
	mt, ok := admMetaTopic(md, topic)
	if !ok {
		t.Fatalf("metadata: topic %s missing: %+v", topic, md.Topics)
	}
	if mt.ErrorCode != 0 {
		t.Fatalf("metadata: topic error %v", kerr.ErrorForCode(mt.ErrorCode))
	}
	if mt.TopicID != r.ID {
		t.Errorf("metadata topic id %x, CreateTopics said %x", mt.TopicID, r.ID)
	}
	if len(mt.Partitions) != 3 {
		t.Fatalf("metadata: %d partitions, want 3", len(mt.Partitions))
	}
	seen := map[int32]bool{}
	for _, p := range mt.Partitions {
		seen[p.Partition] = true
		if p.ErrorCode != 0 || p.Leader != 1 || !slices.Equal(p.Replicas, []int32{1}) || !slices.Equal(p.ISR, []int32{1}) {
			t.Errorf("metadata partition %d: err %d leader %d replicas %v isr %v; want leader 1, replicas/isr [1]",
				p.Partition, p.ErrorCode, p.Leader, p.Replicas, p.ISR)
		}
		if p.LeaderEpoch != 0 {
			t.Errorf("metadata partition %d: leader epoch %d, want 0 for a new topic", p.Partition, p.LeaderEpoch)
		}
	}
	if !seen[0] || !seen[1] || !seen[2] {
		t.Errorf("metadata partitions %v, want 0,1,2", seen)
	}

	cfgs := admTopicConfigs(t, adm, topic)
	admWantConfig(t, cfgs, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	admWantConfig(t, cfgs, "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig)

	// The topic works: a record goes to partition 2 and comes back.
	admProduce(t, cl, &kgo.Record{Topic: topic, Partition: 2, Key: []byte("k"), Value: []byte("v")})

	// validate_only: the answer a real create would get, and nothing created.
	vtopic := admTopic("adm-validate")
	vr, err := adm.ValidateCreateTopics(admCtx(t, admTimeout), 5, 1, nil, vtopic)
	if err != nil {
		t.Fatalf("ValidateCreateTopics: %v", err)
	}
	if e := vr[vtopic].Err; e != nil {
		t.Fatalf("ValidateCreateTopics %s: %v", vtopic, e)
	}
	if vr[vtopic].NumPartitions != 5 {
		t.Errorf("ValidateCreateTopics: NumPartitions %d, want 5", vr[vtopic].NumPartitions)
	}
	md = admMetadata(t, cl, vtopic)
	if mt, ok := admMetaTopic(md, vtopic); !ok || mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("after validate_only: metadata for %s = %+v, want UNKNOWN_TOPIC_OR_PARTITION", vtopic, mt)
	}
	// validate_only still validates: an existing topic, a bad config.
	vr, err = adm.ValidateCreateTopics(admCtx(t, admTimeout), 1, 1, nil, topic)
	if err != nil {
		t.Fatalf("ValidateCreateTopics: %v", err)
	}
	if e := vr[topic].Err; !errors.Is(e, kerr.TopicAlreadyExists) {
		t.Errorf("validate_only of an existing topic: %v, want TOPIC_ALREADY_EXISTS", e)
	}
	vr, err = adm.ValidateCreateTopics(admCtx(t, admTimeout), 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("soon")}, vtopic)
	if err != nil {
		t.Fatalf("ValidateCreateTopics: %v", err)
	}
	if e := vr[vtopic].Err; !errors.Is(e, kerr.InvalidConfig) {
		t.Errorf("validate_only with retention.ms=soon: %v, want INVALID_CONFIG", e)
	}

	// A second create of the same name.
	resps, err := adm.CreateTopics(admCtx(t, admTimeout), 3, 1, nil, topic)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if e := resps[topic].Err; !errors.Is(e, kerr.TopicAlreadyExists) {
		t.Errorf("second CreateTopics: %v, want TOPIC_ALREADY_EXISTS", e)
	}

	// -1/-1 (KIP-464) takes num.partitions (4) and default.replication.factor.
	dtopic := admTopic("adm-defaults")
	dr := admCreate(t, adm, dtopic, -1, -1, nil)
	if dr.NumPartitions != 4 || dr.ReplicationFactor != 1 {
		t.Errorf("CreateTopics -1/-1: partitions %d rf %d, want 4 (num.partitions) and 1", dr.NumPartitions, dr.ReplicationFactor)
	}
	md = admMetadata(t, cl, dtopic)
	if mt, ok := admMetaTopic(md, dtopic); !ok || len(mt.Partitions) != 4 {
		t.Errorf("metadata for %s: %d partitions, want 4", dtopic, len(mt.Partitions))
	}
}

// admCreateOne sends a raw CreateTopics of rt alone and returns its answer.
func admCreateOne(t *testing.T, cl *kgo.Client, rt kmsg.CreateTopicsRequestTopic) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(admCtx(t, admTimeout), cl)
	if err != nil {
		t.Fatalf("CreateTopics %q: %v", rt.Topic, err)
	}
	if len(resp.Topics) != 1 {
		t.Fatalf("CreateTopics %q: %d topics in the response", rt.Topic, len(resp.Topics))
	}
	return resp.Topics[0]
}

func admTestCreateTopicsErrors(t *testing.T, addr string) {
	_, cl := admAdmin(t, addr)
	create := func(name string, partitions int32, rf int16, configs map[string]string) kmsg.CreateTopicsResponseTopic {
		t.Helper()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			rt.Configs = append(rt.Configs, c)
		}
		return admCreateOne(t, cl, rt)
	}
	for _, name := range []string{"bad name!", "..", ".", strings.Repeat("x", 250), "slash/topic", "ünïcode"} {
		st := create(name, 1, 1, nil)
		if err := kerr.ErrorForCode(st.ErrorCode); !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("CreateTopics %q: %v, want INVALID_TOPIC_EXCEPTION", name, err)
		}
	}
	// A 249-character name is the longest Kafka allows.
	long := admTopic("adm-long")
	long += strings.Repeat("y", 249-len(long))
	if st := create(long, 1, 1, nil); st.ErrorCode != 0 {
		t.Errorf("CreateTopics with a 249-character name: %v", kerr.ErrorForCode(st.ErrorCode))
	}

	cases := []struct {
		what       string
		partitions int32
		rf         int16
		configs    map[string]string
		want       error
	}{
		{"rf 3 on one broker", 1, 3, nil, kerr.InvalidReplicationFactor},
		{"rf 0", 1, 0, nil, kerr.InvalidReplicationFactor},
		{"0 partitions", 0, 1, nil, kerr.InvalidPartitions},
		{"-2 partitions", -2, 1, nil, kerr.InvalidPartitions},
		{"retention.ms=abc", 1, 1, map[string]string{"retention.ms": "abc"}, kerr.InvalidConfig},
		{"cleanup.policy=shred", 1, 1, map[string]string{"cleanup.policy": "shred"}, kerr.InvalidConfig},
		{"unknown config key", 1, 1, map[string]string{"no.such.config": "1"}, kerr.InvalidConfig},
	}
	for _, c := range cases {
		name := admTopic("adm-err")
		st := create(name, c.partitions, c.rf, c.configs)
		if err := kerr.ErrorForCode(st.ErrorCode); !errors.Is(err, c.want) {
			t.Errorf("CreateTopics with %s: %v, want %v", c.what, err, c.want)
		}
		md := admMetadata(t, cl, name)
		if mt, ok := admMetaTopic(md, name); !ok || mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("after a failed create (%s) the topic exists: %+v", c.what, mt)
		}
	}
}

// admTestCreateTopicsAssignment creates topics with explicit replica
// assignments through a raw CreateTopics request.
func admTestCreateTopicsAssignment(t *testing.T, addr string) {
	_, cl := admAdmin(t, addr)
	create := func(name string, partitions int32, rf int16, assignment [][]int32) kmsg.CreateTopicsResponseTopic {
		t.Helper()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
		for p, rs := range assignment {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), rs
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		return admCreateOne(t, cl, rt)
	}

	topic := admTopic("adm-assign")
	st := create(topic, -1, -1, [][]int32{{1}, {1}, {1}})
	if st.ErrorCode != 0 {
		t.Fatalf("CreateTopics with an assignment: %v %v", kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage)
	}
	if st.NumPartitions != 3 || st.ReplicationFactor != 1 {
		t.Errorf("CreateTopics with an assignment: partitions %d rf %d, want 3 and 1", st.NumPartitions, st.ReplicationFactor)
	}
	md := admMetadata(t, cl, topic)
	mt, _ := admMetaTopic(md, topic)
	if len(mt.Partitions) != 3 {
		t.Fatalf("metadata: %d partitions, want 3", len(mt.Partitions))
	}
	for _, p := range mt.Partitions {
		if !slices.Equal(p.Replicas, []int32{1}) || p.Leader != 1 {
			t.Errorf("partition %d: replicas %v leader %d, want [1] and 1", p.Partition, p.Replicas, p.Leader)
		}
	}

	for _, c := range []struct {
		what       string
		partitions int32
		rf         int16
		assignment [][]int32
		want       error
	}{
		{"an unregistered broker", -1, -1, [][]int32{{1}, {7}}, kerr.InvalidReplicaAssignment},
		{"a duplicate replica", -1, -1, [][]int32{{1, 1}}, kerr.InvalidReplicaAssignment},
		{"an empty replica list", -1, -1, [][]int32{{}}, kerr.InvalidReplicaAssignment},
		{"numPartitions also set", 1, -1, [][]int32{{1}}, kerr.InvalidRequest},
	} {
		name := admTopic("adm-assign-err")
		st := create(name, c.partitions, c.rf, c.assignment)
		if err := kerr.ErrorForCode(st.ErrorCode); !errors.Is(err, c.want) {
			t.Errorf("assignment with %s: %v, want %v", c.what, err, c.want)
		}
	}
}

func admTestDeleteAndRecreate(t *testing.T, addr string) {
	adm, cl := admAdmin(t, addr)
	topic := admTopic("adm-delete")
	first := admCreate(t, adm, topic, 2, 1, nil)
	for i := range 3 {
		admProduce(t, cl, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte("before delete")})
	}

	dr, err := adm.DeleteTopics(admCtx(t, admTimeout), topic)
	if err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	if e := dr[topic].Err; e != nil {
		t.Fatalf("DeleteTopics %s: %v (%s)", topic, e, dr[topic].ErrMessage)
	}
	var last kmsg.MetadataResponseTopic
	testutil.Eventually(t, 10*time.Second, func() error {
		md := admMetadata(t, cl, topic)
		mt, ok := admMetaTopic(md, topic)
		last = mt
		if !ok || mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			return fmt.Errorf("metadata after delete: %+v", last)
		}
		return nil
	})

	// Deleting it again: UNKNOWN_TOPIC_OR_PARTITION.
	dr, err = adm.DeleteTopics(admCtx(t, admTimeout), topic)
	if err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	if e := dr[topic].Err; !errors.Is(e, kerr.UnknownTopicOrPartition) {
		t.Errorf("second DeleteTopics: %v, want UNKNOWN_TOPIC_OR_PARTITION", e)
	}
	if e := admDeleteOne(t, adm, admTopic("adm-never-existed")); !errors.Is(e, kerr.UnknownTopicOrPartition) {
		t.Errorf("DeleteTopics of a topic that never existed: %v, want UNKNOWN_TOPIC_OR_PARTITION", e)
	}

	// Re-created: a new, non-zero id, and none of the old records.
	var second kadm.CreateTopicResponse
	testutil.Eventually(t, 10*time.Second, func() error {
		resps, err := adm.CreateTopics(admCtx(t, admTimeout), 2, 1, nil, topic)
		if err != nil {
			return err
		}
		second = resps[topic]
		return second.Err
	})
	if second.ID == (kadm.TopicID{}) || second.ID == first.ID {
		t.Errorf("re-created topic id %v, first id %v: want a new non-zero id", second.ID, first.ID)
	}
	md := admMetadata(t, cl, topic)
	if mt, _ := admMetaTopic(md, topic); mt.TopicID != second.ID {
		t.Errorf("metadata id %x after re-create, want %x", mt.TopicID, second.ID)
	}
	ends, err := adm.ListEndOffsets(admCtx(t, admTimeout), topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	for p := range int32(2) {
		lo, ok := ends.Lookup(topic, p)
		if !ok || lo.Err != nil || lo.Offset != 0 {
			t.Errorf("re-created %s/%d: end offset %+v, want 0", topic, p, lo)
		}
	}
	// Produce to the new topic with a fresh client (the old one may cache
	// the old id): offsets restart at 0.
	cl2 := admClient(t, addr)
	rec := &kgo.Record{Topic: topic, Partition: 0, Value: []byte("after re-create")}
	admProduce(t, cl2, rec)
	if rec.Offset != 0 {
		t.Errorf("first record after re-create at offset %d, want 0", rec.Offset)
	}
	got := admConsume(t, addr, topic, []int32{0}, 1)
	if string(got[0].Value) != "after re-create" || got[0].Offset != 0 {
		t.Errorf("consumed %q at %d, want %q at 0", got[0].Value, got[0].Offset, "after re-create")
	}
}

// admTestTopicIDs looks a topic up and deletes it by id (Metadata v12,
// DeleteTopics v6).
func admTestTopicIDs(t *testing.T, addr string) {
	adm, cl := admAdmin(t, addr)
	topic := admTopic("adm-ids")
	id := admCreate(t, adm, topic, 1, 1, nil).ID
	c := admDial(t, addr)

	lookup := func(id [16]byte) kmsg.MetadataResponseTopic {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req, 12).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 {
			t.Fatalf("Metadata v12 by id: %d topics", len(resp.Topics))
		}
		return resp.Topics[0]
	}
	mt := lookup(id)
	if mt.ErrorCode != 0 || mt.Topic == nil || *mt.Topic != topic || mt.TopicID != id {
		t.Errorf("Metadata v12 by id: err %d name %v id %x, want %s", mt.ErrorCode, mt.Topic, mt.TopicID, topic)
	}
	unknown := [16]byte{0xde, 0xad, 0xbe, 0xef, 1}
	if mt := lookup(unknown); mt.ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("Metadata v12 by an unknown id: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(mt.ErrorCode))
	}

	del := func(id [16]byte) kmsg.DeleteTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.TopicID = id
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req, 6).(*kmsg.DeleteTopicsResponse)
		if len(resp.Topics) != 1 {
			t.Fatalf("DeleteTopics v6: %d topics", len(resp.Topics))
		}
		return resp.Topics[0]
	}
	if dt := del(unknown); dt.ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("DeleteTopics v6 of an unknown id: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(dt.ErrorCode))
	}
	dt := del(id)
	if dt.ErrorCode != 0 || dt.TopicID != id || dt.Topic == nil || *dt.Topic != topic {
		t.Errorf("DeleteTopics v6 by id: err %v name %v id %x, want %s deleted", kerr.ErrorForCode(dt.ErrorCode), dt.Topic, dt.TopicID, topic)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		md := admMetadata(t, cl, topic)
		if mt, ok := admMetaTopic(md, topic); !ok || mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			return fmt.Errorf("metadata after delete by id: %+v", mt)
		}
		return nil
	})
}

func admDeleteOne(t *testing.T, adm *kadm.Client, topic string) error {
	t.Helper()
	dr, err := adm.DeleteTopics(admCtx(t, admTimeout), topic)
	if err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	return dr[topic].Err
}

func admTestCreatePartitions(t *testing.T, addr string) {
	adm, cl := admAdmin(t, addr)
	topic := admTopic("adm-parts")
	admCreate(t, adm, topic, 2, 1, nil)
	admProduce(t, cl, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("p1")})

	update := func(set int, topics ...string) kadm.CreatePartitionsResponses {
		t.Helper()
		r, err := adm.UpdatePartitions(admCtx(t, admTimeout), set, topics...)
		if err != nil {
			t.Fatalf("UpdatePartitions: %v", err)
		}
		return r
	}
	if e := update(5, topic)[topic].Err; e != nil {
		t.Fatalf("grow to 5 partitions: %v", e)
	}
	md := admMetadata(t, cl, topic)
	mt, _ := admMetaTopic(md, topic)
	if len(mt.Partitions) != 5 {
		t.Fatalf("after growing: %d partitions, want 5", len(mt.Partitions))
	}
	for _, p := range mt.Partitions {
		if p.Leader != 1 || p.ErrorCode != 0 {
			t.Errorf("partition %d after growing: leader %d err %d", p.Partition, p.Leader, p.ErrorCode)
		}
	}
	// The new partitions take writes; the old one keeps its data.
	cl2 := admClient(t, addr)
	rec := &kgo.Record{Topic: topic, Partition: 4, Value: []byte("p4")}
	admProduce(t, cl2, rec)
	if rec.Offset != 0 {
		t.Errorf("first record on new partition 4 at offset %d", rec.Offset)
	}
	ends, err := adm.ListEndOffsets(admCtx(t, admTimeout), topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	if lo, _ := ends.Lookup(topic, 1); lo.Offset != 1 {
		t.Errorf("partition 1 end offset %d after growing, want 1", lo.Offset)
	}

	for _, c := range []struct {
		what string
		set  int
	}{{"shrink to 3", 3}, {"same count (5)", 5}} {
		e := update(c.set, topic)[topic].Err
		if !errors.Is(e, kerr.InvalidPartitions) {
			t.Errorf("%s: %v, want INVALID_PARTITIONS", c.what, e)
		}
	}
	md = admMetadata(t, cl, topic)
	if mt, _ := admMetaTopic(md, topic); len(mt.Partitions) != 5 {
		t.Errorf("after refused changes: %d partitions, want 5", len(mt.Partitions))
	}
	unknown := admTopic("adm-parts-unknown")
	if e := update(3, unknown)[unknown].Err; !errors.Is(e, kerr.UnknownTopicOrPartition) {
		t.Errorf("CreatePartitions on an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", e)
	}

	// validate_only grows nothing.
	vr, err := adm.ValidateUpdatePartitions(admCtx(t, admTimeout), 8, topic)
	if err != nil {
		t.Fatalf("ValidateUpdatePartitions: %v", err)
	}
	if e := vr[topic].Err; e != nil {
		t.Errorf("validate-only grow: %v", e)
	}
	md = admMetadata(t, cl, topic)
	if mt, _ := admMetaTopic(md, topic); len(mt.Partitions) != 5 {
		t.Errorf("after a validate-only grow: %d partitions, want 5", len(mt.Partitions))
	}
}

// admTopicConfigs describes one topic's configs (with synonyms).
func admTopicConfigs(t *testing.T, adm *kadm.Client, topic string) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(admCtx(t, admTimeout), topic)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs: %v", err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs %s: %v", topic, err)
	}
	if rc.Err != nil {
		t.Fatalf("DescribeTopicConfigs %s: %v (%s)", topic, rc.Err, rc.ErrMessage)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		if _, dup := out[c.Key]; dup {
			t.Errorf("DescribeConfigs lists %s twice", c.Key)
		}
		out[c.Key] = c
	}
	return out
}

// admWantConfig checks one config's value and source.
func admWantConfig(t *testing.T, cfgs map[string]kadm.Config, key, value string, source kmsg.ConfigSource) kadm.Config {
	t.Helper()
	c, ok := cfgs[key]
	if !ok {
		t.Errorf("config %s missing", key)
		return c
	}
	if c.MaybeValue() != value || c.Source != source {
		t.Errorf("config %s = %q from %v, want %q from %v", key, c.MaybeValue(), c.Source, value, source)
	}
	return c
}

// admHasSynonym reports whether c lists the synonym name=value from source.
func admHasSynonym(c kadm.Config, name, value string, source kmsg.ConfigSource) bool {
	for _, s := range c.Synonyms {
		if s.Key == name && s.Value != nil && *s.Value == value && s.Source == source {
			return true
		}
	}
	return false
}

func admSynonyms(c kadm.Config) string {
	var parts []string
	for _, s := range c.Synonyms {
		v := "<nil>"
		if s.Value != nil {
			v = *s.Value
		}
		parts = append(parts, fmt.Sprintf("%v:%s=%s", s.Source, s.Key, v))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func admTestDescribeConfigsTopic(t *testing.T, addr string) {
	adm, _ := admAdmin(t, addr)
	over := admTopic("adm-describe-over")
	admCreate(t, adm, over, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")})
	plain := admTopic("adm-describe-plain")
	admCreate(t, adm, plain, 1, 1, nil)

	cfgs := admTopicConfigs(t, adm, over)
	// A topic override: DYNAMIC_TOPIC_CONFIG first. Kafka's broker synonyms
	// of retention.ms start at log.retention.ms (ConfigHelper.configSynonyms
	// drops every synonym before the first one named log.retention.ms, which
	// has no default), so log.retention.hours=168 is not listed.
	c := admWantConfig(t, cfgs, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	if len(c.Synonyms) != 1 || c.Synonyms[0].Key != "retention.ms" || c.Synonyms[0].Source != kmsg.ConfigSourceDynamicTopicConfig ||
		c.Synonyms[0].Value == nil || *c.Synonyms[0].Value != "3600000" {
		t.Errorf("retention.ms synonyms %s: want exactly DYNAMIC_TOPIC_CONFIG:retention.ms=3600000", admSynonyms(c))
	}
	// Set on the broker (log.segment.bytes=1048576): STATIC_BROKER_CONFIG.
	c = admWantConfig(t, cfgs, "segment.bytes", "1048576", kmsg.ConfigSourceStaticBrokerConfig)
	if !admHasSynonym(c, "log.segment.bytes", "1048576", kmsg.ConfigSourceStaticBrokerConfig) ||
		!admHasSynonym(c, "log.segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig) {
		t.Errorf("segment.bytes synonyms %s: want STATIC_BROKER_CONFIG:log.segment.bytes=1048576 and DEFAULT_CONFIG:log.segment.bytes=1073741824", admSynonyms(c))
	}
	// Defaults.
	c = admWantConfig(t, cfgs, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)
	if !admHasSynonym(c, "log.cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig) {
		t.Errorf("cleanup.policy synonyms %s: want DEFAULT_CONFIG:log.cleanup.policy=delete", admSynonyms(c))
	}
	c = admWantConfig(t, cfgs, "max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig)
	if !admHasSynonym(c, "message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig) {
		t.Errorf("max.message.bytes synonyms %s: want DEFAULT_CONFIG:message.max.bytes=1048588", admSynonyms(c))
	}
	admWantConfig(t, cfgs, "message.timestamp.type", "CreateTime", kmsg.ConfigSourceDefaultConfig)
	admWantConfig(t, cfgs, "min.insync.replicas", "1", kmsg.ConfigSourceDefaultConfig)
	admWantConfig(t, cfgs, "retention.bytes", "-1", kmsg.ConfigSourceDefaultConfig)
	admWantConfig(t, cfgs, "compression.type", "producer", kmsg.ConfigSourceDefaultConfig)

	cfgs = admTopicConfigs(t, adm, plain)
	// No override: the value comes from log.retention.hours' default, the
	// source is DEFAULT_CONFIG and (Kafka's quirk above) no synonym is listed.
	c = admWantConfig(t, cfgs, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)
	if len(c.Synonyms) != 0 {
		t.Errorf("retention.ms synonyms %s: want none, as Kafka reports", admSynonyms(c))
	}
	c = admWantConfig(t, cfgs, "segment.bytes", "1048576", kmsg.ConfigSourceStaticBrokerConfig)
	if len(c.Synonyms) != 2 || c.Synonyms[0].Source != kmsg.ConfigSourceStaticBrokerConfig || c.Synonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("segment.bytes synonyms %s: want STATIC_BROKER_CONFIG then DEFAULT_CONFIG log.segment.bytes", admSynonyms(c))
	}

	// Named keys only, raw request at v1 (librdkafka) and v4.
	_, cl := admAdmin(t, addr)
	for _, v := range []int16{1, 4} {
		c := admDial(t, addr)
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, over
		rr.ConfigNames = []string{"retention.ms", "cleanup.policy"}
		req.Resources = append(req.Resources, rr)
		resp := c.roundTrip(req, v).(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("DescribeConfigs v%d: %+v", v, resp.Resources)
		}
		var names []string
		for _, rc := range resp.Resources[0].Configs {
			names = append(names, rc.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"cleanup.policy", "retention.ms"}) {
			t.Errorf("DescribeConfigs v%d for two named keys returned %v", v, names)
		}
	}
	_ = cl

	// An unknown topic.
	rcs, err := adm.DescribeTopicConfigs(admCtx(t, admTimeout), admTopic("adm-describe-unknown"))
	if err != nil {
		t.Fatalf("DescribeTopicConfigs: %v", err)
	}
	if len(rcs) != 1 || !errors.Is(rcs[0].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("DescribeConfigs of an unknown topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION", rcs)
	}
}

func admTestDescribeConfigsBroker(t *testing.T, addr string) {
	adm, _ := admAdmin(t, addr)
	rcs, err := adm.DescribeBrokerConfigs(admCtx(t, admTimeout), 1)
	if err != nil {
		t.Fatalf("DescribeBrokerConfigs: %v", err)
	}
	if len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("DescribeBrokerConfigs 1: %+v", rcs)
	}
	cfgs := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		cfgs[c.Key] = c
	}
	admWantConfig(t, cfgs, "log.segment.bytes", "1048576", kmsg.ConfigSourceStaticBrokerConfig)
	admWantConfig(t, cfgs, "num.partitions", "4", kmsg.ConfigSourceStaticBrokerConfig)
	admWantConfig(t, cfgs, "auto.create.topics.enable", "false", kmsg.ConfigSourceStaticBrokerConfig)
	admWantConfig(t, cfgs, "log.retention.hours", "168", kmsg.ConfigSourceDefaultConfig)
	admWantConfig(t, cfgs, "message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig)
	c := cfgs["log.segment.bytes"]
	if !admHasSynonym(c, "log.segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig) {
		t.Errorf("broker log.segment.bytes synonyms %s: want DEFAULT_CONFIG:log.segment.bytes=1073741824", admSynonyms(c))
	}
	// Another broker's id, or a name that is no id: INVALID_REQUEST, as
	// Kafka's ConfigHelper answers.
	for _, name := range []string{"2", "one"} {
		conn := admDial(t, addr)
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
		req.Resources = append(req.Resources, rr)
		resp := conn.roundTrip(req, 4).(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("DescribeConfigs of broker %q: %+v, want INVALID_REQUEST", name, resp.Resources)
		}
	}
}

func admTestAlterConfigs(t *testing.T, addr string) {
	adm, _ := admAdmin(t, addr)
	topic := admTopic("adm-alter")
	admCreate(t, adm, topic, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})

	alter := func(validate bool, cs ...kadm.AlterConfig) error {
		t.Helper()
		f := adm.AlterTopicConfigsState
		if validate {
			f = adm.ValidateAlterTopicConfigsState
		}
		rs, err := f(admCtx(t, admTimeout), cs, topic)
		if err != nil {
			t.Fatalf("AlterConfigs: %v", err)
		}
		r, err := rs.On(topic, nil)
		if err != nil {
			t.Fatalf("AlterConfigs: no answer for %s: %v", topic, err)
		}
		return r.Err
	}

	// AlterConfigs replaces the whole set of overrides.
	if err := alter(false, kadm.AlterConfig{Name: "retention.ms", Value: kadm.StringPtr("5000")},
		kadm.AlterConfig{Name: "segment.bytes", Value: kadm.StringPtr("2097152")}); err != nil {
		t.Fatalf("AlterConfigs: %v", err)
	}
	cfgs := admTopicConfigs(t, adm, topic)
	admWantConfig(t, cfgs, "retention.ms", "5000", kmsg.ConfigSourceDynamicTopicConfig)
	admWantConfig(t, cfgs, "segment.bytes", "2097152", kmsg.ConfigSourceDynamicTopicConfig)
	admWantConfig(t, cfgs, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)

	if err := alter(false, kadm.AlterConfig{Name: "cleanup.policy", Value: kadm.StringPtr("compact")}); err != nil {
		t.Fatalf("AlterConfigs: %v", err)
	}
	cfgs = admTopicConfigs(t, adm, topic)
	admWantConfig(t, cfgs, "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig)
	admWantConfig(t, cfgs, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)
	admWantConfig(t, cfgs, "segment.bytes", "1048576", kmsg.ConfigSourceStaticBrokerConfig)

	// validate_only changes nothing.
	if err := alter(true, kadm.AlterConfig{Name: "retention.ms", Value: kadm.StringPtr("1000")}); err != nil {
		t.Fatalf("validate-only AlterConfigs: %v", err)
	}
	cfgs = admTopicConfigs(t, adm, topic)
	admWantConfig(t, cfgs, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)
	admWantConfig(t, cfgs, "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig)

	// Refused changes leave the overrides as they were.
	for _, c := range []struct {
		what string
		cfg  kadm.AlterConfig
	}{
		{"retention.ms=abc", kadm.AlterConfig{Name: "retention.ms", Value: kadm.StringPtr("abc")}},
		{"segment.bytes=-1", kadm.AlterConfig{Name: "segment.bytes", Value: kadm.StringPtr("-1")}},
		{"an unknown key", kadm.AlterConfig{Name: "no.such.config", Value: kadm.StringPtr("1")}},
	} {
		if err := alter(false, c.cfg); !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("AlterConfigs with %s: %v, want INVALID_CONFIG", c.what, err)
		}
	}
	cfgs = admTopicConfigs(t, adm, topic)
	admWantConfig(t, cfgs, "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig)

	unknown := admTopic("adm-alter-unknown")
	rs, err := adm.AlterTopicConfigsState(admCtx(t, admTimeout), []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("1000")}}, unknown)
	if err != nil {
		t.Fatalf("AlterConfigs: %v", err)
	}
	if r, _ := rs.On(unknown, nil); !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("AlterConfigs on an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
	}
}

func admTestIncrementalAlterConfigs(t *testing.T, addr string) {
	adm, _ := admAdmin(t, addr)
	topic := admTopic("adm-incr")
	admCreate(t, adm, topic, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("7000")})

	alter := func(cs ...kadm.AlterConfig) error {
		t.Helper()
		rs, err := adm.AlterTopicConfigs(admCtx(t, admTimeout), cs, topic)
		if err != nil {
			t.Fatalf("IncrementalAlterConfigs: %v", err)
		}
		r, err := rs.On(topic, nil)
		if err != nil {
			t.Fatalf("IncrementalAlterConfigs: no answer for %s: %v", topic, err)
		}
		return r.Err
	}
	step := func(what string, c kadm.AlterConfig, wantPolicy string, wantSource kmsg.ConfigSource) {
		t.Helper()
		if err := alter(c); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		cfgs := admTopicConfigs(t, adm, topic)
		admWantConfig(t, cfgs, "cleanup.policy", wantPolicy, wantSource)
		// Incremental: the other override stays.
		admWantConfig(t, cfgs, "retention.ms", "7000", kmsg.ConfigSourceDynamicTopicConfig)
	}
	step("SET cleanup.policy=delete", kadm.AlterConfig{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("delete")},
		"delete", kmsg.ConfigSourceDynamicTopicConfig)
	step("APPEND compact", kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
		"delete,compact", kmsg.ConfigSourceDynamicTopicConfig)
	step("APPEND compact again", kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
		"delete,compact", kmsg.ConfigSourceDynamicTopicConfig)
	step("SUBTRACT delete", kadm.AlterConfig{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kadm.StringPtr("delete")},
		"compact", kmsg.ConfigSourceDynamicTopicConfig)
	step("DELETE cleanup.policy", kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "cleanup.policy"},
		"delete", kmsg.ConfigSourceDefaultConfig)
	// APPEND to a list that is only the default starts from the default.
	step("APPEND compact to the default", kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
		"delete,compact", kmsg.ConfigSourceDynamicTopicConfig)

	for _, c := range []struct {
		what string
		cfg  kadm.AlterConfig
	}{
		{"SET retention.ms=abc", kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("abc")}},
		{"SET an unknown key", kadm.AlterConfig{Op: kadm.SetConfig, Name: "no.such.config", Value: kadm.StringPtr("1")}},
		{"APPEND to a non-list config", kadm.AlterConfig{Op: kadm.AppendConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}},
		{"SET cleanup.policy=shred", kadm.AlterConfig{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("shred")}},
	} {
		if err := alter(c.cfg); !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("IncrementalAlterConfigs %s: %v, want INVALID_CONFIG", c.what, err)
		}
	}
	cfgs := admTopicConfigs(t, adm, topic)
	admWantConfig(t, cfgs, "cleanup.policy", "delete,compact", kmsg.ConfigSourceDynamicTopicConfig)
	admWantConfig(t, cfgs, "retention.ms", "7000", kmsg.ConfigSourceDynamicTopicConfig)

	// DELETE retention.ms falls back to the broker's value.
	if err := alter(kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "retention.ms"}); err != nil {
		t.Fatalf("DELETE retention.ms: %v", err)
	}
	cfgs = admTopicConfigs(t, adm, topic)
	admWantConfig(t, cfgs, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)
}

func admTestDescribeCluster(t *testing.T, addr string) {
	_, cl := admAdmin(t, addr)
	md := admMetadata(t, cl)
	if md.ClusterID == nil || *md.ClusterID == "" {
		t.Fatalf("metadata: no cluster id")
	}
	host, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	for v := int16(0); v <= 2; v++ {
		c := admDial(t, addr)
		req := kmsg.NewPtrDescribeClusterRequest()
		if v >= 1 {
			req.EndpointType = 1 // brokers
		}
		resp := c.roundTrip(req, v).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 {
			t.Errorf("DescribeCluster v%d: %v", v, kerr.ErrorForCode(resp.ErrorCode))
			continue
		}
		if resp.ClusterID != *md.ClusterID {
			t.Errorf("DescribeCluster v%d: cluster id %q, metadata says %q", v, resp.ClusterID, *md.ClusterID)
		}
		if resp.ControllerID != 1 {
			t.Errorf("DescribeCluster v%d: controller %d, want 1", v, resp.ControllerID)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Host != host || resp.Brokers[0].Port != int32(port) {
			t.Errorf("DescribeCluster v%d: brokers %+v, want node 1 at %s", v, resp.Brokers, addr)
		}
		if v >= 1 && resp.EndpointType != 1 {
			t.Errorf("DescribeCluster v%d: endpoint type %d, want 1", v, resp.EndpointType)
		}
	}
	if md.ControllerID != 1 || len(md.Brokers) != 1 || md.Brokers[0].NodeID != 1 {
		t.Errorf("metadata: controller %d brokers %+v", md.ControllerID, md.Brokers)
	}
}

func admTestAutoCreateOff(t *testing.T, addr string) {
	topic := admTopic("adm-noauto")
	cl := admClient(t, addr, kgo.AllowAutoTopicCreation(), kgo.UnknownTopicRetries(2), kgo.RecordRetries(3))
	err := cl.ProduceSync(admCtx(t, admTimeout), &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("produce to a missing topic with auto-creation off: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	adm := kadm.NewClient(admClient(t, addr))
	m, err := adm.Metadata(admCtx(t, admTimeout), topic)
	if err != nil {
		t.Fatalf("kadm Metadata: %v", err)
	}
	if td, ok := m.Topics[topic]; !ok || !errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("kadm metadata for %s: %+v, want UNKNOWN_TOPIC_OR_PARTITION", topic, td)
	}
	// A Metadata request that allows creation still creates nothing.
	for _, v := range []int16{1, 4, 12} {
		c := admDial(t, addr)
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = true
		resp := c.roundTrip(req, v).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("Metadata v%d allowing creation, auto-creation off: %+v, want UNKNOWN_TOPIC_OR_PARTITION", v, resp.Topics)
		}
	}
	md := admMetadata(t, admClient(t, addr))
	if _, ok := admMetaTopic(md, topic); ok {
		t.Errorf("topic %s exists after requests with auto-creation off", topic)
	}
}

// TestAdminAutoCreateOn: with auto.create.topics.enable (Kafka's default)
// a producer's Metadata request creates the topic with num.partitions.
func TestAdminAutoCreateOn(t *testing.T) {
	t.Parallel()
	n := admBroker(t, map[string]string{"num.partitions": "3"})
	addr := n.Addr()

	topic := admTopic("adm-auto")
	cl := admClient(t, addr, kgo.AllowAutoTopicCreation())
	recs := []*kgo.Record{
		{Topic: topic, Partition: 0, Value: []byte("a")},
		{Topic: topic, Partition: 2, Value: []byte("c")},
	}
	// The manual partitioner keeps the records where they are put.
	cl2 := admClient(t, addr, kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	admProduce(t, cl2, recs...)
	md := admMetadata(t, cl, topic)
	mt, ok := admMetaTopic(md, topic)
	if !ok || mt.ErrorCode != 0 {
		t.Fatalf("auto-created topic metadata: %+v", mt)
	}
	if len(mt.Partitions) != 3 {
		t.Errorf("auto-created topic has %d partitions, want num.partitions=3", len(mt.Partitions))
	}
	if mt.TopicID == [16]byte{} {
		t.Errorf("auto-created topic has a zero id")
	}
	got := admConsume(t, addr, topic, []int32{0, 1, 2}, 2)
	vals := map[int32]string{}
	for _, r := range got {
		vals[r.Partition] = string(r.Value)
	}
	if vals[0] != "a" || vals[2] != "c" {
		t.Errorf("read back %v", vals)
	}

	// Default kgo (no AllowAutoTopicCreation) with the broker default on:
	// Metadata v4+ sets allow_auto_topic_creation=false, so nothing is made.
	other := admTopic("adm-auto-not-asked")
	md = admMetadata(t, cl, other)
	if mt, ok := admMetaTopic(md, other); !ok || mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("Metadata with allow_auto_topic_creation=false: %+v, want UNKNOWN_TOPIC_OR_PARTITION", mt)
	}
	// Metadata v1-v3 always allow creation (sarama, old clients).
	old := admTopic("adm-auto-v1")
	c := admDial(t, addr)
	testutil.Eventually(t, 10*time.Second, func() error {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(old)
		req.Topics = append(req.Topics, rt)
		resp := c.roundTrip(req, 1).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 {
			return fmt.Errorf("%d topics in response", len(resp.Topics))
		}
		if ec := resp.Topics[0].ErrorCode; ec != 0 {
			// Kafka answers LEADER_NOT_AVAILABLE while the topic is new.
			if ec != kerr.LeaderNotAvailable.Code {
				t.Fatalf("Metadata v1 for a new topic: %v", kerr.ErrorForCode(ec))
			}
			return kerr.ErrorForCode(ec)
		}
		if len(resp.Topics[0].Partitions) != 3 {
			return fmt.Errorf("%d partitions", len(resp.Topics[0].Partitions))
		}
		return nil
	})
	// A bad name is refused, not created.
	bad := "bad topic!"
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(bad)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp := c.roundTrip(req, 12).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("Metadata auto-creating %q: %+v, want INVALID_TOPIC_EXCEPTION", bad, resp.Topics)
	}
}

func admTestOffsetForLeaderEpoch(t *testing.T, addr string) {
	adm, _ := admAdmin(t, addr)
	topic := admTopic("adm-ofle")
	admCreate(t, adm, topic, 2, 1, nil)
	cl := admClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 5 {
		admProduce(t, cl, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(i))})
	}
	type ask struct {
		topic          string
		partition      int32
		currentEpoch   int32
		epoch          int32
		wantErr        error
		wantEpoch      int32
		wantEndOffsets int64
	}
	asks := []ask{
		{topic, 0, -1, 0, nil, 0, 5},
		{topic, 0, 0, 0, nil, 0, 5},
		{topic, 1, -1, 0, nil, 0, 0},
		{topic, 0, -1, 3, nil, -1, -1}, // an epoch above the latest: undefined
		{topic, 0, 5, 0, kerr.UnknownLeaderEpoch, -1, -1},
		{topic, 7, -1, 0, kerr.UnknownTopicOrPartition, -1, -1},
		{"adm-ofle-missing-topic", 0, -1, 0, kerr.UnknownTopicOrPartition, -1, -1},
	}
	for _, v := range []int16{2, 3, 4} {
		c := admDial(t, addr)
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		for _, a := range asks {
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = a.topic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = a.partition, a.currentEpoch, a.epoch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp := c.roundTrip(req, v).(*kmsg.OffsetForLeaderEpochResponse)
		if len(resp.Topics) != len(asks) {
			t.Fatalf("OffsetForLeaderEpoch v%d: %d topics in the answer, want %d", v, len(resp.Topics), len(asks))
		}
		for i, a := range asks {
			rt := resp.Topics[i]
			if rt.Topic != a.topic || len(rt.Partitions) != 1 || rt.Partitions[0].Partition != a.partition {
				t.Errorf("OffsetForLeaderEpoch v%d answer %d: %+v, want %s/%d", v, i, rt, a.topic, a.partition)
				continue
			}
			p := rt.Partitions[0]
			err := kerr.ErrorForCode(p.ErrorCode)
			if a.wantErr != nil {
				if !errors.Is(err, a.wantErr) {
					t.Errorf("OffsetForLeaderEpoch v%d %s/%d current %d epoch %d: %v, want %v", v, a.topic, a.partition, a.currentEpoch, a.epoch, err, a.wantErr)
				}
				continue
			}
			if err != nil || p.LeaderEpoch != a.wantEpoch || p.EndOffset != a.wantEndOffsets {
				t.Errorf("OffsetForLeaderEpoch v%d %s/%d current %d epoch %d: err %v epoch %d end %d, want epoch %d end %d",
					v, a.topic, a.partition, a.currentEpoch, a.epoch, err, p.LeaderEpoch, p.EndOffset, a.wantEpoch, a.wantEndOffsets)
			}
		}
	}
}

// admWantVersions are the ranges ApiVersions must advertise (PROTOCOL.md).
var admWantVersions = map[int16][2]int16{
	0:  {0, 13}, // Produce (v0-2 advertised, refused)
	1:  {4, 18}, // Fetch
	2:  {1, 11}, // ListOffsets
	3:  {0, 13}, // Metadata
	18: {0, 5},  // ApiVersions
	19: {2, 7},  // CreateTopics
	20: {1, 6},  // DeleteTopics
	21: {0, 2},  // DeleteRecords
	22: {0, 5},  // InitProducerId
	23: {2, 4},  // OffsetForLeaderEpoch
	32: {1, 4},  // DescribeConfigs
	33: {0, 2},  // AlterConfigs
	37: {0, 3},  // CreatePartitions
	44: {0, 1},  // IncrementalAlterConfigs
	60: {0, 2},  // DescribeCluster
}

func admCheckApiKeys(t *testing.T, what string, keys []kmsg.ApiVersionsResponseApiKey) {
	t.Helper()
	got := map[int16][2]int16{}
	for _, k := range keys {
		if _, dup := got[k.ApiKey]; dup {
			t.Errorf("%s: key %d listed twice", what, k.ApiKey)
		}
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		if k.MinVersion < 0 || k.MinVersion > k.MaxVersion {
			t.Errorf("%s: key %d (%s) has range %d-%d", what, k.ApiKey, kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion)
		}
		if _, want := admWantVersions[k.ApiKey]; !want {
			kr, ok := kafka44APIs[k.ApiKey]
			if !ok {
				kr, ok = samsaBeyondDefault[k.ApiKey]
			}
			if !ok || k.MaxVersion > kr[1] {
				t.Errorf("%s: key %d (%s) %d-%d is not something Kafka 4.x serves to clients", what, k.ApiKey, kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion)
			}
		}
	}
	for k, want := range admWantVersions {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: key %d (%s) missing, want %d-%d", what, k, kmsg.NameForKey(k), want[0], want[1])
		} else if g != want {
			t.Errorf("%s: key %d (%s) advertised %d-%d, want %d-%d", what, k, kmsg.NameForKey(k), g[0], g[1], want[0], want[1])
		}
	}
}

func admTestApiVersions(t *testing.T, addr string) {
	for v := int16(0); v <= 5; v++ {
		c := admDial(t, addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "samsa-compat", "1.0.0"
		resp := c.roundTrip(req, v).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Errorf("ApiVersions v%d: %v", v, kerr.ErrorForCode(resp.ErrorCode))
			continue
		}
		admCheckApiKeys(t, fmt.Sprintf("ApiVersions v%d", v), resp.ApiKeys)
		if v >= 1 && resp.ThrottleMillis != 0 {
			t.Errorf("ApiVersions v%d: throttle %d", v, resp.ThrottleMillis)
		}
	}
	adm, _ := admAdmin(t, addr)
	bvs, err := adm.ApiVersions(admCtx(t, admTimeout))
	if err != nil {
		t.Fatalf("kadm ApiVersions: %v", err)
	}
	bv, ok := bvs[1]
	if !ok || bv.Err != nil {
		t.Fatalf("kadm ApiVersions for broker 1: %+v", bvs)
	}
	for k, want := range admWantVersions {
		mn, mx, ok := bv.KeyVersions(k)
		if !ok || mn != want[0] || mx != want[1] {
			t.Errorf("kadm ApiVersions key %d: %d-%d (present %v), want %d-%d", k, mn, mx, ok, want[0], want[1])
		}
	}
}

// admTestLogAppendTime: message.timestamp.type=LogAppendTime makes consumers
// see the broker's append time, not the producer's timestamp.
func admTestLogAppendTime(t *testing.T, addr string) {
	adm, cl := admAdmin(t, addr)
	topic := admTopic("adm-lat")
	admCreate(t, adm, topic, 1, 1, map[string]*string{"message.timestamp.type": kadm.StringPtr("LogAppendTime")})
	ctopic := admTopic("adm-ct")
	admCreate(t, adm, ctopic, 1, 1, nil)

	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	before := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	admProduce(t, cl,
		&kgo.Record{Topic: topic, Value: []byte("a"), Timestamp: old},
		&kgo.Record{Topic: topic, Value: []byte("b"), Timestamp: old},
		&kgo.Record{Topic: ctopic, Value: []byte("c"), Timestamp: old},
	)
	after := time.Now().Add(time.Second)
	got := admConsume(t, addr, topic, []int32{0}, 2)
	for _, r := range got {
		if r.Timestamp.Before(before) || r.Timestamp.After(after) {
			t.Errorf("LogAppendTime topic: record %q has timestamp %v, want the append time in [%v, %v]", r.Value, r.Timestamp, before, after)
		}
		if r.Attrs.TimestampType() != 1 {
			t.Errorf("LogAppendTime topic: record %q has timestamp type %d, want 1", r.Value, r.Attrs.TimestampType())
		}
	}
	got = admConsume(t, addr, ctopic, []int32{0}, 1)
	if !got[0].Timestamp.Equal(old) || got[0].Attrs.TimestampType() != 0 {
		t.Errorf("CreateTime topic: timestamp %v type %d, want the producer's %v and type 0", got[0].Timestamp, got[0].Attrs.TimestampType(), old)
	}

	// The produce response carries the append time.
	c := admDial(t, addr)
	resp := c.roundTrip(admProduceReq(topic, 0, 1, admBatch(old.UnixMilli(), admRecord{value: []byte("raw")})), 9)
	p := admProducePartition(t, resp)
	if p.ErrorCode != 0 {
		t.Fatalf("raw produce: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if lat := time.UnixMilli(p.LogAppendTime); lat.Before(before) || lat.After(time.Now().Add(time.Second)) {
		t.Errorf("produce response LogAppendTime %d (%v), want the broker's clock", p.LogAppendTime, lat)
	}
	if p.BaseOffset != 2 {
		t.Errorf("raw produce base offset %d, want 2", p.BaseOffset)
	}
}

// TestAdminConcurrentCreates creates topics from several clients at once: a
// topic whose CreateTopics succeeded must stay in Metadata, and keep its
// records, while other topics are being created.
func TestAdminConcurrentCreates(t *testing.T) {
	t.Parallel()
	n := admBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	addr := n.Addr()
	const workers, perWorker = 8, 5
	var (
		mu      sync.Mutex
		created []string
	)
	errs := make(chan error, workers*perWorker*4)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			adm, cl := admAdmin(t, addr)
			for i := range perWorker {
				topic := admTopic(fmt.Sprintf("adm-conc-%d-%d", w, i))
				resps, err := adm.CreateTopics(admCtx(t, admTimeout), 1, 1, nil, topic)
				if err == nil {
					err = resps[topic].Err
				}
				if err != nil {
					errs <- fmt.Errorf("create %s: %w", topic, err)
					return
				}
				// Kafka's own clients retry a produce that finds no topic
				// yet; kgo does too.
				rec := &kgo.Record{Topic: topic, Value: []byte(topic)}
				if err := cl.ProduceSync(admCtx(t, admTimeout), rec).FirstErr(); err != nil {
					errs <- fmt.Errorf("produce to %s just after creating it: %w", topic, err)
					return
				}
				mu.Lock()
				created = append(created, topic)
				snapshot := slices.Clone(created)
				mu.Unlock()
				// Every topic created and written so far is still there.
				req := kmsg.NewPtrMetadataRequest()
				for _, tp := range snapshot {
					rt := kmsg.NewMetadataRequestTopic()
					rt.Topic = kmsg.StringPtr(tp)
					req.Topics = append(req.Topics, rt)
				}
				resp, err := req.RequestWith(admCtx(t, admTimeout), cl)
				if err != nil {
					errs <- err
					return
				}
				for _, mt := range resp.Topics {
					if mt.ErrorCode != 0 {
						errs <- fmt.Errorf("topic %s, created and written to, is gone from Metadata (%v) while others are created",
							*mt.Topic, kerr.ErrorForCode(mt.ErrorCode))
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every record written is still readable.
	adm, _ := admAdmin(t, addr)
	ends, err := adm.ListEndOffsets(admCtx(t, admTimeout), created...)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	for _, tp := range created {
		if lo, ok := ends.Lookup(tp, 0); !ok || lo.Err != nil || lo.Offset != 1 {
			t.Errorf("%s: end offset %+v, want 1 (its record was acknowledged)", tp, lo)
		}
	}
}
