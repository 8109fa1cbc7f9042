package compat

// KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe)
// with real clients.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/broker"
	"github.com/samsa-io/samsa/internal/testutil"
)

// cgBroker is a broker whose consumer groups notice a crashed member in
// three seconds and heartbeat every 300 ms.
func cgBroker(t *testing.T) *testutil.Node {
	t.Helper()
	return grpBroker(t,
		"group.consumer.session.timeout.ms", "3000",
		"group.consumer.min.session.timeout.ms", "1000",
		"group.consumer.heartbeat.interval.ms", "300",
		"group.consumer.min.heartbeat.interval.ms", "100",
	)
}

// describeConsumerGroup asks ConsumerGroupDescribe about one group.
func describeConsumerGroup(t *testing.T, cl *kgo.Client, group string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	return resp.Groups[0], nil
}

// consumerGroupStable is a groupScenario stable check: the group is
// Stable with n members, every member at the assignment epoch, and every
// partition of the topic assigned once.
func consumerGroupStable(t *testing.T, cl *kgo.Client, group string, n, partitions int) func() error {
	return func() error {
		g, err := describeConsumerGroup(t, cl, group)
		if err != nil {
			return err
		}
		if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != n {
			return fmt.Errorf("group %s (error %d) with %d members", g.State, g.ErrorCode, len(g.Members))
		}
		seen := map[int32]bool{}
		for _, m := range g.Members {
			if m.MemberEpoch != g.AssignmentEpoch {
				return fmt.Errorf("member %s at epoch %d, assignment epoch %d", m.MemberID, m.MemberEpoch, g.AssignmentEpoch)
			}
			for _, tp := range m.Assignment.TopicPartitions {
				for _, p := range tp.Partitions {
					if seen[p] {
						return fmt.Errorf("partition %d assigned twice", p)
					}
					seen[p] = true
				}
			}
		}
		if len(seen) != partitions {
			return fmt.Errorf("%d partitions assigned, want %d", len(seen), partitions)
		}
		return nil
	}
}

// TestConsumerGroupFranz runs TestGroupBalancers' scenario with franz-go
// in KIP-848 mode (ServerSideBalancer): the range balancer asks for the
// server's range assignor, the sticky one for uniform.
func TestConsumerGroupFranz(t *testing.T) {
	t.Parallel()
	n := cgBroker(t)
	adm := newAdmin(t, n.Addr())
	prod := newKgo(t, n.Addr())
	for _, bc := range []struct {
		name string
		b    kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"uniform", kgo.StickyBalancer()},
	} {
		t.Run(bc.name, func(t *testing.T) {
			group, topic := "cg-franz-"+bc.name, "cg-franz-"+bc.name
			start := func(name string, l *grpLedger) scenarioMember {
				return startMember(t, n.Addr(), group, topic, name, l, kgo.Balancers(bc.b), kgo.ServerSideBalancer())
			}
			groupScenario(t, adm, prod, topic, group, "848-"+bc.name, start, consumerGroupStable(t, prod, group, 3, 6))
			g, err := describeConsumerGroup(t, prod, group)
			if err != nil {
				t.Fatal(err)
			}
			if g.AssignorName != bc.name {
				t.Errorf("assignor %q, want %q", g.AssignorName, bc.name)
			}
		})
	}
}

// TestConsumerGroupJava runs the scenario with Java 4.4 consumers
// (compat/java GroupMember, one JVM each) in both protocols: KIP-848
// (group.protocol=consumer) and classic.
func TestConsumerGroupJava(t *testing.T) {
	t.Parallel()
	bothProtocols(t, "java", func(t *testing.T, addr, group, topic, name, protocol string, l *grpLedger) scenarioMember {
		return startJavaMember(t, addr, group, topic, name, protocol, l)
	})
}

