package compat

// segmentio/kafka-go: Conn (CreateTopics, ReadPartitions), Writer and a
// partition Reader, byte-exact.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestKafkaGo(t *testing.T) {
	t.Parallel()
	n := admBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	addr := n.Addr()
	t.Run("Conn", func(t *testing.T) {
		admKafkaGoConn(t, addr)
	})
	t.Run("zstd-one-large-batch", func(t *testing.T) {
		admKafkaGoZstdBatch(t, addr)
	})
	for _, codec := range []compress.Codec{nil, kafka.Snappy.Codec(), kafka.Zstd.Codec()} {
		name := "none"
		if codec != nil {
			name = codec.Name()
		}
		t.Run("RoundTrip-"+name, func(t *testing.T) {
			admKafkaGoRoundTrip(t, addr, codec, 400)
		})
	}
}

func admKafkaGoConn(t *testing.T, addr string) {
	ctx := admCtx(t, admTimeout)
	conn, err := kafka.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("kafka-go dial: %v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(admTimeout))

	topic := admTopic("kafkago-conn")
	err = conn.CreateTopics(kafka.TopicConfig{
		Topic:             topic,
		NumPartitions:     4,
		ReplicationFactor: 1,
		ConfigEntries:     []kafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "3600000"}},
	})
	if err != nil {
		t.Fatalf("kafka-go CreateTopics: %v", err)
	}
	// kafka-go ignores TOPIC_ALREADY_EXISTS; other errors come back.
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 4, ReplicationFactor: 1}); err != nil {
		t.Errorf("kafka-go CreateTopics of an existing topic: %v, want nil (kafka-go ignores TOPIC_ALREADY_EXISTS)", err)
	}
	err = conn.CreateTopics(kafka.TopicConfig{Topic: admTopic("kafkago-rf3"), NumPartitions: 1, ReplicationFactor: 3})
	if !errors.Is(err, kafka.InvalidReplicationFactor) {
		t.Errorf("kafka-go CreateTopics with RF 3: %v, want InvalidReplicationFactor", err)
	}
	err = conn.CreateTopics(kafka.TopicConfig{Topic: "bad topic!", NumPartitions: 1, ReplicationFactor: 1})
	if !errors.Is(err, kafka.InvalidTopic) {
		t.Errorf("kafka-go CreateTopics with a bad name: %v, want InvalidTopic", err)
	}

	// The config entry reached the topic.
	adm, _ := admAdmin(t, addr)
	admWantConfig(t, admTopicConfigs(t, adm, topic), "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)

	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		t.Fatalf("kafka-go ReadPartitions: %v", err)
	}
	if len(parts) != 4 {
		t.Fatalf("kafka-go ReadPartitions: %d partitions, want 4: %+v", len(parts), parts)
	}
	host, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	seen := map[int]bool{}
	for _, p := range parts {
		seen[p.ID] = true
		if p.Topic != topic || p.Leader.ID != 1 || p.Leader.Host != host || p.Leader.Port != port {
			t.Errorf("partition %+v: want topic %s led by 1 at %s", p, topic, addr)
		}
		if len(p.Replicas) != 1 || p.Replicas[0].ID != 1 || len(p.Isr) != 1 || p.Isr[0].ID != 1 {
			t.Errorf("partition %d: replicas %+v isr %+v, want [1]", p.ID, p.Replicas, p.Isr)
		}
	}
	for i := range 4 {
		if !seen[i] {
			t.Errorf("partition %d missing from ReadPartitions", i)
		}
	}

	brokers, err := conn.Brokers()
	if err != nil {
		t.Fatalf("kafka-go Brokers: %v", err)
	}
	if len(brokers) != 1 || brokers[0].ID != 1 || brokers[0].Port != port {
		t.Errorf("kafka-go Brokers: %+v", brokers)
	}
	ctl, err := conn.Controller()
	if err != nil || ctl.ID != 1 {
		t.Errorf("kafka-go Controller: %+v, %v", ctl, err)
	}

	// A leader connection: write, then read back with offsets.
	lc, err := kafka.DialLeader(ctx, "tcp", addr, topic, 2)
	if err != nil {
		t.Fatalf("kafka-go DialLeader: %v", err)
	}
	defer lc.Close()
	lc.SetDeadline(time.Now().Add(admTimeout))
	if _, err := lc.WriteMessages(kafka.Message{Key: []byte("k1"), Value: []byte("v1")}, kafka.Message{Key: []byte("k2"), Value: []byte("v2")}); err != nil {
		t.Fatalf("kafka-go Conn.WriteMessages: %v", err)
	}
	first, last, err := lc.ReadOffsets()
	if err != nil || first != 0 || last != 2 {
		t.Errorf("kafka-go ReadOffsets: %d %d %v, want 0 2", first, last, err)
	}
	if _, err := lc.Seek(0, kafka.SeekAbsolute); err != nil {
		t.Fatalf("kafka-go Seek: %v", err)
	}
	batch := lc.ReadBatch(1, 1<<20)
	for i, want := range []string{"v1", "v2"} {
		m, err := batch.ReadMessage()
		if err != nil {
			t.Fatalf("kafka-go ReadBatch message %d: %v", i, err)
		}
		if string(m.Value) != want || m.Offset != int64(i) || m.Partition != 2 {
			t.Errorf("kafka-go ReadBatch message %d: %q at %d/%d, want %q at 2/%d", i, m.Value, m.Partition, m.Offset, want, i)
		}
	}
	batch.Close()
}

