package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// segmentio/kafka-go: Client for admin requests, Writer and Reader for data.
func kafkaGoScenarios() goScenarios {
	sc := goScenarios{
		"create":  kgoCreate,
		"produce": kgoProduce,
		"group":   kgoGroup,
		"admin":   kgoAdmin,
		"errors":  kgoErrors,
	}
	addSecure(sc, kafkaGoSecure)
	for name, f := range sc {
		sc[name] = func(ctx context.Context, e *env) error {
			// The Clients and Writers share kafka-go's DefaultTransport,
			// whose pooled connections (a goroutine each, and one that
			// watches the metadata) outlive them until closed.
			defer kafka.DefaultTransport.(*kafka.Transport).CloseIdleConnections()
			return f(ctx, e)
		}
	}
	return sc
}

func kgoClient(e *env) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(e.bootstrap), Timeout: 30 * time.Second}
}

func kgoCreateTopic(ctx context.Context, e *env, topic string, partitions int, configs map[string]string) error {
	tc := kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}
	for k, v := range configs {
		tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	resp, err := kgoClient(e).CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	return eventually(ctx, "leaders of "+topic, func(ctx context.Context) error {
		md, err := kgoClient(e).Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		if err != nil {
			return err
		}
		if len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != partitions {
			return fmt.Errorf("metadata %+v", md.Topics)
		}
		for _, p := range md.Topics[0].Partitions {
			if p.Error != nil || p.Leader.ID < 0 {
				return fmt.Errorf("partition %d: leader %d (%v)", p.ID, p.Leader.ID, p.Error)
			}
		}
		return nil
	})
}

func kgoMessage(i int) kafka.Message {
	m := kafka.Message{Key: recKey(i), Value: recValue(i)}
	for _, h := range recHeaders(i) {
		m.Headers = append(m.Headers, kafka.Header{Key: h.key, Value: h.value})
	}
	return m
}

func kgoHeaders(m kafka.Message) []header {
	var hs []header
	for _, h := range m.Headers {
		hs = append(hs, header{h.Key, h.Value})
	}
	return hs
}

func kgoWriter(e *env, topic string, codec compress.Compression) *kafka.Writer {
	return &kafka.Writer{
		Addr:         kafka.TCP(e.bootstrap),
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		Compression:  codec,
		BatchTimeout: 5 * time.Millisecond,
	}
}

func kgoProduceRange(ctx context.Context, e *env, topic string, from, to int, codec compress.Compression) error {
	w := kgoWriter(e, topic, codec)
	defer w.Close()
	var ms []kafka.Message
	for i := from; i < to; i++ {
		ms = append(ms, kgoMessage(i))
	}
	return w.WriteMessages(ctx, ms...)
}

func kgoCreate(ctx context.Context, e *env) error {
	topic := e.prefix + "-create"
	if err := kgoCreateTopic(ctx, e, topic, 3, nil); err != nil {
		return err
	}
	return eventually(ctx, "describe "+topic, func(ctx context.Context) error {
		md, err := kgoClient(e).Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		if err != nil {
			return err
		}
		if len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != 3 {
			return fmt.Errorf("metadata %+v, want 3 partitions", md.Topics)
		}
		return nil
	})
}

var kgoCodecs = map[string]compress.Compression{
	"none": 0, "gzip": kafka.Gzip, "snappy": kafka.Snappy, "lz4": kafka.Lz4, "zstd": kafka.Zstd,
}

func kgoProduce(ctx context.Context, e *env) error {
	var errs []error
	for _, codec := range codecs {
		topic := e.prefix + "-produce-" + codec
		err := func() error {
			if err := kgoCreateTopic(ctx, e, topic, 3, nil); err != nil {
				return err
			}
			if err := kgoProduceRange(ctx, e, topic, 0, 1000, kgoCodecs[codec]); err != nil {
				return fmt.Errorf("produce: %w", err)
			}
			return kgoReadBack(ctx, e, topic, 1000)
		}()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", codec, err))
		}
	}
	return errors.Join(errs...)
}

