package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// producerIDBlockValue is the JSON of /latest_producer_id_block, as Kafka
// wrote it to ZooKeeper (ids as decimal strings).
type producerIDBlockValue struct {
	Version    int    `json:"version"`
	Broker     int32  `json:"broker"`
	BlockStart string `json:"block_start"`
	BlockEnd   string `json:"block_end"`
}

// AllocateProducerIDBlock reserves size consecutive producer ids for this
// broker and returns the first: the block after the one recorded in
// /latest_producer_id_block (the first block starts at 0), written with a
// compare-and-set on that key's revision and retried on a lost race. Blocks
// never overlap, across brokers and restarts.
func (s *Store) AllocateProducerIDBlock(ctx context.Context, size int64) (int64, error) {
	return s.AllocateProducerIDBlockAbove(ctx, size, -1)
}

// AllocateProducerIDBlockAbove is AllocateProducerIDBlock with every id of
// the block above floor: the ids of the producers whose batches a cluster
// link copied here are taken already (a new producer given one of them
// would collide with their state on a promoted mirror).
func (s *Store) AllocateProducerIDBlockAbove(ctx context.Context, size, floor int64) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	if size <= 0 {
		return 0, fmt.Errorf("%w: producer id block size %d", ErrInvalid, size)
	}
	key := s.producerIDBlockKey()
	for {
		resp, err := s.cli.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("controller: reading producer id block: %w", err)
		}
		var first, rev int64
		if len(resp.Kvs) > 0 {
			rev = resp.Kvs[0].ModRevision
			var v producerIDBlockValue
			if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
				return 0, fmt.Errorf("%w: %s: %v", ErrCorrupt, key, err)
			}
			end, err := strconv.ParseInt(v.BlockEnd, 10, 64)
			if err != nil || end < -1 {
				return 0, fmt.Errorf("%w: %s: block_end %q", ErrCorrupt, key, v.BlockEnd)
			}
			if end == math.MaxInt64 {
				return 0, ErrProducerIDsExhausted
			}
			first = end + 1
		}
		if floor >= first {
			if floor == math.MaxInt64 {
				return 0, ErrProducerIDsExhausted
			}
			first = floor + 1
		}
		if first > math.MaxInt64-(size-1) {
			return 0, ErrProducerIDsExhausted
		}
		last := first + size - 1
		val, err := json.Marshal(producerIDBlockValue{
			Version:    1,
			Broker:     s.cfg.NodeID,
			BlockStart: strconv.FormatInt(first, 10),
			BlockEnd:   strconv.FormatInt(last, 10),
		})
		if err != nil {
			return 0, err
		}
		tr, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, string(val))).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("controller: writing producer id block: %w", err)
		}
		if tr.Succeeded {
			return first, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}
