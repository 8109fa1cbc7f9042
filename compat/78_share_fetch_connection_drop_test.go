package compat

// A share consumer whose connection drops without acknowledging: Kafka 4.4
// ties a share session to the connection whose ShareFetch opened it, so
// when that connection closes the session ends and the records the member
// had acquired are released at once. Another member gets them long before
// the acquisition lock (60 s here) would have expired.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// shareConnDrop runs the sequence against a one-broker cluster at addr
// and returns what each step answered.
func shareConnDrop(t *testing.T, addr string) []string {
	e := newShareEnv(t, addr)
	const topic, group = "share-conn-drop", "share-conn-drop-group"
	e.createTopic(t, topic, 1)
	setGroupConfig(t, e.cl, group, "share.auto.offset.reset", "earliest")
	setGroupConfig(t, e.cl, group, "share.record.lock.duration.ms", "60000")
	produceShare(t, e.cl, topic, 10, 10)
	id := topicID(t, e.adm, topic)
	var out []string
	note := noter(t, &out)

	coord := admDialCoordinator(t, addr, group)
	join := func(member string) { shareJoinAssigned(t, coord, group, member, topic) }
	const first, second = "dropped-member", "second-member"
	join(first)
	join(second)

	// fetch sends one ShareFetch of the partition on c and returns the
	// records it acquired and the lock duration the leader answered.
	fetch := func(c *admConn, member string, sessionEpoch int32) ([]kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, int32) {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), sessionEpoch
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 500, 1, 1<<20, 100, 100
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID = id
		ft.Partitions = append(ft.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		req.Topics = append(req.Topics, ft)
		resp := c.roundTrip(req, 1).(*kmsg.ShareFetchResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("ShareFetch of %s: error %d %s", member, resp.ErrorCode, derefStr(resp.ErrorMessage))
		}
		var acquired []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				acquired = append(acquired, rp.AcquiredRecords...)
			}
		}
		return acquired, resp.AcquisitionLockTimeoutMillis
	}
	describe := func(as []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord) string {
		var s []string
		for _, a := range as {
			s = append(s, fmt.Sprintf("%d-%d delivery %d", a.FirstOffset, a.LastOffset, a.DeliveryCount))
		}
		return strings.Join(s, ", ")
	}

	dropped := admDial(t, addr)
	var acquired []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	var lock int32
	sessionEpoch := int32(0)
	testutil.Eventually(t, 60*time.Second, func() error {
		var got []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
		got, lock = fetch(dropped, first, sessionEpoch)
		sessionEpoch++
		acquired = append(acquired, got...)
		if n := acquiredCount(acquired); n < 10 {
			return fmt.Errorf("%d records acquired", n)
		}
		return nil
	})
	note("%s acquired %s, lock %d ms", first, describe(acquired), lock)

	// The connection closes with nothing acknowledged; the member stays
	// in the group (its session timeout is 45 s).
	dropped.c.Close()
	start := time.Now()

	// The second member must get the records well before the 60 s lock:
	// 20 s tells the release on disconnect from the lock's expiry.
	other := admDial(t, addr)
	var again []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	deadline := start.Add(20 * time.Second)
	for sessionEpoch = 0; acquiredCount(again) < 10 && time.Now().Before(deadline); sessionEpoch++ {
		got, _ := fetch(other, second, sessionEpoch)
		again = append(again, got...)
	}
	t.Logf("%s acquired %d records %v after the connection closed", second, acquiredCount(again), time.Since(start).Round(time.Millisecond))
	note("%s acquired %s within 20 s", second, describe(again))
	return out
}

// shareConnDropKafka is what Apache Kafka 4.4 answered
// (TestShareConnectionDropReleasesKafkaReference).
var shareConnDropKafka = []string{
	"dropped-member acquired 0-9 delivery 1, lock 60000 ms",
	"second-member acquired 0-9 delivery 2 within 20 s",
}

func TestShareConnectionDropReleases(t *testing.T) {
	sameAnswers(t, "samsa", shareConnDrop(t, shareBrokerAddr(t)), shareConnDropKafka)
}

func TestShareConnectionDropReleasesKafkaReference(t *testing.T) {
	t.Parallel()
	kb, _ := startKafkaRef(t)
	sameAnswers(t, "Kafka 4.4", shareConnDrop(t, kb.Addr), shareConnDropKafka)
}
