package link

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrSourceWentBack stops a mirror partition whose source ends below
// what the mirror already holds.
var ErrSourceWentBack = errors.New("link: the source partition's offsets went back below the mirror's end")

// ErrSourceRecreated stops a mirror whose source topic has another topic
// id than the one it copied: deleted and created again there.
var ErrSourceRecreated = errors.New("link: the source topic was deleted and created again")

// Sink is the mirror side of the partitions, which the broker supplies.
// Each call names the leader epoch the partition was assigned in and
// fails once it is led in another (or elsewhere).
type Sink interface {
	// End is the mirror partition's log end offset.
	End(topic string, partition, epoch int32) (int64, error)
	// Append appends whole source batches at their offsets.
	Append(topic string, partition, epoch int32, batches []byte) error
	// StartAt empties the mirror partition and starts it at offset (the
	// source's log start moved past the mirror's end; or, while it holds
	// nothing, the base of the source batch holding the source's start).
	StartAt(topic string, partition, epoch int32, offset int64) error
	// AdvanceStart moves the mirror's log start up to the source's.
	AdvanceStart(topic string, partition, epoch int32, offset int64) error
	// Batch is the mirror's whole batch that holds offset.
	Batch(topic string, partition, epoch int32, offset int64) ([]byte, error)
	// Reached records that the partition reached its promote target; an
	// error is retried.
	Reached(topic string, partition int32) error
	// SourceTopicID records the id of the source topic a mirror copies,
	// the first time, and returns the id recorded.
	SourceTopicID(topic string, id [16]byte) ([16]byte, error)
}

// Assignment is a mirror partition led here in Epoch.
type Assignment struct {
	Link      string
	Topic     string
	Partition int32
	Epoch     int32
	// Target is the source offset that ends the mirroring (a promote in
	// progress); -1 mirrors on.
	Target int64
}

// PartitionStatus is what the mirror of one partition knows.
type PartitionStatus struct {
	Link         string `json:"link"`
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	SourceStart  int64  `json:"source_start_offset"`
	SourceEnd    int64  `json:"source_end_offset"` // the source's high watermark at the last fetch
	MirrorEnd    int64  `json:"mirror_end_offset"`
	Lag          int64  `json:"lag"`
	LagSeconds   int64  `json:"lag_seconds"` // since the mirror last had all the source had
	SourceLeader int32  `json:"source_leader"`
	Error        string `json:"error,omitempty"`
}

// Config configures a Manager.
type Config struct {
	Sink   Sink
	Logger *slog.Logger
	// MaxWait, MaxBytes, PartitionMaxBytes: the Fetch requests'
	// (defaults 500ms, 32 MiB, 8 MiB).
	MaxWait           time.Duration
	MaxBytes          int32
	PartitionMaxBytes int32
	// Backoff after an error (default 200ms).
	Backoff time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// HistoryEvery, HistoryLen: the lag history's interval and length
	// (defaults 5 s, 720; history.go).
	HistoryEvery time.Duration
	HistoryLen   int
}

// Manager runs the mirror partitions led here.
type Manager struct {
	cfg Config

	mu      sync.Mutex
	closed  bool
	links   map[string]*source           // by link name
	running map[partKey]*partitionMirror // by mirror partition
	status  map[partKey]*PartitionStatus // guarded by mu; kept after a partition stops
	// caughtUp is when each partition last had all the source had.
	caughtUp map[partKey]time.Time  // guarded by mu
	history  map[string][]LagSample // by link; guarded by mu
	wg       sync.WaitGroup
}

type partKey struct {
	topic     string
	partition int32
}

// source is a link's client of its source cluster.
type source struct {
	spec *Spec
	cl   *kgo.Client
	// fetchers, by source broker (fetcher.go); guarded by Manager.mu.
	fetchers map[int32]*fetcher
	closed   bool // guarded by Manager.mu
}

// fetcher is the fetcher of the source broker id, started on first use;
// nil once the source is closed. Caller holds m.mu.
func (s *source) fetcher(m *Manager, id int32) *fetcher {
	if s.closed {
		return nil
	}
	f := s.fetchers[id]
	if f == nil {
		if s.fetchers == nil {
			s.fetchers = map[int32]*fetcher{}
		}
		f = newFetcher(m, s.cl, id)
		s.fetchers[id] = f
	}
	return f
}

// close stops the source's fetchers (once its partitions stopped) and
// closes its client.
func (m *Manager) closeSource(s *source) {
	m.mu.Lock()
	s.closed = true
	fs := s.fetchers
	s.fetchers = nil
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Go(f.close)
	}
	wg.Wait()
	s.cl.Close()
}

type partitionMirror struct {
	a      Assignment
	cancel context.CancelFunc
	done   chan struct{}
}

