// Command rebalance measures what adding a member costs a consuming group:
// six franz-go members read a 12-partition topic that a producer writes to
// every 5 ms per partition; a seventh joins; the figure is how long the
// new member waits for its first record and the longest any of the six
// stops receiving records meanwhile. It runs the classic protocol with an
// eager balancer (range), with the cooperative-sticky one, and KIP-848
// (ServerSideBalancer), each with the clients' and brokers' defaults, against
// the broker at -bootstrap (go run ./compat/matrix -serve starts samsa,
// -reference -serve Apache Kafka, both with group.initial.rebalance.delay.ms=0).
//
//	go run ./bench/rebalance -bootstrap host:port [-runs 3]
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const partitions = 12

func main() {
	bootstrap := flag.String("bootstrap", "", "the broker's `host:port`")
	runs := flag.Int("runs", 3, "runs per protocol (the median is printed)")
	flag.Parse()
	if *bootstrap == "" {
		fmt.Fprintln(os.Stderr, "rebalance: -bootstrap is required")
		os.Exit(2)
	}
	if err := run(*bootstrap, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "rebalance:", err)
		os.Exit(1)
	}
}

type mode struct {
	name string
	opts []kgo.Opt
}

var modes = []mode{
	{"classic eager (range)", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
	{"classic cooperative-sticky", []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
	{"KIP-848 (uniform)", []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer()}},
}

func run(bootstrap string, runs int) error {
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topic := fmt.Sprintf("rebalance-%d", time.Now().UnixNano())
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		return err
	}
	pctx, stop := context.WithCancel(ctx)
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() { defer pwg.Done(); produce(pctx, cl, topic) }()
	defer func() { stop(); pwg.Wait() }()

	fmt.Printf("| protocol | new member's first record (ms) | longest stop of the six (ms) |\n|---|---|---|\n")
	for _, m := range modes {
		var firsts, stops []time.Duration
		for r := range runs {
			first, stopped, err := once(ctx, bootstrap, topic, fmt.Sprintf("%s-%d-%d", topic, len(firsts), r), m.opts)
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			firsts, stops = append(firsts, first), append(stops, stopped)
		}
		fmt.Printf("| %s | %d | %d |\n", m.name, median(firsts).Milliseconds(), median(stops).Milliseconds())
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// produce writes one record to every partition every 5 ms.
func produce(ctx context.Context, cl *kgo.Client, topic string) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for p := range int32(partitions) {
			v := binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: v}, nil)
		}
	}
}

// member is one consumer of the group and the times it received records.
type member struct {
	cl   *kgo.Client
	mu   sync.Mutex
	recv []time.Time // guarded by mu
	done chan struct{}
}

func startMember(bootstrap, topic, group string, opts []kgo.Opt) (*member, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd())}, opts...)...)
	if err != nil {
		return nil, err
	}
	m := &member{cl: cl, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			if n := fs.NumRecords(); n > 0 {
				m.mu.Lock()
				m.recv = append(m.recv, time.Now())
				m.mu.Unlock()
			}
		}
	}()
	return m, nil
}

func (m *member) close() { m.cl.Close(); <-m.done }

// received returns the times records came after t.
func (m *member) received(after time.Time) []time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []time.Time
	for _, r := range m.recv {
		if r.After(after) {
			out = append(out, r)
		}
	}
	return out
}

// once starts six members, waits until all six receive records, adds a
// seventh and watches for ten seconds.
func once(ctx context.Context, bootstrap, topic, group string, opts []kgo.Opt) (first, stop time.Duration, err error) {
	var ms []*member
	defer func() {
		for _, m := range ms {
			m.close()
		}
	}()
	for range 6 {
		m, err := startMember(bootstrap, topic, group, opts)
		if err != nil {
			return 0, 0, err
		}
		ms = append(ms, m)
	}
	// Settled: every member received records in each of the last three
	// seconds.
	deadline := time.Now().Add(2 * time.Minute)
	for settled := false; !settled; {
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("six members did not settle in two minutes")
		}
		time.Sleep(time.Second)
		settled = true
		for _, m := range ms {
			for s := 1; s <= 3; s++ {
				from := time.Now().Add(-time.Duration(s) * time.Second)
				if len(m.received(from)) == 0 || len(m.received(from.Add(-time.Second))) == len(m.received(from)) {
					settled = false
				}
			}
		}
	}
	t0 := time.Now()
	nm, err := startMember(bootstrap, topic, group, opts)
	if err != nil {
		return 0, 0, err
	}
	ms = append(ms, nm)
	select {
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-time.After(10 * time.Second):
	}
	got := nm.received(t0)
	if len(got) == 0 {
		return 0, 0, fmt.Errorf("the new member read nothing in ten seconds")
	}
	first = got[0].Sub(t0)
	end := time.Now()
	for _, m := range ms[:6] {
		prev := t0
		for _, r := range append(m.received(t0), end) {
			stop = max(stop, r.Sub(prev))
			prev = r
		}
	}
	return first, stop, nil
}
