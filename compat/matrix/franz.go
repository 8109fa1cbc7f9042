package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// franz-go (kgo, kadm) with its defaults: idempotent acks=all producer,
// cooperative-sticky groups.
func franzScenarios() goScenarios {
	return addSecure(goScenarios{
		"create":  franzCreate,
		"produce": franzProduce,
		"group":   franzGroup,
		"group848": func(ctx context.Context, e *env) error {
			return franzGroupWith(ctx, e, "group848", kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer())
		},
		"admin":  franzAdmin,
		"errors": franzErrors,
		"txn":    franzTxn,
		// pkg/sr
		scRegistry: franzRegistry,
	}, franzSecure)
}

func franzClient(e *env, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.bootstrap)}, opts...)...)
}

func franzAdminClient(e *env) (*kadm.Client, func(), error) {
	cl, err := franzClient(e)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

func franzCreateTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("create %s: %w", topic, resp.Err)
	}
	// Kafka's brokers learn a new topic's leaders a moment after
	// CreateTopics answers; scenarios start once metadata shows them.
	return eventually(ctx, "leaders of "+topic, func(ctx context.Context) error {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		d := td[topic]
		if d.Err != nil {
			return d.Err
		}
		if len(d.Partitions) != int(partitions) {
			return fmt.Errorf("%d partitions", len(d.Partitions))
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return fmt.Errorf("partition %d: leader %d (%v)", p.Partition, p.Leader, p.Err)
			}
		}
		return nil
	})
}

func franzRecord(topic string, i int) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: recKey(i), Value: recValue(i)}
	for _, h := range recHeaders(i) {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.key, Value: h.value})
	}
	return r
}

func franzHeaders(r *kgo.Record) []header {
	var hs []header
	for _, h := range r.Headers {
		hs = append(hs, header{h.Key, h.Value})
	}
	return hs
}

func franzProduceRange(ctx context.Context, e *env, topic string, from, to int, opts ...kgo.Opt) error {
	cl, err := franzClient(e, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := from; i < to; i++ {
		rs = append(rs, franzRecord(topic, i))
	}
	return cl.ProduceSync(ctx, rs...).FirstErr()
}

func franzCreate(ctx context.Context, e *env) error {
	adm, done, err := franzAdminClient(e)
	if err != nil {
		return err
	}
	defer done()
	topic := e.prefix + "-create"
	if err := franzCreateTopic(ctx, adm, topic, 3, nil); err != nil {
		return err
	}
	return eventually(ctx, "describe "+topic, func(ctx context.Context) error {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		d := td[topic]
		if d.Err != nil {
			return d.Err
		}
		if len(d.Partitions) != 3 {
			return fmt.Errorf("%d partitions, want 3", len(d.Partitions))
		}
		return nil
	})
}

func franzCodec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

func franzProduce(ctx context.Context, e *env) error {
	adm, done, err := franzAdminClient(e)
	if err != nil {
		return err
	}
	defer done()
	var errs []error
	for _, codec := range codecs {
		topic := e.prefix + "-produce-" + codec
		err := func() error {
			if err := franzCreateTopic(ctx, adm, topic, 3, nil); err != nil {
				return err
			}
			if err := franzProduceRange(ctx, e, topic, 0, 1000, kgo.ProducerBatchCompression(franzCodec(codec))); err != nil {
				return fmt.Errorf("produce: %w", err)
			}
			return franzReadBack(ctx, e, topic, 1000)
		}()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", codec, err))
		}
	}
	return errors.Join(errs...)
}

func franzReadBack(ctx context.Context, e *env, topic string, n int) error {
	cl, err := franzClient(e, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {
		0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart(),
	}}))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	c := newReadCheck(n)
	for !c.done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return c.err()
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return ferr
		}
		for _, r := range fs.Records() {
			if err := c.add(r.Partition, r.Offset, r.Key, r.Value, franzHeaders(r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// franzMember is one group member; assigned counts its partitions.
type franzMember struct {
	cl       *kgo.Client
	mu       sync.Mutex
	assigned int
}

func newFranzMember(e *env, group, topic string, opts ...kgo.Opt) (*franzMember, error) {
	m := &franzMember{}
	cl, err := franzClient(e, append([]kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			m.assigned += len(a[topic])
			m.mu.Unlock()
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			_ = cl.CommitUncommittedOffsets(ctx)
			m.mu.Lock()
			m.assigned -= len(r[topic])
			m.mu.Unlock()
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			m.mu.Lock()
			m.assigned -= len(l[topic])
			m.mu.Unlock()
		})}, opts...)...)
	m.cl = cl
	return m, err
}