// NewManager returns a Manager; Close stops it.
func NewManager(cfg Config) *Manager {
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 500 * time.Millisecond
	}
	if cfg.PartitionMaxBytes <= 0 {
		cfg.PartitionMaxBytes = 8 << 20
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 32 << 20
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 200 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HistoryEvery <= 0 {
		cfg.HistoryEvery = 5 * time.Second
	}
	if cfg.HistoryLen <= 0 {
		cfg.HistoryLen = 720
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, links: map[string]*source{}, running: map[partKey]*partitionMirror{}, status: map[partKey]*PartitionStatus{}, caughtUp: map[partKey]time.Time{}, history: map[string][]LagSample{}}
}

// Client returns the client of a link's source (nil for no such link).
func (m *Manager) Client(link string) *kgo.Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.links[link]; s != nil {
		return s.cl
	}
	return nil
}

// SetLinks makes specs the links in effect: a link whose spec changed
// gets a new client (its partitions restart on it), a link gone is
// closed with its partitions.
func (m *Manager) SetLinks(specs map[string]*Spec) {
	m.mu.Lock()
	var stop []*partitionMirror
	var closeSrc []*source
	for name, s := range m.links {
		if n, ok := specs[name]; ok && sameSpec(n, s.spec) {
			s.spec = n
			continue
		}
		closeSrc = append(closeSrc, s)
		delete(m.links, name)
		if _, ok := specs[name]; !ok {
			delete(m.history, name)
		}
		for k, pm := range m.running {
			if pm.a.Link == name {
				stop = append(stop, pm)
				delete(m.running, k)
			}
		}
	}
	for name, spec := range specs {
		if _, ok := m.links[name]; ok {
			continue
		}
		opts, err := spec.clientOpts()
		if err != nil {
			m.cfg.Logger.Warn("cluster link: bad source config", "link", name, "err", err)
			continue
		}
		cl, err := kgo.NewClient(append(opts, kgo.RetryTimeout(m.cfg.MaxWait+5*time.Second))...)
		if err != nil {
			m.cfg.Logger.Warn("cluster link: source client", "link", name, "err", err)
			continue
		}
		m.links[name] = &source{spec: spec, cl: cl}
	}
	m.mu.Unlock()
	for _, pm := range stop {
		pm.cancel()
		<-pm.done
	}
	for _, s := range closeSrc {
		m.closeSource(s)
	}
}

func sameSpec(a, b *Spec) bool {
	if len(a.Source) != len(b.Source) {
		return false
	}
	for k, v := range a.Source {
		if b.Source[k] != v {
			return false
		}
	}
	return true
}

// Assign makes as the mirror partitions running here: the others stop
// (and Assign waits for them), new ones start, and one whose epoch or
// target changed restarts.
func (m *Manager) Assign(as []Assignment) {
	want := make(map[partKey]Assignment, len(as))
	for _, a := range as {
		want[partKey{a.Topic, a.Partition}] = a
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	var stop []*partitionMirror
	for k, pm := range m.running {
		if a, ok := want[k]; !ok || a != pm.a {
			stop = append(stop, pm)
			delete(m.running, k)
		}
	}
	for k := range m.status {
		if _, ok := want[k]; !ok {
			delete(m.status, k)
			delete(m.caughtUp, k)
		}
	}
	m.mu.Unlock()
	for _, pm := range stop {
		pm.cancel()
		<-pm.done
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, a := range want {
		if _, ok := m.running[k]; ok || m.closed {
			continue
		}
		src := m.links[a.Link]
		if src == nil {
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		pm := &partitionMirror{a: a, cancel: cancel, done: make(chan struct{})}
		m.running[k] = pm
		if m.status[k] == nil {
			m.status[k] = &PartitionStatus{Link: a.Link, Topic: a.Topic, Partition: a.Partition, SourceStart: -1, SourceEnd: -1, MirrorEnd: -1, SourceLeader: -1}
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer close(pm.done)
			m.run(ctx, src, a)
		}()
	}
}

// Status is the state of every mirror partition led here.
func (m *Manager) Status() []PartitionStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]PartitionStatus, 0, len(m.status))
	now := m.cfg.Now()
	for k, st := range m.status {
		s := *st
		if s.SourceEnd >= 0 && s.MirrorEnd >= 0 {
			s.Lag = max(0, s.SourceEnd-s.MirrorEnd)
		}
		if cu := m.caughtUp[k]; !cu.IsZero() && s.Lag > 0 {
			s.LagSeconds = int64(now.Sub(cu) / time.Second)
		}
		out = append(out, s)
	}
	return out
}

// Close stops every partition and closes the source clients.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for k, pm := range m.running {
		pm.cancel()
		delete(m.running, k)
	}
	links := m.links
	m.links = map[string]*source{}
	m.mu.Unlock()
	m.wg.Wait()
	for _, s := range links {
		m.closeSource(s)
	}
}

