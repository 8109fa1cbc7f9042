package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/samsa-io/samsa/internal/poll"
	"github.com/samsa-io/samsa/internal/workload"
)

var (
	full = flag.Bool("chaos.full", false, "run every phase of the fault suite (make chaos), not the short profile of make test")
	only = flag.String("chaos.phases", "", "run only the phases whose name matches this regular expression (with -chaos.full: of every phase)")
)

// isrDeadline is how soon after a heal every broker must be back in every ISR.
const isrDeadline = 30 * time.Second

// suite is one run: the cluster, the workload and the figures so far.
type suite struct {
	t       *testing.T
	c       *cluster
	w       *workload.Workload
	cl      *kgo.Client // seeded with every broker's address, in c.addrs' order
	adm     *kadm.Client
	figures []figure
	tiered  *tieredState // the tiered topic's workload, from the first tiered phase on
}

// figure is one phase's row of the table.
type figure struct {
	phase         string
	during, after float64 // acks/s
	gap, gapPart  time.Duration
	healToISR     time.Duration
	na            string // why the phase does not apply to the brokers under test; then no figures
}

// phase is one fault: inject applies it and returns what it did and how to
// heal it; hold is how long the fault lasts.
type phase struct {
	name   string
	short  bool // in make test's profile
	hold   time.Duration
	inject func(s *suite) (string, func())
}

// shortHolds are the holds of the phases that make test's profile runs
// shorter than make chaos does, by name.
var shortHolds = map[string]time.Duration{
	"object store unreachable":        5 * time.Second,
	"kill -9 leader during an upload": 5 * time.Second,
}

