package groups

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnCommit(c *Coordinator, group string, pid int64, topic string, p int32, off int64) int16 {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "tx", group, pid, 0, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = p, off, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.TxnOffsetCommit(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}

func stableFetch(c *Coordinator, group, topic string, p int32) (int64, int16) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group, req.RequireStable = group, true
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	rp := c.OffsetFetch(req).Topics[0].Partitions[0]
	return rp.Offset, rp.ErrorCode
}

// A TxnOffsetCommit is pending until its marker: RequireStable fetches get
// UNSTABLE_OFFSET_COMMIT, a commit applies it, an abort drops it; a new
// coordinator replaying the log reaches the same state.
func TestTxnOffsetCommitPendingUntilMarker(t *testing.T) {
	l := newMemLog()
	c := New(testConfig(l))
	defer c.Close()
	ownAll(t, c)
	const g = "eos"
	p := c.PartitionFor(g)
	if code := simpleCommit(c, g, "in", 0, 5); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	if code := txnCommit(c, g, 42, "in", 0, 10); code != 0 {
		t.Fatalf("txn commit: %v", kerr.ErrorForCode(code))
	}
	if off, code := stableFetch(c, g, "in", 0); code != kerr.UnstableOffsetCommit.Code || off != -1 {
		t.Fatalf("stable fetch while pending: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	if off, code := fetchOffset(c, g, "in", 0); code != 0 || off != 5 {
		t.Fatalf("fetch while pending: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	l.marker(p, 42, true)
	c.CompleteTxn(p, 42, true)
	if off, code := stableFetch(c, g, "in", 0); code != 0 || off != 10 {
		t.Fatalf("after the commit marker: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	if code := txnCommit(c, g, 42, "in", 0, 20); code != 0 {
		t.Fatalf("txn commit: %v", kerr.ErrorForCode(code))
	}
	l.marker(p, 42, false)
	c.CompleteTxn(p, 42, false)
	if off, code := stableFetch(c, g, "in", 0); code != 0 || off != 10 {
		t.Fatalf("after the abort marker: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	if code := txnCommit(c, g, 43, "in", 1, 7); code != 0 {
		t.Fatalf("txn commit: %v", kerr.ErrorForCode(code))
	}
	c.Close()

	cfg := testConfig(l)
	cfg.PartitionExists = func(topic string, _ int32) bool { return topic == "in" }
	c2 := New(cfg)
	defer c2.Close()
	ownAll(t, c2)
	if off, code := stableFetch(c2, g, "in", 0); code != 0 || off != 10 {
		t.Fatalf("reloaded: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	if _, code := stableFetch(c2, g, "in", 1); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("reloaded pending: %v", kerr.ErrorForCode(code))
	}
	c2.CompleteTxn(p, 43, true)
	if off, code := stableFetch(c2, g, "in", 1); code != 0 || off != 7 {
		t.Fatalf("reloaded then committed: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	if code := txnCommit(c2, g, 44, "nope", 0, 1); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("txn commit of an unknown partition: %v", kerr.ErrorForCode(code))
	}
}
