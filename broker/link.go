package broker

// Cluster links (issue 29, package link): this file keeps the links and
// mirror topics of etcd (controller.EntityLinks, EntityMirrors) in memory,
// hands the link Manager the mirror partitions led here, creates the
// mirror topics on the controller broker, and refuses produce to a mirror.
//
// Design:
//   - A link and a mirror topic are entity configs in etcd, watched by
//     every broker like the group configs.
//   - The controller broker looks at each active link's source every
//     metadata.refresh.interval.ms and creates the mirror topics of new
//     matches: the mirror record first (so that no produce ever lands on
//     it), then the topic, with the source's partition count (and configs
//     with sync.configs). A topic that exists here without a mirror record
//     is not taken over: the link reports it.
//   - The leader of a mirror partition here runs its fetcher (link.Manager)
//     and appends the source's batches verbatim at their offsets
//     (replication.ReplicaManager.AppendMirrored), stamped with this
//     cluster's leader epoch; the partition's replicas follow it as any.
//   - Produce to a mirror is INVALID_REQUEST, with a message naming the
//     link, until the topic is promoted or failed over.
//   - promote writes the source's high watermarks of the moment as the
//     targets; each mirror leader stops at its target and marks its
//     partition done, and the last one makes the topic promoted.
//     failover makes it promoted at once.

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/link"
	"github.com/samsa-io/samsa/logstore"
)

// Mirror topic states and keys (controller.EntityMirrors).
const (
	mirrorLink    = "link"
	mirrorState   = "state"
	mirrorError   = "error"
	mirrorTargets = "targets" // "p:offset,..." while promoting
	mirrorDone    = "done"    // "p,..." the partitions that reached their target
	// mirrorMaxPID is the highest producer id of the batches copied: no
	// producer of this cluster is given one up to it (nextProducerID).
	mirrorMaxPID = "max.producer.id"
	// mirrorSourceID is the id of the source topic copied (base64).
	mirrorSourceID = "source.topic.id"

	mirroring = "mirroring"
	promoting = "promoting"
	promoted  = "promoted"
)

// linkSet is every link's and mirror topic's config, read at rev.
type linkSet struct {
	rev     int64
	links   map[string]map[string]string
	mirrors map[string]map[string]string
}

// startLinks watches the links (loadLinks read them first) and starts
// the loop that runs them.
func (b *Broker) startLinks() {
	b.linkMgr = link.NewManager(link.Config{Sink: linkSink{b}, Logger: b.log})
	b.store.WatchLinks(b.ctx, b.links.Load().rev, func() {
		if err := b.loadLinks(b.ctx); err != nil && b.ctx.Err() == nil {
			b.log.Warn("reloading cluster links failed", "err", err)
		}
		b.kickLinks()
	})
	b.spawn(b.linkLoop)
}

func (b *Broker) loadLinks(ctx context.Context) error {
	links, rev, err := b.store.EntityConfigsRev(ctx, controller.EntityLinks)
	if err != nil {
		return err
	}
	mirrors, mrev, err := b.store.EntityConfigsRev(ctx, controller.EntityMirrors)
	if err != nil {
		return err
	}
	next := &linkSet{rev: min(rev, mrev), links: links, mirrors: mirrors}
	for {
		cur := b.links.Load()
		if cur != nil && cur.rev > next.rev {
			return nil
		}
		if b.links.CompareAndSwap(cur, next) {
			return nil
		}
	}
}

// kickLinks makes the link loop look at the links and leaderships again.
func (b *Broker) kickLinks() {
	select {
	case b.linkKick <- struct{}{}:
	default:
	}
}

// mirrorRefusal refuses a write to a mirror topic not promoted yet.
func (b *Broker) mirrorRefusal(topic string) error {
	ls := b.links.Load()
	if ls == nil {
		return nil
	}
	m := ls.mirrors[topic]
	if m == nil || m[mirrorState] == promoted {
		return nil
	}
	return fmt.Errorf("%w: topic %s is a mirror of cluster link %s (%s): it takes no writes until promoted or failed over",
		kerr.InvalidRequest, topic, m[mirrorLink], m[mirrorState])
}

// forgetMirror deletes the mirror record of a topic deleted here (none
// is left behind: a link still matching its source topic mirrors it
// again, from the source's start).
func (b *Broker) forgetMirror(ctx context.Context, topic string) error {
	ls := b.links.Load()
	if ls == nil || ls.mirrors[topic] == nil {
		return nil
	}
	if err := b.store.UpdateEntityConfig(ctx, controller.EntityMirrors, topic, func(map[string]string) (map[string]string, error) {
		return nil, nil
	}); err != nil {
		return fmt.Errorf("deleting the mirror record of %s: %w", topic, err)
	}
	return b.loadLinks(ctx)
}

