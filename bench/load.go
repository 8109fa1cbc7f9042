package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Client settings, identical for every broker. The producer's values are
// kgo's defaults spelled out (so a kgo upgrade cannot change them unseen),
// except compression (off, so the brokers move the bytes they are given)
// and the buffer bound, which caps how long a record can queue in the client
// and so what the saturated latency percentiles include.
const (
	producerLinger      = 10 * time.Millisecond
	producerBatchBytes  = 1000012 // Kafka's max.message.bytes default
	producerMaxBuffered = 8192    // records: 8 MiB of 1 KiB records queued at most
	fetchMaxBytes       = 50 << 20
	fetchMaxPartBytes   = 1 << 20
)

// clientLog, when set (-v), receives the kgo clients' logs.
var clientLog kgo.Logger

func logOpts() []kgo.Opt {
	if clientLog == nil {
		return nil
	}
	return []kgo.Opt{kgo.WithLogger(clientLog)}
}

func clientSettings() string {
	return fmt.Sprintf("kgo linger %v (0 in paced runs), batch max %d B, no compression, max %d buffered records, 1 produce request in flight; fetch max %d MiB, %d MiB per partition",
		producerLinger, producerBatchBytes, producerMaxBuffered, fetchMaxBytes>>20, fetchMaxPartBytes>>20)
}

// pacing is how a produce run issues records: as fast as the buffer allows
// (rate 0, linger producerLinger) or at a fixed rate with no linger, so that
// latency shows the broker's service time rather than client queueing.
type pacing struct {
	rate float64 // records per second; 0 for unpaced
}

func (p pacing) linger() time.Duration {
	if p.rate > 0 {
		return 0
	}
	return producerLinger
}

