package compat

// A classic group's join phase ends at the rebalance timeout while other
// groups rebalance all the time on the same broker: the member that has
// not rejoined by then is removed, not waited for until its session times
// out, and comes back through UNKNOWN_MEMBER_ID and a second rebalance.
// Asked of samsa and of Apache Kafka 4.4.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/testutil"
)

// The timeouts of kafka-go's own consumer group tests: a rebalance
// timeout as long as the heartbeat interval, and the default session.
const (
	lateRebalance = 2 * time.Second
	lateSession   = 30 * time.Second
)

// TestGroupJoinPhaseEndsAtRebalanceTimeout asks the rule itself, with a
// member that deterministically misses the rebalance timeout. kafka-go's
// own TestReaderConsumerGroup/consumer_group_rebalance (two Readers, 24
// records on three partitions, 12 each) cannot stand in for it: when both
// Readers share a generation, the range assignor gives one of them a
// single partition of 8 records, and it fails on Kafka 4.4 as on samsa.
func TestGroupJoinPhaseEndsAtRebalanceTimeout(t *testing.T) {
	t.Run("samsa", func(t *testing.T) {
		lateMemberScenario(t, grpBroker(t).Addr())
	})
	t.Run("kafka", func(t *testing.T) {
		kb, _ := startKafkaRef(t)
		lateMemberScenario(t, kb.Addr)
	})
}

func lateMemberScenario(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	const topic, group = "late-member", "late-member-group"
	createTopic(t, adm, topic, 3, nil)
	churnGroups(t, addr, 10)

	ctx := testCtx(t, 2*time.Minute)
	a, b := &lateMember{cl: kafkaGoVersions(t, addr), topic: topic}, &lateMember{cl: kafkaGoVersions(t, addr), topic: topic}
	ja := a.join(ctx, t, group, "")
	wantCode(t, "first member's JoinGroup", ja.ErrorCode, nil)
	if ja.Generation != 1 || ja.LeaderID != ja.MemberID {
		t.Fatalf("first member's JoinGroup: generation %d led by %s, want generation 1 led by itself (%s)", ja.Generation, ja.LeaderID, ja.MemberID)
	}
	wantCode(t, "first member's SyncGroup", a.sync(ctx, t, group, ja).ErrorCode, nil)

	// A second member joins; the first neither heartbeats nor rejoins.
	start := time.Now()
	jb := b.join(ctx, t, group, "")
	took := time.Since(start)
	wantCode(t, "second member's JoinGroup", jb.ErrorCode, nil)
	t.Logf("the join phase took %v (rebalance timeout %v, session timeout %v)", took, lateRebalance, lateSession)
	if took < lateRebalance {
		t.Errorf("the join phase ended after %v, before the rebalance timeout (%v)", took, lateRebalance)
	}
	if took > lateSession/2 {
		t.Errorf("the join phase ended after %v: the member that did not rejoin was waited for (rebalance timeout %v, session timeout %v)", took, lateRebalance, lateSession)
	}
	if jb.Generation != 2 || jb.LeaderID != jb.MemberID || len(jb.Members) != 1 {
		t.Fatalf("second member's JoinGroup: generation %d led by %s with %d members, want generation 2 led by %s alone", jb.Generation, jb.LeaderID, len(jb.Members), jb.MemberID)
	}
	wantCode(t, "second member's SyncGroup", b.sync(ctx, t, group, jb).ErrorCode, nil)

	// The first member was removed: it learns so and joins again as a new
	// member, and a second rebalance takes both.
	wantCode(t, "removed member's Heartbeat", a.heartbeat(ctx, t, group, ja), kerr.UnknownMemberID)
	wantCode(t, "removed member's JoinGroup with its old id", a.join(ctx, t, group, ja.MemberID).ErrorCode, kerr.UnknownMemberID)
	rejoined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { rejoined <- a.join(ctx, t, group, "") }()
	testutil.Eventually(t, 30*time.Second, func() error {
		code := b.heartbeat(ctx, t, group, jb)
		if code == kerr.RebalanceInProgress.Code {
			return nil
		}
		return fmt.Errorf("second member's Heartbeat: %v, want REBALANCE_IN_PROGRESS once the first joins again", kerr.ErrorForCode(code))
	})
	jb2 := b.join(ctx, t, group, jb.MemberID)
	ja2 := <-rejoined
	wantCode(t, "first member's JoinGroup as a new member", ja2.ErrorCode, nil)
	wantCode(t, "second member's rejoin", jb2.ErrorCode, nil)
	if ja2.Generation != 3 || jb2.Generation != 3 || jb2.LeaderID != jb2.MemberID || len(jb2.Members) != 2 {
		t.Fatalf("second rebalance: generations %d and %d, leader %s with %d members; want generation 3 led by %s with both",
			ja2.Generation, jb2.Generation, jb2.LeaderID, len(jb2.Members), jb2.MemberID)
	}
	synced := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { synced <- a.sync(ctx, t, group, ja2) }()
	wantCode(t, "leader's SyncGroup of generation 3", b.sync(ctx, t, group, jb2).ErrorCode, nil)
	wantCode(t, "follower's SyncGroup of generation 3", (<-synced).ErrorCode, nil)
}