func admKafkaGoRoundTrip(t *testing.T, addr string, codec compress.Codec, n int) {
	ctx := admCtx(t, 2*admTimeout)
	topic := admTopic("kafkago")
	const partitions = 3
	conn, err := kafka.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("kafka-go dial: %v", err)
	}
	conn.SetDeadline(time.Now().Add(admTimeout))
	err = conn.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1})
	conn.Close()
	if err != nil {
		t.Fatalf("kafka-go CreateTopics: %v", err)
	}

	// A transport of its own: kafka-go's shared DefaultTransport serves
	// metadata from a cache (6s TTL) that would not know the new topic.
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{
		Addr:         kafka.TCP(addr),
		Transport:    tr,
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		BatchTimeout: 5 * time.Millisecond,
		BatchSize:    100,
		RequiredAcks: kafka.RequireAll,
		ReadTimeout:  15 * time.Second,
		WriteTimeout: 15 * time.Second,
		MaxAttempts:  3,
	}
	if codec != nil {
		w.Compression = kafka.Compression(codec.Code())
	}
	defer w.Close()
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	msgs := make([]kafka.Message, n)
	index := map[string]int{}
	for i := range msgs {
		key := fmt.Sprintf("kg-key-%d", i)
		index[key] = i
		msgs[i] = kafka.Message{
			Key:   []byte(key),
			Value: admPayload("kafkago", i, 10+(i*53)%3000),
			Time:  base.Add(time.Duration(i) * time.Millisecond),
			Headers: []kafka.Header{
				{Key: "idx", Value: []byte(strconv.Itoa(i))},
				{Key: "codec", Value: []byte(fmt.Sprint(codec))},
			},
		}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go Writer.WriteMessages: %v", admShortErr(err))
	}
	if st := w.Stats(); st.Errors != 0 {
		t.Errorf("kafka-go writer stats: %d errors", st.Errors)
	}

	total := 0
	for p := range partitions {
		lc, err := kafka.DialLeader(ctx, "tcp", addr, topic, p)
		if err != nil {
			t.Fatalf("kafka-go DialLeader %d: %v", p, err)
		}
		lc.SetDeadline(time.Now().Add(admTimeout))
		first, last, err := lc.ReadOffsets()
		lc.Close()
		if err != nil {
			t.Fatalf("kafka-go ReadOffsets %d: %v", p, err)
		}
		if first != 0 {
			t.Errorf("partition %d: first offset %d, want 0", p, first)
		}
		count := int(last)
		total += count
		if count == 0 {
			continue
		}

		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:   []string{addr},
			Topic:     topic,
			Partition: p,
			MinBytes:  1,
			MaxBytes:  10 << 20,
			MaxWait:   200 * time.Millisecond,
		})
		prev := -1
		for off := range count {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("kafka-go Reader partition %d: read %d of %d: %v", p, off, count, err)
			}
			if m.Offset != int64(off) || m.Partition != p || m.Topic != topic {
				t.Fatalf("kafka-go Reader: got %s/%d@%d, want %s/%d@%d", m.Topic, m.Partition, m.Offset, topic, p, off)
			}
			i, ok := index[string(m.Key)]
			if !ok {
				t.Fatalf("partition %d offset %d: unknown key %q", p, off, m.Key)
			}
			if i <= prev {
				t.Errorf("partition %d offset %d: record %d after record %d, out of produce order", p, off, i, prev)
			}
			prev = i
			delete(index, string(m.Key))
			want := msgs[i]
			if !bytes.Equal(m.Value, want.Value) {
				t.Errorf("record %d: value differs (%d bytes, want %d)", i, len(m.Value), len(want.Value))
			}
			if !m.Time.Equal(want.Time) {
				t.Errorf("record %d: time %v, want %v", i, m.Time, want.Time)
			}
			if len(m.Headers) != len(want.Headers) {
				t.Errorf("record %d: %d headers, want %d", i, len(m.Headers), len(want.Headers))
			} else {
				for j, h := range want.Headers {
					if m.Headers[j].Key != h.Key || !bytes.Equal(m.Headers[j].Value, h.Value) {
						t.Errorf("record %d header %d: %q=%q, want %q=%q", i, j, m.Headers[j].Key, m.Headers[j].Value, h.Key, h.Value)
					}
				}
			}
		}
		r.Close()
	}
	if total != n || len(index) != 0 {
		t.Errorf("kafka-go: %d records in the log, %d never read back; want %d and 0", total, len(index), n)
	}
}

