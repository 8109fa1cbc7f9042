package compat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/testutil"
)

// grpBroker is a broker with the group settings Kafka's own tests use: no
// initial rebalance delay, and short session timeouts allowed.
func grpBroker(t testing.TB, overrides ...string) *testutil.Node {
	t.Helper()
	o := map[string]string{
		"group.initial.rebalance.delay.ms": "0",
		"group.min.session.timeout.ms":     "500",
	}
	for i := 0; i+1 < len(overrides); i += 2 {
		o[overrides[i]] = overrides[i+1]
	}
	return testutil.StartBroker(t, o)
}

// cutDialer dials normally until Cut, which closes every connection it made
// and fails every later dial: to the broker, the client has crashed.
type cutDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func (d *cutDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("cutDialer: cut")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cutDialer) Cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
}

type tpo struct {
	partition int32
	offset    int64
}

// grpLedger records what every member of a test group read and committed.
type grpLedger struct {
	mu        sync.Mutex
	reads     map[tpo][]string           // record → members that read it, in order
	committed map[string]map[int32]int64 // member → partition → last offset it committed successfully
}

func newLedger() *grpLedger {
	return &grpLedger{reads: map[tpo][]string{}, committed: map[string]map[int32]int64{}}
}

func (l *grpLedger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reads)
}

// grpMember is one group member: a kgo client polling in its own
// goroutine, committing what it read after every poll (rebalances are
// held off between a poll and its commit), until stopped.
type grpMember struct {
	name   string
	cl     *kgo.Client
	dialer *cutDialer
	cancel context.CancelFunc
	done   chan struct{}
}

func startMember(t *testing.T, addr, group, topic, name string, l *grpLedger, opts ...kgo.Opt) *grpMember {
	t.Helper()
	m := &grpMember{name: name, dialer: &cutDialer{}, done: make(chan struct{})}
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.Dialer(m.dialer.DialContext),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(3 * time.Second),
		kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.FetchMaxWait(300 * time.Millisecond),
		kgo.RetryTimeout(20 * time.Second),
		kgo.ClientID(name),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 100)
			recs := fs.Records()
			if len(recs) > 0 {
				l.mu.Lock()
				for _, r := range recs {
					k := tpo{r.Partition, r.Offset}
					l.reads[k] = append(l.reads[k], name)
				}
				l.mu.Unlock()
				// Commit even if stop() comes meanwhile: a member that
				// leaves cleanly has committed what it read.
				cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := cl.CommitRecords(cctx, recs...)
				ccancel()
				if err == nil {
					l.mu.Lock()
					if l.committed[name] == nil {
						l.committed[name] = map[int32]int64{}
					}
					for _, r := range recs {
						l.committed[name][r.Partition] = max(l.committed[name][r.Partition], r.Offset+1)
					}
					l.mu.Unlock()
				}
			}
			cl.AllowRebalance()
		}
	}()
	return m
}

// stop ends the member's poll loop.
func (m *grpMember) stop() {
	m.cancel()
	<-m.done
}

// leave stops polling and closes the client, which leaves the group.
func (m *grpMember) leave() {
	m.stop()
	m.cl.Close()
}

// crash stops polling and cuts the member off: no LeaveGroup, no more
// heartbeats; the coordinator must notice by the session timeout.
func (m *grpMember) crash() {
	m.stop()
	m.dialer.Cut()
}

func produceKeyed(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		k := strconv.Itoa(from + i)
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte("v" + k)}
	}
	produceAll(t, cl, recs...)
}

func waitRead(t *testing.T, l *grpLedger, want int, what string) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() error {
		if n := l.count(); n < want {
			return fmt.Errorf("%s: %d distinct records read, want %d", what, n, want)
		}
		return nil
	})
}

