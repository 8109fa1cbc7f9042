package compat

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-848 regular expressions as Kafka 4.4's coordinator resolves them:
// against the whole topic name, internal topics included. A franz-go
// consumer (group.protocol consumer, ConsumeRegex) subscribed to
// __consumer_offsets is assigned its partitions, and a member whose
// heartbeat names a regex gets exactly the topics the regex matches
// whole. samsa left internal topics out (the franz-go member was never
// assigned anything) and matched anywhere in a name.
func TestConsumerGroupRegexKafkaReference(t *testing.T) {
	t.Parallel()
	probeKafkaAndSamsa(t, nil, regexProbe)
}

// regexProbe subscribes KIP-848 members by regex on the broker at addr and
// returns what each was assigned ("topic/partitions", sorted).
func regexProbe(t *testing.T, addr string) map[string]string {
	t.Helper()
	out := map[string]string{}
	adm, cl := admAdmin(t, addr)
	for _, tp := range []struct {
		name  string
		parts int32
	}{{"rxref-a", 2}, {"x-rxref-a", 1}, {"rxref", 1}} {
		admCreate(t, adm, tp.name, tp.parts, 1, nil)
	}
	// assigned waits until the group's one member holds want (or 30 s
	// pass), calling beat before each look, and returns what it holds.
	assigned := func(group, want string, beat func()) string {
		t.Helper()
		got := ""
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); <-tick.C {
			beat()
			g, err := describeConsumerGroup(t, cl, group)
			if err != nil || len(g.Members) != 1 {
				continue
			}
			var ts []string
			for _, tp := range g.Members[0].Assignment.TopicPartitions {
				ts = append(ts, fmt.Sprintf("%s/%d", tp.Topic, len(tp.Partitions)))
			}
			slices.Sort(ts)
			if got = strings.Join(ts, ","); got == want {
				break
			}
		}
		return got
	}

	// franz-go, subscribed by regex to the offsets topic (which its
	// first FindCoordinator creates, 50 partitions on both brokers) and
	// rxref-a. It leaves internal topics out of its own matching (and
	// would not join for them alone) but sends the regex, wrapped in .*,
	// and takes what the broker assigns.
	ctx, cancel := context.WithCancel(context.Background())
	member, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("rxref-internal"),
		kgo.ConsumeRegex(), kgo.ConsumeTopics("__consumer_offsets", "rxref-a"), kgo.DisableAutoCommit(),
		kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			member.PollRecords(ctx, 100)
		}
	}()
	out["franz-go regex __consumer_offsets, rxref-a"] = assigned("rxref-internal", "__consumer_offsets/50,rxref-a/2,x-rxref-a/1", func() {})
	cancel()
	<-done
	member.Close()

	// A member's own heartbeats: the regex matches rxref-a and the
	// offsets topic whole, not x-rxref-a (a match inside the name) nor
	// rxref (a prefix of it).
	c := admDial(t, addr)
	const group, id = "rxref-raw", "rxref-member-000000000"
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, id, 30000
	req.SubscribedTopicRegex = kmsg.StringPtr("__consumer_offsets|rxref-.")
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	out["heartbeat regex __consumer_offsets|rxref-."] = assigned(group, "__consumer_offsets/50,rxref-a/2", func() {
		resp := c.roundTrip(req, 1).(*kmsg.ConsumerGroupHeartbeatResponse)
		if resp.ErrorCode == 0 && req.MemberEpoch == 0 {
			// Joined: later heartbeats send only what changed (nothing).
			req.MemberEpoch = resp.MemberEpoch
			req.SubscribedTopicRegex, req.RebalanceTimeoutMillis, req.Topics = nil, -1, nil
		} else if resp.ErrorCode == 0 {
			req.MemberEpoch = resp.MemberEpoch
		}
	})
	return out
}
