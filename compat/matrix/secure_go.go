package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	kafkasasl "github.com/segmentio/kafka-go/sasl"
	kgoplain "github.com/segmentio/kafka-go/sasl/plain"
	kgoscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The security scenarios of the Go clients (doc.go, 8): over the scenario's
// listener, secRecords records to the job's sec- topic, read back by a
// group member; then one record to deniedTopic, which must fail with the
// client's authorization error.

const secRecords = 30

// addSecure adds the security scenarios to a Go client's, each run by f.
func addSecure(sc goScenarios, f func(ctx context.Context, e *env, scenario string) error) goScenarios {
	for _, s := range secScenarios {
		sc[s] = func(ctx context.Context, e *env) error {
			if e.sec == nil {
				return fmt.Errorf("no secured listeners in this run")
			}
			return f(ctx, e, s)
		}
	}
	return sc
}

// secUser is the SASL user and password of a scenario ("" for mTLS).
func secUser(scenario string) (string, string) {
	switch scenario {
	case secSASLSSL:
		return scramUser, scramPassword
	case secSASLPlain:
		return plainUser, plainPassword
	}
	return "", ""
}

// deniedCtx bounds the produce that must be refused: a client that retried
// authorization errors would otherwise wait out its delivery timeout.
func deniedCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 30*time.Second)
}

// ---- franz-go ----

func franzSecure(ctx context.Context, e *env, scenario string) error {
	opts := []kgo.Opt{kgo.SeedBrokers(e.sec.listeners[scenario])}
	if c := e.sec.goTLS(scenario); c != nil {
		opts = append(opts, kgo.DialTLSConfig(c))
	}
	user, pass := secUser(scenario)
	switch scenario {
	case secSASLSSL:
		opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
	case secSASLPlain:
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	}
	se := &env{root: e.root, bootstrap: e.sec.listeners[scenario], prefix: e.prefix, tmp: e.tmp, sec: e.sec}
	topic := secTopic(e.prefix, scenario)
	if err := franzProduceRange(ctx, se, topic, 0, secRecords, opts...); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	m, err := newFranzMember(se, topic+"-g", topic, opts...)
	if err != nil {
		return err
	}
	defer m.cl.Close()
	rc := newReadCheck(secRecords)
	rctx, cancel := context.WithTimeout(ctx, secTimeout)
	defer cancel()
	for !rc.done() {
		if rctx.Err() != nil {
			return fmt.Errorf("group read: %w", rc.err())
		}
		if err := m.poll(rctx, time.Second, func(r *kgo.Record) error {
			return rc.add(r.Partition, r.Offset, r.Key, r.Value, franzHeaders(r))
		}); err != nil && rctx.Err() == nil {
			return fmt.Errorf("group read: %w", err)
		}
	}
	dctx, dcancel := deniedCtx(ctx)
	defer dcancel()
	return wantDenied(m.cl.ProduceSync(dctx, franzRecord(deniedTopic, 0)).FirstErr())
}

// ---- sarama ----

// saramaSCRAM is sarama's SCRAMClient over kafka-go's SCRAM mechanism
// (xdg-go/scram), which the module already has.
type saramaSCRAM struct {
	sm      kafkasasl.StateMachine
	initial []byte
	started bool
	done    bool
}

func (s *saramaSCRAM) Begin(user, password, _ string) error {
	m, err := kgoscram.Mechanism(kgoscram.SHA512, user, password)
	if err != nil {
		return err
	}
	s.sm, s.initial, err = m.Start(context.Background())
	return err
}

func (s *saramaSCRAM) Step(challenge string) (string, error) {
	if !s.started {
		s.started = true
		return string(s.initial), nil
	}
	done, resp, err := s.sm.Next(context.Background(), []byte(challenge))
	s.done = done
	return string(resp), err
}

func (s *saramaSCRAM) Done() bool { return s.done }

func saramaSecureConfig(e *env, scenario string) *sarama.Config {
	c := saramaConfig()
	if t := e.sec.goTLS(scenario); t != nil {
		c.Net.TLS.Enable, c.Net.TLS.Config = true, t
	}
	user, pass := secUser(scenario)
	switch scenario {
	case secSASLSSL:
		c.Net.SASL.Enable, c.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA512
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{} }
	case secSASLPlain:
		c.Net.SASL.Enable, c.Net.SASL.Mechanism = true, sarama.SASLTypePlaintext
	}
	c.Net.SASL.User, c.Net.SASL.Password = user, pass
	return c
}

