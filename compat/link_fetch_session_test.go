package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/poll"
	"github.com/samsa-io/samsa/internal/testutil"
)

// A link fetches every mirror partition that one source broker leads in
// one KIP-227 fetch session with it, as Kafka's followers and consumers
// do, not in a Fetch of its own per partition (which, sessionless, sends
// every partition's request every MaxWait; with a session per partition
// it would fill the source's max.incremental.fetch.session.cache.slots).
// The source here is a samsa broker, whose FetchSessionCache gauges count
// the sessions it holds: no consumer and no follower fetches from it
// until the copies are compared, so every session is the link's. The session survives records written to
// some partitions while the others stay quiet, and the copies stay
// identical.
func TestLinkFetchesInOneSession(t *testing.T) {
	t.Parallel()
	fast := map[string]string{"group.initial.rebalance.delay.ms": "0"}
	src := testutil.StartBroker(t, fast)
	dst := testutil.StartBroker(t, fast)
	prefix := admTopic("lsess")
	topics := map[string]int32{prefix + "-a": 8, prefix + "-b": 4}
	adm, _ := admAdmin(t, src.Addr())
	for topic, n := range topics {
		admCreate(t, adm, topic, n, 1, nil)
	}
	produce := func(round int, partitions int32) {
		cl := newKgo(t, src.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		var recs []*kgo.Record
		for topic := range topics {
			for p := range partitions {
				for i := range 5 {
					recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "r%d-%d-%d", round, p, i)})
				}
			}
		}
		if err := cl.ProduceSync(testCtx(t, 30*time.Second), recs...).FirstErr(); err != nil {
			t.Fatalf("produce round %d: %v", round, err)
		}
	}
	produce(0, 4)
	linkCLI(t, dst.Addr(), false, "create", "sess", "--source-bootstrap-servers", src.Addr(), "--topics", prefix+"-.*")
	waitSession := func() {
		poll.Eventually(t, 60*time.Second, func() error {
			sessions := brokerGauge(t, src, "kafka_server_fetchsessioncache_numincrementalfetchsessions")
			cached := brokerGauge(t, src, "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached")
			if sessions != 1 || cached != 12 {
				return fmt.Errorf("the source holds %v fetch sessions with %v partitions; want 1 session with all 12 mirror partitions", sessions, cached)
			}
			return nil
		})
	}
	for topic := range topics {
		linkWaitCaughtUp(t, src.Addr(), dst.Addr(), topic)
	}
	waitSession()
	produce(1, 2) // partitions 0 and 1 move, the others stay quiet
	for topic := range topics {
		linkWaitCaughtUp(t, src.Addr(), dst.Addr(), topic)
	}
	waitSession() // before linkCompare's consumers open sessions of their own
	for topic := range topics {
		linkCompare(t, src.Addr(), dst.Addr(), topic)
	}
}
