package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// TestConsumerGroupMigrationJava: online migration with Java 4.4
// consumers. A classic group of three members on six partitions is rolled
// one member at a time to group.protocol=consumer: the first consumer
// member turns the group into a consumer group (with the two classic
// members still in it, heartbeating through the classic protocol), and
// the group keeps its offsets throughout. Then it is rolled back one
// member at a time: when the last consumer-protocol member leaves, it is a
// classic group again. Records are produced after every step; every one
// is read, none that its reader committed is read again, and the final
// commits cover every partition's end.
func TestConsumerGroupMigrationJava(t *testing.T) {
	t.Parallel()
	n := cgBroker(t)
	adm := newAdmin(t, n.Addr())
	prod := newKgo(t, n.Addr())
	group := "cg-migrate-java"
	topic := group
	createTopic(t, adm, topic, 6, nil)
	l := newLedger()
	start := func(name, protocol string) *procMember {
		m := startJavaMember(t, n.Addr(), group, topic, name, protocol, l)
		t.Cleanup(m.close)
		return m
	}
	members := make([]*procMember, 3)
	for i := range members {
		members[i] = start(fmt.Sprintf("classic-%d", i), "classic")
	}
	testutil.Eventually(t, 60*time.Second, classicGroupStable(t, adm, group, 3))
	produced := 0
	step := func(what string) {
		t.Helper()
		produceKeyed(t, prod, topic, produced, 120)
		produced += 120
		waitRead(t, l, produced, what)
	}
	step("three classic members")

	groupType := func() string {
		lg, err := adm.ListGroups(testCtx(t, 10*time.Second))
		if err != nil {
			t.Fatalf("ListGroups: %v", err)
		}
		for _, g := range lg {
			if g.Group == group {
				return g.GroupType
			}
		}
		return ""
	}
	roll := func(i int, protocol, wantType string) {
		t.Helper()
		members[i].leave()
		members[i] = start(fmt.Sprintf("%s-%d", protocol, i), protocol)
		testutil.Eventually(t, 60*time.Second, func() error {
			if got := groupType(); got != wantType {
				return fmt.Errorf("group type %q, want %q", got, wantType)
			}
			if wantType == "consumer" {
				return consumerGroupMembers(t, prod, group, 3)
			}
			return classicGroupStable(t, adm, group, 3)()
		})
		step(fmt.Sprintf("member %d rolled to %s", i, protocol))
	}
	for i := range members {
		roll(i, "consumer", "consumer")
	}
	testutil.Eventually(t, 60*time.Second, consumerGroupStable(t, prod, group, 3, 6))
	roll(0, "classic", "consumer")
	roll(1, "classic", "consumer")
	roll(2, "classic", "classic")

	checkNoCommittedReread(t, l)
	checkCommittedToEnd(t, adm, topic, group)
}

// consumerGroupMembers checks that a consumer group has n members, each
// at the group's assignment epoch.
func consumerGroupMembers(t *testing.T, cl *kgo.Client, group string, n int) error {
	g, err := describeConsumerGroup(t, cl, group)
	if err != nil {
		return err
	}
	if g.ErrorCode != 0 || len(g.Members) != n {
		return fmt.Errorf("group %s (error %d) with %d members, want %d", g.State, g.ErrorCode, len(g.Members), n)
	}
	return nil
}

// checkNoCommittedReread fails for every record read again although its
// first reader had committed past it.
func checkNoCommittedReread(t *testing.T, l *grpLedger) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, who := range l.reads {
		if len(who) == 1 {
			continue
		}
		if c := l.committed[who[0]][k.partition]; k.offset < c {
			t.Errorf("record %d@%d read again by %v although %s committed up to %d", k.offset, k.partition, who[1:], who[0], c)
		}
	}
}

// checkCommittedToEnd waits until the group's committed offsets are the
// end of every partition of topic.
func checkCommittedToEnd(t *testing.T, adm *kadm.Client, topic, group string) {
	t.Helper()
	ends, err := adm.ListEndOffsets(testCtx(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		offs, err := adm.FetchOffsets(testCtx(t, 10*time.Second), group)
		if err != nil {
			return err
		}
		var bad []string
		ends.Each(func(e kadm.ListedOffset) {
			if o, _ := offs.Lookup(topic, e.Partition); o.At != e.Offset {
				bad = append(bad, fmt.Sprintf("p%d committed %d, end %d", e.Partition, o.At, e.Offset))
			}
		})
		if len(bad) > 0 {
			return fmt.Errorf("%v", bad)
		}
		return nil
	})
}

// group.consumer.migration.policy: with disabled (or downgrade), a
// ConsumerGroupHeartbeat joining a classic group that has members is
// refused GROUP_ID_NOT_FOUND and the group stays classic; with upgrade
// (as with bidirectional) it joins and the group becomes a consumer group.
func TestConsumerGroupMigrationPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy  string
		upgrade bool
	}{{"disabled", false}, {"DOWNGRADE", false}, {"upgrade", true}} {
		t.Run(tc.policy, func(t *testing.T) {
			n := grpBroker(t, "group.consumer.migration.policy", tc.policy)
			adm, cl := admAdmin(t, n.Addr())
			group, topic := "migrate-policy", "migrate-policy"
			admCreate(t, adm, topic, 2, 1, nil)
			m := startMember(t, n.Addr(), group, topic, "classic", newLedger())
			t.Cleanup(m.close)
			testutil.Eventually(t, 30*time.Second, classicGroupStable(t, adm, group, 1))
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.MemberEpoch = group, "member-policy-00000000", 0
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicNames = []string{topic}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
			if err != nil {
				t.Fatal(err)
			}
			want := kerr.GroupIDNotFound.Code
			if tc.upgrade {
				want = 0
			}
			if resp.ErrorCode != want {
				t.Fatalf("join a classic group with members: %v %s, want %v", kerr.ErrorForCode(resp.ErrorCode), derefStr(resp.ErrorMessage), kerr.ErrorForCode(want))
			}
			lg, err := adm.ListGroups(testCtx(t, 10*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			wantType := "classic"
			if tc.upgrade {
				wantType = "consumer"
			}
			if len(lg) != 1 || lg[group].GroupType != wantType {
				t.Errorf("ListGroups: %+v, want one %s group", lg, wantType)
			}
		})
	}
}