// TestConsumerGroupLibrdkafka runs the scenario with librdkafka
// (confluent-kafka in the virtualenv) in both protocols.
func TestConsumerGroupLibrdkafka(t *testing.T) {
	t.Parallel()
	bothProtocols(t, "rdkafka", func(t *testing.T, addr, group, topic, name, protocol string, l *grpLedger) scenarioMember {
		return startPythonMember(t, addr, group, topic, name, protocol, l)
	})
}

// bothProtocols runs groupScenario with a client's members in the
// consumer protocol, then in the classic one.
func bothProtocols(t *testing.T, client string, start func(t *testing.T, addr, group, topic, name, protocol string, l *grpLedger) scenarioMember) {
	n := cgBroker(t)
	adm := newAdmin(t, n.Addr())
	prod := newKgo(t, n.Addr())
	for _, protocol := range []string{"consumer", "classic"} {
		t.Run(protocol, func(t *testing.T) {
			group := "cg-" + client + "-" + protocol
			stable := consumerGroupStable(t, prod, group, 3, 6)
			if protocol == "classic" {
				stable = classicGroupStable(t, adm, group, 3)
			}
			groupScenario(t, adm, prod, group, group, client+"-"+protocol, func(name string, l *grpLedger) scenarioMember {
				return start(t, n.Addr(), group, group, name, protocol, l)
			}, stable)
		})
	}
}

