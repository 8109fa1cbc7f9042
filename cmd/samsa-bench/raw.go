package main

// -raw: a load generator whose own cost is next to nothing, for the
// broker-bound cases of make bench (the broker pinned to one core, the
// generator to the other). A client like kgo spends about as much CPU per
// byte as the broker does, so on the other core it, not the broker, sets
// the pace. raw produce sends Produce requests encoded once, holding the
// same uncompressed record batches each time, with several requests in
// flight on a few connections; raw consume sends Fetch requests and reads
// only the batch headers of the answers. The broker does for them all it
// does for any client: it validates each batch, assigns offsets and
// appends, or serves the fetch from its log. Both work against a single
// broker, which must lead every partition of the topic.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// Values per partition per Produce request: the batches kgo sends at
	// full speed (its ProducerBatchMaxBytes is about 1 MB). Brokers pay
	// per batch and per request, so smaller ones would favour the broker
	// that pays less there rather than measure both as clients load them.
	rawBatchBytes = 1_000_000
	rawConns      = 2  // connections of a raw produce
	rawInFlight   = 2  // requests in flight on each
	rawProduceV   = 7  // the last Produce version without flexible headers
	rawFetchV     = 11 // the last Fetch version without flexible headers
)

// rawBatch is a v2 record batch of n records of value, offsets from 0,
// every record at timestamp ts, without producer id.
func rawBatch(n int, value []byte, ts int64) []byte {
	var recs []byte
	for i := range n {
		var r []byte
		r = append(r, 0)                     // attributes
		r = binary.AppendVarint(r, 0)        // timestamp delta
		r = binary.AppendVarint(r, int64(i)) // offset delta
		r = binary.AppendVarint(r, -1)       // no key
		r = binary.AppendVarint(r, int64(len(value)))
		r = append(r, value...)
		r = binary.AppendVarint(r, 0) // no headers
		recs = binary.AppendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	b := make([]byte, 61, 61+len(recs))
	binary.BigEndian.PutUint64(b[0:], 0)                    // base offset
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(recs))) // batch length
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)          // partition leader epoch
	b[16] = 2                                               // magic
	binary.BigEndian.PutUint16(b[21:], 0)                   // attributes
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))         // last offset delta
	binary.BigEndian.PutUint64(b[27:], uint64(ts))          // first timestamp
	binary.BigEndian.PutUint64(b[35:], uint64(ts))          // max timestamp
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)  // producer id
	binary.BigEndian.PutUint16(b[51:], 0xffff)              // producer epoch
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)          // base sequence
	binary.BigEndian.PutUint32(b[57:], uint32(n))           // records
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// rawRequest frames req as a client request with correlation id 0; the id
// is at bytes 8-11 of the result, for the sender to set.
func rawRequest(req kmsg.Request) []byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("samsa-bench"))
	return f.AppendRequest(nil, req, 0)
}

