package compat

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// Requests the broker refuses as Kafka does, or because it cannot keep the
// promise they ask for.
func TestAdminRefusals(t *testing.T) {
	n := testutil.StartBroker(t, map[string]string{"num.partitions": "3"})
	cl := newKgo(t, n.Addr())
	adm := newAdmin(t, n.Addr())

	create := func(name string, partitions int32, rf int16, validateOnly bool) kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.ValidateOnly = validateOnly
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t, 20*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0]
	}

	// A partition count no broker should try to allocate.
	wantCode(t, "2^31-1 partitions", create("huge", 1<<31-1, 1, false).ErrorCode, kerr.PolicyViolation)
	wantCode(t, "10001 partitions", create("huge", 10001, 1, false).ErrorCode, kerr.PolicyViolation)

	// validate_only answers with the resolved defaults and creates nothing.
	st := create("dry", -1, -1, true)
	wantCode(t, "validate only", st.ErrorCode, nil)
	if st.NumPartitions != 3 || st.ReplicationFactor != 1 || len(st.Configs) == 0 {
		t.Errorf("validate only answered %d partitions, rf %d, %d configs; want 3, 1 and the configs",
			st.NumPartitions, st.ReplicationFactor, len(st.Configs))
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("dry")
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "metadata of a validate-only topic", mresp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)

	// DeleteRecords on a compact-only topic is a policy violation.
	createTopic(t, adm, "compacted", 1, map[string]*string{"cleanup.policy": strp("compact")})
	dr := kmsg.NewPtrDeleteRecordsRequest()
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "compacted"
	drp := kmsg.NewDeleteRecordsRequestTopicPartition()
	drp.Offset = 0
	drt.Partitions = append(drt.Partitions, drp)
	dr.Topics = append(dr.Topics, drt)
	drResp, err := dr.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "DeleteRecords on a compacted topic", drResp.Topics[0].Partitions[0].ErrorCode, kerr.PolicyViolation)

	// DeleteTopics v6 with both a name and an id.
	id := topicID(t, adm, "compacted")
	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic, dt.TopicID = kmsg.StringPtr("compacted"), id
	del.Topics = append(del.Topics, dt)
	delResp, err := del.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "DeleteTopics with a name and an id", delResp.Topics[0].ErrorCode, kerr.InvalidRequest)

	// Internal topics are not auto-created by a Metadata request.
	md = kmsg.NewPtrMetadataRequest()
	md.AllowAutoTopicCreation = true
	mt = kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("__consumer_offsets")
	md.Topics = append(md.Topics, mt)
	mresp, err = md.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "auto-creating __consumer_offsets", mresp.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition)
}

// With two brokers, a replication factor of 3 is refused: there are not
// enough brokers to hold the replicas (2 is served: see cluster_*_test.go).
func TestReplicationFactorAboveBrokersRefused(t *testing.T) {
	b1, _ := startTwoBrokers(t)
	adm := newAdmin(t, b1.Addr())
	resp, err := adm.CreateTopic(testCtx(t, 20*time.Second), 1, 3, nil, "replicated")
	if err == nil {
		err = resp.Err
	}
	if !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("replication factor 3 on 2 brokers: %v, want INVALID_REPLICATION_FACTOR", err)
	}
}

// Creating a topic that exists answers TOPIC_ALREADY_EXISTS with Kafka
// 4.4's message, also when only validating (and so when another broker
// made it meanwhile: the same answer).
func TestCreateTopicsExistingKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	n := admBroker(t, nil)
	probe := func(addr string) map[string]string {
		c := admDial(t, addr)
		out := map[string]string{}
		for _, step := range []struct {
			name         string
			validateOnly bool
		}{{"create", false}, {"again", false}, {"again, validating only", true}} {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.TimeoutMillis, req.ValidateOnly = 30000, step.validateOnly
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "exists-t", 1, 1
			req.Topics = append(req.Topics, rt)
			st := c.roundTrip(req, 7).(*kmsg.CreateTopicsResponse).Topics[0]
			out[step.name] = gkAnswer(st.ErrorCode, st.ErrorMessage)
		}
		return out
	}
	compareProbes(t, probe(kb.Addr), probe(n.Addr()))
}
