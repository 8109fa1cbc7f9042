package compat

// IBM/sarama: SyncProducer and Consumer round trips, at sarama's default
// protocol version and newer ones, plain and compressed.

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// admSaramaConfig is a sarama config whose every network wait is bounded.
func admSaramaConfig(version sarama.KafkaVersion, codec sarama.CompressionCodec) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "samsa-compat-sarama"
	cfg.Net.DialTimeout = 10 * time.Second
	cfg.Net.ReadTimeout = 15 * time.Second
	cfg.Net.WriteTimeout = 10 * time.Second
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Timeout = 10 * time.Second
	cfg.Producer.Compression = codec
	cfg.Producer.Retry.Max = 3
	cfg.Producer.Flush.Messages = 50
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	cfg.Admin.Timeout = 15 * time.Second
	return cfg
}

func TestSarama(t *testing.T) {
	t.Parallel()
	n := admBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	addr := n.Addr()
	if sarama.DefaultVersion != sarama.V2_8_0_0 {
		t.Logf("sarama default version is %v", sarama.DefaultVersion)
	}
	for _, tc := range []struct {
		name    string
		version sarama.KafkaVersion
		codec   sarama.CompressionCodec
	}{
		{"default-version", sarama.DefaultVersion, sarama.CompressionNone},
		{"V4_0_0_0", sarama.V4_0_0_0, sarama.CompressionNone},
		{"default-version-snappy", sarama.DefaultVersion, sarama.CompressionSnappy},
		{"V3_6_0_0-lz4", sarama.V3_6_0_0, sarama.CompressionLZ4},
		{"V2_8_0_0-gzip", sarama.V2_8_0_0, sarama.CompressionGZIP},
		{"V3_0_0_0-zstd", sarama.V3_0_0_0, sarama.CompressionZSTD},
		// The oldest versions that still speak record batches (Produce v3,
		// Fetch v4): clients configured for Kafka 0.11 and 1.0.
		{"V0_11_0_0", sarama.V0_11_0_0, sarama.CompressionNone},
		{"V1_0_0_0-snappy", sarama.V1_0_0_0, sarama.CompressionSnappy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admSaramaRoundTrip(t, addr, admSaramaConfig(tc.version, tc.codec), 300)
		})
	}
}

