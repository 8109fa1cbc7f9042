package compat

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/testutil"
)

// The idempotent producer's guarantees (KIP-98) through raw Produce
// requests: a retried batch is acknowledged with its original offset and
// not written twice, a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER, an
// older epoch is refused, and all of it survives a restart because the
// producer state is rebuilt from the log.
func TestIdempotentProducerSequences(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	cl := newKgo(t, n.Addr())
	adm := newAdmin(t, n.Addr())
	const topic = "idem"
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)

	pid, epoch := initProducerID(t, cl)
	if pid < 0 || epoch != 0 {
		t.Fatalf("InitProducerID gave id %d epoch %d", pid, epoch)
	}
	other, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(testCtx(t, 10*time.Second), cl)
	if err != nil || other.ProducerID == pid {
		t.Fatalf("second InitProducerID: %v, id %d (first %d): ids must differ", err, other.ProducerID, pid)
	}

	now := time.Now().UnixMilli()
	b0 := rawBatch(pid, epoch, 0, now, []byte("a"), []byte("b"))
	b1 := rawBatch(pid, epoch, 2, now, []byte("c"))

	sp := produceRaw(t, cl, topic, id, 0, b0)
	wantCode(t, "first batch", sp.ErrorCode, nil)
	if sp.BaseOffset != 0 {
		t.Fatalf("first batch at %d, want 0", sp.BaseOffset)
	}
	sp = produceRaw(t, cl, topic, id, 0, b1)
	wantCode(t, "second batch", sp.ErrorCode, nil)
	if sp.BaseOffset != 2 {
		t.Fatalf("second batch at %d, want 2", sp.BaseOffset)
	}

	// A retry of the first batch: success with the original offset.
	sp = produceRaw(t, cl, topic, id, 0, b0)
	wantCode(t, "retried batch", sp.ErrorCode, nil)
	if sp.BaseOffset != 0 {
		t.Fatalf("retried batch answered offset %d, want the original 0", sp.BaseOffset)
	}
	// A gap in the sequence.
	sp = produceRaw(t, cl, topic, id, 0, rawBatch(pid, epoch, 5, now, []byte("gap")))
	wantCode(t, "sequence gap", sp.ErrorCode, kerr.OutOfOrderSequenceNumber)

	end := func() int64 {
		lo := listOffsetRaw(t, cl, topic, 0, -1)
		return lo.Offset
	}
	if got := end(); got != 3 {
		t.Fatalf("log end offset %d after a duplicate and a gap, want 3", got)
	}

	// After a restart the producer state comes back from the log.
	n.Restart()
	waitLed(t, n.Addr(), topic, 0)
	cl2 := newKgo(t, n.Addr())
	sp = produceRaw(t, cl2, topic, id, 0, b1)
	wantCode(t, "retry after restart", sp.ErrorCode, nil)
	if sp.BaseOffset != 2 {
		t.Fatalf("retry after restart answered offset %d, want the original 2", sp.BaseOffset)
	}
	sp = produceRaw(t, cl2, topic, id, 0, rawBatch(pid, epoch, 3, now, []byte("d")))
	wantCode(t, "next batch after restart", sp.ErrorCode, nil)
	if sp.BaseOffset != 3 {
		t.Fatalf("next batch after restart at %d, want 3", sp.BaseOffset)
	}
	// A bumped epoch starts at sequence 0; the old epoch is then fenced.
	sp = produceRaw(t, cl2, topic, id, 0, rawBatch(pid, epoch+1, 0, now, []byte("e")))
	wantCode(t, "new epoch", sp.ErrorCode, nil)
	sp = produceRaw(t, cl2, topic, id, 0, rawBatch(pid, epoch, 4, now, []byte("zombie")))
	if sp.ErrorCode == 0 {
		t.Fatalf("a batch from the older epoch was accepted at %d", sp.BaseOffset)
	}
	if got := kerr.ErrorForCode(sp.ErrorCode); got != kerr.InvalidProducerEpoch && got != kerr.ProducerFenced {
		t.Fatalf("older epoch: %v, want INVALID_PRODUCER_EPOCH", got)
	}
	cl2.Close()
	if got := listOffsetRaw(t, newKgo(t, n.Addr()), topic, 0, -1).Offset; got != 5 {
		t.Fatalf("log end offset %d, want 5", got)
	}
}
