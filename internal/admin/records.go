package admin

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Header is one record header.
type Header struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Message is one record as read; Key and Value are nil for null (JSON
// carries bytes as base64).
type Message struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Timestamp int64    `json:"timestamp"` // milliseconds since the epoch
	Key       []byte   `json:"key"`
	Value     []byte   `json:"value"`
	Headers   []Header `json:"headers"`
}

// FromRecord is a kgo record as a Message.
func FromRecord(r *kgo.Record) Message {
	m := Message{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
		Key: r.Key, Value: r.Value, Headers: []Header{}}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, Header{Key: h.Key, Value: h.Value})
	}
	return m
}

// Read reads up to limit records of one partition from a target (start,
// end, an offset or a timestamp), waiting at most wait for them: a
// message browser's page. It consumes with a client of its own, made with
// c's seeds and options.
func (c *Client) Read(ctx context.Context, topic string, partition int32, from Target, limit int, wait time.Duration) ([]Message, error) {
	seeds, opts := c.seeds, c.opts
	// The offset to start from, and the end (a read never waits past it).
	offs, err := c.Resolve(ctx, from, topic)
	if err != nil {
		return nil, err
	}
	start, ok := offs.Lookup(topic, partition)
	if !ok {
		return nil, ErrUnknownPartition
	}
	ends, err := c.ADM.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	end, ok := ends.Lookup(topic, partition)
	if !ok || end.Err != nil {
		return nil, ErrUnknownPartition
	}
	out := []Message{}
	if start.At >= end.Offset || limit <= 0 {
		return out, nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("samsa-browse"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(start.At)}})}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for len(out) < limit {
		fs := cl.PollRecords(rctx, limit-len(out))
		if rctx.Err() != nil {
			break
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return out, ferr
		}
		last := int64(-1)
		fs.EachRecord(func(r *kgo.Record) {
			if len(out) < limit {
				out = append(out, FromRecord(r))
			}
			last = r.Offset
		})
		if last+1 >= end.Offset {
			break
		}
	}
	return out, nil
}

// ErrUnknownPartition is the answer for a partition the topic lacks.
var ErrUnknownPartition = errors.New("unknown topic or partition")
