package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franzTxn is scenario 7 with franz-go: 30 records committed, 30 aborted
// (value "aborted"), 30 more committed, read back at read_committed (the
// 60, each once, no aborted one); then a second producer of the id
// (InitProducerId) fences the first, whose next transaction fails with
// PRODUCER_FENCED.
func franzTxn(ctx context.Context, e *env) error {
	adm, done, err := franzAdminClient(e)
	if err != nil {
		return err
	}
	defer done()
	topic, id := e.prefix+"-txn", e.prefix+"-txn-id"
	if err := franzCreateTopic(ctx, adm, topic, 3, nil); err != nil {
		return err
	}
	cl, err := franzClient(e, kgo.TransactionalID(id), kgo.TransactionTimeout(30*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	txn := func(from, to int, commit bool) error {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			r := franzRecord(topic, i)
			if !commit {
				r.Value = []byte("aborted")
			}
			rs = append(rs, r)
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
	}
	for _, t := range []struct {
		from, to int
		commit   bool
	}{{0, 30, true}, {0, 30, false}, {30, 60, true}} {
		if err := txn(t.from, t.to, t.commit); err != nil {
			return fmt.Errorf("transaction of %d-%d (commit %v): %w", t.from, t.to, t.commit, err)
		}
	}
	rc, err := franzClient(e, kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {
			0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart(),
		}}))
	if err != nil {
		return err
	}
	defer rc.Close()
	rctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	check := newReadCheck(60)
	for !check.done() {
		fs := rc.PollFetches(rctx)
		if rctx.Err() != nil {
			return fmt.Errorf("read_committed: %w", check.err())
		}
		for _, r := range fs.Records() {
			if err := check.add(r.Partition, r.Offset, r.Key, r.Value, franzHeaders(r)); err != nil {
				return fmt.Errorf("read_committed: %w", err)
			}
		}
	}

	// Fencing: a new producer of the id bumps its epoch.
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 30000
	if err := eventually(ctx, "InitProducerId of a second producer", func(ctx context.Context) error {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	}); err != nil {
		return err
	}
	err = txn(60, 61, true)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		return fmt.Errorf("the fenced producer's transaction: %v, want PRODUCER_FENCED", err)
	}
	return nil
}

// saramaTxn is scenario 7 with sarama's transactional producer.
func saramaTxn(ctx context.Context, e *env) error {
	adm, err := saramaAdminClient(e)
	if err != nil {
		return err
	}
	defer adm.Close()
	topic, id := e.prefix+"-txn", e.prefix+"-txn-id"
	if err := saramaCreateTopic(adm, topic, 3, nil); err != nil {
		return err
	}
	newProducer := func() (sarama.SyncProducer, error) {
		c := saramaConfig()
		c.Producer.Idempotent = true
		c.Producer.Transaction.ID = id
		c.Producer.Transaction.Timeout = 30 * time.Second
		c.Producer.Partitioner = sarama.NewManualPartitioner
		c.Net.MaxOpenRequests = 1
		return sarama.NewSyncProducer([]string{e.bootstrap}, c)
	}
	p, err := newProducer()
	if err != nil {
		return err
	}
	defer p.Close()
	txn := func(from, to int, commit bool) error {
		if err := p.BeginTxn(); err != nil {
			return err
		}
		var ms []*sarama.ProducerMessage
		for i := from; i < to; i++ {
			m := saramaMessage(topic, i)
			m.Partition = int32(i % 3)
			if !commit {
				m.Value = sarama.StringEncoder("aborted")
			}
			ms = append(ms, m)
		}
		if err := p.SendMessages(ms); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		if commit {
			return p.CommitTxn()
		}
		return p.AbortTxn()
	}
	for _, t := range []struct {
		from, to int
		commit   bool
	}{{0, 30, true}, {0, 30, false}, {30, 60, true}} {
		if err := txn(t.from, t.to, t.commit); err != nil {
			return fmt.Errorf("transaction of %d-%d (commit %v): %w", t.from, t.to, t.commit, err)
		}
	}
	rc := saramaConfig()
	rc.Consumer.IsolationLevel = sarama.ReadCommitted
	if err := saramaReadBack(ctx, e, topic, 60, rc); err != nil {
		return fmt.Errorf("read_committed: %w", err)
	}
	p2, err := newProducer() // InitProducerId: the epoch moves on
	if err != nil {
		return err
	}
	p2.Close()
	err = txn(60, 61, true)
	var pes sarama.ProducerErrors
	if errors.As(err, &pes) && len(pes) > 0 {
		err = fmt.Errorf("%w: %w", err, pes[0].Err) // SendMessages wraps each message's error
	}
	if !errors.Is(err, sarama.ErrProducerFenced) && !errors.Is(err, sarama.ErrInvalidProducerEpoch) {
		return fmt.Errorf("the fenced producer's transaction: %v, want PRODUCER_FENCED", err)
	}
	return nil
}