func (m *Manager) update(k partKey, f func(*PartitionStatus)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.status[k]; st != nil {
		f(st)
		if st.SourceEnd >= 0 && st.MirrorEnd >= st.SourceEnd {
			m.caughtUp[k] = m.cfg.Now()
		}
	}
}

// sourceLeader is where a source partition is led.
type sourceLeader struct {
	id      int32
	epoch   int32
	topicID [16]byte
}

func (m *Manager) lookupLeader(ctx context.Context, cl *kgo.Client, topic string, partition int32) (sourceLeader, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return sourceLeader{}, fmt.Errorf("source metadata: %w", err)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return sourceLeader{}, fmt.Errorf("source topic %s: %w", topic, err)
		}
		for _, p := range t.Partitions {
			if p.Partition != partition {
				continue
			}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil && p.Leader < 0 {
				return sourceLeader{}, fmt.Errorf("source partition %s-%d: %w", topic, partition, err)
			}
			if p.Leader < 0 {
				return sourceLeader{}, fmt.Errorf("source partition %s-%d has no leader", topic, partition)
			}
			return sourceLeader{id: p.Leader, epoch: p.LeaderEpoch, topicID: t.TopicID}, nil
		}
		return sourceLeader{}, fmt.Errorf("source topic %s has no partition %d (its partitions shrank?)", topic, partition)
	}
	return sourceLeader{}, fmt.Errorf("source topic %s: %w", topic, kerr.UnknownTopicOrPartition)
}

