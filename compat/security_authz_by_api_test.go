package compat

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testcerts"
	"github.com/samsa-io/samsa/internal/testutil"
)

// authzCase is one request alice sends and the code its answer must carry.
type authzCase struct {
	name string
	req  kmsg.Request
	code func(kmsg.Response) int16
	want *kerr.Error
}

// aclFixture is aclBroker with a topic, a group with a committed offset
// and a transactional id of admin's.
func aclFixture(t *testing.T) (addr string, admin *kadm.Client) {
	t.Helper()
	addr = aclBroker(t, nil)
	admin = kadm.NewClient(newKgo(t, addr, asUser("admin")))
	createTopic(t, admin, "t1", 1, nil)
	ctx := testCtx(t, 30*time.Second)
	off := kadm.Offsets{}
	off.AddOffset("t1", 0, 0, -1)
	if resp, err := admin.CommitOffsets(ctx, "g1", off); err != nil || resp.Error() != nil {
		t.Fatalf("commit as admin: %v %v", err, resp.Error())
	}
	return addr, admin
}

// The checks Kafka's KafkaApis makes before a request reaches its
// coordinator, walked over a socket authenticated as alice (no ACL): each
// API answers with Kafka's authorization error where Kafka puts it.
func TestAuthorizationByAPI(t *testing.T) {
	addr, admin := aclFixture(t)
	tx := func(id string) *string { return &id }
	first := func(codes ...int16) int16 { return codes[0] }
	cases := []authzCase{
		{"FindCoordinator v3 group", &kmsg.FindCoordinatorRequest{Version: 3, CoordinatorKey: "g1"},
			func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"FindCoordinator v4 transaction", &kmsg.FindCoordinatorRequest{Version: 4, CoordinatorType: 1, CoordinatorKeys: []string{"tx1"}},
			func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"DescribeGroups", &kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g1"}},
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"DeleteGroups", &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"g1"}},
			func(r kmsg.Response) int16 { return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"OffsetDelete", &kmsg.OffsetDeleteRequest{Group: "g1", Topics: []kmsg.OffsetDeleteRequestTopic{{Topic: "t1", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}},
			func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"ConsumerGroupHeartbeat", &kmsg.ConsumerGroupHeartbeatRequest{Group: "g2", MemberEpoch: 0, RebalanceTimeoutMillis: 1000, SubscribedTopicNames: []string{"t1"}},
			func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"ConsumerGroupDescribe", &kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g1"}},
			func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"DescribeConfigs topic", &kmsg.DescribeConfigsRequest{Version: 4, Resources: []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t1"}}},
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"DescribeConfigs broker", &kmsg.DescribeConfigsRequest{Version: 4, Resources: []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}},
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"AlterConfigs topic", &kmsg.AlterConfigsRequest{Version: 1, Resources: []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t1"}}},
			func(r kmsg.Response) int16 { return r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"IncrementalAlterConfigs broker", &kmsg.IncrementalAlterConfigsRequest{Version: 1, Resources: []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: ""}}},
			func(r kmsg.Response) int16 { return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"CreatePartitions", &kmsg.CreatePartitionsRequest{Version: 3, TimeoutMillis: 5000, Topics: []kmsg.CreatePartitionsRequestTopic{{Topic: "t1", Count: 2}}},
			func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"DeleteRecords", &kmsg.DeleteRecordsRequest{Version: 2, TimeoutMillis: 5000, Topics: []kmsg.DeleteRecordsRequestTopic{{Topic: "t1", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}}}},
			func(r kmsg.Response) int16 { return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"ElectLeaders", &kmsg.ElectLeadersRequest{Version: 2, TimeoutMillis: 5000, Topics: []kmsg.ElectLeadersRequestTopic{{Topic: "t1", Partitions: []int32{0}}}},
			func(r kmsg.Response) int16 {
				er := r.(*kmsg.ElectLeadersResponse)
				return first(er.ErrorCode, er.Topics[0].Partitions[0].ErrorCode)
			}, kerr.ClusterAuthorizationFailed},
		{"AlterPartitionReassignments", &kmsg.AlterPartitionAssignmentsRequest{TimeoutMillis: 5000, Topics: []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t1", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{1}}}}}},
			func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"ListPartitionReassignments", &kmsg.ListPartitionReassignmentsRequest{TimeoutMillis: 5000},
			func(r kmsg.Response) int16 { return r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"DescribeLogDirs", &kmsg.DescribeLogDirsRequest{Version: 4},
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeLogDirsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"AlterReplicaLogDirs", &kmsg.AlterReplicaLogDirsRequest{Version: 2, Dirs: []kmsg.AlterReplicaLogDirsRequestDir{{Dir: "/tmp", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "t1", Partitions: []int32{0}}}}}},
			func(r kmsg.Response) int16 {
				return r.(*kmsg.AlterReplicaLogDirsResponse).Topics[0].Partitions[0].ErrorCode
			}, kerr.ClusterAuthorizationFailed},
		{"DescribeProducers", &kmsg.DescribeProducersRequest{Topics: []kmsg.DescribeProducersRequestTopic{{Topic: "t1", Partitions: []int32{0}}}},
			func(r kmsg.Response) int16 {
				return r.(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
			}, kerr.TopicAuthorizationFailed},
		{"OffsetForLeaderEpoch", &kmsg.OffsetForLeaderEpochRequest{Version: 3, ReplicaID: -1, Topics: []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "t1", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}}}},
			func(r kmsg.Response) int16 {
				return r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
			}, kerr.TopicAuthorizationFailed},
		{"InitProducerId transactional", &kmsg.InitProducerIDRequest{Version: 4, TransactionalID: tx("tx1"), TransactionTimeoutMillis: 60000, ProducerID: -1, ProducerEpoch: -1},
			func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"AddPartitionsToTxn v3", &kmsg.AddPartitionsToTxnRequest{Version: 3, TransactionalID: "tx1", Topics: []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t1", Partitions: []int32{0}}}},
			func(r kmsg.Response) int16 {
				return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
			}, kerr.TransactionalIDAuthorizationFailed},
		{"AddPartitionsToTxn v4 (brokers only)", &kmsg.AddPartitionsToTxnRequest{Version: 4, Transactions: []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: "tx1", VerifyOnly: true}}},
			func(r kmsg.Response) int16 { return r.(*kmsg.AddPartitionsToTxnResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"AddOffsetsToTxn", &kmsg.AddOffsetsToTxnRequest{Version: 3, TransactionalID: "tx1", Group: "g1"},
			func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"EndTxn", &kmsg.EndTxnRequest{Version: 3, TransactionalID: "tx1", Commit: true},
			func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"TxnOffsetCommit", &kmsg.TxnOffsetCommitRequest{Version: 3, TransactionalID: "tx1", Group: "g1", Topics: []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t1", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}},
			func(r kmsg.Response) int16 {
				return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
			}, kerr.TransactionalIDAuthorizationFailed},
		{"DescribeTransactions", &kmsg.DescribeTransactionsRequest{TransactionalIDs: []string{"tx1"}},
			func(r kmsg.Response) int16 {
				return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
			}, kerr.TransactionalIDAuthorizationFailed},
		{"WriteTxnMarkers (brokers only)", &kmsg.WriteTxnMarkersRequest{Version: 1, Markers: []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 1, Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t1", Partitions: []int32{0}}}}}},
			func(r kmsg.Response) int16 {
				return r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
			}, kerr.ClusterAuthorizationFailed},
		{"Produce transactional", transactionalProduce("tx1"),
			func(r kmsg.Response) int16 { return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
	}
	c := dialRaw(t, addr)
	if resp := saslLogin(t, c, "alice"); resp.ErrorCode != 0 {
		t.Fatalf("login: %+v", resp)
	}
	for _, tc := range cases {
		if got := tc.code(c.roundTrip(tc.req)); got != tc.want.Code {
			t.Errorf("%s: %v, want %s", tc.name, kerr.ErrorForCode(got), tc.want.Message)
		}
	}

	// Lists leave out what alice may not describe.
	// The offsets topic's other partitions may still be loading (the
	// answer is then COORDINATOR_LOAD_IN_PROGRESS).
	var lg *kmsg.ListGroupsResponse
	c.c.SetDeadline(time.Now().Add(time.Minute))
	testutil.Eventually(t, 30*time.Second, func() error {
		if lg = c.roundTrip(&kmsg.ListGroupsRequest{Version: 4}).(*kmsg.ListGroupsResponse); lg.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
			return kerr.CoordinatorLoadInProgress
		}
		return nil
	})
	if lg.ErrorCode != 0 || len(lg.Groups) != 0 {
		t.Errorf("ListGroups as alice: %+v, want no group", lg)
	}
	lt := c.roundTrip(&kmsg.ListTransactionsRequest{}).(*kmsg.ListTransactionsResponse)
	if lt.ErrorCode != 0 || len(lt.TransactionStates) != 0 {
		t.Errorf("ListTransactions as alice: %+v", lt)
	}
	ctx := testCtx(t, 30*time.Second)
	if gs, err := admin.ListGroups(ctx); err != nil || !slices.Contains(gs.Groups(), "g1") {
		t.Fatalf("ListGroups as admin: %v %v", gs.Groups(), err)
	}
}

// transactionalProduce is a Produce v7 of one record to t1 in a
// transaction of id.
func transactionalProduce(id string) *kmsg.ProduceRequest {
	rec := kmsg.Record{Value: []byte("x")}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	batch := kmsg.RecordBatch{Magic: 2, Attributes: 0x10, ProducerID: 1, ProducerEpoch: 0, NumRecords: 1, FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli()}
	batch.Records = rec.AppendTo(nil)
	raw := batch.AppendTo(nil)
	batch.Length = int32(len(raw) - 12)
	raw = batch.AppendTo(nil)
	return &kmsg.ProduceRequest{Version: 7, TransactionID: &id, Acks: -1, TimeoutMillis: 5000,
		Topics: []kmsg.ProduceRequestTopic{{Topic: "t1", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: raw}}}}}
}

// The same checks through kadm and kgo as alice, then with the ACLs each
// needs: refused with the client's own error, then let through, with the
// group's AuthorizedOperations filled as Kafka fills them.
func TestFranzAuthorizationGaps(t *testing.T) {
	addr, admin := aclFixture(t)
	ctx := testCtx(t, 60*time.Second)
	alice := kadm.NewClient(newKgo(t, addr, asUser("alice"), kgo.RetryTimeout(2*time.Second)))

	dg, err := alice.DescribeGroups(ctx, "g1")
	if err == nil {
		err = dg.Error()
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("DescribeGroups: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	// kadm looks topics up first, and a topic alice may not describe is
	// refused there or by the request itself: either way the error is
	// TOPIC_AUTHORIZATION_FAILED.
	refusedTopic := func(what string, err error, item func() error) {
		t.Helper()
		if err == nil {
			err = item()
		}
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("%s: %v, want TOPIC_AUTHORIZATION_FAILED", what, err)
		}
	}
	cfg, err := alice.DescribeTopicConfigs(ctx, "t1")
	refusedTopic("DescribeTopicConfigs", err, func() error { return cfg[0].Err })
	cp, err := alice.CreatePartitions(ctx, 1, "t1")
	refusedTopic("CreatePartitions", err, func() error { return cp["t1"].Err })
	del := kadm.Offsets{}
	del.AddOffset("t1", 0, 0, -1)
	dr, err := alice.DeleteRecords(ctx, del)
	refusedTopic("DeleteRecords", err, dr.Error)
	if _, err := alice.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"t1": {0: {}}}); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("ElectLeaders: %v", err)
	}
	txn := newKgo(t, addr, asUser("alice"), kgo.TransactionalID("tx1"), kgo.RetryTimeout(2*time.Second))
	err = txn.BeginTransaction()
	if err == nil {
		err = txn.ProduceSync(ctx, &kgo.Record{Topic: "t1", Value: []byte("x")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Errorf("transactional producer: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}

	acls := kadm.NewACLs().Allow("User:alice").AllowHosts().ResourcePatternType(kadm.ACLPatternLiteral)
	for _, b := range []*kadm.ACLBuilder{
		acls.Groups("g1").Operations(kadm.OpDescribe, kadm.OpRead),
		kadm.NewACLs().Allow("User:alice").AllowHosts().ResourcePatternType(kadm.ACLPatternLiteral).Topics("t1").Operations(kadm.OpDescribeConfigs, kadm.OpAlter, kadm.OpWrite),
		kadm.NewACLs().Allow("User:alice").AllowHosts().ResourcePatternType(kadm.ACLPatternLiteral).TransactionalIDs("tx2").Operations(kadm.OpWrite),
	} {
		if res, err := admin.CreateACLs(ctx, b); err != nil || res[0].Err != nil {
			t.Fatalf("CreateACLs: %v %+v", err, res)
		}
	}
	testutil.Eventually(t, 10*time.Second, func() error { // the ACLs reach the broker by a watch
		dg, err := alice.DescribeGroups(ctx, "g1")
		if err != nil {
			return err
		}
		return dg.Error()
	})
	// A new client: kadm caches the Metadata that refused t1.
	alice = kadm.NewClient(newKgo(t, addr, asUser("alice")))
	// AuthorizedOperations: Describe and Read allowed, nothing else.
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups, req.IncludeAuthorizedOperations = []string{"g1"}, true
	resp, err := req.RequestWith(ctx, newKgo(t, addr, asUser("alice")))
	if err != nil {
		t.Fatal(err)
	}
	want := int32(1<<3 | 1<<8) // READ, DESCRIBE
	if g := resp.Groups[0]; g.ErrorCode != 0 || g.AuthorizedOperations != want {
		t.Errorf("DescribeGroups with authorized operations: code %d ops %b, want %b", g.ErrorCode, g.AuthorizedOperations, want)
	}
	if gs, err := alice.ListGroups(ctx); err != nil || !slices.Equal(gs.Groups(), []string{"g1"}) {
		t.Errorf("ListGroups with Describe on g1: %v %v", gs.Groups(), err)
	}
	if cfg, err := alice.DescribeTopicConfigs(ctx, "t1"); err != nil || cfg[0].Err != nil {
		t.Errorf("DescribeTopicConfigs with DescribeConfigs: %v %+v", err, cfg)
	}
	if cp, err := alice.CreatePartitions(ctx, 1, "t1"); err != nil || cp["t1"].Err != nil {
		t.Errorf("CreatePartitions with Alter: %v %+v", err, cp)
	}
	txn2 := newKgo(t, addr, asUser("alice"), kgo.TransactionalID("tx2"))
	if err := txn2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceAll(t, txn2, &kgo.Record{Topic: "t1", Value: []byte("in a transaction")})
	if err := txn2.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Errorf("commit with Write on tx2: %v", err)
	}
}

// Kafka 4.4's Admin client, through its tools, as alice without ACLs:
// each refusal is the Java client's own authorization exception.
func TestJavaAdminAuthorizationGaps(t *testing.T) {
	t.Parallel()
	addr, _ := aclFixture(t)
	dir := t.TempDir()
	props := testcerts.WriteFile(t, dir, "alice.properties", []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"alice-secret\";\n"))
	tool := kafkaToolIn(t, testCtx(t, 4*time.Minute), addr, dir)
	for _, c := range []struct {
		want string
		args []string
	}{
		{"GroupAuthorizationException", []string{"org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--command-config", props, "--describe", "--group", "g1"}},
		{"ClusterAuthorizationException", []string{"org.apache.kafka.tools.ConfigCommand", "--command-config", props, "--describe", "--entity-type", "brokers", "--entity-name", "1"}},
		// The tool's own words for TRANSACTIONAL_ID_AUTHORIZATION_FAILED
		// from FindCoordinator.
		{"FindCoordinator request for transactionalId `CoordinatorKey(idValue='tx1', type=TRANSACTION)` failed due to authorization failure", []string{"org.apache.kafka.tools.TransactionsCommand", "--command-config", props, "describe", "--transactional-id", "tx1"}},
		{"ClusterAuthorizationException", []string{"org.apache.kafka.tools.LogDirsCommand", "--command-config", props, "--describe"}},
	} {
		out, _ := tool("", c.args[0], c.args[1:]...)
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: %s, want %s", c.args[0], lastLines(out, 10), c.want)
		}
	}
}