// linkSpecs are the links in effect, parsed; a link whose config does not
// parse is left out (its alter was validated, so only a hand edit gets
// there).
func (ls *linkSet) specs() map[string]*link.Spec {
	out := map[string]*link.Spec{}
	for name, cfg := range ls.links {
		s, err := link.ParseSpec(name, cfg)
		if err == nil {
			out[name] = s
		}
	}
	return out
}

// linkLoop runs the links until the broker stops: on each change of the
// links or of the leaderships, and every second for the controller's
// look at the sources.
func (b *Broker) linkLoop(ctx context.Context) {
	defer b.linkMgr.Close()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastLook := map[string]time.Time{}
	for {
		ls := b.links.Load()
		specs := ls.specs()
		active := map[string]*link.Spec{}
		for n, s := range specs {
			if !s.Paused {
				active[n] = s
			}
		}
		b.linkMgr.SetLinks(active)
		b.linkMgr.Assign(b.mirrorAssignments(ls, active))
		b.linkMgr.Sample(time.Now())
		if b.store.IsController() {
			now := time.Now()
			for _, n := range slices.Sorted(maps.Keys(active)) {
				s := active[n]
				if now.Sub(lastLook[n]) < s.Refresh {
					continue
				}
				lastLook[n] = now
				b.lookAtSource(ctx, s)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-b.linkKick:
		case <-tick.C:
		}
	}
}

// mirrorAssignments are the partitions of the mirroring topics of active
// links that this broker leads.
func (b *Broker) mirrorAssignments(ls *linkSet, active map[string]*link.Spec) []link.Assignment {
	var as []link.Assignment
	for topic, m := range ls.mirrors {
		st := m[mirrorState]
		if st != mirroring && st != promoting || active[m[mirrorLink]] == nil {
			continue
		}
		t := b.meta.topic(topic)
		if t == nil {
			continue
		}
		targets := parsePartitionOffsets(m[mirrorTargets])
		done := parsePartitionSet(m[mirrorDone])
		for _, p := range t.parts {
			if p.Log == nil || done[p.ID] {
				continue
			}
			leader, epoch, _, _ := p.State()
			if leader != b.nodeID {
				continue
			}
			if _, _, err := b.replicas.Leading(p, epoch); err != nil {
				continue
			}
			target := int64(-1)
			if st == promoting {
				target = targets[p.ID] // absent: 0, reached at once
			}
			as = append(as, link.Assignment{Link: m[mirrorLink], Topic: topic, Partition: p.ID, Epoch: epoch, Target: target})
		}
	}
	return as
}

// lookAtSource creates the mirror topics of a link's new matches on the
// source (on the controller broker).
func (b *Broker) lookAtSource(ctx context.Context, s *link.Spec) {
	cl := b.linkMgr.Client(s.Name)
	if cl == nil {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	topics, err := link.Discover(lctx, cl, s)
	b.setLinkError(s.Name, "", err)
	if err != nil {
		b.log.Warn("cluster link: looking at the source failed", "link", s.Name, "err", err)
		return
	}
	ls := b.links.Load()
	for _, st := range topics {
		m := ls.mirrors[st.Name]
		if m != nil && m[mirrorLink] != s.Name {
			continue // another link's mirror
		}
		b.setLinkError(s.Name, st.Name, nil)
		if t := b.meta.topic(st.Name); t != nil {
			if m == nil {
				b.setLinkError(s.Name, st.Name, fmt.Errorf("topic %s exists here and is not a mirror: not mirrored", st.Name))
				continue
			}
			switch n := int32(len(t.parts)); {
			case m[mirrorState] != mirroring || n == st.Partitions:
			case n < st.Partitions:
				// The source's partitions increased: so do the mirror's.
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = st.Name, st.Partitions
				if err := b.createPartitions(lctx, rt, false); err != nil {
					b.setLinkError(s.Name, st.Name, fmt.Errorf("adding partitions to mirror %s: %w", st.Name, err))
				} else {
					b.log.Info("cluster link: mirror partitions added", "link", s.Name, "topic", st.Name, "partitions", st.Partitions)
				}
			default:
				b.setLinkError(s.Name, st.Name, fmt.Errorf("source topic %s has %d partitions, fewer than the mirror's %d (deleted and created again?): not mirrored past what it has",
					st.Name, st.Partitions, n))
			}
			continue
		}
		if m != nil && m[mirrorState] == promoted {
			continue // promoted, and its topic not made yet (or deleted a moment ago)
		}
		if err := b.store.UpdateEntityConfig(lctx, controller.EntityMirrors, st.Name, func(cur map[string]string) (map[string]string, error) {
			if len(cur) > 0 && cur[mirrorLink] != s.Name {
				return nil, fmt.Errorf("topic %s is a mirror of link %s", st.Name, cur[mirrorLink])
			}
			return map[string]string{mirrorLink: s.Name, mirrorState: mirroring}, nil
		}); err != nil {
			b.log.Warn("cluster link: recording a mirror topic", "link", s.Name, "topic", st.Name, "err", err)
			continue
		}
		configs := b.mirrorConfigs(st.Configs)
		err := b.createTopic(lctx, &topicSpec{name: st.Name, partitions: st.Partitions, replication: -1, configs: configs}, false)
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			b.log.Warn("cluster link: creating a mirror topic", "link", s.Name, "topic", st.Name, "err", err)
			b.setLinkError(s.Name, st.Name, err)
			continue
		}
		b.log.Info("cluster link: mirror topic created", "link", s.Name, "topic", st.Name, "partitions", st.Partitions)
	}
	if err := b.loadLinks(ctx); err == nil {
		b.kickLinks()
	}
	if err := b.syncLinkGroups(lctx, s, nil); err != nil {
		b.setLinkError(s.Name, "", err)
	}
	_, _, err = b.syncLinkACLs(lctx, s)
	b.setLinkError(s.Name, linkACLErrKey, err)
}

// mirrorConfigs are the source topic's configs that this cluster takes.
func (b *Broker) mirrorConfigs(src map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range src {
		if b.cfg().ValidateTopicChange(nil, map[string]string{k: v}) == nil {
			out[k] = v
		}
	}
	return out
}

// setLinkError records (or, for nil, clears) an error of a link's last
// look at its source: of the link itself (topic "") or of one topic. They
// are kept in memory on the controller broker and described there.
func (b *Broker) setLinkError(name, topic string, err error) {
	b.linkErrMu.Lock()
	defer b.linkErrMu.Unlock()
	if err == nil {
		delete(b.linkErrs[name], topic)
		return
	}
	if b.linkErrs == nil {
		b.linkErrs = map[string]map[string]string{}
	}
	if b.linkErrs[name] == nil {
		b.linkErrs[name] = map[string]string{}
	}
	b.linkErrs[name][topic] = err.Error()
}

func (b *Broker) linkErrors(name string) map[string]string {
	b.linkErrMu.Lock()
	defer b.linkErrMu.Unlock()
	return maps.Clone(b.linkErrs[name])
}

// linkSink appends to the mirror partitions led here.
type linkSink struct{ b *Broker }

func (s linkSink) part(topic string, partition int32) (*partition, error) {
	p := s.b.meta.partition(topic, partition)
	if p == nil || p.Log == nil {
		return nil, kerr.UnknownTopicOrPartition
	}
	return p, nil
}

func (s linkSink) End(topic string, partition, epoch int32) (int64, error) {
	p, err := s.part(topic, partition)
	if err != nil {
		return 0, err
	}
	l, _, err := s.b.replicas.Leading(p, epoch)
	if err != nil {
		return 0, err
	}
	return l.EndOffset(), nil
}

func (s linkSink) Batch(topic string, partition, epoch int32, offset int64) ([]byte, error) {
	p, err := s.part(topic, partition)
	if err != nil {
		return nil, err
	}
	l, _, err := s.b.replicas.Leading(p, epoch)
	if err != nil {
		return nil, err
	}
	b, err := l.ReadBytes(offset, 1, l.EndOffset())
	if err != nil {
		return nil, err
	}
	hs, _ := logstore.SplitBatches(b)
	if len(hs) == 0 {
		return nil, nil
	}
	return hs[0], nil
}

func (s linkSink) Append(topic string, partition, epoch int32, batches []byte) error {
	p, err := s.part(topic, partition)
	if err != nil {
		return err
	}
	if err := s.b.noteMirroredProducers(topic, batches); err != nil {
		return err
	}
	_, err = s.b.replicas.AppendMirrored(p, batches, time.Now(), epoch)
	return err
}

// noteMirroredProducers raises the mirror topic's max.producer.id to the
// highest producer id of batches, before they are appended, so that this
// cluster never gives a producer of its own an id whose state the mirror
// holds (it would be refused with OUT_OF_ORDER_SEQUENCE or fenced once
// the mirror is promoted).
func (b *Broker) noteMirroredProducers(topic string, batches []byte) error {
	high := int64(-1)
	bs, _ := logstore.SplitBatches(batches)
	for _, raw := range bs {
		if h, err := logstore.ParseBatchHeader(raw); err == nil {
			high = max(high, h.ProducerID)
		}
	}
	ls := b.links.Load()
	if high < 0 || ls == nil || parseInt(ls.mirrors[topic][mirrorMaxPID]) >= high {
		return nil
	}
	err := b.store.UpdateEntityConfig(b.ctx, controller.EntityMirrors, topic, func(cur map[string]string) (map[string]string, error) {
		if len(cur) == 0 || parseInt(cur[mirrorMaxPID]) >= high {
			return cur, nil
		}
		cur[mirrorMaxPID] = strconv.FormatInt(high, 10)
		return cur, nil
	})
	if err != nil {
		return err
	}
	return b.loadLinks(b.ctx)
}

// mirroredProducerIDs is the highest producer id any mirror copied (-1
// for none).
func (b *Broker) mirroredProducerIDs() int64 {
	high := int64(-1)
	if ls := b.links.Load(); ls != nil {
		for _, m := range ls.mirrors {
			high = max(high, parseInt(m[mirrorMaxPID]))
		}
	}
	return high
}

// parseInt is a decimal, -1 when s is not one.
func parseInt(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return v
}

func (s linkSink) StartAt(topic string, partition, epoch int32, offset int64) error {
	p, err := s.part(topic, partition)
	if err != nil {
		return err
	}
	return s.b.replicas.StartMirrorAt(p, offset, epoch)
}

func (s linkSink) AdvanceStart(topic string, partition, epoch int32, offset int64) error {
	p, err := s.part(topic, partition)
	if err != nil {
		return err
	}
	_, err = s.b.replicas.AdvanceMirrorStart(p, offset, epoch)
	return err
}

// SourceTopicID records the source topic's id in the mirror record the
// first time and returns the one recorded.
func (s linkSink) SourceTopicID(topic string, id [16]byte) ([16]byte, error) {
	b := s.b
	enc := base64.RawURLEncoding.EncodeToString(id[:])
	known := ""
	if ls := b.links.Load(); ls != nil {
		known = ls.mirrors[topic][mirrorSourceID]
	}
	var err error
	if known == "" {
		err = b.store.UpdateEntityConfig(b.ctx, controller.EntityMirrors, topic, func(cur map[string]string) (map[string]string, error) {
			if len(cur) == 0 {
				return nil, fmt.Errorf("topic %s is no mirror", topic)
			}
			if known = cur[mirrorSourceID]; known == "" {
				known = enc
				cur[mirrorSourceID] = enc
			}
			return cur, nil
		})
	}
	if err != nil {
		return [16]byte{}, err
	}
	var out [16]byte
	raw, err := base64.RawURLEncoding.DecodeString(known)
	if err != nil || len(raw) != 16 {
		return out, fmt.Errorf("mirror %s: bad %s %q", topic, mirrorSourceID, known)
	}
	copy(out[:], raw)
	return out, nil
}

// Reached marks a promoting partition done; the last one makes the topic
// promoted.
func (s linkSink) Reached(topic string, partition int32) error {
	b := s.b
	err := b.store.UpdateEntityConfig(b.ctx, controller.EntityMirrors, topic, func(cur map[string]string) (map[string]string, error) {
		if cur[mirrorState] != promoting {
			return cur, nil
		}
		done := parsePartitionSet(cur[mirrorDone])
		done[partition] = true
		cur[mirrorDone] = formatPartitionSet(done)
		if t := b.meta.topic(topic); t != nil && len(done) >= len(t.parts) {
			cur[mirrorState] = promoted
			delete(cur, mirrorDone)
		}
		return cur, nil
	})
	if err != nil && b.ctx.Err() == nil {
		b.log.Warn("cluster link: marking a promoted partition", "topic", topic, "partition", partition, "err", err)
	}
	return err
}

// parsePartitionOffsets parses "p:offset,...".
func parsePartitionOffsets(s string) map[int32]int64 {
	out := map[int32]int64{}
	for _, e := range strings.Split(s, ",") {
		p, o, ok := strings.Cut(e, ":")
		if !ok {
			continue
		}
		pi, err1 := strconv.ParseInt(p, 10, 32)
		oi, err2 := strconv.ParseInt(o, 10, 64)
		if err1 == nil && err2 == nil {
			out[int32(pi)] = oi
		}
	}
	return out
}

func formatPartitionOffsets(m map[int32]int64) string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d:%d", p, m[p]))
	}
	return strings.Join(parts, ",")
}

// parsePartitionSet parses "p,...".
func parsePartitionSet(s string) map[int32]bool {
	out := map[int32]bool{}
	for _, e := range strings.Split(s, ",") {
		if p, err := strconv.ParseInt(e, 10, 32); err == nil {
			out[int32(p)] = true
		}
	}
	return out
}

func formatPartitionSet(m map[int32]bool) string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, strconv.Itoa(int(p)))
	}
	return strings.Join(parts, ",")
}