// kgoReadBack reads each partition from its start to its end offset.
func kgoReadBack(ctx context.Context, e *env, topic string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	lo, err := kgoClient(e).ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		topic: {kafka.LastOffsetOf(0), kafka.LastOffsetOf(1), kafka.LastOffsetOf(2)},
	}})
	if err != nil {
		return err
	}
	rc := newReadCheck(n)
	for _, po := range lo.Topics[topic] {
		if po.Error != nil {
			return po.Error
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{e.bootstrap}, Topic: topic, Partition: po.Partition, MaxWait: 200 * time.Millisecond})
		err := func() error {
			defer r.Close()
			if err := r.SetOffset(kafka.FirstOffset); err != nil {
				return err
			}
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					return fmt.Errorf("partition %d: %w (%v)", po.Partition, err, rc.err())
				}
				if err := rc.add(int32(m.Partition), m.Offset, m.Key, m.Value, kgoHeaders(m)); err != nil {
					return err
				}
				if m.Offset+1 >= po.LastOffset {
					return nil
				}
			}
		}()
		if err != nil {
			return err
		}
	}
	if !rc.done() {
		return rc.err()
	}
	return nil
}

// kgoMember is a group Reader consuming in its own goroutine, committing
// each message after handling it.
type kgoMember struct {
	r    *kafka.Reader
	done chan struct{}
	mu   sync.Mutex
	err  error
}

func startKgoMember(ctx context.Context, e *env, group, topic string, f func(kafka.Message) error) *kgoMember {
	return startKgoMemberWith(ctx, kafka.ReaderConfig{
		Brokers:     []string{e.bootstrap},
		GroupID:     group,
		Topic:       topic,
		MaxWait:     200 * time.Millisecond,
		StartOffset: kafka.FirstOffset,
	}, f)
}

// startKgoMemberWith starts a member reading with cfg, committing each
// message synchronously.
func startKgoMemberWith(ctx context.Context, cfg kafka.ReaderConfig, f func(kafka.Message) error) *kgoMember {
	cfg.CommitInterval = 0 // synchronous commits
	m := &kgoMember{done: make(chan struct{}), r: kafka.NewReader(cfg)}
	go func() {
		defer close(m.done)
		for {
			msg, err := m.r.FetchMessage(ctx)
			if err == nil {
				if err = f(msg); err == nil {
					err = m.r.CommitMessages(ctx, msg)
				}
			}
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, io.EOF) {
					m.mu.Lock()
					m.err = err
					m.mu.Unlock()
				}
				return
			}
		}
	}()
	return m
}

func (m *kgoMember) failure() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

func (m *kgoMember) close() error {
	err := m.r.Close()
	<-m.done
	return err
}

// kgoAssigned returns the number of partitions each member of group holds.
func kgoAssigned(ctx context.Context, e *env, group string) ([]int, error) {
	resp, err := kgoClient(e).DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return nil, err
	}
	if len(resp.Groups) != 1 || resp.Groups[0].Error != nil {
		return nil, fmt.Errorf("describe group: %+v", resp.Groups)
	}
	var out []int
	for _, m := range resp.Groups[0].Members {
		n := 0
		for _, t := range m.MemberAssignments.Topics {
			n += len(t.Partitions)
		}
		out = append(out, n)
	}
	return out, nil
}