// OffsetCommit v10 names topics by id only. bob (Read on g1 and t1, not
// on t2) commits t1, t2 and an unknown id: as Kafka 4.4 answers
// (KafkaApis resolves the ids to names before it authorizes), t2 is
// TOPIC_AUTHORIZATION_FAILED and its offset stays, the unknown id is
// UNKNOWN_TOPIC_ID, t1 is committed. (TestAuthorizationKafkaReference
// asks Kafka the same.)
func TestOffsetCommitByTopicIDAuthorization(t *testing.T) {
	e := azSamsa(t)
	got := e.offsetCommitV10(t, "bob")
	want := map[string]int16{"t1": 0, "t2": kerr.TopicAuthorizationFailed.Code, "unknown": kerr.UnknownTopicID.Code}
	if !maps.Equal(got, want) {
		t.Errorf("OffsetCommit v10 as bob: %v, want %v", got, want)
	}
	if at := e.committed(t, "t2"); at != 0 {
		t.Errorf("g1's offset of t2 is %d after bob's refused commit, want 0", at)
	}
	if at := e.committed(t, "t1"); at != 5 {
		t.Errorf("g1's offset of t1 is %d, want 5", at)
	}
}

// ShareGroupHeartbeat subscribing to a topic the member may not describe:
// Kafka 4.4 answers TOPIC_AUTHORIZATION_FAILED (after Read on the group),
// before the group coordinator sees the heartbeat.
func TestShareGroupHeartbeatTopicAuthorization(t *testing.T) {
	e := azSamsa(t)
	hb := func(user string, topics ...string) int16 {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.Version, req.GroupID, req.MemberID, req.MemberEpoch = 1, "g1", "m-"+user, 0
		req.SubscribedTopicNames = topics
		return e.dial(t, user).roundTrip(req).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode
	}
	for _, c := range []struct {
		user   string
		topics []string
		want   int16
	}{
		{"alice", []string{"t1"}, kerr.GroupAuthorizationFailed.Code},
		{"bob", []string{"t2"}, kerr.TopicAuthorizationFailed.Code},
		{"bob", []string{"t1", "t2"}, kerr.TopicAuthorizationFailed.Code},
		{"bob", []string{"missing"}, kerr.TopicAuthorizationFailed.Code},
	} {
		if got := hb(c.user, c.topics...); got != c.want {
			t.Errorf("ShareGroupHeartbeat as %s subscribing %v: %v, want %v", c.user, c.topics, kerr.ErrorForCode(got), kerr.ErrorForCode(c.want))
		}
	}
}

