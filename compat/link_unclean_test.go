package compat

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/poll"
	"github.com/samsa-io/samsa/internal/testutil"
)

// A source partition's only in-sync replica dies and a replica that was
// behind is elected (unclean.leader.election.enable): its log, with a new
// leader epoch, lacks records the mirror copied, and it takes new writes
// past the mirror's end. The mirror stops with an error and copies none
// of them: at once (the new leader's end for the epoch of the mirror's
// last batch is below the mirror's end), and after the link is paused
// and resumed (the batch at the mirror's last offset is not the one it
// copied).
func TestLinkSourceUncleanElection(t *testing.T) {
	t.Parallel()
	src := testutil.StartCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "1000"})
	dst := testutil.StartBroker(t, nil).Addr()
	topic := admTopic("lnkun")
	createAssigned(t, src, topic, []int32{1, 2, 3}, map[string]string{"unclean.leader.election.enable": "true"})
	linkProduce(t, src.LiveAddr(), topic, 0, 20)
	linkCLI(t, dst, false, "create", "un", "--source-bootstrap-servers", strings.Join(src.Addrs(), ","), "--topics", topic,
		"--config", "metadata.refresh.interval.ms=100")
	linkWaitCaughtUp(t, src.LiveAddr(), dst, topic)

	// Broker 2 falls behind, broker 3 dies: broker 1 alone takes 30 more.
	src.Node(2).StopReplicaFetchers()
	cl := newClusterKgo(t, src, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	poll.Eventually(t, 60*time.Second, func() error {
		produceAll(t, cl, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("x")})
		if mp, err := partitionMeta(t, src.LiveAddr(), topic, 0); err != nil || len(mp.ISR) != 2 {
			return fmt.Errorf("isr %v (%v)", mp.ISR, err)
		}
		return nil
	})
	src.Node(3).Kill()
	waitISR(t, src, topic, 0, 1, 30*time.Second)
	linkProduce(t, src.LiveAddr(), topic, 0, 30)
	linkWaitCaughtUp(t, src.LiveAddr(), dst, topic)
	before, _ := linkEnds(t, dst, topic)

	// Broker 1 dies; broker 2 leads, and takes more than it lost.
	src.Node(1).Kill()
	if mp := waitLeader(t, src, topic, 0, 1, 60*time.Second); mp.Leader != 2 {
		t.Fatalf("led by %d after the unclean election, want 2", mp.Leader)
	}
	linkProduce(t, src.LiveAddr(), topic, 0, 100)
	wantErr := func() {
		t.Helper()
		poll.Eventually(t, 60*time.Second, func() error {
			for _, p := range linkDescribe(t, dst, "un").Partitions {
				if strings.Contains(p.Error, "went back") {
					return nil
				}
			}
			return fmt.Errorf("no divergence error: %+v", linkDescribe(t, dst, "un").Partitions)
		})
		if now, _ := linkEnds(t, dst, topic); now[0] != before[0] {
			t.Fatalf("the mirror went from %d to %d after the source diverged", before[0], now[0])
		}
	}
	wantErr()
	linkCLI(t, dst, false, "pause", "un")
	poll.Eventually(t, 30*time.Second, func() error {
		if ps := linkDescribe(t, dst, "un").Partitions; len(ps) != 0 {
			return fmt.Errorf("a paused link still mirrors %+v", ps)
		}
		return nil
	})
	linkCLI(t, dst, false, "resume", "un")
	wantErr()
}

// A mirror topic deleted here leaves no mirror record behind: the link
// describes no mirror of it, and can be deleted (a record left would
// count as a mirror not promoted and refuse it).
func TestLinkMirrorTopicDeleted(t *testing.T) {
	t.Parallel()
	src := testutil.StartBroker(t, nil).Addr()
	dst := testutil.StartBroker(t, nil).Addr()
	topic := admTopic("lnkdel")
	sadm, _ := admAdmin(t, src)
	admCreate(t, sadm, topic, 1, 1, nil)
	linkProduce(t, src, topic, 0, 10)
	linkCLI(t, dst, false, "create", "del", "--source-bootstrap-servers", src, "--topics", topic,
		"--config", "metadata.refresh.interval.ms=100")
	linkWaitCaughtUp(t, src, dst, topic)
	linkCLI(t, dst, false, "pause", "del") // else it mirrors the topic again at once
	dadm, _ := admAdmin(t, dst)
	if _, err := dadm.DeleteTopics(testCtx(t, 10*time.Second), topic); err != nil {
		t.Fatal(err)
	}
	if l := linkDescribe(t, dst, "del"); len(l.Mirrors) != 0 {
		t.Fatalf("mirrors after the mirror topic was deleted: %+v", l.Mirrors)
	}
	linkCLI(t, dst, false, "delete", "del")
}