// admKafkaGoZstdBatch writes one zstd batch that compresses well (kafka-go's
// streaming zstd writer, like the Java client's, leaves the frame content
// size out) and reads it back.
func admKafkaGoZstdBatch(t *testing.T, addr string) {
	ctx := admCtx(t, admTimeout)
	topic := admTopic("kafkago-zstd")
	conn, err := kafka.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("kafka-go dial: %v", err)
	}
	conn.SetDeadline(time.Now().Add(admTimeout))
	err = conn.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 1, ReplicationFactor: 1})
	conn.Close()
	if err != nil {
		t.Fatalf("kafka-go CreateTopics: %v", err)
	}
	const n = 200
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{
		Addr:         kafka.TCP(addr),
		Transport:    tr,
		Topic:        topic,
		BatchSize:    n,
		BatchBytes:   16 << 20,
		BatchTimeout: time.Second,
		RequiredAcks: kafka.RequireOne,
		Compression:  kafka.Zstd,
		ReadTimeout:  15 * time.Second,
		WriteTimeout: 15 * time.Second,
		MaxAttempts:  1,
	}
	defer w.Close()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		// 2 KiB of very compressible text per record: 400 KiB in a batch of
		// a few KiB.
		msgs[i] = kafka.Message{Key: []byte(strconv.Itoa(i)), Value: bytes.Repeat([]byte(fmt.Sprintf("record %04d ", i)), 2048/12)}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go zstd WriteMessages (one %d-record batch, ~%d KiB uncompressed): %v", n, n*2048/1024, admShortErr(err))
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: 0, MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	for i := range n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go read %d of %d: %v", i, n, err)
		}
		if m.Offset != int64(i) || !bytes.Equal(m.Value, msgs[i].Value) || string(m.Key) != strconv.Itoa(i) {
			t.Fatalf("record %d: offset %d key %q, value equal %v", i, m.Offset, m.Key, bytes.Equal(m.Value, msgs[i].Value))
		}
	}
}

// admShortErr keeps kafka-go's per-message error lists readable.
func admShortErr(err error) string {
	s := err.Error()
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}