func kgoGroup(ctx context.Context, e *env) error {
	topic, group := e.prefix+"-group", e.prefix+"-group-g"
	if err := kgoCreateTopic(ctx, e, topic, 3, nil); err != nil {
		return err
	}
	if err := kgoProduceRange(ctx, e, topic, 0, 300, 0); err != nil {
		return err
	}
	var mu sync.Mutex
	seen := map[int]bool{}
	collect := func(m kafka.Message) error {
		i, err := checkRecord(fmt.Sprintf("partition %d offset %d", m.Partition, m.Offset), m.Key, m.Value, kgoHeaders(m))
		mu.Lock()
		seen[i] = true
		mu.Unlock()
		return err
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ms := []*kgoMember{startKgoMember(gctx, e, group, topic, collect), startKgoMember(gctx, e, group, topic, collect)}
	defer func() {
		for _, m := range ms {
			m.close()
		}
	}()
	if err := eventually(ctx, "two members", func(ctx context.Context) error {
		if err := errors.Join(ms[0].failure(), ms[1].failure()); err != nil {
			return err
		}
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		a, err := kgoAssigned(ctx, e, group)
		if err != nil {
			return err
		}
		if n != 300 || len(a) != 2 || a[0] == 0 || a[1] == 0 || a[0]+a[1] != 3 {
			return fmt.Errorf("read %d of 300 records, members holding %v partitions", n, a)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, m := range ms {
		if err := m.close(); err != nil {
			return fmt.Errorf("close member: %w", err)
		}
	}
	ms = nil
	if err := kgoProduceRange(ctx, e, topic, 300, 400, 0); err != nil {
		return err
	}
	again := map[int]bool{}
	m := startKgoMember(gctx, e, group, topic, func(m kafka.Message) error {
		i, err := checkRecord(fmt.Sprintf("partition %d offset %d", m.Partition, m.Offset), m.Key, m.Value, kgoHeaders(m))
		if err != nil {
			return err
		}
		if i < 300 {
			return fmt.Errorf("new member read committed record %d again (partition %d offset %d)", i, m.Partition, m.Offset)
		}
		mu.Lock()
		again[i] = true
		mu.Unlock()
		return nil
	})
	ms = append(ms, m)
	return eventually(ctx, "new member", func(context.Context) error {
		if err := m.failure(); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if len(again) != 100 {
			return fmt.Errorf("read %d of the 100 new records", len(again))
		}
		return nil
	})
}

func kgoAdmin(ctx context.Context, e *env) error {
	topic, group := e.prefix+"-admin", e.prefix+"-admin-g"
	if err := kgoCreateTopic(ctx, e, topic, 3, nil); err != nil {
		return err
	}
	base := time.Now().Truncate(time.Second).Add(-time.Hour)
	{
		w := kgoWriter(e, topic, 0)
		w.Balancer = kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })
		var ms []kafka.Message
		for i := range 30 {
			ms = append(ms, kafka.Message{Key: recKey(i), Value: recValue(i), Time: base.Add(time.Duration(i) * time.Second)})
		}
		err := w.WriteMessages(ctx, ms...)
		w.Close()
		if err != nil {
			return err
		}
	}
	cl := kgoClient(e)
	at := base.Add(10500 * time.Millisecond)
	// A partition of a topic just made may answer NOT_LEADER_OR_FOLLOWER
	// for a moment on Kafka; errors are asked again.
	var p0, p1 kafka.PartitionOffsets
	if err := eventually(ctx, "list offsets", func(ctx context.Context) error {
		lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
			topic: {kafka.FirstOffsetOf(0), kafka.LastOffsetOf(0), kafka.TimeOffsetOf(0, at), kafka.LastOffsetOf(1)},
		}})
		if err != nil {
			return err
		}
		for _, po := range lo.Topics[topic] {
			switch po.Partition {
			case 0:
				p0 = po
			case 1:
				p1 = po
			}
		}
		return errors.Join(p0.Error, p1.Error)
	}); err != nil {
		return err
	}
	_, byTime := p0.Offsets[11]
	if p0.FirstOffset != 0 || p0.LastOffset != 30 || !byTime || p1.LastOffset != 0 {
		return fmt.Errorf("list offsets: partition 0 %+v, partition 1 %+v; want earliest 0, latest 30, offset 11 by time, latest 0", p0, p1)
	}

	var mu sync.Mutex
	n := 0
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := startKgoMember(gctx, e, group, topic, func(kafka.Message) error { mu.Lock(); n++; mu.Unlock(); return nil })
	defer m.close()
	if err := eventually(ctx, "group member", func(ctx context.Context) error {
		if err := m.failure(); err != nil {
			return err
		}
		mu.Lock()
		got := n
		mu.Unlock()
		if got < 30 {
			return fmt.Errorf("read %d of 30 records", got)
		}
		a, err := kgoAssigned(ctx, e, group)
		if err != nil {
			return err
		}
		if len(a) != 1 || a[0] != 3 {
			return fmt.Errorf("describe group: members holding %v partitions, want one member with 3", a)
		}
		of, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0, 1, 2}}})
		if err != nil {
			return err
		}
		for _, p := range of.Topics[topic] {
			if p.Partition == 0 && p.CommittedOffset == 30 && p.Error == nil {
				return nil
			}
		}
		return fmt.Errorf("group offsets %+v, want partition 0 at 30", of.Topics[topic])
	}); err != nil {
		return err
	}
	if err := m.close(); err != nil {
		return err
	}

	describe := func(ctx context.Context) (map[string]kafka.DescribeConfigResponseConfigEntry, error) {
		dc, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
			{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic},
		}})
		if err != nil {
			return nil, err
		}
		if len(dc.Resources) != 1 || dc.Resources[0].Error != nil {
			return nil, fmt.Errorf("describe configs: %+v", dc.Resources)
		}
		out := map[string]kafka.DescribeConfigResponseConfigEntry{}
		for _, c := range dc.Resources[0].ConfigEntries {
			out[c.ConfigName] = c
		}
		return out, nil
	}
	cfg, err := describe(ctx)
	if err != nil {
		return err
	}
	if cfg["cleanup.policy"].ConfigValue != "delete" || cfg["retention.ms"].ConfigValue != "604800000" {
		return fmt.Errorf("describe configs: cleanup.policy %q, retention.ms %q", cfg["cleanup.policy"].ConfigValue, cfg["retention.ms"].ConfigValue)
	}
	ar, err := cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "retention.ms", Value: "3600000", ConfigOperation: kafka.ConfigOperationSet}},
	}}})
	if err == nil && len(ar.Resources) == 1 {
		err = ar.Resources[0].Error
	}
	if err != nil {
		return fmt.Errorf("alter retention.ms: %w", err)
	}
	if err := eventually(ctx, "retention.ms altered", func(ctx context.Context) error {
		cfg, err := describe(ctx)
		if err != nil {
			return err
		}
		if c := cfg["retention.ms"]; c.ConfigValue != "3600000" || c.ConfigSource != 1 { // DYNAMIC_TOPIC_CONFIG
			return fmt.Errorf("retention.ms %q from source %d", c.ConfigValue, c.ConfigSource)
		}
		return nil
	}); err != nil {
		return err
	}
	dr, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err == nil {
		err = dr.Errors[topic]
	}
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return eventually(ctx, "topic deleted", func(ctx context.Context) error {
		md, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
		if err != nil {
			return err
		}
		for _, t := range md.Topics {
			if t.Name == topic {
				return errors.New("still listed")
			}
		}
		return nil
	})
}