// TestConsumerGroupCLI: Kafka 4.4's kafka-consumer-groups.sh lists a
// KIP-848 group with its type and describes its members and offsets.
func TestConsumerGroupCLI(t *testing.T) {
	t.Parallel()
	n := cgBroker(t)
	adm := newAdmin(t, n.Addr())
	prod := newKgo(t, n.Addr())
	topic, group := "cg-cli", "cg-cli-group"
	createTopic(t, adm, topic, 4, nil)
	produceKeyed(t, prod, topic, 0, 40)
	l := newLedger()
	for i := range 2 {
		m := startMember(t, n.Addr(), group, topic, fmt.Sprintf("cli-m%d", i), l, kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
		t.Cleanup(m.close)
	}
	waitRead(t, l, 40, "two members")
	testutil.Eventually(t, 30*time.Second, consumerGroupStable(t, prod, group, 2, 4))
	run := kafkaToolIn(t, testCtx(t, 3*time.Minute), n.Addr(), t.TempDir())
	tool := func(args ...string) string {
		t.Helper()
		out, err := run("", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", args...)
		if err != nil {
			t.Fatalf("kafka-consumer-groups.sh: %v", err)
		}
		t.Logf("kafka-consumer-groups.sh %v:\n%s", args, out)
		return string(out)
	}
	if out := tool("--list", "--type"); !regexp.MustCompile(`(?m)^` + group + `\s+Consumer\s*$`).MatchString(out) {
		t.Errorf("--list --type does not show %s as a Consumer group", group)
	}
	if out := tool("--describe", "--group", group, "--members"); strings.Count(out, "cli-m") != 2 {
		t.Errorf("--describe --members does not show both members")
	}
	if out := tool("--describe", "--group", group, "--state"); !strings.Contains(out, "Stable") || !strings.Contains(out, "uniform") {
		t.Errorf("--describe --state does not show a Stable group with the uniform assignor")
	}
	out := tool("--describe", "--group", group)
	rows := regexp.MustCompile(`(?m)^`+group+`\s+`+topic+`\s+\d\s+(\d+)\s+(\d+)\s+0\s`).FindAllStringSubmatch(out, -1)
	total := 0
	for _, r := range rows {
		if r[1] != r[2] {
			t.Errorf("--describe: committed %s, log end %s", r[1], r[2])
		}
		c, _ := strconv.Atoi(r[1])
		total += c
	}
	if len(rows) != 4 || total != 40 {
		t.Errorf("--describe shows %d partitions with lag 0 and %d records committed, want 4 and 40", len(rows), total)
	}
}

// TestConsumerGroupCoordinatorRestart: the broker (the group's coordinator)
// restarts; it reloads the consumer group from __consumer_offsets with its
// members, epochs and assignments, so the members go on without rejoining,
// and nothing committed is read again.
func TestConsumerGroupCoordinatorRestart(t *testing.T) {
	t.Parallel()
	n := cgBroker(t)
	adm := newAdmin(t, n.Addr())
	prod := newKgo(t, n.Addr())
	topic, group := "cg-restart", "cg-restart-group"
	createTopic(t, adm, topic, 4, nil)
	l := newLedger()
	for i := range 2 {
		m := startMember(t, n.Addr(), group, topic, fmt.Sprintf("restart-m%d", i), l, kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
		t.Cleanup(m.close)
	}
	testutil.Eventually(t, 30*time.Second, consumerGroupStable(t, prod, group, 2, 4))
	produceKeyed(t, prod, topic, 0, 100)
	waitRead(t, l, 100, "before the restart")
	before, err := describeConsumerGroup(t, prod, group)
	if err != nil {
		t.Fatal(err)
	}
	members := func(g kmsg.ConsumerGroupDescribeResponseGroup) string {
		var s []string
		for _, m := range g.Members {
			s = append(s, fmt.Sprintf("%s@%d", m.MemberID, m.MemberEpoch))
		}
		return strings.Join(s, ",")
	}

	n.Restart()
	testutil.Eventually(t, 30*time.Second, func() error {
		g, err := describeConsumerGroup(t, prod, group)
		if err != nil {
			return err
		}
		if g.ErrorCode != 0 || g.Epoch != before.Epoch || members(g) != members(before) {
			return fmt.Errorf("after the restart: error %d epoch %d members %s; before: epoch %d members %s", g.ErrorCode, g.Epoch, members(g), before.Epoch, members(before))
		}
		return nil
	})
	produceKeyed(t, prod, topic, 100, 100)
	waitRead(t, l, 200, "after the restart")
	// Still the same members and epoch: nobody had to rejoin.
	g, err := describeConsumerGroup(t, prod, group)
	if err != nil {
		t.Fatal(err)
	}
	if g.Epoch != before.Epoch || members(g) != members(before) {
		t.Errorf("after consuming on: epoch %d members %s, want %d %s", g.Epoch, members(g), before.Epoch, members(before))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, who := range l.reads {
		if len(who) > 1 && k.offset < l.committed[who[0]][k.partition] {
			t.Errorf("record %d@%d read again by %v although %s committed up to %d", k.offset, k.partition, who[1:], who[0], l.committed[who[0]][k.partition])
		}
	}
}

// TestConsumerGroupRackAware: three brokers on three racks, a partition
// led on each; three franz-go KIP-848 members, one per rack (client.rack),
// each get the partition on their rack, with both server assignors.
func TestConsumerGroupRackAware(t *testing.T) {
	t.Parallel()
	c := testutil.StartClusterWith(t, 3, map[string]string{"group.initial.rebalance.delay.ms": "0"}, func(id int32, cfg *broker.Config) {
		p, err := cfg.Props.With(map[string]string{"broker.rack": fmt.Sprintf("rack-%d", id)})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Props = p
	})
	adm := newAdmin(t, c.Node(1).Addr())
	prod := newKgo(t, c.Node(1).Addr())
	for _, bc := range []struct {
		name string
		b    kgo.GroupBalancer
	}{{"range", kgo.RangeBalancer()}, {"uniform", kgo.StickyBalancer()}} {
		t.Run(bc.name, func(t *testing.T) {
			topic, group := "cg-rack-"+bc.name, "cg-rack-"+bc.name
			createTopic(t, adm, topic, 3, nil)
			leaders := map[int32]int32{}
			testutil.Eventually(t, 20*time.Second, func() error {
				md, err := adm.Metadata(testCtx(t, 5*time.Second), topic)
				if err != nil {
					return err
				}
				if n := len(md.Topics[topic].Partitions); n != 3 {
					return fmt.Errorf("%d partitions in Metadata", n)
				}
				for _, p := range md.Topics[topic].Partitions {
					if p.Leader < 0 {
						return fmt.Errorf("partition %d has no leader", p.Partition)
					}
					leaders[p.Partition] = p.Leader
				}
				return nil
			})
			l := newLedger()
			// Join in the order that puts every partition off its rack
			// first when racks are ignored.
			for _, id := range []int32{3, 2, 1} {
				m := startMember(t, c.Node(1).Addr(), group, topic, fmt.Sprintf("rack-%d", id), l,
					kgo.Balancers(bc.b), kgo.ServerSideBalancer(), kgo.Rack(fmt.Sprintf("rack-%d", id)))
				t.Cleanup(m.close)
			}
			testutil.Eventually(t, 30*time.Second, func() error {
				if err := consumerGroupStable(t, prod, group, 3, 3)(); err != nil {
					return err
				}
				g, err := describeConsumerGroup(t, prod, group)
				if err != nil {
					return err
				}
				for _, m := range g.Members {
					for _, tp := range m.Assignment.TopicPartitions {
						for _, p := range tp.Partitions {
							if want := fmt.Sprintf("rack-%d", leaders[p]); m.RackID == nil || *m.RackID != want {
								return fmt.Errorf("partition %d (on %s) assigned to a member on %v", p, want, derefStr(m.RackID))
							}
						}
					}
				}
				return nil
			})
		})
	}
}

// TestConsumerGroupRegex: a franz-go KIP-848 member subscribed by regular
// expression (SubscribedTopicRegex, matched by the coordinator) is assigned
// a matching topic created after it joined, and loses one deleted.
func TestConsumerGroupRegex(t *testing.T) {
	t.Parallel()
	n := cgBroker(t)
	adm := newAdmin(t, n.Addr())
	prod := newKgo(t, n.Addr())
	group := "cg-regex-group"
	createTopic(t, adm, "cg-rx-a", 2, nil)
	createTopic(t, adm, "cg-other", 2, nil)
	l := newLedger()
	m := startMember(t, n.Addr(), group, "^cg-rx-.*", "regex-m0", l, kgo.ConsumeRegex(),
		kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
	t.Cleanup(m.close)
	assigned := func(want ...string) func() error {
		return func() error {
			g, err := describeConsumerGroup(t, prod, group)
			if err != nil {
				return err
			}
			if len(g.Members) != 1 || g.Members[0].SubscribedTopicRegex == nil {
				return fmt.Errorf("members %+v", g.Members)
			}
			var got []string
			for _, tp := range g.Members[0].Assignment.TopicPartitions {
				got = append(got, fmt.Sprintf("%s/%d", tp.Topic, len(tp.Partitions)))
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				return fmt.Errorf("assigned %v, want %v", got, want)
			}
			return nil
		}
	}
	testutil.Eventually(t, 30*time.Second, assigned("cg-rx-a/2"))
	produceKeyed(t, prod, "cg-rx-a", 0, 10)
	waitRead(t, l, 10, "cg-rx-a")

	createTopic(t, adm, "cg-rx-b", 3, nil)
	testutil.Eventually(t, 30*time.Second, assigned("cg-rx-a/2", "cg-rx-b/3"))
	produceKeyed(t, prod, "cg-rx-b", 10, 10)
	produceKeyed(t, prod, "cg-other", 20, 10)
	// The ledger does not tell topics apart: the commits do. All of
	// cg-rx-b is committed, nothing of cg-other.
	testutil.Eventually(t, 30*time.Second, func() error {
		offs, err := adm.FetchOffsets(testCtx(t, 10*time.Second), group)
		if err != nil {
			return err
		}
		total := int64(0)
		for _, p := range []int32{0, 1, 2} {
			if o, ok := offs.Lookup("cg-rx-b", p); ok {
				total += o.At
			}
		}
		if _, ok := offs["cg-other"]; ok || total != 10 {
			return fmt.Errorf("cg-rx-b committed %d of 10; cg-other committed: %v", total, ok)
		}
		return nil
	})

	if _, err := adm.DeleteTopics(testCtx(t, 10*time.Second), "cg-rx-a"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, assigned("cg-rx-b/3"))
}