// kafkaGoVersions is a client that speaks the group APIs at the versions
// kafka-go's consumer group does (JoinGroup v2, SyncGroup, Heartbeat v0):
// no MEMBER_ID_REQUIRED round trip. It waits for a JoinGroup longer than
// a session, so that a coordinator waiting that long is measured rather
// than cut off.
func kafkaGoVersions(t *testing.T, addr string) *kgo.Client {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.JoinGroup), 2)
	vs.SetMaxKeyVersion(int16(kmsg.SyncGroup), 0)
	vs.SetMaxKeyVersion(int16(kmsg.Heartbeat), 0)
	return newKgo(t, addr, kgo.MaxVersions(vs), kgo.RequestTimeoutOverhead(2*lateSession))
}

// lateMember is one classic group member driven by hand, with a client of
// its own (a JoinGroup waiting in the coordinator holds its connection).
type lateMember struct {
	cl    *kgo.Client
	topic string
}

func (m *lateMember) join(ctx context.Context, t *testing.T, group, memberID string) *kmsg.JoinGroupResponse {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = group, memberID, "consumer"
	req.SessionTimeoutMillis = int32(lateSession / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(lateRebalance / time.Millisecond)
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{m.topic}
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		t.Errorf("JoinGroup: %v", err)
		return &kmsg.JoinGroupResponse{ErrorCode: kerr.UnknownServerError.Code}
	}
	return resp
}

// sync sends SyncGroup; the leader hands each member one partition.
func (m *lateMember) sync(ctx context.Context, t *testing.T, group string, j *kmsg.JoinGroupResponse) *kmsg.SyncGroupResponse {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = group, j.MemberID, j.Generation
	for i, jm := range j.Members {
		a := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = m.topic, []int32{int32(i)}
		a.Topics = append(a.Topics, at)
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = jm.MemberID, a.AppendTo(nil)
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		t.Errorf("SyncGroup: %v", err)
		return &kmsg.SyncGroupResponse{ErrorCode: kerr.UnknownServerError.Code}
	}
	return resp
}

func (m *lateMember) heartbeat(ctx context.Context, t *testing.T, group string, j *kmsg.JoinGroupResponse) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = group, j.MemberID, j.Generation
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		t.Errorf("Heartbeat: %v", err)
		return kerr.UnknownServerError.Code
	}
	return resp.ErrorCode
}

// churnGroups keeps n groups of kafka-go readers (kafka-go's test
// timeouts) rebalancing until the test ends: every group replaces one of
// its two readers at a steady pace, each arrival and departure a
// rebalance. It returns once at least half the groups have been seen
// rebalancing.
func churnGroups(t *testing.T, addr string, n int) {
	t.Helper()
	adm := newAdmin(t, addr)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(stop); wg.Wait() })
	groups := make([]string, n)
	for i := range n {
		topic := fmt.Sprintf("churn-%d", i)
		groups[i] = "churn-group-" + topic
		createTopic(t, adm, topic, 2, nil)
		cfg := kafka.ReaderConfig{
			Brokers: []string{addr}, GroupID: groups[i], Topic: topic,
			RebalanceTimeout: lateRebalance, HeartbeatInterval: lateRebalance,
			MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 200 * time.Millisecond,
			JoinGroupBackoff: 100 * time.Millisecond,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			readers := []*kafka.Reader{kafka.NewReader(cfg)}
			defer func() {
				for _, r := range readers {
					r.Close()
				}
			}()
			tick := time.NewTicker(time.Duration(400+50*i) * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				readers = append(readers, kafka.NewReader(cfg))
				if len(readers) > 2 {
					readers[0].Close()
					readers = readers[1:]
				}
			}
		}()
	}
	seen := map[string]bool{}
	testutil.Eventually(t, time.Minute, func() error {
		described, err := adm.DescribeGroups(testCtx(t, 10*time.Second), groups...)
		if err != nil {
			return err
		}
		for _, g := range described {
			if g.State == "PreparingRebalance" || g.State == "CompletingRebalance" {
				seen[g.Group] = true
			}
		}
		if len(seen) < n/2 {
			return fmt.Errorf("%d of %d groups seen rebalancing", len(seen), n)
		}
		return nil
	})
}
