package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// sarama with its default configuration (protocol version 2.8), idempotent
// where order matters.
func saramaScenarios() goScenarios {
	return addSecure(goScenarios{
		"create":  saramaCreate,
		"produce": saramaProduce,
		"group":   saramaGroup,
		"admin":   saramaAdmin,
		"errors":  saramaErrors,
		"txn":     saramaTxn,
	}, saramaSecure)
}

func saramaConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "samsa-compat"
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false
	c.Metadata.AllowAutoTopicCreation = false
	return c
}

func saramaAdminClient(e *env) (sarama.ClusterAdmin, error) {
	return sarama.NewClusterAdmin([]string{e.bootstrap}, saramaConfig())
}

func saramaCreateTopic(adm sarama.ClusterAdmin, topic string, partitions int32, configs map[string]*string) error {
	err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: configs}, false)
	if err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	return eventually(context.Background(), "leaders of "+topic, func(context.Context) error {
		md, err := adm.DescribeTopics([]string{topic})
		if err != nil {
			return err
		}
		if len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != int(partitions) {
			return fmt.Errorf("metadata %+v", md)
		}
		for _, p := range md[0].Partitions {
			if p.Err != sarama.ErrNoError || p.Leader < 0 {
				return fmt.Errorf("partition %d: leader %d (%v)", p.ID, p.Leader, p.Err)
			}
		}
		return nil
	})
}

func saramaMessage(topic string, i int) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{Topic: topic, Key: sarama.ByteEncoder(recKey(i)), Value: sarama.ByteEncoder(recValue(i))}
	for _, h := range recHeaders(i) {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.key), Value: h.value})
	}
	return m
}

func saramaHeaders(m *sarama.ConsumerMessage) []header {
	var hs []header
	for _, h := range m.Headers {
		hs = append(hs, header{string(h.Key), h.Value})
	}
	return hs
}

func saramaProduceRange(e *env, topic string, from, to int, codec sarama.CompressionCodec) error {
	c := saramaConfig()
	c.Producer.Compression = codec
	// Order within a partition across retries needs the idempotent producer.
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer([]string{e.bootstrap}, c)
	if err != nil {
		return err
	}
	defer p.Close()
	var ms []*sarama.ProducerMessage
	for i := from; i < to; i++ {
		ms = append(ms, saramaMessage(topic, i))
	}
	return p.SendMessages(ms)
}

func saramaCreate(ctx context.Context, e *env) error {
	adm, err := saramaAdminClient(e)
	if err != nil {
		return err
	}
	defer adm.Close()
	topic := e.prefix + "-create"
	if err := saramaCreateTopic(adm, topic, 3, nil); err != nil {
		return err
	}
	return eventually(ctx, "describe "+topic, func(context.Context) error {
		md, err := adm.DescribeTopics([]string{topic})
		if err != nil {
			return err
		}
		if len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != 3 {
			return fmt.Errorf("metadata %+v, want 3 partitions", md)
		}
		return nil
	})
}

var saramaCodecs = map[string]sarama.CompressionCodec{
	"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
	"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
}

func saramaProduce(ctx context.Context, e *env) error {
	adm, err := saramaAdminClient(e)
	if err != nil {
		return err
	}
	defer adm.Close()
	var errs []error
	for _, codec := range codecs {
		topic := e.prefix + "-produce-" + codec
		err := func() error {
			if err := saramaCreateTopic(adm, topic, 3, nil); err != nil {
				return err
			}
			if err := saramaProduceRange(e, topic, 0, 1000, saramaCodecs[codec]); err != nil {
				return fmt.Errorf("produce: %w", err)
			}
			return saramaReadBack(ctx, e, topic, 1000, saramaConfig())
		}()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", codec, err))
		}
	}
	return errors.Join(errs...)
}