// TestGroupBalancers runs a three-member group over six partitions with
// each of franz-go's balancers: every record is read; a member leaves and
// the others take its partitions without reading a committed record again;
// a member crashes and, after its session times out, the survivor takes
// over, re-reading at most what the crashed member read but had not
// committed (Kafka's at-least-once window).
func TestGroupBalancers(t *testing.T) {
	balancers := []struct {
		name string
		b    kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"roundrobin", kgo.RoundRobinBalancer()},
		{"sticky", kgo.StickyBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	}
	n := grpBroker(t)
	adm := newAdmin(t, n.Addr())
	prod := newKgo(t, n.Addr())
	for _, bc := range balancers {
		t.Run(bc.name, func(t *testing.T) {
			group := "group-" + bc.name
			topic := "grp-" + bc.name
			start := func(name string, l *grpLedger) scenarioMember {
				return startMember(t, n.Addr(), group, topic, name, l, kgo.Balancers(bc.b))
			}
			groupScenario(t, adm, prod, topic, group, bc.name, start, func() error {
				dg, err := adm.DescribeGroups(testCtx(t, 10*time.Second), group)
				if err != nil {
					return err
				}
				g := dg[group]
				if g.State != "Stable" || len(g.Members) != 3 {
					return fmt.Errorf("group %s with %d members", g.State, len(g.Members))
				}
				return nil
			})
		})
	}
}

// scenarioMember is one member of groupScenario's group, of any client.
type scenarioMember interface {
	leave() // leave the group cleanly
	crash() // vanish without a word
	close() // end whatever is left (cleanup)
}

func (m *grpMember) close() { m.stop(); m.cl.Close() }

// groupScenario is TestGroupBalancers' run of one group: three members
// (start makes each, recording in the ledger) over six partitions read
// everything; one leaves, one crashes; nothing committed is read again and
// the commits reach the end. stable reports whether the group is stable
// with the three members.
func groupScenario(t *testing.T, adm *kadm.Client, prod *kgo.Client, topic, group, name string, start func(name string, l *grpLedger) scenarioMember, stable func() error) {
	t.Helper()
	createTopic(t, adm, topic, 6, nil)
	l := newLedger()
	var members []scenarioMember
	for i := range 3 {
		m := start(fmt.Sprintf("%s-m%d", name, i), l)
		members = append(members, m)
		t.Cleanup(m.close)
	}
	// Wait until the group is stable with all three, so that the
	// first records are spread over them.
	testutil.Eventually(t, 30*time.Second, stable)
	produceKeyed(t, prod, topic, 0, 300)
	waitRead(t, l, 300, "three members")

	members[0].leave()
	produceKeyed(t, prod, topic, 300, 150)
	waitRead(t, l, 450, "after a member left")

	crashed := members[1]
	crashed.crash()
	produceKeyed(t, prod, topic, 450, 150)
	waitRead(t, l, 600, "after a member crashed")

	// Read twice: only a record its first reader had not committed may be
	// read again (the crashed member's last poll; a commit cut short by a
	// rebalance). The survivor's commits cover everything.
	checkNoCommittedReread(t, l)
	checkCommittedToEnd(t, adm, topic, group)
}

