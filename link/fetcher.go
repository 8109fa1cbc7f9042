package link

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The mirror partitions of a link that one source broker leads fetch in
// one Fetch request, in one KIP-227 fetch session with that broker, as
// Kafka's followers and consumers do: the first request names every
// partition, later ones only those whose position changed (and, as
// forgotten, those no longer waiting), and the broker answers only the
// partitions with news. A link of a thousand quiet partitions then holds
// one long poll per source broker, not a thousand, and one slot of the
// source's fetch session cache (max.incremental.fetch.session.cache.slots)
// per source broker, not one per partition.
//
// Each partition's loop (Manager.run) still decides everything about its
// partition; it hands its next fetch position to its source broker's
// fetcher and waits for its answer. The fetcher sends once no partition
// that had an answer from the last request is still working on it (it
// comes back with its next position within fetchHold, or it is left out),
// so a partition that just appended fetches again in the very next
// request, as in a replica fetcher's loop.

// fetchHold is how long a fetcher waits for the partitions that had an
// answer to come back with their next position before it sends without
// them (and forgets them in its session).
const fetchHold = 250 * time.Millisecond

// fetchPos is what a partition asks of the source broker: a fetch session
// holds it per partition.
type fetchPos struct {
	topicID [16]byte
	epoch   int32 // the source leader epoch it was looked up in
	offset  int64
}

type fetchReply struct {
	p   *kmsg.FetchResponseTopicPartition
	err error
}

// fetchWait is a partition's place in its fetcher.
type fetchWait struct {
	pos     fetchPos
	waiting bool            // pos is to be fetched; reply is awaited
	reply   chan fetchReply // capacity 1, one per fetch call
	// answered is when the partition's last answer was handed to it
	// (zero: none awaited back).
	answered time.Time
}

// fetcher sends the Fetch requests of a link's mirror partitions that one
// source broker leads.
type fetcher struct {
	m      *Manager
	cl     *kgo.Client
	broker int32
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{} // capacity 1

	mu    sync.Mutex
	parts map[partKey]*fetchWait

	// The session, used by run's goroutine alone.
	sessID    int32
	sessEpoch int32 // of the next request; 0 opens a session (a full fetch)
	sent      map[partKey]fetchPos
}

func newFetcher(m *Manager, cl *kgo.Client, broker int32) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fetcher{m: m, cl: cl, broker: broker, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		wake: make(chan struct{}, 1), parts: map[partKey]*fetchWait{}}
	go f.run()
	return f
}

// close stops the fetcher and closes its session on the source broker.
func (f *fetcher) close() {
	f.cancel()
	<-f.done
}