func saramaReadBack(ctx context.Context, e *env, topic string, n int, cfg *sarama.Config) error {
	c, err := sarama.NewConsumer([]string{e.bootstrap}, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	msgs := make(chan *sarama.ConsumerMessage)
	errc := make(chan error, 3)
	ctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	for p := range int32(3) {
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return err
		}
		defer pc.Close()
		go func() {
			for {
				select {
				case m, ok := <-pc.Messages():
					if !ok {
						return
					}
					select {
					case msgs <- m:
					case <-ctx.Done():
						return
					}
				case err, ok := <-pc.Errors():
					if ok {
						errc <- err
					}
					return
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	rc := newReadCheck(n)
	for !rc.done() {
		select {
		case m := <-msgs:
			if err := rc.add(m.Partition, m.Offset, m.Key, m.Value, saramaHeaders(m)); err != nil {
				return err
			}
		case err := <-errc:
			return err
		case <-ctx.Done():
			return rc.err()
		}
	}
	return nil
}

// saramaMember is one member of a consumer group, consuming in its own
// goroutine and marking each record it has processed (committed by sarama's
// auto-commit, and on Close).
type saramaMember struct {
	cg       sarama.ConsumerGroup
	mu       sync.Mutex
	assigned int
	err      error
	done     chan struct{}
	onRecord func(*sarama.ConsumerMessage) error
}

func (m *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.assigned = 0
	for _, ps := range s.Claims() {
		m.assigned += len(ps)
	}
	return nil
}

func (m *saramaMember) Cleanup(sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	m.assigned = 0
	m.mu.Unlock()
	return nil
}

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		m.mu.Lock()
		err := m.onRecord(msg)
		if err != nil && m.err == nil {
			m.err = err
		}
		m.mu.Unlock()
		if err != nil {
			return err
		}
		s.MarkMessage(msg, "")
	}
	return nil
}

func (m *saramaMember) state() (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.assigned, m.err
}

func startSaramaMember(ctx context.Context, e *env, group, topic string, onRecord func(*sarama.ConsumerMessage) error) (*saramaMember, error) {
	c := saramaConfig()
	c.Consumer.Offsets.AutoCommit.Enable = true // marked offsets, every second and on Close
	return startSaramaMemberWith(ctx, []string{e.bootstrap}, c, group, topic, onRecord)
}

// startSaramaMemberWith starts a member with the configuration given.
func startSaramaMemberWith(ctx context.Context, addrs []string, c *sarama.Config, group, topic string, onRecord func(*sarama.ConsumerMessage) error) (*saramaMember, error) {
	cg, err := sarama.NewConsumerGroup(addrs, group, c)
	if err != nil {
		return nil, err
	}
	m := &saramaMember{cg: cg, done: make(chan struct{}), onRecord: onRecord}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, m); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				m.mu.Lock()
				if m.err == nil {
					m.err = err
				}
				m.mu.Unlock()
				return
			}
		}
	}()
	go func() {
		for err := range cg.Errors() {
			m.mu.Lock()
			if m.err == nil {
				m.err = err
			}
			m.mu.Unlock()
		}
	}()
	return m, nil
}

func (m *saramaMember) close() error {
	err := m.cg.Close()
	<-m.done
	return err
}

