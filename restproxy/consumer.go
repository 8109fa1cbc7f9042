package restproxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// instanceKey names a consumer instance: its group and its name.
type instanceKey struct{ group, name string }

// tp is a topic partition, as v2's TopicPartition.
type tp struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// consumer is one consumer instance. Requests to it are served one at a
// time (held: acquire and release); its client is built by subscribe or
// assign. The client's rebalance callbacks run beside the requests and
// touch only what mu guards.
type consumer struct {
	p          *Proxy
	key        instanceKey
	u          *userClient // the user's client: admin calls, and commits outside the group's generation
	format     string
	reset      kgo.Offset
	autoCommit bool
	minBytes   int64
	timeout    time.Duration

	held chan struct{} // one token: the request holding the instance

	// Set by the request holding the instance.
	cl       *kgo.Client // nil until subscribe or assign
	topics   []string    // the subscription's topics
	pattern  string      // the subscription's pattern
	assigned []tp        // the manual assignment

	mu      sync.Mutex
	used    time.Time                 // guarded by mu: when the last request ended
	busy    bool                      // guarded by mu: a request holds the instance
	closed  bool                      // guarded by mu
	owned   map[string]map[int32]bool // guarded by mu: partitions the group gave (subscribed)
	pending []*kgo.Record             // guarded by mu: fetched, not yet handed out
	handed  map[tp]int64              // guarded by mu: the offset after the last record handed out
}

// acquire holds the instance for a request; false once it is closed.
func (c *consumer) acquire(ctx context.Context) bool {
	select {
	case c.held <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		<-c.held
		return false
	}
	c.busy = true
	return true
}

// release ends a request's hold.
func (c *consumer) release() {
	c.mu.Lock()
	c.busy = false
	c.used = time.Now()
	c.mu.Unlock()
	<-c.held
}

// idleSince is how long the instance has had no request at now.
func (c *consumer) idleSince(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy {
		return 0
	}
	return now.Sub(c.used)
}

// close closes the instance once no request holds it: its client leaves
// the group.
func (c *consumer) close() {
	c.held <- struct{}{}
	c.closeHeld()
}

// closeHeld closes the instance its caller holds.
func (c *consumer) closeHeld() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.stopClient()
	c.release()
}

// stopClient closes the client (leaving the group) and forgets the
// subscription, the assignment and what was fetched.
func (c *consumer) stopClient() {
	if c.cl != nil {
		c.cl.Close()
		c.cl = nil
	}
	c.topics, c.pattern, c.assigned = nil, "", nil
	c.mu.Lock()
	c.pending = nil
	c.owned = map[string]map[int32]bool{}
	c.mu.Unlock()
}

// baseOpts are the options of every client of the instance.
func (c *consumer) baseOpts() []kgo.Opt {
	opts := slices.Clone(c.u.opts)
	return append(opts, kgo.ConsumeResetOffset(c.reset), kgo.FetchMaxWait(500*time.Millisecond))
}

