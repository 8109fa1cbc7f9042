package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/procstat"
)

// faninSeqBytes is the head of every fanin value: the record's sequence
// number, big-endian; the rest of the value is random padding.
const faninSeqBytes = 8

// fanin measures a fetch that spans many partitions of which one is written
// to: a direct consumer of every partition of topic (from the start: the
// topic is expected to be empty), and a producer (linger 0, acks=all, no
// compression) writing to partition part only. Record 0 is a probe, sent
// before the clock starts and waited for until the consumer has it, so that
// the consumer's fetches are established (a Fetch parked on all partitions)
// before the measured records 1..n go out at rate per second. The latency of
// a record runs from its Produce call to the moment the consumer's poll
// returns it, both on this process's monotonic clock. With brokerPID > 0,
// the broker's CPU time over the measured records (from the clock's start to
// the last record's arrival) is read from /proc. With minBytes > 1 the
// consumer asks each Fetch to wait for that many bytes (fetch.min.bytes,
// with Kafka's consumer's fetch.max.wait.ms of 500 ms), so that one parked
// Fetch sees many appends.
func fanin(ctx context.Context, brokers, topic string, part int32, n int64, size int, rate float64, brokerPID int, minBytes int32) (Result, error) {
	if size < faninSeqBytes {
		return Result{}, fmt.Errorf("-size %d: fanin needs at least %d bytes for the sequence number", size, faninSeqBytes)
	}
	if rate <= 0 {
		return Result{}, errors.New("fanin needs -rate > 0")
	}
	parts, err := partitionCount(ctx, brokers, topic)
	if err != nil {
		return Result{}, err
	}
	if part < 0 || part >= parts {
		return Result{}, fmt.Errorf("-partition %d: topic %s has %d partitions", part, topic, parts)
	}
	offsets := make(map[int32]kgo.Offset, parts)
	for p := range parts {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	copts := []kgo.Opt{kgo.SeedBrokers(brokers), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets})}
	if minBytes > 1 {
		copts = append(copts, kgo.FetchMinBytes(minBytes), kgo.FetchMaxWait(500*time.Millisecond))
	}
	cons, err := kgo.NewClient(copts...)
	if err != nil {
		return Result{}, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return Result{}, err
	}
	defer prod.Close()
	if err := prod.Ping(ctx); err != nil {
		return Result{}, fmt.Errorf("ping: %w", err)
	}

	start := time.Now()
	sent := make([]atomic.Int64, n+1) // ns since start at the Produce call of record i
	lat := make([]time.Duration, n+1) // written by the consumer goroutine only
	var got atomic.Int64              // measured records received
	probe := make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cerr := make(chan error, 1)
	go func() { cerr <- faninConsume(cctx, cons, part, sent, lat, &got, probe, start) }()

	payload := make([]byte, size)
	_, _ = rand.Read(payload)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		failed   atomic.Bool
	)
	send := func(i int64) {
		v := slices.Clone(payload)
		binary.BigEndian.PutUint64(v, uint64(i))
		wg.Add(1)
		sent[i].Store(int64(time.Since(start)))
		prod.Produce(ctx, &kgo.Record{Partition: part, Value: v}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("record %d: %w", i, err) })
				failed.Store(true)
			}
		})
	}
	send(0)
	select {
	case <-probe:
	case err := <-cerr:
		return Result{}, fmt.Errorf("consumer before the probe arrived: %w", err)
	case <-time.After(30 * time.Second):
		return Result{}, errors.New("the probe record did not reach the consumer within 30s")
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	// Let the consumer park its next Fetch before the clock starts.
	time.Sleep(100 * time.Millisecond)

	var cpu0 time.Duration
	if brokerPID > 0 {
		if cpu0, err = procstat.CPUTime(brokerPID); err != nil {
			return Result{}, fmt.Errorf("broker CPU: %w", err)
		}
	}
	t0 := time.Now()
	for i := int64(1); i <= n; i++ {
		if failed.Load() || ctx.Err() != nil {
			break
		}
		due := t0.Add(time.Duration(float64(i-1) / rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		send(i)
	}
	wg.Wait()
	if firstErr != nil {
		return Result{}, firstErr
	}
	deadline := time.After(30 * time.Second)
	for got.Load() < n {
		select {
		case err := <-cerr:
			return Result{}, fmt.Errorf("consumer after %d of %d records: %w", got.Load(), n, err)
		case <-deadline:
			return Result{}, fmt.Errorf("consumer has %d of %d records 30s after the last was acknowledged", got.Load(), n)
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	elapsed := time.Since(t0)
	var cpu1 time.Duration
	if brokerPID > 0 {
		if cpu1, err = procstat.CPUTime(brokerPID); err != nil {
			return Result{}, fmt.Errorf("broker CPU: %w", err)
		}
	}
	cancel()
	if err := <-cerr; err != nil && !errors.Is(err, context.Canceled) {
		return Result{}, err
	}
	res := summary("fanin", n, n*int64(size), elapsed)
	res.Partitions = int(parts)
	res.BrokerCPUs = (cpu1 - cpu0).Seconds()
	res.setLatencies(slices.Clone(lat[1:]))
	return res, nil
}

// faninConsume polls until ctx ends, recording each measured record's
// latency in lat and counting it in got; it closes probe when record 0
// arrives. A record from another partition, a duplicate or a value without
// a valid sequence number is an error.
func faninConsume(ctx context.Context, cl *kgo.Client, part int32, sent []atomic.Int64, lat []time.Duration,
	got *atomic.Int64, probe chan<- struct{}, start time.Time) error {
	seen := make([]bool, len(sent))
	for {
		fs := cl.PollFetches(ctx)
		now := time.Since(start)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		var verr error
		fs.EachRecord(func(r *kgo.Record) {
			if verr != nil {
				return
			}
			i, err := faninSeq(r.Value, len(sent))
			switch {
			case err != nil:
				verr = fmt.Errorf("partition %d offset %d: %w", r.Partition, r.Offset, err)
			case r.Partition != part:
				verr = fmt.Errorf("record %d from partition %d, want %d", i, r.Partition, part)
			case seen[i]:
				verr = fmt.Errorf("record %d read twice (offset %d)", i, r.Offset)
			case i == 0:
				seen[0] = true
				close(probe)
			default:
				seen[i] = true
				lat[i] = now - time.Duration(sent[i].Load())
				got.Add(1)
			}
		})
		if verr != nil {
			return verr
		}
	}
}

// faninSeq is the sequence number at the head of a fanin value, checked
// against the n records of the run.
func faninSeq(v []byte, n int) (int, error) {
	if len(v) < faninSeqBytes {
		return 0, fmt.Errorf("%d value bytes, want at least %d", len(v), faninSeqBytes)
	}
	i := binary.BigEndian.Uint64(v)
	if i >= uint64(n) {
		return 0, fmt.Errorf("sequence number %d outside 0..%d", i, n-1)
	}
	return int(i), nil
}

// partitionCount asks the broker how many partitions topic has, waiting up
// to 90s for it to be listed with a leader for every partition (a topic just
// created may not be yet).
func partitionCount(ctx context.Context, brokers, topic string) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(90 * time.Second)
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			td := md.Topics[topic]
			if err = td.Err; err == nil && len(td.Partitions) == 0 {
				err = errors.New("no partitions")
			}
			for _, p := range td.Partitions {
				if err == nil && (p.Err != nil || p.Leader < 0) {
					err = fmt.Errorf("partition %d: leader %d, %v", p.Partition, p.Leader, p.Err)
				}
			}
			if err == nil {
				return int32(len(td.Partitions)), nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("topic %s: %w", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