func kgoErrors(ctx context.Context, e *env) error {
	missing, big := e.prefix+"-errors-missing", e.prefix+"-errors-big"
	w := kgoWriter(e, missing, 0)
	w.MaxAttempts = 3
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := w.WriteMessages(wctx, kafka.Message{Value: incompressible(16)})
	cancel()
	w.Close()
	if !kgoIs(err, kafka.UnknownTopicOrPartition) {
		return fmt.Errorf("produce to a missing topic: got %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if err := e.noTopic(ctx, missing); err != nil {
		return err
	}
	if err := kgoCreateTopic(ctx, e, big, 1, map[string]string{"max.message.bytes": "2048"}); err != nil {
		return err
	}
	w = kgoWriter(e, big, 0)
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: make([]byte, 100)}); err != nil {
		return fmt.Errorf("a 100-byte record: %w", err)
	}
	err = w.WriteMessages(ctx, kafka.Message{Value: incompressible(4096)})
	if !kgoIs(err, kafka.MessageSizeTooLarge) {
		return fmt.Errorf("produce 4096 bytes to a topic with max.message.bytes=2048: got %v, want MESSAGE_TOO_LARGE", err)
	}
	return nil
}

// kgoIs is errors.Is that also looks into the Writer's per-message errors.
func kgoIs(err error, target kafka.Error) bool {
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		for _, e := range we {
			if errors.Is(e, target) {
				return true
			}
		}
		return false
	}
	return errors.Is(err, target)
}
