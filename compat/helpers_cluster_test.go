package compat

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// cluster is a set of brokers, in-process (testutil.Cluster) or processes.
type cluster interface {
	Addrs() []string         // every node's address, running or not
	LiveAddr() string        // a running node's address
	IsRunning(id int32) bool // whether node id runs
}

// newClusterKgo is a kgo client seeded with every node of a cluster, so it
// finds the cluster while any node runs.
func newClusterKgo(t testing.TB, c cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(c.Addrs()...)}, opts...)
	return newKgo(t, c.Addrs()[0], opts...)
}

// createReplicatedTopic creates a topic with rf replicas per partition and
// waits until every partition has a leader and its full ISR.
func createReplicatedTopic(t testing.TB, c cluster, topic string, partitions int32, rf int16, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(newClusterKgo(t, c))
	resp, err := adm.CreateTopic(testCtx(t, 30*time.Second), partitions, rf, configs, topic)
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
	if resp.Err != nil {
		t.Fatalf("CreateTopic %s: %v (%s)", topic, resp.Err, resp.ErrMessage)
	}
	for p := range partitions {
		waitISR(t, c, topic, p, int(rf), 30*time.Second)
	}
}

// partitionMeta asks a running node for one partition's metadata.
func partitionMeta(t testing.TB, addr string, topic string, partition int32) (kmsg.MetadataResponseTopicPartition, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return kmsg.MetadataResponseTopicPartition{}, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 5*time.Second), cl)
	if err != nil {
		return kmsg.MetadataResponseTopicPartition{}, err
	}
	for _, mt := range resp.Topics {
		for _, mp := range mt.Partitions {
			if mp.Partition == partition {
				return mp, nil
			}
		}
	}
	return kmsg.MetadataResponseTopicPartition{}, fmt.Errorf("%s-%d not in metadata", topic, partition)
}

// waitISR waits until a running node reports the partition led, with an
// ISR of n replicas.
func waitISR(t testing.TB, c cluster, topic string, partition int32, n int, timeout time.Duration) kmsg.MetadataResponseTopicPartition {
	t.Helper()
	return waitPartition(t, c, topic, partition, timeout, func(mp kmsg.MetadataResponseTopicPartition) error {
		if mp.Leader < 0 || len(mp.ISR) != n {
			return fmt.Errorf("%s-%d: leader %d, isr %v, want %d in sync", topic, partition, mp.Leader, mp.ISR, n)
		}
		return nil
	})
}

// waitLeader waits until the partition's leader is a running node other
// than not, and returns it.
func waitLeader(t testing.TB, c cluster, topic string, partition int32, not int32, timeout time.Duration) kmsg.MetadataResponseTopicPartition {
	t.Helper()
	return waitPartition(t, c, topic, partition, timeout, func(mp kmsg.MetadataResponseTopicPartition) error {
		if mp.Leader < 0 || mp.Leader == not || !c.IsRunning(mp.Leader) {
			return fmt.Errorf("%s-%d: leader %d", topic, partition, mp.Leader)
		}
		return nil
	})
}

// waitPartition polls a running node's metadata of the partition until
// ready accepts it, and returns it.
func waitPartition(t testing.TB, c cluster, topic string, partition int32, timeout time.Duration, ready func(kmsg.MetadataResponseTopicPartition) error) kmsg.MetadataResponseTopicPartition {
	t.Helper()
	var mp kmsg.MetadataResponseTopicPartition
	testutil.Eventually(t, timeout, func() error {
		var err error
		if mp, err = partitionMeta(t, c.LiveAddr(), topic, partition); err != nil {
			return err
		}
		return ready(mp)
	})
	return mp
}

// ackedRecord is a record a producer was told is written.
type ackedRecord struct {
	offset int64
	value  string
}

// checkAcked reads the partition from offset 0 up to its high watermark and
// fails the test unless every acknowledged record is there at its offset,
// with its value, in the order acknowledged, and no record (values are
// unique) was written twice.
func checkAcked(t testing.TB, c cluster, topic string, partition int32, acked []ackedRecord) {
	t.Helper()
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged")
	}
	last := slices.MaxFunc(acked, func(a, b ackedRecord) int { return int(a.offset - b.offset) }).offset
	cl := newClusterKgo(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx := testCtx(t, 60*time.Second)
	got := map[int64]string{}
	for {
		if _, ok := got[last]; ok {
			break
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %s-%d: reached %d records, last acked offset %d not read", topic, partition, len(got), last)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error (retried): %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if prev, ok := got[r.Offset]; ok && prev != string(r.Value) {
				t.Errorf("offset %d read as %q and as %q", r.Offset, prev, r.Value)
			}
			got[r.Offset] = string(r.Value)
		})
	}
	// The producers are idempotent: a retried batch must not be written
	// twice, across failovers included.
	at := map[string]int64{}
	for off, v := range got {
		if first, ok := at[v]; ok {
			t.Errorf("record %q written twice, at offsets %d and %d", v, min(first, off), max(first, off))
		}
		at[v] = off
	}
	prev := int64(-1)
	for _, a := range acked {
		v, ok := got[a.offset]
		switch {
		case !ok:
			t.Errorf("acknowledged record %q at offset %d lost", a.value, a.offset)
		case v != a.value:
			t.Errorf("offset %d holds %q, acknowledged %q", a.offset, v, a.value)
		}
		if a.offset <= prev {
			t.Errorf("acknowledged offsets out of order: %d after %d", a.offset, prev)
		}
		prev = a.offset
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// errName is the Kafka name of a kerr error, or its text.
func errName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

type errLeader int32

func (e errLeader) Error() string { return fmt.Sprintf("leader is %d", int32(e)) }