// The share-group offset admin APIs as Kafka 4.4's KafkaApis authorizes
// them: AlterShareGroupOffsets needs Read on the group (not Delete) and
// Read on each topic, DeleteShareGroupOffsets Delete on the group and
// Read on each topic, DescribeShareGroupOffsets Describe on the group and
// on each topic.
func TestShareGroupOffsetsAuthorization(t *testing.T) {
	e := azSamsa(t)
	ops := func(o ...kadm.ACLOperation) []kadm.ACLOperation { return o }
	// bob: Read on sg1 too; alice: Delete on sg1 and Describe on t1, no Read.
	e.grant(t, "bob", (*kadm.ACLBuilder).Groups, "sg1", ops(kadm.OpRead), func() error { return nil })
	e.grant(t, "alice", (*kadm.ACLBuilder).Topics, "t1", ops(kadm.OpDescribe), func() error { return nil })
	e.grant(t, "alice", (*kadm.ACLBuilder).Groups, "sg1", ops(kadm.OpDelete), func() error {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = "sg1"
		if code := e.dial(t, "alice").roundTrip(req).(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode; code == kerr.GroupAuthorizationFailed.Code {
			return errors.New("alice's Delete on sg1 not applied yet")
		}
		return nil
	})
	e.shareGroup(t, "bob", "sg1")

	alter := func(user string, topics ...string) (int16, map[string]int16) {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = "sg1"
		for _, name := range topics {
			rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
			rt.Topic = name
			rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp := e.dial(t, user).roundTrip(req).(*kmsg.AlterShareGroupOffsetsResponse)
		out := map[string]int16{}
		for _, rt := range resp.Topics {
			out[rt.Topic] = rt.Partitions[0].ErrorCode
		}
		return resp.ErrorCode, out
	}
	if code, _ := alter("alice", "t1"); code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("AlterShareGroupOffsets as alice (Delete on the group, no Read): %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	code, topics := alter("bob", "t1", "t2")
	if want := map[string]int16{"t1": 0, "t2": kerr.TopicAuthorizationFailed.Code}; code != 0 || !maps.Equal(topics, want) {
		t.Errorf("AlterShareGroupOffsets as bob: %v %v, want %v", kerr.ErrorForCode(code), topics, want)
	}

	del := func(user string) (int16, map[string]int16) {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = "sg1"
		req.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t1"}}
		resp := e.dial(t, user).roundTrip(req).(*kmsg.DeleteShareGroupOffsetsResponse)
		out := map[string]int16{}
		for _, rt := range resp.Topics {
			out[rt.Topic] = rt.ErrorCode
		}
		return resp.ErrorCode, out
	}
	if code, _ := del("bob"); code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("DeleteShareGroupOffsets as bob (Read on the group, no Delete): %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if code, topics := del("alice"); code != 0 || topics["t1"] != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("DeleteShareGroupOffsets as alice (no Read on t1): %v %v, want t1 TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code), topics)
	}

	// bob describes sg1 (Read implies Describe): t2 refused by name, left
	// out of all the group's offsets.
	describe := func(topics ...string) map[string]int16 {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = "sg1"
		for _, name := range topics {
			rg.Topics = append(rg.Topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: []int32{0}})
		}
		req.Groups = append(req.Groups, rg)
		resp := e.dial(t, "bob").roundTrip(req).(*kmsg.DescribeShareGroupOffsetsResponse)
		out := map[string]int16{"group": resp.Groups[0].ErrorCode}
		for _, rt := range resp.Groups[0].Topics {
			out[rt.Topic] = rt.Partitions[0].ErrorCode
		}
		return out
	}
	if got, want := describe("t1", "t2"), map[string]int16{"group": 0, "t1": 0, "t2": kerr.TopicAuthorizationFailed.Code}; !maps.Equal(got, want) {
		t.Errorf("DescribeShareGroupOffsets of t1 and t2 as bob: %v, want %v", got, want)
	}
}