func saramaGroup(ctx context.Context, e *env) error {
	topic, group := e.prefix+"-group", e.prefix+"-group-g"
	adm, err := saramaAdminClient(e)
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := saramaCreateTopic(adm, topic, 3, nil); err != nil {
		return err
	}
	if err := saramaProduceRange(e, topic, 0, 300, sarama.CompressionNone); err != nil {
		return err
	}
	var mu sync.Mutex
	seen := map[int]bool{}
	next := map[int32]int64{} // partition → next offset read
	collect := func(m *sarama.ConsumerMessage) error {
		i, err := checkRecord(fmt.Sprintf("partition %d offset %d", m.Partition, m.Offset), m.Key, m.Value, saramaHeaders(m))
		mu.Lock()
		seen[i] = true
		next[m.Partition] = max(next[m.Partition], m.Offset+1)
		mu.Unlock()
		return err
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ms []*saramaMember
	for range 2 {
		m, err := startSaramaMember(gctx, e, group, topic, collect)
		if err != nil {
			return err
		}
		defer m.close()
		ms = append(ms, m)
	}
	deadline := time.Now().Add(waitFor)
	for {
		a0, err0 := ms[0].state()
		a1, err1 := ms[1].state()
		if err := errors.Join(err0, err1); err != nil {
			return err
		}
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 300 && a0 > 0 && a1 > 0 && a0+a1 == 3 {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("two members: read %d of 300 records (up to offsets %v), assigned %d and %d partitions", n, next, a0, a1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, m := range ms {
		if err := m.close(); err != nil {
			return fmt.Errorf("close member: %w", err)
		}
	}
	if err := saramaProduceRange(e, topic, 300, 400, sarama.CompressionNone); err != nil {
		return err
	}
	again := map[int]bool{}
	m, err := startSaramaMember(gctx, e, group, topic, func(m *sarama.ConsumerMessage) error {
		i, err := checkRecord(fmt.Sprintf("partition %d offset %d", m.Partition, m.Offset), m.Key, m.Value, saramaHeaders(m))
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
	if err != nil {
		return err
	}
	defer m.close()
	return eventually(ctx, "new member", func(context.Context) error {
		if _, err := m.state(); err != nil {
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

func saramaAdmin(ctx context.Context, e *env) error {
	topic, group := e.prefix+"-admin", e.prefix+"-admin-g"
	adm, err := saramaAdminClient(e)
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := saramaCreateTopic(adm, topic, 3, nil); err != nil {
		return err
	}
	base := time.Now().Truncate(time.Second).Add(-time.Hour)
	{
		c := saramaConfig()
		c.Producer.Partitioner = sarama.NewManualPartitioner
		p, err := sarama.NewSyncProducer([]string{e.bootstrap}, c)
		if err != nil {
			return err
		}
		for i := range 30 {
			m := &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.ByteEncoder(recKey(i)), Value: sarama.ByteEncoder(recValue(i)),
				Timestamp: base.Add(time.Duration(i) * time.Second)}
			if _, _, err := p.SendMessage(m); err != nil {
				p.Close()
				return err
			}
		}
		p.Close()
	}
	cl, err := sarama.NewClient([]string{e.bootstrap}, saramaConfig())
	if err != nil {
		return err
	}
	defer cl.Close()
	// A partition of a topic just made may answer NOT_LEADER_OR_FOLLOWER
	// for a moment on Kafka; errors are asked again.
	var got [4]int64
	if err := eventually(ctx, "list offsets", func(context.Context) error {
		var errs []error
		for k, q := range []struct {
			p  int32
			at int64
		}{{0, sarama.OffsetOldest}, {0, sarama.OffsetNewest}, {0, base.Add(10500 * time.Millisecond).UnixMilli()}, {1, sarama.OffsetNewest}} {
			var err error
			got[k], err = cl.GetOffset(topic, q.p, q.at)
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}); err != nil {
		return err
	}
	if got != [4]int64{0, 30, 11, 0} {
		return fmt.Errorf("list offsets: earliest, latest, by time, empty partition latest = %v, want [0 30 11 0]", got)
	}

	n := 0
	var mu sync.Mutex
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m, err := startSaramaMember(gctx, e, group, topic, func(*sarama.ConsumerMessage) error { mu.Lock(); n++; mu.Unlock(); return nil })
	if err != nil {
		return err
	}
	defer m.close()
	if err := eventually(ctx, "group member", func(context.Context) error {
		if _, err := m.state(); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if n < 30 {
			return fmt.Errorf("read %d of 30 records", n)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := eventually(ctx, "describe group", func(context.Context) error {
		gs, err := adm.DescribeConsumerGroups([]string{group})
		if err != nil {
			return err
		}
		if len(gs) != 1 || gs[0].Err != sarama.ErrNoError || len(gs[0].Members) != 1 {
			return fmt.Errorf("%+v, want one member", gs)
		}
		for _, mem := range gs[0].Members {
			a, err := mem.GetMemberAssignment()
			if err != nil {
				return err
			}
			if len(a.Topics[topic]) != 3 {
				return fmt.Errorf("member assignment %v, want 3 partitions of %s", a.Topics, topic)
			}
		}
		offs, err := adm.ListConsumerGroupOffsets(group, nil)
		if err != nil {
			return err
		}
		if b := offs.GetBlock(topic, 0); b == nil || b.Offset != 30 {
			return fmt.Errorf("group offsets: partition 0 %+v, want 30", b)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := m.close(); err != nil {
		return err
	}

	res := sarama.ConfigResource{Type: sarama.TopicResource, Name: topic}
	entries, err := saramaDescribeConfigs(adm, res)
	if err != nil {
		return err
	}
	if v := saramaConfigValue(entries, "cleanup.policy"); v != "delete" {
		return fmt.Errorf("describe configs: cleanup.policy %q", v)
	}
	if v := saramaConfigValue(entries, "retention.ms"); v != "604800000" {
		return fmt.Errorf("describe configs: retention.ms %q", v)
	}
	v := "3600000"
	if err := adm.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v},
	}, false); err != nil {
		return fmt.Errorf("alter retention.ms: %w", err)
	}
	if err := eventually(ctx, "retention.ms altered", func(context.Context) error {
		entries, err := saramaDescribeConfigs(adm, res)
		if err != nil {
			return err
		}
		for _, c := range entries {
			if c.Name == "retention.ms" {
				if c.Value != v || c.Source != sarama.SourceTopic {
					return fmt.Errorf("retention.ms %q from %v", c.Value, c.Source)
				}
				return nil
			}
		}
		return errors.New("no retention.ms")
	}); err != nil {
		return err
	}
	if err := adm.DeleteTopic(topic); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return eventually(ctx, "topic deleted", func(context.Context) error {
		ts, err := adm.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := ts[topic]; ok {
			return errors.New("still listed")
		}
		return nil
	})
}

func saramaDescribeConfigs(adm sarama.ClusterAdmin, res sarama.ConfigResource) ([]sarama.ConfigEntry, error) {
	rs, err := adm.DescribeConfigs([]*sarama.ConfigResource{&res}, sarama.DescribeConfigsOptions{})
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("describe configs: %d results", len(rs))
	}
	if rs[0].ErrorCode != sarama.ErrNoError {
		return nil, fmt.Errorf("describe configs: %w %s", rs[0].ErrorCode, rs[0].ErrorMsg)
	}
	return rs[0].Configs, nil
}

func saramaConfigValue(entries []sarama.ConfigEntry, name string) string {
	for _, c := range entries {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func saramaErrors(ctx context.Context, e *env) error {
	missing, big := e.prefix+"-errors-missing", e.prefix+"-errors-big"
	c := saramaConfig()
	c.Producer.Retry.Max = 2
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	p, err := sarama.NewSyncProducer([]string{e.bootstrap}, c)
	if err != nil {
		return err
	}
	defer p.Close()
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: missing, Value: sarama.ByteEncoder(incompressible(16))})
	if !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return fmt.Errorf("produce to a missing topic: got %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	if err := e.noTopic(ctx, missing); err != nil {
		return err
	}
	adm, err := saramaAdminClient(e)
	if err != nil {
		return err
	}
	defer adm.Close()
	v := "2048"
	if err := saramaCreateTopic(adm, big, 1, map[string]*string{"max.message.bytes": &v}); err != nil {
		return err
	}
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: big, Value: sarama.ByteEncoder(make([]byte, 100))}); err != nil {
		return fmt.Errorf("a 100-byte record: %w", err)
	}
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: big, Value: sarama.ByteEncoder(incompressible(4096))})
	if !errors.Is(err, sarama.ErrMessageSizeTooLarge) {
		return fmt.Errorf("produce 4096 bytes to a topic with max.message.bytes=2048: got %v, want MESSAGE_TOO_LARGE", err)
	}
	return nil
}