func (f *fetcher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// fetch asks for k at pos in the fetcher's next request and waits for its
// answer: the partition's part of a Fetch response, or an error that ends
// the request (the source broker unreachable, a request-level error).
func (f *fetcher) fetch(ctx context.Context, k partKey, pos fetchPos) (*kmsg.FetchResponseTopicPartition, error) {
	reply := make(chan fetchReply, 1)
	f.mu.Lock()
	w := f.parts[k]
	if w == nil {
		w = &fetchWait{}
		f.parts[k] = w
	}
	w.pos, w.waiting, w.reply, w.answered = pos, true, reply, time.Time{}
	f.mu.Unlock()
	f.poke()
	select {
	case r := <-reply:
		return r.p, r.err
	case <-ctx.Done():
	case <-f.ctx.Done():
	}
	f.mu.Lock()
	if w.reply == reply {
		w.waiting = false
	}
	f.mu.Unlock()
	f.poke()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("source fetch from broker %d: the link's client closed", f.broker)
}

// leave takes k out of the fetcher (its session forgets it in the next
// request): the partition backs off, is led by another source broker now,
// or stopped.
func (f *fetcher) leave(k partKey) {
	f.mu.Lock()
	delete(f.parts, k)
	f.mu.Unlock()
	f.poke()
}

// next waits until a request is due and returns what it fetches: every
// waiting partition's position. A request is due when a partition waits
// and none that had an answer is still on its way back (within
// fetchHold). It returns nil once the fetcher closes.
func (f *fetcher) next() map[partKey]fetchPos {
	for {
		var hold time.Duration
		f.mu.Lock()
		want := map[partKey]fetchPos{}
		now := time.Now()
		for k, w := range f.parts {
			switch {
			case w.waiting:
				want[k] = w.pos
			case !w.answered.IsZero():
				if left := fetchHold - now.Sub(w.answered); left > 0 {
					hold = max(hold, left)
				} else {
					w.answered = time.Time{} // sent without it: forgotten
				}
			}
		}
		f.mu.Unlock()
		if len(want) > 0 && hold == 0 {
			return want
		}
		var t *time.Timer
		var timeout <-chan time.Time
		if hold > 0 {
			t = time.NewTimer(hold)
			timeout = t.C
		}
		select {
		case <-f.ctx.Done():
		case <-f.wake:
		case <-timeout:
		}
		if t != nil {
			t.Stop()
		}
		if f.ctx.Err() != nil {
			return nil
		}
	}
}

func (f *fetcher) run() {
	defer close(f.done)
	defer f.closeSession()
	for {
		want := f.next()
		if want == nil {
			return
		}
		resp, err := f.roundTrip(want)
		if f.ctx.Err() != nil {
			return
		}
		if err != nil {
			f.resetSession()
			f.answer(want, nil, err)
			continue
		}
		switch err := kerr.ErrorForCode(resp.ErrorCode); {
		case err == nil:
		case errors.Is(err, kerr.FetchSessionIDNotFound), errors.Is(err, kerr.InvalidFetchSessionEpoch), errors.Is(err, kerr.FetchSessionTopicIDError):
			// The source broker lost or evicted the session (a restart, a
			// full cache), or a topic id in it changed: start over with a
			// full fetch at once.
			f.sessID = 0
			f.resetSession()
			continue
		default:
			f.resetSession()
			f.answer(want, nil, fmt.Errorf("source fetch from broker %d: %w", f.broker, err))
			continue
		}
		if resp.SessionID == 0 {
			f.sessID = 0 // the source keeps no session: every fetch is full
			f.resetSession()
		} else {
			f.sessID, f.sessEpoch, f.sent = resp.SessionID, nextSessionEpoch(f.sessEpoch), want
		}
		f.answer(want, resp, nil)
	}
}

// resetSession makes the next request a full one that replaces the
// session (Kafka closes the old one and opens a new one on the same id
// with epoch 0).
func (f *fetcher) resetSession() {
	f.sessEpoch, f.sent = 0, nil
}

// roundTrip sends the request for want in the session: what the session
// does not hold as it is, and what it holds and want does not as
// forgotten.
func (f *fetcher) roundTrip(want map[partKey]fetchPos) (*kmsg.FetchResponse, error) {
	cfg := &f.m.cfg
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = int32(cfg.MaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = cfg.MaxBytes
	req.IsolationLevel = 0 // read_uncommitted: markers and aborted batches too
	req.SessionID, req.SessionEpoch = f.sessID, f.sessEpoch
	full := f.sessEpoch == 0
	topics := topicIndex{}
	for k, pos := range want {
		if prev, ok := f.sent[k]; ok && !full && prev == pos {
			continue // the session has it as it is
		}
		i := topics.slot(k.topic, pos.topicID, func() {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = k.topic, pos.topicID
			req.Topics = append(req.Topics, t)
		})
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = k.partition
		p.CurrentLeaderEpoch = pos.epoch
		p.FetchOffset = pos.offset
		p.LogStartOffset = -1
		p.PartitionMaxBytes = cfg.PartitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	if !full {
		forgotten := topicIndex{}
		for k, pos := range f.sent {
			if _, ok := want[k]; ok {
				continue
			}
			i := forgotten.slot(k.topic, pos.topicID, func() {
				t := kmsg.NewFetchRequestForgottenTopic()
				t.Topic, t.TopicID = k.topic, pos.topicID
				req.ForgottenTopics = append(req.ForgottenTopics, t)
			})
			req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, k.partition)
		}
	}
	kresp, err := f.cl.Broker(int(f.broker)).Request(f.ctx, req)
	if err != nil {
		return nil, fmt.Errorf("source fetch from broker %d: %w", f.broker, err)
	}
	return kresp.(*kmsg.FetchResponse), nil
}

// topicIndex numbers the topics of a request in the order they come.
type topicIndex map[topicKey]int

type topicKey struct {
	name string
	id   [16]byte
}

// slot is the index of the topic; add appends it to the request the
// first time.
func (ix topicIndex) slot(name string, id [16]byte, add func()) int {
	k := topicKey{name, id}
	i, ok := ix[k]
	if !ok {
		i = len(ix)
		ix[k] = i
		add()
	}
	return i
}

// answer hands each partition asked for that still waits at the position
// asked its part of resp, or err (for every one of them).
func (f *fetcher) answer(asked map[partKey]fetchPos, resp *kmsg.FetchResponse, err error) {
	names := map[[16]byte]string{}
	for k, pos := range asked {
		names[pos.topicID] = k.topic
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	give := func(k partKey, r fetchReply) {
		w := f.parts[k]
		if w == nil || !w.waiting || w.pos != asked[k] {
			return // gone, or asking for something else now
		}
		w.waiting, w.answered = false, now
		w.reply <- r
	}
	if err != nil {
		for k := range asked {
			give(k, fetchReply{err: err})
		}
		return
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		name := t.Topic
		if t.TopicID != ([16]byte{}) {
			name = names[t.TopicID]
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if k := (partKey{name, p.Partition}); name != "" {
				if _, ok := asked[k]; ok {
					give(k, fetchReply{p: p})
				}
			}
		}
	}
}

// closeSession tells the source broker the session is done (epoch -1, as
// a Kafka consumer does when it closes), freeing its cache slot.
func (f *fetcher) closeSession() {
	if f.sessID == 0 {
		return
	}
	req := kmsg.NewPtrFetchRequest()
	req.SessionID, req.SessionEpoch = f.sessID, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = f.cl.Broker(int(f.broker)).Request(ctx, req)
}

// nextSessionEpoch is the fetch session epoch after e, wrapping past
// MaxInt32 to 1 (0 opens a session).
func nextSessionEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}