func admSaramaRoundTrip(t *testing.T, addr string, cfg *sarama.Config, n int) {
	topic := admTopic("sarama")
	const partitions = 3

	// Create the topic with sarama's own admin client. Before Kafka 2.0
	// its ListTopics sends DescribeConfigs v0, which Kafka 4 no longer
	// serves (KIP-896): clients configured that old administer with 2.0.
	adminCfg := cfg
	if !cfg.Version.IsAtLeast(sarama.V2_0_0_0) {
		c := *cfg
		c.Version = sarama.V2_0_0_0
		adminCfg = &c
	}
	admin, err := sarama.NewClusterAdmin([]string{addr}, adminCfg)
	if err != nil {
		t.Fatalf("sarama NewClusterAdmin: %v", err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("sarama CreateTopic: %v", err)
	}
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false)
	if !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Errorf("sarama CreateTopic again: %v, want ErrTopicAlreadyExists", err)
	}
	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("sarama ListTopics: %v", err)
	}
	if d, ok := topics[topic]; !ok || d.NumPartitions != partitions {
		t.Fatalf("sarama ListTopics: %s = %+v (present %v), want %d partitions", topic, d, ok, partitions)
	}

	producer, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama NewSyncProducer: %v", err)
	}
	defer producer.Close()

	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		m := &sarama.ProducerMessage{
			Topic:     topic,
			Key:       sarama.ByteEncoder(fmt.Appendf(nil, "key-%d", i)),
			Value:     sarama.ByteEncoder(admPayload("sarama", i, 50+(i*37)%1500)),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Headers: []sarama.RecordHeader{
				{Key: []byte("idx"), Value: fmt.Appendf(nil, "%d", i)},
				{Key: []byte("empty"), Value: []byte{}},
			},
		}
		if i%10 == 0 {
			m.Key = nil // some keyless records too
		}
		msgs[i] = m
	}
	// One message alone, then the rest as a batch.
	p0, o0, err := producer.SendMessage(msgs[0])
	if err != nil {
		t.Fatalf("sarama SendMessage: %v", err)
	}
	if o0 != 0 {
		t.Errorf("first message at %d/%d, want offset 0", p0, o0)
	}
	if err := producer.SendMessages(msgs[1:]); err != nil {
		var pe sarama.ProducerErrors
		if errors.As(err, &pe) && len(pe) > 0 {
			t.Fatalf("sarama SendMessages: %d errors, first: %v", len(pe), pe[0].Err)
		}
		t.Fatalf("sarama SendMessages: %v", err)
	}
	// Offsets must be unique per partition and dense from 0.
	byPart := map[int32][]*sarama.ProducerMessage{}
	for _, m := range msgs {
		byPart[m.Partition] = append(byPart[m.Partition], m)
	}
	for p, ms := range byPart {
		slices.SortFunc(ms, func(a, b *sarama.ProducerMessage) int { return int(a.Offset - b.Offset) })
		for i, m := range ms {
			if m.Offset != int64(i) {
				t.Fatalf("partition %d: produced offsets are not dense from 0: position %d has offset %d", p, i, m.Offset)
			}
		}
	}

	consumer, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama NewConsumer: %v", err)
	}
	defer consumer.Close()
	deadline := time.NewTimer(admTimeout)
	defer deadline.Stop()
	for p := range int32(partitions) {
		want := byPart[p]
		if len(want) == 0 {
			continue
		}
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama ConsumePartition %d: %v", p, err)
		}
		for i := 0; i < len(want); {
			select {
			case got := <-pc.Messages():
				w := want[i]
				if got.Offset != w.Offset {
					t.Fatalf("partition %d: got offset %d, want %d", p, got.Offset, w.Offset)
				}
				admSaramaCompare(t, w, got)
				i++
			case cerr := <-pc.Errors():
				t.Fatalf("sarama consume partition %d: %v", p, cerr)
			case <-deadline.C:
				t.Fatalf("sarama consume partition %d: %d of %d messages before the deadline", p, i, len(want))
			}
		}
		if hw := pc.HighWaterMarkOffset(); hw != int64(len(want)) {
			t.Errorf("partition %d: high watermark %d, want %d", p, hw, len(want))
		}
		pc.Close()
	}

	// The offsets sarama reads back agree.
	client, err := sarama.NewClient([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama NewClient: %v", err)
	}
	defer client.Close()
	for p := range int32(partitions) {
		newest, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatalf("sarama GetOffset newest %d: %v", p, err)
		}
		oldest, err := client.GetOffset(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama GetOffset oldest %d: %v", p, err)
		}
		if newest != int64(len(byPart[p])) || oldest != 0 {
			t.Errorf("partition %d: oldest %d newest %d, want 0 and %d", p, oldest, newest, len(byPart[p]))
		}
	}
}

func admSaramaCompare(t *testing.T, want *sarama.ProducerMessage, got *sarama.ConsumerMessage) {
	t.Helper()
	var wk []byte
	if want.Key != nil {
		wk, _ = want.Key.Encode()
	}
	wv, _ := want.Value.Encode()
	if !bytes.Equal(wk, got.Key) || (want.Key == nil) != (got.Key == nil) {
		t.Errorf("offset %d: key %q, want %q", got.Offset, got.Key, wk)
	}
	if !bytes.Equal(wv, got.Value) {
		t.Errorf("offset %d: value differs (%d bytes, want %d)", got.Offset, len(got.Value), len(wv))
	}
	if !got.Timestamp.Equal(want.Timestamp) {
		t.Errorf("offset %d: timestamp %v, want %v", got.Offset, got.Timestamp, want.Timestamp)
	}
	if len(got.Headers) != len(want.Headers) {
		t.Errorf("offset %d: %d headers, want %d", got.Offset, len(got.Headers), len(want.Headers))
		return
	}
	for i, h := range want.Headers {
		if !bytes.Equal(got.Headers[i].Key, h.Key) || !bytes.Equal(got.Headers[i].Value, h.Value) {
			t.Errorf("offset %d: header %d = %q:%q, want %q:%q", got.Offset, i, got.Headers[i].Key, got.Headers[i].Value, h.Key, h.Value)
		}
	}
}