var allPhases = []phase{
	{"kill -9 leader", true, 8 * time.Second, func(s *suite) (string, func()) { return s.kill(s.leader(), "leader") }},
	{"leader cut from peers (DROP)", true, 10 * time.Second, func(s *suite) (string, func()) {
		id := s.leader()
		cut(s.t, nodeNS(int(id)), s.peerIPs(id), false, false)
		return fmt.Sprintf("node %d cut from its peers", id), func() { heal(s.t, nodeNS(int(id))) }
	}},
	{"SIGSTOP leader past the session timeout", true, 8 * time.Second, func(s *suite) (string, func()) {
		id := s.leader()
		s.c.node(id).signal(syscall.SIGSTOP)
		return fmt.Sprintf("node %d stopped", id), func() { s.c.node(id).signal(syscall.SIGCONT) }
	}},
	{"kill -9 follower", false, 8 * time.Second, func(s *suite) (string, func()) { return s.kill(s.follower(), "follower") }},
	{"kill -9 controller", false, 8 * time.Second, func(s *suite) (string, func()) { return s.kill(s.controller(), "controller") }},
	{"leader cut from peers (REJECT)", false, 10 * time.Second, func(s *suite) (string, func()) {
		id := s.leader()
		cut(s.t, nodeNS(int(id)), s.peerIPs(id), true, false)
		return fmt.Sprintf("node %d refuses its peers", id), func() { heal(s.t, nodeNS(int(id))) }
	}},
	{"leader cut from etcd", false, 10 * time.Second, func(s *suite) (string, func()) {
		id := s.leader()
		cut(s.t, nodeNS(int(id)), []string{etcdIP}, false, false)
		return fmt.Sprintf("node %d cut from etcd", id), func() { heal(s.t, nodeNS(int(id))) }
	}},
	{"leader cut from clients", false, 10 * time.Second, func(s *suite) (string, func()) {
		id := s.leader()
		cut(s.t, nodeNS(int(id)), []string{clientIP}, false, false)
		return fmt.Sprintf("node %d cut from clients", id), func() { heal(s.t, nodeNS(int(id))) }
	}},
	{"group coordinator cut from clients", false, 10 * time.Second, func(s *suite) (string, func()) {
		// The readers' commits are in flight when the cut starts; their
		// client gives up on the connection, and the kernel delivers the
		// old commit after the heal, after newer ones on a new connection.
		id := s.coordinator()
		cut(s.t, nodeNS(int(id)), []string{clientIP}, false, false)
		return fmt.Sprintf("node %d (the group's coordinator) cut from clients", id), func() { heal(s.t, nodeNS(int(id))) }
	}},
	{"minority/majority split", false, 10 * time.Second, func(s *suite) (string, func()) {
		id := s.leader()
		cut(s.t, nodeNS(int(id)), append(s.peerIPs(id), etcdIP), false, false)
		return fmt.Sprintf("node %d alone, the others with etcd", id), func() { heal(s.t, nodeNS(int(id))) }
	}},
	{"one-way loss leader→peers", false, 10 * time.Second, func(s *suite) (string, func()) {
		id := s.leader()
		cut(s.t, nodeNS(int(id)), s.peerIPs(id), false, true)
		return fmt.Sprintf("node %d's packets to its peers dropped", id), func() { heal(s.t, nodeNS(int(id))) }
	}},
	{"etcd killed and restarted", false, 8 * time.Second, func(s *suite) (string, func()) {
		for _, e := range s.c.etcd {
			e.stop(syscall.SIGKILL)
		}
		return "every etcd member killed", func() {
			for _, e := range s.c.etcd {
				e.start(s.t)
			}
		}
	}},
	{"etcd leader lost (one of three members)", false, 10 * time.Second, func(s *suite) (string, func()) {
		i := s.etcdLeader()
		s.c.etcd[i-1].stop(syscall.SIGKILL)
		return fmt.Sprintf("etcd member %d (the raft leader) killed", i), func() { s.c.etcd[i-1].start(s.t) }
	}},
	{"30% loss on every broker", false, 10 * time.Second, func(s *suite) (string, func()) {
		for id := int32(1); id <= int32(len(s.c.nodes)); id++ {
			lose(s.t, nodeNS(int(id)), append(s.peerIPs(id), clientIP, etcdIP), "0.3")
		}
		return "30% of every broker's packets dropped", func() {
			for id := 1; id <= len(s.c.nodes); id++ {
				heal(s.t, nodeNS(id))
			}
		}
	}},
	{"torn tail and bit flip in a stopped follower", false, 8 * time.Second, func(s *suite) (string, func()) {
		id := s.follower()
		s.c.node(id).stop(syscall.SIGKILL)
		desc := s.corrupt(id)
		return fmt.Sprintf("node %d killed, %s", id, desc), func() { s.c.node(id).start(s.t) }
	}},
	{"disk full on a broker (tmpfs)", false, 10 * time.Second, func(s *suite) (string, func()) {
		return s.diskFault(tmpfsNode, "its log directory's tmpfs filled", s.fill)
	}},
	{"write and fsync errors on the leader (EIO)", false, 10 * time.Second, func(s *suite) (string, func()) {
		id := s.leader()
		return s.diskFault(id, "write and fsync failing with EIO", func(id int32) func() {
			ff := s.c.faults[id-1]
			if err := os.WriteFile(ff, []byte("write,fsync sticky eio\n"), 0o644); err != nil {
				s.t.Fatal(err)
			}
			return func() { _ = os.Remove(ff) }
		})
	}},
	{"10,000 idle connections and a slowloris client", false, 15 * time.Second, func(s *suite) (string, func()) {
		return s.storm(s.leader(), 10_000)
	}},
	{"latency 100 ms ±20 ms on the leader's links", false, 10 * time.Second, func(s *suite) (string, func()) {
		return s.latency([]int32{s.leader()}, delaySpec{delay: 100 * time.Millisecond, jitter: 20 * time.Millisecond})
	}},
	{"latency 50 ms + 5% loss on every broker", false, 10 * time.Second, func(s *suite) (string, func()) {
		return s.latency(s.brokers(), delaySpec{delay: 50 * time.Millisecond, loss: 0.05})
	}},
	// Tiered storage (tiered_test.go).
	{"object store unreachable", true, 30 * time.Second, (*suite).storeCut},
	{"kill -9 leader during an upload", true, 8 * time.Second, (*suite).killDuringUpload},
}