// run mirrors one partition until ctx ends, the leadership here ends or
// the target is reached.
func (m *Manager) run(ctx context.Context, src *source, a Assignment) {
	k := partKey{a.Topic, a.Partition}
	cl := src.cl
	log := m.cfg.Logger.With("link", a.Link, "topic", a.Topic, "partition", a.Partition)
	// cur is the fetcher of the source leader the partition fetches from;
	// the partition leaves it whenever it does anything but fetch again
	// from that leader (else the fetcher would wait for it).
	var cur *fetcher
	drop := func() {
		if cur != nil {
			cur.leave(k)
			cur = nil
		}
	}
	defer drop()
	stop := func(err error) {
		drop()
		m.stop(ctx, k, log, err)
	}
	var leader *sourceLeader
	// lastEpoch is the source's leader epoch of the last batch the mirror
	// holds (-1: not known), learned at the start by fetching that batch
	// again and kept from each append; checked is the source leader epoch
	// it was last checked against (epochs.go).
	lastEpoch, checked := int32(-1), int32(-1)
	learn := true
	fail := func(err error) bool {
		drop()
		m.update(k, func(st *PartitionStatus) { st.Error = err.Error() })
		t := time.NewTimer(m.cfg.Backoff)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	for ctx.Err() == nil {
		end, err := m.cfg.Sink.End(a.Topic, a.Partition, a.Epoch)
		if err != nil {
			log.Debug("cluster link: mirror partition no longer led here", "err", err)
			return
		}
		m.update(k, func(st *PartitionStatus) { st.MirrorEnd = end })
		if a.Target >= 0 && end >= a.Target {
			if err := m.cfg.Sink.Reached(a.Topic, a.Partition); err != nil {
				if !fail(fmt.Errorf("recording that the promote target was reached: %w", err)) {
					return
				}
				continue
			}
			return
		}
		if leader == nil {
			l, err := m.lookupLeader(ctx, cl, a.Topic, a.Partition)
			if err != nil {
				if !fail(err) {
					return
				}
				continue
			}
			if l.topicID != ([16]byte{}) {
				known, err := m.cfg.Sink.SourceTopicID(a.Topic, l.topicID)
				if err != nil {
					if !fail(err) {
						return
					}
					continue
				}
				if known != l.topicID {
					stop(fmt.Errorf("%w: its topic id changed", ErrSourceRecreated))
					return
				}
			}
			leader = &l
			m.update(k, func(st *PartitionStatus) { st.SourceLeader = l.id })
		}
		if lastEpoch >= 0 && end > 0 && leader.epoch != checked {
			// A new source leader: does its log still hold what the
			// mirror copied? (An unclean election says no.)
			drop() // a round trip of its own: the fetcher does not wait
			if err := m.checkEpoch(ctx, cl, a, *leader, lastEpoch, end); errors.Is(err, ErrSourceWentBack) {
				stop(err)
				return
			} else if err != nil {
				leader = nil
				if !fail(err) {
					return
				}
				continue
			}
			checked = leader.epoch
		}
		from := end
		if learn && end > 0 {
			from = end - 1 // the batch holding it, for its epoch
		}
		m.mu.Lock()
		f := src.fetcher(m, leader.id)
		m.mu.Unlock()
		if f == nil {
			return // the link's client closed
		}
		if f != cur {
			drop()
			cur = f
		}
		rp, err := f.fetch(ctx, k, fetchPos{topicID: leader.topicID, epoch: leader.epoch, offset: from})
		if err != nil {
			leader = nil
			if !fail(err) {
				return
			}
			continue
		}
		if from < end {
			learn = false
			if rp.ErrorCode == 0 {
				e, err := m.sameLastBatch(a, rp.RecordBatches, end)
				if errors.Is(err, ErrSourceWentBack) {
					stop(err)
					return
				}
				if err == nil && e >= 0 {
					lastEpoch, checked = e, leader.epoch
				}
			}
			if kerr.ErrorForCode(rp.ErrorCode) == kerr.OffsetOutOfRange {
				continue // the batch is gone: fetch from the end
			}
		}
		switch err := kerr.ErrorForCode(rp.ErrorCode); {
		case err == nil:
		case errors.Is(err, kerr.OffsetOutOfRange):
			if rp.LogStartOffset > end {
				if err := m.cfg.Sink.StartAt(a.Topic, a.Partition, a.Epoch, rp.LogStartOffset); err != nil {
					if !fail(fmt.Errorf("starting the mirror at the source's log start %d: %w", rp.LogStartOffset, err)) {
						return
					}
				}
				continue
			}
			stop(fmt.Errorf("%w: mirror end %d, source high watermark %d", ErrSourceWentBack, end, rp.HighWatermark))
			return
		default:
			leader = nil
			if !fail(fmt.Errorf("source fetch: %w", err)) {
				return
			}
			continue
		}
		if rp.HighWatermark >= 0 && rp.HighWatermark < end {
			// A new source leader's high watermark can lag what the old
			// one had committed for a moment; a log that lost what the
			// mirror holds is told by its end for lastEpoch.
			err := fmt.Errorf("waiting: the source's high watermark %d is below the mirror's end %d", rp.HighWatermark, end)
			if lastEpoch >= 0 {
				drop()
				if cerr := m.checkEpoch(ctx, cl, a, *leader, lastEpoch, end); errors.Is(cerr, ErrSourceWentBack) {
					stop(cerr)
					return
				}
			}
			leader = nil // and look the leader up again
			if !fail(err) {
				return
			}
			continue
		}
		m.update(k, func(st *PartitionStatus) {
			st.SourceEnd, st.SourceStart, st.Error = rp.HighWatermark, rp.LogStartOffset, ""
		})
		recs := batchesFrom(rp.RecordBatches, end)
		if len(recs) > 0 {
			if base := int64(binary.BigEndian.Uint64(recs)); base < end {
				// The source's log start is inside its first batch (a
				// DeleteRecords there): the empty mirror starts at the
				// batch, and its log start follows the source's below.
				if err := m.cfg.Sink.StartAt(a.Topic, a.Partition, a.Epoch, base); err != nil {
					if !fail(fmt.Errorf("starting the mirror at batch %d: %w", base, err)) {
						return
					}
					continue
				}
			}
			last := lastBatchEpoch(recs) // before Append stamps this cluster's epoch
			if err := m.cfg.Sink.Append(a.Topic, a.Partition, a.Epoch, recs); err != nil {
				if !fail(fmt.Errorf("appending to the mirror: %w", err)) {
					return
				}
				continue
			}
			lastEpoch, checked = last, leader.epoch
		}
		if rp.LogStartOffset > 0 {
			if err := m.cfg.Sink.AdvanceStart(a.Topic, a.Partition, a.Epoch, rp.LogStartOffset); err != nil {
				if !fail(fmt.Errorf("following the source's log start %d: %w", rp.LogStartOffset, err)) {
					return
				}
			}
		}
	}
}

// stop parks a partition in an error state until its assignment ends:
// nothing more is appended to it.
func (m *Manager) stop(ctx context.Context, k partKey, log *slog.Logger, err error) {
	log.Error("cluster link: mirror partition stopped", "err", err)
	m.update(k, func(st *PartitionStatus) { st.Error = err.Error() })
	<-ctx.Done()
}

// batchesFrom returns the whole batches of b (a fetch may end inside
// one) from the first that ends at or after offset (a fetch returns the
// whole batch holding its offset).
func batchesFrom(b []byte, offset int64) []byte {
	start, n := -1, 0
	for len(b)-n >= 12 {
		size := int(binary.BigEndian.Uint32(b[n+8:]))
		if size < 49 || len(b)-n < 12+size {
			break
		}
		base := int64(binary.BigEndian.Uint64(b[n:]))
		lastDelta := int64(int32(binary.BigEndian.Uint32(b[n+23:])))
		if start < 0 && base+lastDelta >= offset {
			start = n
		}
		n += 12 + size
	}
	if start < 0 {
		return nil
	}
	return b[start:n]
}
