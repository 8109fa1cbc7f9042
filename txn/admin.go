package txn

import (
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Description is one transactional id as DescribeTransactions shows it.
type Description struct {
	ID            string
	State         State
	TimeoutMs     int32
	StartMs       int64 // -1 when no transaction is under way
	ProducerID    int64
	ProducerEpoch int16
	Partitions    []TopicPartition
}

// Describe is the state of a transactional id: NOT_COORDINATOR and
// COORDINATOR_LOAD_IN_PROGRESS as elsewhere, TRANSACTIONAL_ID_NOT_FOUND
// for an id this coordinator does not know.
func (c *Coordinator) Describe(id string) (Description, error) {
	s, err := c.shardFor(id)
	if err != nil {
		return Description{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.txns[id]
	if m == nil || m.state == Dead || m.epoch == noEpoch {
		return Description{}, kerr.TransactionalIDNotFound
	}
	return Description{ID: id, State: m.state, TimeoutMs: m.timeoutMs, StartMs: m.startMs,
		ProducerID: m.pid, ProducerEpoch: m.epoch, Partitions: m.sortedPartitions()}, nil
}

// ListFilter selects the ids ListTransactions returns; zero values select
// everything.
type ListFilter struct {
	States      []string
	ProducerIDs []int64
	MinDuration int64 // ms; transactions running longer than this (KIP-994); < 0: any
	Pattern     *regexp.Regexp
}

// Listing is one id as ListTransactions shows it.
type Listing struct {
	ID         string
	ProducerID int64
	State      State
}

// List is every id of this coordinator that matches f, sorted, and the
// state names of f that are no state. It fails with
// COORDINATOR_LOAD_IN_PROGRESS while a partition loads (Kafka's
// listTransactionStates).
func (c *Coordinator) List(f ListFilter) (out []Listing, unknown []string, err error) {
	var states []State
	for _, name := range f.States {
		st, ok := ParseState(name)
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		states = append(states, st)
	}
	shards, loading := c.activeShards()
	if loading {
		return nil, unknown, kerr.CoordinatorLoadInProgress
	}
	now := c.nowMs()
	for _, s := range shards {
		s.mu.Lock()
		for id, m := range s.txns {
			switch {
			case m.state == Dead || m.epoch == noEpoch:
			case len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, m.pid):
			case len(f.States) > 0 && !slices.Contains(states, m.state):
			case f.MinDuration >= 0 && now-m.startMs <= f.MinDuration:
			case f.Pattern != nil && !f.Pattern.MatchString(id):
			default:
				out = append(out, Listing{ID: id, ProducerID: m.pid, State: m.state})
			}
		}
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Listing) int { return strings.Compare(a.ID, b.ID) })
	return out, unknown, nil
}