// TestChaos runs the suite's phases (the short profile, or every phase with
// -chaos.full) on three brokers in network namespaces and checks the
// history after the last heal.
func TestChaos(t *testing.T) {
	c := startCluster(t, 3)
	s := &suite{t: t, c: c}
	cl, err := newClient(c.addrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	s.cl, s.adm = cl, kadm.NewClient(cl)
	s.createTopics(parts, nil, topic, copyTopic)
	if _, err := s.waitISR(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	w, err := startWorkload(c.addrs, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	s.w = w
	t.Cleanup(w.Stop)
	cp, err := startCopier(w, c.addrs)
	if err != nil {
		t.Fatal(err)
	}
	s.w.WaitAcks(t, 200, 60*time.Second)

	var sel *regexp.Regexp
	if *only != "" {
		sel = regexp.MustCompile(*only)
	}
	for _, ph := range allPhases {
		if (!*full && !ph.short) || (sel != nil && !sel.MatchString(ph.name)) {
			continue
		}
		if d, ok := shortHolds[ph.name]; ok && !*full {
			ph.hold = d
		}
		ph, na := c.adapt(ph)
		if na != "" {
			s.figures = append(s.figures, figure{phase: ph.name, na: na})
			t.Logf("chaos: phase %q: not applicable: %s", ph.name, na)
			continue
		}
		s.run(ph)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	w.Stop()
	if err := cp.checkCommitted(ctx); err != nil {
		t.Error(err)
	}
	vs, err := w.Check(ctx)
	for _, v := range vs {
		t.Errorf("VIOLATION in phase %q: %s\n%s", v.Phase, v, c.logsAround(v.At))
	}
	if err != nil {
		t.Error(err)
	}
	s.checkTiered(ctx)
	given := ""
	if !c.kafka {
		n := 0
		for _, p := range c.nodes {
			n += p.count("not applying a commit from a connection")
		}
		given = fmt.Sprintf("; %d commits from connections their member had left not applied", n)
	}
	t.Logf("chaos: %s: %s; %s%s\n%s", c.brokers(), w.Summary(), cp.summary(), given, s.table())
}

// createTopics creates topics of n partitions, RF3, with configs,
// retrying until the brokers take them.
func (s *suite) createTopics(n int32, configs map[string]*string, topics ...string) {
	poll.Eventually(s.t, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rs, err := s.adm.CreateTopics(ctx, n, 3, configs, topics...)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil && !strings.Contains(r.Err.Error(), "TOPIC_ALREADY_EXISTS") {
				return r.Err
			}
		}
		return nil
	})
}

// run runs one phase and records its figures.
func (s *suite) run(ph phase) {
	t := s.t
	start := time.Now()
	s.w.SetPhase(ph.name)
	desc, healFn := ph.inject(s)
	time.Sleep(ph.hold) // how long the fault lasts is part of the fault
	healFn()
	healed := time.Now()
	took, err := s.waitISR(90 * time.Second)
	switch {
	case err != nil:
		t.Errorf("phase %q: %v\n%s", ph.name, err, s.c.logsAround(healed.Add(isrDeadline)))
	case took > isrDeadline:
		t.Errorf("phase %q: full ISRs %v after the heal, more than %v", ph.name, took, isrDeadline)
	}
	// Measure the acks after the heal over as long as the fault lasted.
	s.w.WaitAcks(t, 50, 60*time.Second)
	if rest := ph.hold - time.Since(healed); rest > 0 {
		time.Sleep(rest)
	}
	end := time.Now()
	f := figure{phase: ph.name, healToISR: took}
	during, after := s.w.AckTimes(start, healed), s.w.AckTimes(healed, end)
	f.during = float64(len(during[-1])) / healed.Sub(start).Seconds()
	f.after = float64(len(after[-1])) / end.Sub(healed).Seconds()
	all := s.w.AckTimes(start, end)
	f.gap = longestGap(all[-1], start, end)
	for p := range int32(parts) {
		f.gapPart = max(f.gapPart, longestGap(all[p], start, end))
	}
	s.figures = append(s.figures, f)
	t.Logf("chaos: phase %q: %s; healed, full ISRs after %v; %.0f acks/s during, %.0f after",
		ph.name, desc, took.Round(time.Millisecond), f.during, f.after)
}

// longestGap is the longest time in [from, to] without an ack.
func longestGap(ts []time.Time, from, to time.Time) time.Duration {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	gap, prev := time.Duration(0), from
	for _, x := range append(ts, to) {
		gap = max(gap, x.Sub(prev))
		prev = x
	}
	return gap
}

func (s *suite) table() string {
	var b strings.Builder
	b.WriteString("| phase | acks/s during | acks/s after | longest no-ack (cluster) | longest no-ack (a partition) | heal → full ISR |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, f := range s.figures {
		if f.na != "" {
			fmt.Fprintf(&b, "| %s | n/a | n/a | n/a | n/a | n/a |\n", f.phase)
			continue
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.1f s | %.1f s | %.1f s |\n", f.phase, f.during, f.after,
			f.gap.Seconds(), f.gapPart.Seconds(), f.healToISR.Seconds())
	}
	return b.String()
}

// waitISR waits until every broker is registered and in every ISR of the
// topic, and says how long that took.
func (s *suite) waitISR(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	var last error
	for time.Since(start) < timeout {
		if last = s.fullISR(); last == nil {
			return time.Since(start), nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start), fmt.Errorf("ISRs not full %v after the heal: %v", timeout, last)
}

// fullISR asks every broker (one Metadata request to each, at once) and
// says nil only if every one answers and each lists every broker and every
// partition with a leader and the full ISR: an isolated Kafka broker serves
// its stale metadata cache, so one answer is not enough.
func (s *suite) fullISR() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	seeds := s.cl.SeedBrokers()
	errs := make([]error, len(seeds))
	var wg sync.WaitGroup
	for i, b := range seeds {
		wg.Go(func() {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
			resp, err := b.Request(ctx, req)
			if err == nil {
				err = s.isrFullIn(resp.(*kmsg.MetadataResponse))
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", s.c.addrs[i], err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// isrFullIn checks one broker's Metadata answer for the topic.
func (s *suite) isrFullIn(md *kmsg.MetadataResponse) error {
	if len(md.Brokers) != len(s.c.nodes) {
		return fmt.Errorf("%d brokers registered", len(md.Brokers))
	}
	if len(md.Topics) != 1 {
		return fmt.Errorf("%d topics in the answer", len(md.Topics))
	}
	td := md.Topics[0]
	if err := kerr.ErrorForCode(td.ErrorCode); err != nil {
		return err
	}
	isr := map[int32][]int32{}
	leader := map[int32]int32{}
	for _, pd := range td.Partitions {
		isr[pd.Partition], leader[pd.Partition] = pd.ISR, pd.Leader
	}
	for p := range int32(parts) {
		l, ok := leader[p]
		if !ok {
			return fmt.Errorf("partition %d not in the answer", p)
		}
		if l < 0 || len(isr[p]) != len(s.c.nodes) {
			return fmt.Errorf("partition %d: leader %d, ISR %v", p, l, isr[p])
		}
	}
	return nil
}

// partition0 is partition 0's metadata.
func (s *suite) partition0() (kadm.PartitionDetail, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := s.adm.Metadata(ctx, topic)
	if err != nil {
		return kadm.PartitionDetail{}, err
	}
	return md.Topics[topic].Partitions[0], nil
}

// leader is partition 0's leader.
func (s *suite) leader() int32 {
	pd, err := s.partition0()
	if err != nil || pd.Leader < 1 {
		s.t.Fatalf("chaos: no leader of partition 0: %v", err)
	}
	return pd.Leader
}

// follower is a follower of partition 0.
func (s *suite) follower() int32 {
	l := s.leader()
	return l%int32(len(s.c.nodes)) + 1
}

func (s *suite) controller() int32 {
	if s.c.kafka {
		return s.quorumLeader()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := s.adm.BrokerMetadata(ctx)
	if err != nil || md.Controller < 1 {
		s.t.Fatalf("chaos: no controller: %v", err)
	}
	return md.Controller
}

// coordinator is the readers' group coordinator.
func (s *suite) coordinator() int32 {
	var id int32
	poll.Eventually(s.t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, ok := s.adm.FindGroupCoordinators(ctx, group)[group]
		switch {
		case !ok:
			return fmt.Errorf("no coordinator of group %s in the answer", group)
		case r.Err != nil:
			return r.Err
		}
		id = r.NodeID
		return nil
	})
	return id
}

func (s *suite) peerIPs(id int32) []string {
	var out []string
	for i := 1; i <= len(s.c.nodes); i++ {
		if int32(i) != id {
			out = append(out, nodeIP(i))
		}
	}
	return out
}

func (s *suite) kill(id int32, role string) (string, func()) {
	s.c.node(id).stop(syscall.SIGKILL)
	return fmt.Sprintf("kill -9 %s %d", role, id), func() { s.c.node(id).start(s.t) }
}

// corrupt tears the tail of node id's largest segment of partition 0 and
// flips a bit before it.
func (s *suite) corrupt(id int32) string {
	segs, _ := filepath.Glob(filepath.Join(s.c.dirs[id-1], topic+"-0", "*.log"))
	if len(segs) == 0 {
		s.t.Fatalf("chaos: node %d has no segment of %s-0", id, topic)
	}
	seg := segs[len(segs)-1]
	fi, err := os.Stat(seg)
	if err != nil || fi.Size() < 200 {
		s.t.Fatalf("chaos: segment %s: %v (size %d)", seg, err, fi.Size())
	}
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	torn := fi.Size() - 37
	b := make([]byte, 1)
	at := torn - 100
	if _, err := f.ReadAt(b, at); err != nil {
		s.t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, at); err != nil {
		s.t.Fatal(err)
	}
	if err := f.Truncate(torn); err != nil {
		s.t.Fatal(err)
	}
	return fmt.Sprintf("%s torn at %d of %d, a bit flipped at %d", filepath.Base(seg), torn, fi.Size(), at)
}

// etcdLeader is the etcd member that is the raft leader.
func (s *suite) etcdLeader() int {
	var leader int
	poll.Eventually(s.t, 30*time.Second, func() error {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdAddr(1)}, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		defer cli.Close()
		for i := 1; i <= etcdMembers; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			st, err := cli.Status(ctx, etcdAddr(i))
			cancel()
			if err != nil {
				return err
			}
			if st.Leader != 0 && st.Leader == st.Header.MemberId {
				leader = i
				return nil
			}
		}
		return errors.New("no etcd member is the leader")
	})
	return leader
}

// diskFault breaks node id's log directory with inject (which returns
// its undoing), checks that the broker took the directory offline (its
// partitions move, producers get KAFKA_STORAGE_ERROR, never an ack from
// it; a Kafka node whose only directory fails halts), and heals by undoing the fault and restarting the broker: an
// offline directory comes back only with a restart, as in Kafka.
func (s *suite) diskFault(id int32, what string, inject func(id int32) func()) (string, func()) {
	since := time.Now()
	undo := inject(id)
	n := s.c.node(id)
	poll.Eventually(s.t, 30*time.Second, func() error {
		if !slices.ContainsFunc(s.c.offlineMarks(), func(m string) bool { return n.printed(m, since) }) {
			return fmt.Errorf("node %d has not taken its log directory offline (%s)", id, what)
		}
		return nil
	})
	return fmt.Sprintf("node %d: %s; its log directory went offline", id, what), func() {
		undo()
		n.stop(syscall.SIGKILL)
		n.start(s.t)
	}
}

// fill writes a file into node id's log directory (a tmpfs) until the
// file system is full, and returns its removal.
func (s *suite) fill(id int32) func() {
	name := filepath.Join(s.c.dirs[id-1], "chaos-filler")
	f, err := os.Create(name)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				s.t.Fatalf("chaos: filling node %d's log directory: %v", id, err)
			}
			break
		}
	}
	return func() { _ = os.Remove(name) }
}

// storm opens n idle connections to node id and one slowloris client that
// sends a request a byte a second; the heal closes them and checks the
// broker's file descriptors come back down and its memory stayed bounded.
func (s *suite) storm(id int32, n int) (string, func()) {
	addr := s.c.addrs[id-1]
	var conns []net.Conn
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	slow, err := net.Dial("tcp", addr)
	stopSlow := make(chan struct{})
	if err == nil {
		go func() {
			frame := []byte{0, 0, 0, 20, 0, 18, 0, 3, 0, 0, 0, 1, 0, 4, 's', 'l', 'o', 'w', 0, 0, 0, 0}
			for _, c := range frame {
				select {
				case <-stopSlow:
					return
				case <-time.After(time.Second):
				}
				if _, err := slow.Write([]byte{c}); err != nil {
					return
				}
			}
		}()
	}
	pid := s.c.node(id).pid()
	fdsDuring, rssDuring := procUsage(pid)
	desc := fmt.Sprintf("%d idle connections to node %d (it holds %d fds, %d MiB resident)", len(conns), id, fdsDuring, rssDuring>>20)
	return desc, func() {
		close(stopSlow)
		if slow != nil {
			_ = slow.Close()
		}
		for _, c := range conns {
			_ = c.Close()
		}
		if rssDuring > 1<<30 {
			s.t.Errorf("chaos: node %d resident %d MiB under %d idle connections", id, rssDuring>>20, len(conns))
		}
		poll.Eventually(s.t, 60*time.Second, func() error {
			if fds, _ := procUsage(pid); fds > 1000 {
				return fmt.Errorf("node %d still holds %d fds after the storm", id, fds)
			}
			return nil
		})
	}
}

// procUsage is a process's open file descriptors and resident bytes.
func procUsage(pid int) (fds int, rss int64) {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			rss = kb << 10
		}
	}
	return len(ents), rss
}