// A group's AuthorizedOperations are the principal's among READ,
// DESCRIBE, DELETE, DESCRIBE_CONFIGS and ALTER_CONFIGS, as Kafka 4.x
// reports them (groups have configs), in DescribeGroups,
// ConsumerGroupDescribe and ShareGroupDescribe alike: all five for a
// super user, READ and DESCRIBE for bob with Read on the group.
func TestGroupAuthorizedOperations(t *testing.T) {
	e := azSamsa(t)
	e.consumerGroup(t, "admin", "cg")
	e.shareGroup(t, "admin", "sg")
	for _, g := range []string{"cg", "sg"} {
		e.grant(t, "bob", (*kadm.ACLBuilder).Groups, g, []kadm.ACLOperation{kadm.OpRead}, func() error { return nil })
	}
	all := int32(1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationDescribe | 1<<kmsg.ACLOperationDelete |
		1<<kmsg.ACLOperationDescribeConfigs | 1<<kmsg.ACLOperationAlterConfigs)
	read := int32(1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationDescribe)
	for user, want := range map[string]int32{"admin": all, "bob": read} {
		wantAll := map[string]int32{"DescribeGroups": want, "ConsumerGroupDescribe": want, "ShareGroupDescribe": want}
		testutil.Eventually(t, 30*time.Second, func() error { // bob's ACLs on cg and sg apply a moment later
			if got := e.groupOps(t, user); !maps.Equal(got, wantAll) {
				return fmt.Errorf("%s's operations: %v, want %v", user, got, wantAll)
			}
			return nil
		})
	}

	// Without an authorizer every operation is allowed.
	addr := testutil.StartBroker(t, nil).Addr()
	admin := newAdmin(t, addr)
	createTopic(t, admin, "t1", 1, nil)
	off := kadm.Offsets{}
	off.AddOffset("t1", 0, 0, -1)
	if resp, err := admin.CommitOffsets(testCtx(t, 30*time.Second), "g1", off); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version, req.Groups, req.IncludeAuthorizedOperations = 5, []string{"g1"}, true
	if g := admDial(t, addr).roundTrip(req, 5).(*kmsg.DescribeGroupsResponse).Groups[0]; g.ErrorCode != 0 || g.AuthorizedOperations != all {
		t.Errorf("DescribeGroups without an authorizer: error %d, operations %b, want %b", g.ErrorCode, g.AuthorizedOperations, all)
	}
}
