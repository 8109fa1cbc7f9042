package compat

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/groups"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestGroupCommitsSurviveRestart: offsets committed by a group member and
// by the admin client (with metadata) are read back after a broker restart,
// and a new member resumes exactly after the last commit.
func TestGroupCommitsSurviveRestart(t *testing.T) {
	n := grpBroker(t)
	adm := newAdmin(t, n.Addr())
	topic, group := "restart-topic", "restart-group"
	createTopic(t, adm, topic, 2, nil)
	prod := newKgo(t, n.Addr())
	produceKeyed(t, prod, topic, 0, 200)

	// A member reads everything and commits 60 records of each partition.
	l := newLedger()
	m := startMember(t, n.Addr(), group, topic, "first", l)
	waitRead(t, l, 200, "first member")
	m.leave()
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: topic, Partition: 0, At: 60, LeaderEpoch: -1, Metadata: "p0 meta"})
	commit.Add(kadm.Offset{Topic: topic, Partition: 1, At: 61, LeaderEpoch: -1, Metadata: "p1 meta"})
	resps, err := adm.CommitOffsets(testCtx(t, 20*time.Second), group, commit)
	if err != nil || resps.Error() != nil {
		t.Fatalf("commit to the empty group: %v %v", err, resps.Error())
	}

	n.Restart()
	adm = newAdmin(t, n.Addr())
	var fetched kadm.OffsetResponses
	testutil.Eventually(t, 30*time.Second, func() error {
		fetched, err = adm.FetchOffsets(testCtx(t, 10*time.Second), group)
		if err != nil {
			return err
		}
		return fetched.Error()
	})
	for p, want := range map[int32]kadm.Offset{0: commit[topic][0], 1: commit[topic][1]} {
		got, ok := fetched.Lookup(topic, p)
		if !ok || got.At != want.At || got.Metadata != want.Metadata {
			t.Errorf("after restart partition %d: committed %+v, want offset %d metadata %q", p, got.Offset, want.At, want.Metadata)
		}
	}
	dg, err := adm.DescribeGroups(testCtx(t, 10*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	if st := dg[group].State; st != "Empty" || dg[group].ProtocolType != "consumer" {
		t.Errorf("group after restart: %s/%s, want Empty/consumer", st, dg[group].ProtocolType)
	}

	// A new member starts exactly at the commits.
	ends, err := adm.ListEndOffsets(testCtx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	e0, _ := ends.Lookup(topic, 0)
	e1, _ := ends.Lookup(topic, 1)
	want := int(e0.Offset - 60 + e1.Offset - 61)
	cl := newKgo(t, n.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	first := map[int32]int64{}
	total := 0
	ctx := testCtx(t, 30*time.Second)
	for total < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("resumed member read %d records, want %d", total, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
			total++
		})
	}
	if first[0] != 60 || first[1] != 61 {
		t.Errorf("resumed at %v, want partition 0 at 60 and 1 at 61", first)
	}
}

// TestGroupAdmin: kadm lists, describes and deletes groups and their
// offsets with Kafka's answers for groups in use.
func TestGroupAdmin(t *testing.T) {
	n := grpBroker(t)
	adm := newAdmin(t, n.Addr())
	topic, other, group := "admin-grp-topic", "admin-grp-other", "admin-group"
	createTopic(t, adm, topic, 3, nil)
	createTopic(t, adm, other, 1, nil)
	produceKeyed(t, newKgo(t, n.Addr()), topic, 0, 30)

	l := newLedger()
	m1 := startMember(t, n.Addr(), group, topic, "member-a", l)
	m2 := startMember(t, n.Addr(), group, topic, "member-b", l)
	t.Cleanup(func() { m1.stop(); m1.cl.Close(); m2.stop(); m2.cl.Close() })
	waitRead(t, l, 30, "two members")
	// Offsets of a topic the group does not consume, committed by hand.
	extra := kadm.Offsets{}
	extra.Add(kadm.Offset{Topic: other, Partition: 0, At: 5, LeaderEpoch: -1})
	// A simple commit to a group with members is refused...
	if resps, err := adm.CommitOffsets(testCtx(t, 10*time.Second), group, extra); err == nil && resps.Error() == nil {
		t.Fatal("simple commit to a group with members succeeded; Kafka answers UNKNOWN_MEMBER_ID")
	} else if err == nil && !errors.Is(resps.Error(), kerr.UnknownMemberID) {
		t.Fatalf("simple commit to an active group: %v, want UNKNOWN_MEMBER_ID", resps.Error())
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		dg, err := adm.DescribeGroups(testCtx(t, 10*time.Second), group)
		if err != nil {
			return err
		}
		g := dg[group]
		if g.Err != nil || g.State != "Stable" || g.ProtocolType != "consumer" || len(g.Members) != 2 {
			return fmt.Errorf("described %s/%s with %d members (%v)", g.State, g.ProtocolType, len(g.Members), g.Err)
		}
		clients := []string{}
		assigned := 0
		for _, m := range g.Members {
			clients = append(clients, m.ClientID)
			if m.ClientHost != "/127.0.0.1" {
				return fmt.Errorf("member %s host %q", m.MemberID, m.ClientHost)
			}
			if j, ok := m.Join.AsConsumer(); !ok || !slices.Equal(j.Topics, []string{topic}) {
				return fmt.Errorf("member %s subscription %+v", m.MemberID, j)
			}
			a, ok := m.Assigned.AsConsumer()
			if !ok {
				return fmt.Errorf("member %s has no assignment", m.MemberID)
			}
			for _, at := range a.Topics {
				assigned += len(at.Partitions)
			}
		}
		slices.Sort(clients)
		if !slices.Equal(clients, []string{"member-a", "member-b"}) || assigned != 3 {
			return fmt.Errorf("clients %v, %d partitions assigned", clients, assigned)
		}
		return nil
	})

	// ...so commit them as a member of the current generation (once the
	// group has settled, so that the generation is the current one).
	otherID := topicID(t, adm, other)
	testutil.Eventually(t, 20*time.Second, func() error {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group = group
		oc.MemberID, oc.Generation = m1.cl.GroupMetadata()
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = other, otherID // v10 names it by id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset, rp.LeaderEpoch = 5, -1
		rt.Partitions = append(rt.Partitions, rp)
		oc.Topics = append(oc.Topics, rt)
		ocr, err := oc.RequestWith(testCtx(t, 10*time.Second), m1.cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(ocr.Topics[0].Partitions[0].ErrorCode)
	})

	lg, err := adm.ListGroups(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := lg[group]; !ok || g.State != "Stable" || g.ProtocolType != "consumer" {
		t.Errorf("ListGroups: %+v", lg)
	}
	lg, err = adm.ListGroups(testCtx(t, 10*time.Second), "Empty")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lg[group]; ok {
		t.Errorf("ListGroups filtered by Empty lists the Stable group")
	}

	// A group with members cannot be deleted; the offsets of its
	// subscribed topic neither, those of another topic can.
	dr, err := adm.DeleteGroups(testCtx(t, 10*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(dr[group].Err, kerr.NonEmptyGroup) {
		t.Errorf("DeleteGroups of an active group: %v, want NON_EMPTY_GROUP", dr[group].Err)
	}
	del := kadm.TopicsSet{}
	del.Add(topic, 0)
	del.Add(other, 0)
	dor, err := adm.DeleteOffsets(testCtx(t, 10*time.Second), group, del)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := dor.Lookup(topic, 0); !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Errorf("OffsetDelete of the subscribed topic: %v, want GROUP_SUBSCRIBED_TO_TOPIC", e)
	}
	if e, ok := dor.Lookup(other, 0); !ok || e != nil {
		t.Errorf("OffsetDelete of another topic: %v (present %v), want success", e, ok)
	}
	offs, err := adm.FetchOffsets(testCtx(t, 10*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := offs.Lookup(other, 0); ok {
		t.Errorf("offset of %s still committed after OffsetDelete", other)
	}

	// Once every member left, the group is Empty and can be deleted.
	m1.leave()
	m2.leave()
	testutil.Eventually(t, 30*time.Second, func() error {
		dg, err := adm.DescribeGroups(testCtx(t, 10*time.Second), group)
		if err != nil {
			return err
		}
		if st := dg[group].State; st != "Empty" {
			return fmt.Errorf("group %s after the members left", st)
		}
		return nil
	})
	dr, err = adm.DeleteGroups(testCtx(t, 10*time.Second), group)
	if err != nil || dr[group].Err != nil {
		t.Fatalf("DeleteGroups of the empty group: %v %v", err, dr[group].Err)
	}
	dr, err = adm.DeleteGroups(testCtx(t, 10*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(dr[group].Err, kerr.GroupIDNotFound) {
		t.Errorf("second DeleteGroups: %v, want GROUP_ID_NOT_FOUND", dr[group].Err)
	}
	offs, err = adm.FetchOffsets(testCtx(t, 10*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 0 {
		t.Errorf("offsets of a deleted group: %+v", offs)
	}
	// DescribeGroups v6 names the missing group.
	dgr := kmsg.NewPtrDescribeGroupsRequest()
	dgr.Groups = []string{group}
	resp, err := dgr.RequestWith(testCtx(t, 10*time.Second), newKgo(t, n.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	if g := resp.Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code || g.State != "Dead" {
		t.Errorf("DescribeGroups of a deleted group: code %d state %q, want GROUP_ID_NOT_FOUND/Dead", g.ErrorCode, g.State)
	}
}

// TestGroupOffsetsTopic: __consumer_offsets is created on first use with
// Kafka's partition count and settings, the coordinator is the leader of
// partition abs(hash(group)) % 50, and its records use Kafka's key and
// value schemas, so that a tool reading the topic understands them.
func TestGroupOffsetsTopic(t *testing.T) {
	n := grpBroker(t)
	adm := newAdmin(t, n.Addr())
	topic, group := "schema-topic", "schema-group"
	createTopic(t, adm, topic, 1, nil)
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: topic, Partition: 0, At: 42, LeaderEpoch: 3, Metadata: "hello"})
	resps, err := adm.CommitOffsets(testCtx(t, 20*time.Second), group, commit)
	if err != nil || resps.Error() != nil {
		t.Fatalf("commit: %v %v", err, resps.Error())
	}

	td, err := adm.ListTopics(testCtx(t, 10*time.Second), "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	d := td["__consumer_offsets"]
	if d.Err != nil || !d.IsInternal || len(d.Partitions) != 50 {
		t.Fatalf("__consumer_offsets: err %v internal %v partitions %d; want internal with 50", d.Err, d.IsInternal, len(d.Partitions))
	}
	rc, err := adm.DescribeTopicConfigs(testCtx(t, 10*time.Second), "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rc.On("__consumer_offsets", nil); err != nil {
		t.Fatal(err)
	} else {
		policy := "(not described)"
		for _, c := range v.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil {
				policy = *c.Value
			}
		}
		if policy != "compact" {
			t.Errorf("cleanup.policy of __consumer_offsets is %s, want compact", policy)
		}
	}

	part := groups.PartitionFor(group, 50)
	recs := consumeExact(t, n.Addr(), "__consumer_offsets", map[int32]int64{part: 0}, 1, 20*time.Second)
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(recs[0].Key); err != nil {
		t.Fatalf("key: %v", err)
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(recs[0].Value); err != nil {
		t.Fatalf("value: %v", err)
	}
	if k.Group != group || k.Topic != topic || k.Partition != 0 || v.Offset != 42 || v.LeaderEpoch != 3 || v.Metadata != "hello" {
		t.Errorf("record in partition %d: key %+v value %+v", part, k, v)
	}

	// FindCoordinator names this broker for the group (v4+ batched too).
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group, "another"}
	fr, err := fc.RequestWith(testCtx(t, 10*time.Second), newKgo(t, n.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range fr.Coordinators {
		if c.ErrorCode != 0 || c.NodeID != n.NodeID() || fmt.Sprintf("%s:%d", c.Host, c.Port) != n.Addr() {
			t.Errorf("FindCoordinator %q: %+v", c.Key, c)
		}
	}
	// Produce to the internal topic is refused.
	res := newKgo(t, n.Addr()).ProduceSync(testCtx(t, 10*time.Second), &kgo.Record{Topic: "__consumer_offsets", Value: []byte("x")})
	if err := res.FirstErr(); !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("produce to __consumer_offsets: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
}

// TestGroupOffsetFetchBatched: OffsetFetch v8+ answers several groups in
// one request (kadm's FetchManyOffsets), with require_stable set, and v1-v7
// one group at a time.
func TestGroupOffsetFetchBatched(t *testing.T) {
	n := grpBroker(t)
	adm := newAdmin(t, n.Addr())
	createTopic(t, adm, "batched", 2, nil)
	for i, g := range []string{"batch-a", "batch-b"} {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "batched", Partition: int32(i), At: int64(10 + i), LeaderEpoch: -1, Metadata: g})
		if r, err := adm.CommitOffsets(testCtx(t, 20*time.Second), g, os); err != nil || r.Error() != nil {
			t.Fatalf("commit %s: %v %v", g, err, r.Error())
		}
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	for _, g := range []string{"batch-a", "batch-b", "batch-none"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		req.Groups = append(req.Groups, rg)
	}
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), pinned(t, n.Addr(), kmsg.OffsetFetch, 9))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Groups) != 3 {
		t.Fatalf("%d groups answered, want 3", len(resp.Groups))
	}
	for i, g := range resp.Groups[:2] {
		if g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
			t.Fatalf("group %s: %+v", g.Group, g)
		}
		p := g.Topics[0].Partitions[0]
		if p.Partition != int32(i) || p.Offset != int64(10+i) || p.Metadata == nil || *p.Metadata != g.Group {
			t.Errorf("group %s: partition %d offset %d metadata %v", g.Group, p.Partition, p.Offset, p.Metadata)
		}
	}
	if g := resp.Groups[2]; g.ErrorCode != 0 || len(g.Topics) != 0 {
		t.Errorf("group without offsets: %+v, want no error and no topics", g)
	}

	// v1 (one group, partitions named): an unknown partition is -1.
	old := kmsg.NewPtrOffsetFetchRequest()
	old.Group = "batch-b"
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic, ot.Partitions = "batched", []int32{0, 1}
	old.Topics = append(old.Topics, ot)
	oresp, err := old.RequestWith(testCtx(t, 10*time.Second), pinned(t, n.Addr(), kmsg.OffsetFetch, 1))
	if err != nil {
		t.Fatal(err)
	}
	if ps := oresp.Topics[0].Partitions; len(ps) != 2 || ps[0].Offset != -1 || ps[1].Offset != 11 {
		t.Errorf("OffsetFetch v1: %+v, want -1 and 11", ps)
	}
}