// TestGroupStaticMemberRestart: a static member (group.instance.id) that
// restarts within its session timeout gets its assignment back without a
// rebalance; its old member id is fenced.
func TestGroupStaticMemberRestart(t *testing.T) {
	n := grpBroker(t)
	adm := newAdmin(t, n.Addr())
	topic, group := "static-topic", "static-group"
	createTopic(t, adm, topic, 4, nil)
	// The generations in which each instance's assignment callback ran: the
	// callback runs after the client already reports its new generation.
	var mu sync.Mutex
	assigned := map[string][]int32{}
	opts := func(instance string) []kgo.Opt {
		return []kgo.Opt{
			kgo.InstanceID(instance),
			kgo.SessionTimeout(20 * time.Second),
			kgo.Balancers(kgo.RangeBalancer()),
			kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, _ map[string][]int32) {
				_, g := cl.GroupMetadata()
				mu.Lock()
				assigned[instance] = append(assigned[instance], g)
				mu.Unlock()
			}),
		}
	}
	l := newLedger()
	// s2 joins first and leads; s1, the member restarted below, follows.
	// (A restarted static leader recomputes the plan under KIP-814 and, in
	// franz-go, rejoins when its metadata is not complete yet: a client
	// choice that Kafka answers with a rebalance as well.)
	s2 := startMember(t, n.Addr(), group, topic, "s2", l, opts("s2")...)
	t.Cleanup(func() { s2.stop(); s2.cl.Close() })
	testutil.Eventually(t, 30*time.Second, func() error {
		if id, _ := s2.cl.GroupMetadata(); id == "" {
			return errors.New("s2 has not joined")
		}
		return nil
	})
	s1 := startMember(t, n.Addr(), group, topic, "s1", l, opts("s1")...)
	var oldID string
	var gen int32
	testutil.Eventually(t, 30*time.Second, func() error {
		dg, err := adm.DescribeGroups(testCtx(t, 10*time.Second), group)
		if err != nil {
			return err
		}
		g := dg[group]
		if g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Errorf("group %s with %d members", g.State, len(g.Members))
		}
		for _, m := range g.Members {
			if m.InstanceID == nil {
				return fmt.Errorf("member %s without instance id", m.MemberID)
			}
			if *m.InstanceID == "s1" {
				oldID = m.MemberID
			}
		}
		var g1, g2 string
		g1, gen = s1.cl.GroupMetadata()
		g2, gen2 := s2.cl.GroupMetadata()
		if g1 == "" || g2 == "" || gen != gen2 {
			return fmt.Errorf("members not settled: %q gen %d, %q gen %d", g1, gen, g2, gen2)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(assigned["s1"], gen) || !slices.Contains(assigned["s2"], gen) {
			return fmt.Errorf("assignments of generation %d not taken yet: %v", gen, assigned)
		}
		return nil
	})
	mu.Lock()
	s2Assigned := slices.Clone(assigned["s2"])
	mu.Unlock()

	// Restart s1: a static member does not leave the group on close.
	s1.stop()
	s1.cl.Close()
	s1b := startMember(t, n.Addr(), group, topic, "s1", l, opts("s1")...)
	t.Cleanup(func() { s1b.stop(); s1b.cl.Close() })
	testutil.Eventually(t, 30*time.Second, func() error {
		id, g := s1b.cl.GroupMetadata()
		if id == "" || id == oldID {
			return fmt.Errorf("restarted s1 has member id %q (old %q)", id, oldID)
		}
		if g != gen {
			return fmt.Errorf("restarted s1 in generation %d, want %d (no rebalance)", g, gen)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(assigned["s1"]) < 2 {
			return fmt.Errorf("restarted s1 has no assignment yet")
		}
		return nil
	})
	produceKeyed(t, newKgo(t, n.Addr()), topic, 0, 100)
	waitRead(t, l, 100, "after the static restart")
	if _, g := s2.cl.GroupMetadata(); g != gen {
		t.Errorf("s2 moved to generation %d from %d: the static restart caused a rebalance", g, gen)
	}
	mu.Lock()
	if !slices.Equal(assigned["s2"], s2Assigned) {
		t.Errorf("s2 was assigned in generations %v, before the restart %v: the static restart caused a rebalance", assigned["s2"], s2Assigned)
	}
	mu.Unlock()

	// The old member id of s1 is fenced.
	hb := kmsgHeartbeat(group, oldID, "s1", gen)
	resp, err := hb.RequestWith(testCtx(t, 10*time.Second), newKgo(t, n.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "heartbeat with s1's old member id", resp.ErrorCode, errFencedInstanceID)

	dg, err := adm.DescribeGroups(testCtx(t, 10*time.Second), group)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, m := range dg[group].Members {
		ids = append(ids, *m.InstanceID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"s1", "s2"}) || dg[group].State != "Stable" {
		t.Errorf("group after the restart: %s with instances %v, want Stable with [s1 s2]", dg[group].State, ids)
	}
}