func saramaSecure(ctx context.Context, e *env, scenario string) error {
	addrs := []string{e.sec.listeners[scenario]}
	topic := secTopic(e.prefix, scenario)
	c := saramaSecureConfig(e, scenario)
	p, err := sarama.NewSyncProducer(addrs, c)
	if err != nil {
		return err
	}
	defer p.Close()
	var ms []*sarama.ProducerMessage
	for i := range secRecords {
		ms = append(ms, saramaMessage(topic, i))
	}
	if err := p.SendMessages(ms); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	var mu sync.Mutex
	rc := newReadCheck(secRecords)
	mc := saramaSecureConfig(e, scenario)
	mc.Consumer.Offsets.AutoCommit.Enable = true
	m, err := startSaramaMemberWith(ctx, addrs, mc, topic+"-g", topic, func(msg *sarama.ConsumerMessage) error {
		mu.Lock()
		defer mu.Unlock()
		return rc.add(msg.Partition, msg.Offset, msg.Key, msg.Value, saramaHeaders(msg))
	})
	if err != nil {
		return err
	}
	err = waitRead(ctx, &mu, rc, func() error { _, err := m.state(); return err })
	if cerr := m.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("group read: %w", err)
	}
	// sarama refreshes the metadata of a topic it may not describe until
	// Metadata.Retry.Max runs out, then fails the message with Kafka's error.
	_, _, err = p.SendMessage(saramaMessage(deniedTopic, 0))
	return wantDenied(err)
}

// ---- kafka-go ----

func kgoSecureMechanism(scenario string) (kafkasasl.Mechanism, error) {
	user, pass := secUser(scenario)
	switch scenario {
	case secSASLSSL:
		return kgoscram.Mechanism(kgoscram.SHA512, user, pass)
	case secSASLPlain:
		return kgoplain.Mechanism{Username: user, Password: pass}, nil
	}
	return nil, nil
}

func kafkaGoSecure(ctx context.Context, e *env, scenario string) error {
	mech, err := kgoSecureMechanism(scenario)
	if err != nil {
		return err
	}
	addr := e.sec.listeners[scenario]
	tr := &kafka.Transport{TLS: e.sec.goTLS(scenario), SASL: mech}
	defer tr.CloseIdleConnections()
	topic := secTopic(e.prefix, scenario)
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: 5 * time.Millisecond, Transport: tr}
	var ms []kafka.Message
	for i := range secRecords {
		ms = append(ms, kgoMessage(i))
	}
	err = w.WriteMessages(ctx, ms...)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	var mu sync.Mutex
	rc := newReadCheck(secRecords)
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := startKgoMemberWith(mctx, kafka.ReaderConfig{
		Brokers: []string{addr}, GroupID: topic + "-g", Topic: topic, MaxWait: 200 * time.Millisecond,
		StartOffset: kafka.FirstOffset, Dialer: &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, TLS: e.sec.goTLS(scenario), SASLMechanism: mech},
	}, func(msg kafka.Message) error {
		mu.Lock()
		defer mu.Unlock()
		return rc.add(int32(msg.Partition), msg.Offset, msg.Key, msg.Value, kgoHeaders(msg))
	})
	err = waitRead(ctx, &mu, rc, m.failure)
	cancel()
	_ = m.close()
	if err != nil {
		return fmt.Errorf("group read: %w", err)
	}
	// kafka-go's Writer routes by its cached metadata of all topics, from
	// which the broker leaves out those the principal may not describe: it
	// reports UNKNOWN_TOPIC_OR_PARTITION. Its Conn asks for the topic.
	dctx, dcancel := deniedCtx(ctx)
	defer dcancel()
	d := &kafka.Dialer{Timeout: 10 * time.Second, TLS: e.sec.goTLS(scenario), SASLMechanism: mech}
	conn, err := d.DialLeader(dctx, "tcp", addr, deniedTopic, 0)
	if err == nil {
		_, err = conn.WriteMessages(kgoMessage(0))
		_ = conn.Close()
	}
	return wantDenied(err)
}

// waitRead waits until a group member (its failure given) has read every
// record rc wants; mu guards rc.
func waitRead(ctx context.Context, mu *sync.Mutex, rc *readCheck, failure func() error) error {
	return eventually(ctx, "the group member's records", func(context.Context) error {
		if err := failure(); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if !rc.done() {
			return rc.err()
		}
		return nil
	})
}