// createTopic creates topic with the given partition count and replication
// factor 1, and waits until every partition has a leader that serves it.
// Metadata alone is not enough: a KRaft broker can list a leader before its
// replica manager has the partition, and a producer that meets
// NOT_LEADER_OR_FOLLOWER there waits for kgo's next metadata refresh (at least
// 5 s later), which showed up as multi-second p99 latencies. ListOffsets is
// answered by the partition itself, so all partitions answering it means
// the topic is ready.
func createTopic(ctx context.Context, addr, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	if r, ok := resp[topic]; !ok {
		return fmt.Errorf("create topic %s: no answer for it", topic)
	} else if r.Err != nil {
		return fmt.Errorf("create topic %s: %w (%s)", topic, r.Err, r.ErrMessage)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == int(partitions) {
				ready := true
				for _, p := range td.Partitions {
					if p.Err != nil || p.Leader < 0 {
						ready = false
					}
				}
				if ready && endOffsetsServed(ctx, adm, topic, partitions) {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s: partitions without a leader after 30s (last metadata error: %v)", topic, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// endOffsetsServed reports whether every partition of topic answers
// ListOffsets without an error.
func endOffsetsServed(ctx context.Context, adm *kadm.Client, topic string, partitions int32) bool {
	offs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return false
	}
	n := int32(0)
	ok := true
	offs.Each(func(o kadm.ListedOffset) {
		if o.Topic != topic {
			return
		}
		n++
		if o.Err != nil {
			ok = false
		}
	})
	return ok && n == partitions
}

// produceResult is one produce run.
type produceResult struct {
	records   int
	bytes     int64
	elapsed   time.Duration // first Produce call to last acknowledgement
	latencies []time.Duration
	brokerCPU time.Duration
	perPart   []int64 // acknowledged records per partition
}

// produce writes n records of payload to topic, as fast as the client's
// buffer allows or paced, and records each record's acknowledgement latency (Produce
// call to promise).
func produce(ctx context.Context, b *brokerProc, topic string, partitions int32, n int, payload []byte, acksAll bool, pace pacing, timeout time.Duration) (produceResult, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(b.addr),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(pace.linger()),
		kgo.ProducerBatchMaxBytes(producerBatchBytes),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(producerMaxBuffered),
	}
	if acksAll {
		// Idempotent, as kgo and the Java producer are by default; both
		// limit a broker to one produce request in flight here.
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
			kgo.MaxProduceRequestsInflightPerBroker(1))
	}
	cl, err := kgo.NewClient(append(opts, logOpts()...)...)
	if err != nil {
		return produceResult{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// Connect and learn the topic before the clock starts.
	if err := cl.Ping(ctx); err != nil {
		return produceResult{}, fmt.Errorf("ping: %w", err)
	}
	cpu0, _ := cpuTime(b.pid())

	res := produceResult{latencies: make([]time.Duration, n), perPart: make([]int64, partitions)}
	perPart := make([]atomic.Int64, partitions)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		failed   atomic.Bool
	)
	start := time.Now()
	for i := range n {
		if failed.Load() {
			break
		}
		if pace.rate > 0 {
			// Open loop: record i is due at start + i/rate, late or not.
			due := start.Add(time.Duration(float64(i) / pace.rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		wg.Add(1)
		r := &kgo.Record{Value: payload}
		t0 := time.Now()
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("record %d: %w", i, err) })
				failed.Store(true)
				return
			}
			res.latencies[i] = time.Since(t0)
			if r.Partition >= 0 && r.Partition < partitions {
				perPart[r.Partition].Add(1)
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if cpu1, err := cpuTime(b.pid()); err == nil {
		res.brokerCPU = cpu1 - cpu0
	}
	if firstErr != nil {
		return res, firstErr
	}
	var total int64
	for p := range perPart {
		res.perPart[p] = perPart[p].Load()
		total += res.perPart[p]
	}
	if total != int64(n) {
		return res, fmt.Errorf("%d records acknowledged on known partitions, want %d", total, n)
	}
	res.records = n
	res.bytes = int64(n) * int64(len(payload))
	return res, nil
}

// consumeResult is one read of a whole topic.
type consumeResult struct {
	records   int
	bytes     int64
	elapsed   time.Duration
	brokerCPU time.Duration
}

// consume reads topic from the start with a fresh client until it has every
// record that was acknowledged (want[p] per partition), checking that each
// partition's offsets run 0,1,2,... and every value equals payload.
func consume(ctx context.Context, b *brokerProc, topic string, want []int64, payload []byte, timeout time.Duration) (consumeResult, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(b.addr),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(fetchMaxBytes),
		kgo.FetchMaxPartitionBytes(fetchMaxPartBytes),
	}, logOpts()...)...)
	if err != nil {
		return consumeResult{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var total int64
	for _, w := range want {
		total += w
	}
	next := make([]int64, len(want))
	var res consumeResult
	cpu0, _ := cpuTime(b.pid())
	start := time.Now()
	for int64(res.records) < total {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("read %d of %d records before the %v deadline", res.records, total, timeout)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
			}
		})
		if ferr != nil {
			return res, ferr
		}
		var verr error
		fs.EachRecord(func(r *kgo.Record) {
			if verr != nil {
				return
			}
			p := r.Partition
			if p < 0 || int(p) >= len(want) {
				verr = fmt.Errorf("record from unexpected partition %d", p)
				return
			}
			if r.Offset != next[p] {
				verr = fmt.Errorf("partition %d: offset %d, want %d", p, r.Offset, next[p])
				return
			}
			if !bytes.Equal(r.Value, payload) {
				verr = fmt.Errorf("partition %d offset %d: value differs from what was produced", p, r.Offset)
				return
			}
			next[p]++
			res.records++
			res.bytes += int64(len(r.Value))
		})
		if verr != nil {
			return res, verr
		}
	}
	res.elapsed = time.Since(start)
	if cpu1, err := cpuTime(b.pid()); err == nil {
		res.brokerCPU = cpu1 - cpu0
	}
	for p := range want {
		if next[p] != want[p] {
			return res, fmt.Errorf("partition %d: read %d records, want %d", p, next[p], want[p])
		}
	}
	return res, nil
}