// rawResponse reads one response to correlation id corr from r into buf,
// returning its body (after the correlation id).
func rawResponse(r io.Reader, buf []byte, corr int32) ([]byte, []byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, buf, err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 256<<20 {
		return nil, buf, fmt.Errorf("response of %d bytes", n)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, buf, err
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		return nil, buf, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	return buf[4:], buf, nil
}

// rawProduce writes at least n records of size random bytes to every
// partition of topic in turn, acks as given (1 or all: -1).
func rawProduce(ctx context.Context, broker, topic string, n int64, size int, acks int16) (Result, error) {
	parts, err := partitionCount(ctx, broker, topic)
	if err != nil {
		return Result{}, err
	}
	value := make([]byte, size)
	rand.Read(value)
	perBatch := max(1, rawBatchBytes/max(size, 1))
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = rawProduceV, acks, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	batch := rawBatch(perBatch, value, time.Now().UnixMilli())
	for p := range parts {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	frame := rawRequest(req)
	perRequest := int64(perBatch) * int64(parts)
	requests := (n + perRequest - 1) / perRequest

	var (
		next    atomic.Int64 // requests handed out
		mu      sync.Mutex
		lat     []time.Duration
		firstEr error
		wg      sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstEr == nil {
			firstEr = err
		}
		mu.Unlock()
	}
	start := time.Now()
	for range rawConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rawProduceConn(ctx, broker, frame, requests, &next, &mu, &lat); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	if firstEr != nil {
		return Result{}, firstEr
	}
	d := time.Since(start)
	records := requests * perRequest
	res := summary("produce", records, records*int64(size), d)
	res.setLatencies(lat)
	return res, nil
}

// rawProduceConn sends requests on one connection, rawInFlight at a time,
// until next reaches requests, and checks every answer.
func rawProduceConn(ctx context.Context, broker string, frame []byte, requests int64, next *atomic.Int64, mu *sync.Mutex, lat *[]time.Duration) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", broker)
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	sent := make(chan time.Time, rawInFlight)
	errc := make(chan error, 1)
	go func() { // the reader
		var own []time.Duration
		err := rawProduceAnswers(bufio.NewReaderSize(c, 64<<10), sent, &own)
		mu.Lock()
		*lat = append(*lat, own...)
		mu.Unlock()
		errc <- err
	}()
	out := slices.Clone(frame)
	for corr := int32(0); next.Add(1) <= requests; corr++ {
		binary.BigEndian.PutUint32(out[8:], uint32(corr))
		select {
		case sent <- time.Now():
		case err := <-errc: // the reader ended with an error
			return err
		}
		if _, err := c.Write(out); err != nil {
			c.Close() // ends the reader, which waits for an answer or sent
			close(sent)
			return errors.Join(err, <-errc)
		}
	}
	close(sent)
	return <-errc
}

// rawProduceAnswers reads the answer to each request sent, in order, until
// sent is closed, noting each one's latency in lat; an answer with an
// error ends it.
func rawProduceAnswers(r io.Reader, sent <-chan time.Time, lat *[]time.Duration) error {
	var buf []byte
	for corr := int32(0); ; corr++ {
		at, ok := <-sent
		if !ok {
			return nil
		}
		var body []byte
		var err error
		if body, buf, err = rawResponse(r, buf, corr); err != nil {
			return err
		}
		*lat = append(*lat, time.Since(at))
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = rawProduceV
		if err := resp.ReadFrom(body); err != nil {
			return err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("produce to %s[%d]: %w", t.Topic, p.Partition, err)
				}
			}
		}
	}
}

// rawConsume reads topic from offset 0 of every partition until it has
// seen n records, walking only the batch headers of each Fetch answer.
func rawConsume(ctx context.Context, broker, topic string, n int64, size int) (Result, error) {
	parts, err := partitionCount(ctx, broker, topic)
	if err != nil {
		return Result{}, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", broker)
	if err != nil {
		return Result{}, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	r := bufio.NewReaderSize(c, 1<<20)
	offsets := make([]int64, parts)
	var got int64
	var buf []byte
	start := time.Now()
	for corr := int32(0); got < n; corr++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = rawFetchV, -1, 500, 1, 50<<20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, offsets[p], 1<<20, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		frame := rawRequest(req)
		binary.BigEndian.PutUint32(frame[8:], uint32(corr))
		if _, err := c.Write(frame); err != nil {
			return Result{}, err
		}
		var body []byte
		body, buf, err = rawResponse(r, buf, corr)
		if err != nil {
			return Result{}, err
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = rawFetchV
		if err := resp.ReadFrom(body); err != nil {
			return Result{}, err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return Result{}, err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return Result{}, fmt.Errorf("fetch %s[%d]: %w", t.Topic, p.Partition, err)
				}
				if p.Partition < 0 || p.Partition >= parts {
					return Result{}, fmt.Errorf("fetch answered partition %d of %d", p.Partition, parts)
				}
				records, nextOffset, err := rawWalk(p.RecordBatches, offsets[p.Partition])
				if err != nil {
					return Result{}, fmt.Errorf("partition %d: %w", p.Partition, err)
				}
				got += records
				offsets[p.Partition] = nextOffset
			}
		}
	}
	return summary("consume", got, got*int64(size), time.Since(start)), nil
}

// rawWalk counts the records of the whole batches in b, which must begin
// at offset from (a batch may begin before it, as brokers serve whole
// batches), and returns the offset after the last whole one.
func rawWalk(b []byte, from int64) (records, next int64, err error) {
	next = from
	for len(b) >= 61 {
		base := int64(binary.BigEndian.Uint64(b))
		length := int(binary.BigEndian.Uint32(b[8:]))
		if length < 49 || 12+length > len(b) {
			break // the partial batch at the end of a fetch
		}
		last := base + int64(binary.BigEndian.Uint32(b[23:]))
		if last < next {
			b = b[12+length:]
			continue // served again from the batch's start
		}
		if base > next {
			return 0, 0, fmt.Errorf("batch at %d, want %d", base, next)
		}
		records += last + 1 - next
		next = last + 1
		b = b[12+length:]
	}
	return records, next, nil
}