// subscribe makes the instance a member of its group consuming topics
// (or the topics matching pattern), replacing a previous subscription.
func (c *consumer) subscribe(topics []string, pattern *string) error {
	if len(c.assigned) > 0 {
		return errIllegalState("Subscription to topics, partitions and pattern are mutually exclusive.")
	}
	c.stopClient()
	opts := append(c.baseOpts(),
		kgo.ConsumerGroup(c.key.group),
		// As the Java consumer, whose rebalance callbacks run inside
		// poll: no partition is taken while records fetched for it are
		// being handed out, so that the revoke commits them (allowed
		// again at the end of each read, allowRebalance).
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { c.setOwned(m, true) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			c.setOwned(m, false)
			if c.autoCommit {
				// As the Java consumer does before giving partitions up.
				cl.CommitMarkedOffsets(ctx)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { c.setOwned(m, false) }),
	)
	if c.autoCommit {
		opts = append(opts, kgo.AutoCommitMarks())
	} else {
		opts = append(opts, kgo.DisableAutoCommit())
	}
	if pattern != nil && *pattern != "" {
		if _, err := regexp.Compile(*pattern); err != nil {
			return errUnprocessable("invalid topic_pattern: %v", err)
		}
		opts = append(opts, kgo.ConsumeRegex(), kgo.ConsumeTopics(*pattern))
	} else {
		opts = append(opts, kgo.ConsumeTopics(topics...))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	c.cl = cl
	if pattern != nil && *pattern != "" {
		c.pattern = *pattern
	} else {
		c.topics = slices.Clone(topics)
	}
	return nil
}

// setOwned records partitions the group gave (or took back); records
// fetched from those taken back are dropped.
func (c *consumer) setOwned(m map[string][]int32, owned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range m {
		if c.owned[t] == nil {
			c.owned[t] = map[int32]bool{}
		}
		for _, p := range ps {
			if owned {
				c.owned[t][p] = true
			} else {
				delete(c.owned[t], p)
			}
		}
	}
	if !owned {
		c.pending = slices.DeleteFunc(c.pending, func(r *kgo.Record) bool { return !c.owned[r.Topic][r.Partition] })
	}
}

// subscribedTopics is the subscription: its topics, or the topics its
// pattern matched.
func (c *consumer) subscribedTopics() []string {
	switch {
	case c.pattern != "" && c.cl != nil:
		ts := c.cl.GetConsumeTopics()
		slices.Sort(ts)
		return ts
	case c.topics != nil:
		return slices.Clone(c.topics)
	}
	return []string{}
}

// assign consumes parts outside the group's management, each from the
// group's committed offset, else from auto.offset.reset.
func (c *consumer) assign(ctx context.Context, parts []tp) error {
	if c.topics != nil || c.pattern != "" {
		return errIllegalState("Subscription to topics, partitions and pattern are mutually exclusive.")
	}
	c.stopClient()
	if len(parts) == 0 {
		return nil
	}
	committed, err := fetchCommitted(ctx, c.u.adm, c.key.group)
	if err != nil {
		return err
	}
	consume := map[string]map[int32]kgo.Offset{}
	for _, t := range parts {
		if consume[t.Topic] == nil {
			consume[t.Topic] = map[int32]kgo.Offset{}
		}
		at := c.reset
		if o, ok := committed.Lookup(t.Topic, t.Partition); ok && o.At >= 0 {
			at = kgo.NewOffset().At(o.At)
		}
		consume[t.Topic][t.Partition] = at
	}
	cl, err := kgo.NewClient(append(c.baseOpts(), kgo.ConsumePartitions(consume))...)
	if err != nil {
		return err
	}
	c.cl = cl
	c.assigned = slices.Clone(parts)
	return nil
}

// fetchCommitted is the group's committed offsets, retried while the
// coordinator loads or moves (as the Java consumer retries), for up to
// ten seconds.
func fetchCommitted(ctx context.Context, adm *kadm.Client, group string) (kadm.OffsetResponses, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		committed, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			err = committed.Error()
		}
		if err == nil || errors.Is(err, kerr.GroupIDNotFound) {
			return committed, nil
		}
		if !kerr.IsRetriable(err) {
			return nil, err
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// assignment is the partitions the instance consumes: assigned, or
// given by the group.
func (c *consumer) assignment() []tp {
	if c.assigned != nil {
		return slices.Clone(c.assigned)
	}
	out := []tp{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range c.owned {
		for p := range ps {
			out = append(out, tp{t, p})
		}
	}
	slices.SortFunc(out, func(a, b tp) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// checkOwned refuses partitions the instance does not consume, as the
// Java consumer's seek does.
func (c *consumer) checkOwned(parts []tp) error {
	own := c.assignment()
	for _, t := range parts {
		if !slices.Contains(own, t) {
			return errIllegalState("No current assignment for partition %s-%d", t.Topic, t.Partition)
		}
	}
	return nil
}

// seek moves the positions of partitions: the next read starts there.
func (c *consumer) seek(to map[tp]int64) error {
	parts := make([]tp, 0, len(to))
	for t := range to {
		parts = append(parts, t)
	}
	if err := c.checkOwned(parts); err != nil {
		return err
	}
	if len(to) == 0 {
		return nil
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for t, off := range to {
		if set[t.Topic] == nil {
			set[t.Topic] = map[int32]kgo.EpochOffset{}
		}
		set[t.Topic][t.Partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	c.mu.Lock()
	c.pending = slices.DeleteFunc(c.pending, func(r *kgo.Record) bool {
		_, moved := to[tp{r.Topic, r.Partition}]
		return moved
	})
	for t, off := range to {
		c.handed[t] = off
	}
	c.mu.Unlock()
	c.cl.SetOffsets(set)
	return nil
}

// recordSize is a record's size against max_bytes, as Confluent counts:
// its key and value.
func recordSize(r *kgo.Record) int64 { return int64(len(r.Key) + len(r.Value)) }

// read gathers records until timeout passes, or until the next would
// take the answer to maxBytes or past, or (fetch.min.bytes) it holds more
// than minBytes, as Confluent's read task (KafkaConsumerReadTask) does.
func (c *consumer) read(ctx context.Context, timeout time.Duration, maxBytes int64) ([]*kgo.Record, error) {
	if c.cl == nil {
		return nil, errIllegalState("Consumer is not subscribed to any topics or assigned any partitions")
	}
	deadline := time.Now().Add(timeout)
	var out []*kgo.Record
	var size int64
	for {
		full := false
		c.mu.Lock()
		n := 0
		for _, r := range c.pending {
			if c.assigned == nil && !c.owned[r.Topic][r.Partition] {
				n++ // taken back by the group
				continue
			}
			if size+recordSize(r) >= maxBytes {
				full = true
				break
			}
			size += recordSize(r)
			out = append(out, r)
			n++
		}
		c.pending = c.pending[n:]
		c.mu.Unlock()
		if full || c.minBytes >= 0 && size > c.minBytes {
			return out, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return out, nil
		}
		pctx, cancel := context.WithTimeout(ctx, left)
		fs := c.cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil && len(out) == 0 {
			return nil, ferr
		}
		c.mu.Lock()
		c.pending = append(c.pending, fs.Records()...)
		c.mu.Unlock()
	}
}

// handOut records that records were answered: commits without offsets
// (and auto commit) cover them.
func (c *consumer) handOut(recs []*kgo.Record) {
	if len(recs) == 0 {
		return
	}
	c.mu.Lock()
	for _, r := range recs {
		c.handed[tp{r.Topic, r.Partition}] = r.Offset + 1
	}
	c.mu.Unlock()
	if c.autoCommit && c.assigned == nil {
		c.cl.MarkCommitRecords(recs...)
	}
}

// allowRebalance lets the group take partitions again, once a read has
// handed its records out (and marked them for the revoke's commit).
func (c *consumer) allowRebalance() {
	if c.cl != nil && c.assigned == nil {
		c.cl.AllowRebalance()
	}
}

// handedOffsets is the offset after the last record handed out of each
// partition the instance consumes.
func (c *consumer) handedOffsets() map[tp]int64 {
	own := c.assignment()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[tp]int64{}
	for _, t := range own {
		if off, ok := c.handed[t]; ok {
			out[t] = off
		}
	}
	return out
}

// commit commits offs for the group: in the member's generation when the
// instance is subscribed, as a simple consumer otherwise.
func (c *consumer) commit(ctx context.Context, offs kadm.Offsets) error {
	if len(offs) == 0 {
		return nil
	}
	if c.cl != nil && c.assigned == nil {
		commit := map[string]map[int32]kgo.EpochOffset{}
		offs.Each(func(o kadm.Offset) {
			if commit[o.Topic] == nil {
				commit[o.Topic] = map[int32]kgo.EpochOffset{}
			}
			commit[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: o.LeaderEpoch, Offset: o.At}
		})
		// The request's metadata, not franz-go's (the member id): the
		// Java consumer's is "" unless given.
		ctx = kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
			for i := range req.Topics {
				rt := &req.Topics[i]
				for j := range rt.Partitions {
					rp := &rt.Partitions[j]
					meta := ""
					if o, ok := offs.Lookup(rt.Topic, rp.Partition); ok {
						meta = o.Metadata
					}
					rp.Metadata = &meta
				}
			}
			return nil
		})
		var cerr error
		c.cl.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				cerr = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil && cerr == nil {
						cerr = err
					}
				}
			}
		})
		return cerr
	}
	resps, err := c.u.adm.CommitOffsets(ctx, c.key.group, offs)
	if err != nil {
		return err
	}
	return resps.Error()
}

// randomID is 16 random bytes in hex: an instance name when the request
// names none.
func randomID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func pathEscape(s string) string { return url.PathEscape(s) }

func parseInt(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
