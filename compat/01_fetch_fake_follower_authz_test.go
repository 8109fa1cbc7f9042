package compat

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// fakeFollowerFetch is a Fetch of partition 0 of topic (by name before
// v13, by id after) at offset, claiming to come from replica id: a
// follower's fetch, as its broker sends it, from whoever sends it.
func fakeFollowerFetch(v int16, topic string, id [16]byte, replica int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = v, 50, 1, 1<<20
	req.ReplicaID = replica
	if v >= 15 { // the replica state says who fetches (a tagged field: kmsg would send it at any version)
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = -1, replica, -1
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = offset, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchCodes are the error codes of every partition of a Fetch answer.
func fetchCodes(resp *kmsg.FetchResponse) []int16 {
	var out []int16
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// A client that can reach a leader's port but has no ClusterAction must
// not move a follower's state by claiming to be it. Three brokers (the
// replication on a PLAINTEXT listener of its own, clients on
// SASL_PLAINTEXT with the authorizer on); a follower F of a partition of
// replication factor 3 is cut from its peers, five more records are
// written with acks=1, and alice (no ACL) sends the leader follower
// fetches as F at the log end offset, by name (v12) and by id (v18):
//   - each is TOPIC_AUTHORIZATION_FAILED, as Kafka 4.4 answers;
//   - the high watermark stays while F is in the ISR (F has not the
//     records);
//   - F leaves the ISR after replica.lag.time.max.ms although alice keeps
//     fetching as F, and the high watermark then moves to the log end.
func TestFakeFollowerFetchMovesNothing(t *testing.T) {
	c := testutil.StartFaultCluster(t, 3, map[string]string{
		"listeners":                  "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name": "PLAINTEXT",
		"sasl.enabled.mechanisms":    "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`,
		"authorizer.class.name":                               "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                         "User:admin;User:ANONYMOUS",
		"replica.lag.time.max.ms":                             "15000",
		// No unreachable reports: F leaves the ISR by its lag alone.
		"samsa.replica.leader.unreachable.ms": "0",
	})
	ctx := testCtx(t, 3*time.Minute)
	sasl := func(id int32) string { return c.Node(id).Addrs()[1] }
	admin := newKgo(t, sasl(1), asUser("admin"))
	adm := kadm.NewClient(admin)
	if resp, err := adm.CreateTopic(ctx, 1, 3, nil, "ff"); err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic: %v %+v", err, resp)
	}
	for i := range 10 {
		produceAll(t, admin, &kgo.Record{Topic: "ff", Value: fmt.Appendf(nil, "r%d", i)})
	}
	// The partition's leader, its ISR and high watermark, as the leader
	// answers them.
	state := func() (leader int32, isr []int32, hw int64, err error) {
		md, err := adm.Metadata(ctx, "ff")
		if err != nil {
			return -1, nil, -1, err
		}
		p := md.Topics["ff"].Partitions[0]
		leader, isr = p.Leader, p.ISR
		offs, err := adm.ListEndOffsets(ctx, "ff")
		if err != nil {
			return -1, nil, -1, err
		}
		o, _ := offs.Lookup("ff", 0)
		return leader, isr, o.Offset, o.Err
	}
	var leader int32
	var isr []int32
	testutil.Eventually(t, 30*time.Second, func() error {
		var hw int64
		var err error
		if leader, isr, hw, err = state(); err == nil && (len(isr) != 3 || hw != 10) {
			err = fmt.Errorf("leader %d, ISR %v, high watermark %d", leader, isr, hw)
		}
		return err
	})
	f := isr[0]
	if f == leader {
		f = isr[1]
	}
	id := topicID(t, adm, "ff")
	c.CutPeers(f, testutil.Blackhole)
	acks1 := newKgo(t, sasl(leader), asUser("admin"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	for i := range 5 {
		produceAll(t, acks1, &kgo.Record{Topic: "ff", Value: fmt.Appendf(nil, "acks1-%d", i)})
	}

	alice := dialRaw(t, sasl(leader))
	if resp := saslLogin(t, alice, "alice"); resp.ErrorCode != 0 {
		t.Fatalf("login: %+v", resp)
	}
	fakeAs := func(replica int32) error {
		alice.c.SetDeadline(time.Now().Add(20 * time.Second))
		for _, v := range []int16{12, 18} {
			codes := fetchCodes(alice.roundTrip(fakeFollowerFetch(v, "ff", id, replica, 15)).(*kmsg.FetchResponse))
			if len(codes) != 1 || codes[0] != kerr.TopicAuthorizationFailed.Code {
				return fmt.Errorf("follower fetch v%d as alice claiming replica %d: %v, want TOPIC_AUTHORIZATION_FAILED", v, replica, codes)
			}
		}
		return nil
	}
	fake := func() error { return fakeAs(f) }
	// A broker id that is no replica of the partition is refused alike.
	if err := fakeAs(99); err != nil {
		t.Error(err)
	}
	// Well within replica.lag.time.max.ms of the cut: F is in the ISR,
	// so the high watermark must stay at 10.
	for range 10 {
		if err := fake(); err != nil {
			t.Fatal(err)
		}
	}
	if _, isr, hw, err := state(); err != nil || hw != 10 || !slices.Contains(isr, f) {
		t.Errorf("after alice's fetches as %d: ISR %v, high watermark %d (%v); want %d in the ISR and 10", f, isr, hw, err, f)
	}
	testutil.Eventually(t, 60*time.Second, func() error {
		if err := fake(); err != nil {
			t.Fatal(err)
		}
		if _, isr, hw, err := state(); err != nil || slices.Contains(isr, f) || hw != 15 {
			return fmt.Errorf("ISR %v, high watermark %d (%v); want %d out and 15", isr, hw, err, f)
		}
		return nil
	})
}