func (m *franzMember) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.assigned
}

// poll reads what is there within d and commits it.
func (m *franzMember) poll(ctx context.Context, d time.Duration, f func(*kgo.Record) error) error {
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	fs := m.cl.PollFetches(pctx)
	var ferr error
	fs.EachError(func(_ string, _ int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			ferr = err
		}
	})
	if ferr != nil {
		return ferr
	}
	for _, r := range fs.Records() {
		if err := f(r); err != nil {
			return err
		}
	}
	if fs.NumRecords() > 0 {
		return m.cl.CommitUncommittedOffsets(ctx)
	}
	return nil
}

func franzGroup(ctx context.Context, e *env) error { return franzGroupWith(ctx, e, "group") }

// franzGroupWith is the group scenario under the name scenario, its
// members built with opts (group848: KIP-848's ServerSideBalancer).
func franzGroupWith(ctx context.Context, e *env, scenario string, opts ...kgo.Opt) error {
	topic, group := e.prefix+"-"+scenario, e.prefix+"-"+scenario+"-g"
	adm, done, err := franzAdminClient(e)
	if err != nil {
		return err
	}
	defer done()
	if err := franzCreateTopic(ctx, adm, topic, 3, nil); err != nil {
		return err
	}
	if err := franzProduceRange(ctx, e, topic, 0, 300); err != nil {
		return err
	}
	seen := map[int]bool{}
	collect := func(r *kgo.Record) error {
		i, err := checkRecord(fmt.Sprintf("partition %d offset %d", r.Partition, r.Offset), r.Key, r.Value, franzHeaders(r))
		seen[i] = true
		return err
	}
	var ms []*franzMember
	defer func() {
		for _, m := range ms {
			m.cl.Close()
		}
	}()
	for range 2 {
		m, err := newFranzMember(e, group, topic, opts...)
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}
	deadline := time.Now().Add(waitFor)
	for !(len(seen) == 300 && ms[0].count() > 0 && ms[1].count() > 0 && ms[0].count()+ms[1].count() == 3) {
		if time.Now().After(deadline) {
			return fmt.Errorf("two members: read %d of 300 records, assigned %d and %d partitions", len(seen), ms[0].count(), ms[1].count())
		}
		for _, m := range ms {
			if err := m.poll(ctx, 100*time.Millisecond, collect); err != nil {
				return err
			}
		}
	}
	for _, m := range ms {
		if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		m.cl.LeaveGroup()
		m.cl.Close()
	}
	ms = nil
	if err := franzProduceRange(ctx, e, topic, 300, 400); err != nil {
		return err
	}
	m, err := newFranzMember(e, group, topic)
	if err != nil {
		return err
	}
	ms = append(ms, m)
	again := map[int]bool{}
	deadline = time.Now().Add(waitFor)
	for len(again) < 100 {
		if time.Now().After(deadline) {
			return fmt.Errorf("new member: read %d of the 100 new records", len(again))
		}
		err := m.poll(ctx, 200*time.Millisecond, func(r *kgo.Record) error {
			i, err := checkRecord(fmt.Sprintf("partition %d offset %d", r.Partition, r.Offset), r.Key, r.Value, franzHeaders(r))
			if err != nil {
				return err
			}
			if i < 300 {
				return fmt.Errorf("new member read committed record %d again (partition %d offset %d)", i, r.Partition, r.Offset)
			}
			again[i] = true
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func franzAdmin(ctx context.Context, e *env) error {
	topic, group := e.prefix+"-admin", e.prefix+"-admin-g"
	adm, done, err := franzAdminClient(e)
	if err != nil {
		return err
	}
	defer done()
	if err := franzCreateTopic(ctx, adm, topic, 3, nil); err != nil {
		return err
	}
	base := time.Now().Truncate(time.Second).Add(-time.Hour)
	if err := franzTimestamped(ctx, e, topic, base); err != nil {
		return err
	}
	// A partition of a topic just made may answer NOT_LEADER_OR_FOLLOWER
	// for a moment on Kafka; retriable errors are asked again.
	var s0, e0, t0, e1 kadm.ListedOffset
	if err := eventually(ctx, "list offsets", func(ctx context.Context) error {
		start, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return err
		}
		end, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		byTime, err := adm.ListOffsetsAfterMilli(ctx, base.Add(10500*time.Millisecond).UnixMilli(), topic)
		if err != nil {
			return err
		}
		s0, _ = start.Lookup(topic, 0)
		e0, _ = end.Lookup(topic, 0)
		t0, _ = byTime.Lookup(topic, 0)
		e1, _ = end.Lookup(topic, 1)
		return errors.Join(s0.Err, e0.Err, t0.Err, e1.Err)
	}); err != nil {
		return err
	}
	if s0.Offset != 0 || e0.Offset != 30 || t0.Offset != 11 || e1.Offset != 0 {
		return fmt.Errorf("list offsets: earliest %d latest %d by time %d empty partition latest %d, want 0 30 11 0",
			s0.Offset, e0.Offset, t0.Offset, e1.Offset)
	}

	m, err := newFranzMember(e, group, topic)
	if err != nil {
		return err
	}
	defer m.cl.Close()
	n := 0
	deadline := time.Now().Add(waitFor)
	for n < 30 {
		if time.Now().After(deadline) {
			return fmt.Errorf("group member read %d of 30 records", n)
		}
		if err := m.poll(ctx, 200*time.Millisecond, func(*kgo.Record) error { n++; return nil }); err != nil {
			return err
		}
	}
	dg, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return err
	}
	g := dg[group]
	if g.Err != nil || len(g.Members) != 1 {
		return fmt.Errorf("describe group: %d members (%v), want 1", len(g.Members), g.Err)
	}
	if ca, ok := g.Members[0].Assigned.AsConsumer(); !ok || len(ca.Topics) != 1 || len(ca.Topics[0].Partitions) != 3 {
		return fmt.Errorf("describe group: member assignment %+v, want 3 partitions of %s", g.Members[0].Assigned, topic)
	}
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return err
	}
	if o, ok := offs.Lookup(topic, 0); !ok || o.At != 30 || o.Err != nil {
		return fmt.Errorf("group offsets: partition 0 at %d (%v), want 30", o.At, o.Err)
	}
	m.cl.Close()

	rc, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return err
	}
	cfg, err := rc.On(topic, nil)
	if err != nil {
		return err
	}
	if v := franzConfig(cfg, "cleanup.policy"); v != "delete" {
		return fmt.Errorf("describe configs: cleanup.policy %q", v)
	}
	if v := franzConfig(cfg, "retention.ms"); v != "604800000" {
		return fmt.Errorf("describe configs: retention.ms %q", v)
	}
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("3600000")}}, topic)
	if err != nil {
		return err
	}
	if _, err := ar.On(topic, nil); err != nil {
		return fmt.Errorf("alter retention.ms: %w", err)
	}
	if err := eventually(ctx, "retention.ms altered", func(ctx context.Context) error {
		rc, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return err
		}
		cfg, err := rc.On(topic, nil)
		if err != nil {
			return err
		}
		for _, c := range cfg.Configs {
			if c.Key == "retention.ms" {
				if c.MaybeValue() != "3600000" || c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
					return fmt.Errorf("retention.ms %q from %s", c.MaybeValue(), c.Source)
				}
				return nil
			}
		}
		return errors.New("no retention.ms")
	}); err != nil {
		return err
	}
	dr, err := adm.DeleteTopic(ctx, topic)
	if err != nil {
		return err
	}
	if dr.Err != nil {
		return fmt.Errorf("delete: %w", dr.Err)
	}
	return eventually(ctx, "topic deleted", func(ctx context.Context) error {
		ts, err := adm.ListTopics(ctx)
		if err != nil {
			return err
		}
		if ts.Has(topic) {
			return errors.New("still listed")
		}
		return nil
	})
}

func franzConfig(rc kadm.ResourceConfig, name string) string {
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue()
		}
	}
	return ""
}

func franzErrors(ctx context.Context, e *env) error {
	missing, big := e.prefix+"-errors-missing", e.prefix+"-errors-big"
	{
		cl, err := franzClient(e)
		if err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = cl.ProduceSync(pctx, franzRecord(missing, 0)).FirstErr()
		cancel()
		cl.Close()
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("produce to a missing topic: got %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
		}
	}
	adm, done, err := franzAdminClient(e)
	if err != nil {
		return err
	}
	defer done()
	ts, err := adm.ListTopics(ctx)
	if err != nil {
		return err
	}
	if ts.Has(missing) {
		return fmt.Errorf("a produce created %s with auto-creation off", missing)
	}
	if err := franzCreateTopic(ctx, adm, big, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("2048")}); err != nil {
		return err
	}
	cl, err := franzClient(e)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: big, Value: make([]byte, 100)}).FirstErr(); err != nil {
		return fmt.Errorf("a 100-byte record: %w", err)
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: big, Value: incompressible(4096)}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		return fmt.Errorf("produce 4096 bytes to a topic with max.message.bytes=2048: got %v, want MESSAGE_TOO_LARGE", err)
	}
	return nil
}
