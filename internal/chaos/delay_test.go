package chaos

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/samsa-io/samsa/internal/poll"
)

// delayerQueue is the NFQUEUE number a namespace's delayer binds (queues
// are per namespace: every namespace has its own queue 7).
const delayerQueue = 7

// startDelayer starts a delayer (nfqueue_test.go) in namespace ns and
// waits until it has bound its queue; it is stopped when the test ends.
func startDelayer(t testing.TB, ns string, spec delaySpec) *proc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec.queue = delayerQueue
	p := &proc{name: "delayer in " + ns, ns: ns, argv: []string{self}, env: []string{delayerEnv + "=" + spec.String()}}
	p.start(t)
	t.Cleanup(func() { p.stop(syscall.SIGTERM) })
	poll.Eventually(t, 30*time.Second, func() error {
		if p.printed("delayer ready", time.Time{}) {
			return nil
		}
		if p.exited() {
			t.Fatalf("chaos: the delayer in %s exited: %s", ns, p.output())
		}
		return fmt.Errorf("the delayer in %s has not bound queue %d yet", ns, delayerQueue)
	})
	return p
}

// exited reports whether the process was started and has exited.
func (p *proc) exited() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// output is everything the process printed.
func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		b.WriteString(l.text + "\n")
	}
	return b.String()
}

// stopDelayer stops a delayer whose rules are gone and returns the figures
// it printed; a delayer that died before, which left its packets passing
// undelayed (--queue-bypass), fails the test.
func stopDelayer(t testing.TB, p *proc) string {
	t.Helper()
	if p.exited() {
		t.Errorf("chaos: the %s exited while its fault was on: %s", p.name, p.output())
	}
	p.stop(syscall.SIGTERM)
	var done string
	poll.Eventually(t, 10*time.Second, func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range p.lines {
			if strings.HasPrefix(l.text, "delayer done") {
				done = l.text
				return nil
			}
		}
		return fmt.Errorf("the %s has not printed its figures", p.name)
	})
	return done
}

// queueFrom sends what namespace ns receives from each of peers to its
// delayer's queue. It queues on the way in, not out: a packet held on its
// way out still counts against its socket's TCP small queues (netem orphans
// the packets it holds, a queue cannot), which would let a connection have
// two packets in flight per delay; on the way in the kernel has orphaned
// it. Each round trip over the links grows by the delay all the same. With
// --queue-bypass, packets pass undelayed when no delayer is bound, so a
// dead delayer never cuts the link.
func queueFrom(t testing.TB, ns string, peers []string) {
	t.Helper()
	for _, ip := range peers {
		must(t, "ip", "netns", "exec", ns, "iptables", "-A", chain, "-s", ip,
			"-j", "NFQUEUE", "--queue-num", strconv.Itoa(delayerQueue), "--queue-bypass")
	}
}

// delayLinks holds what namespace ns receives from each of peers as spec
// says (each round trip over those links grows by spec.delay, as with
// netem's delay on the peers' way to ns) and returns the heal: the rules
// removed, the delayer stopped.
func delayLinks(t testing.TB, ns string, peers []string, spec delaySpec) func() {
	t.Helper()
	p := startDelayer(t, ns, spec)
	queueFrom(t, ns, peers)
	return func() {
		heal(t, ns)
		t.Logf("chaos: %s: %s", p.name, stopDelayer(t, p))
	}
}

// latency delays every packet nodes ids get from their peers, the clients
// and etcd as spec says.
func (s *suite) latency(ids []int32, spec delaySpec) (string, func()) {
	var heals []func()
	var names []string
	for _, id := range ids {
		heals = append(heals, delayLinks(s.t, nodeNS(int(id)), append(s.peerIPs(id), clientIP, etcdIP), spec))
		names = append(names, strconv.Itoa(int(id)))
	}
	what := fmt.Sprintf("%v", spec.delay)
	if spec.jitter > 0 {
		what += fmt.Sprintf(" ±%v", spec.jitter)
	}
	if spec.loss > 0 {
		what += fmt.Sprintf(", %g%% dropped", 100*spec.loss)
	}
	return fmt.Sprintf("node %s's packets from peers, clients and etcd held %s", strings.Join(names, ", "), what), func() {
		for _, h := range heals {
			h()
		}
	}
}

// brokers is every broker's id.
func (s *suite) brokers() []int32 {
	var ids []int32
	for id := int32(1); id <= int32(len(s.c.nodes)); id++ {
		ids = append(ids, id)
	}
	return ids
}

// inNamespace runs f on a thread in network namespace ns, so that the
// sockets f opens are ns's (they stay so on any thread).
func inNamespace(t testing.TB, ns string, f func() error) {
	t.Helper()
	if err := inNamespaceErr(ns, f); err != nil {
		t.Fatal(err)
	}
}

// inNamespaceErr is inNamespace returning the error.
func inNamespaceErr(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // unlocked only if the thread is back in its namespace
		errc <- func() error {
			orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(orig)
			target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(target)
			if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("setns %s: %w", ns, err)
			}
			ferr := f()
			if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("setns back from %s: %w", ns, err)
			}
			runtime.UnlockOSThread()
			return ferr
		}()
	}()
	return <-errc
}

// echoServer echoes every connection to addr in namespace ns until the
// test ends.
func echoServer(t testing.TB, ns, addr string) {
	t.Helper()
	var ln net.Listener
	inNamespace(t, ns, func() (err error) {
		ln, err = net.Listen("tcp4", addr)
		return err
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, c); _ = c.Close() })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

// roundTrip dials addr and echoes a byte: how long the connect took and
// how long the echo.
func roundTrip(addr string) (connect, echo time.Duration, err error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp4", addr, 10*time.Second)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	connect = time.Since(start)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	start = time.Now()
	if _, err := c.Write([]byte{42}); err != nil {
		return 0, 0, err
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil || b[0] != 42 {
		return 0, 0, fmt.Errorf("echo: %v (got %d)", err, b[0])
	}
	return connect, time.Since(start), nil
}

// roundTrips is the connect and echo times of n round trips to addr.
func roundTrips(t *testing.T, addr string, n int) (connects, echoes []time.Duration) {
	t.Helper()
	for range n {
		c, e, err := roundTrip(addr)
		if err != nil {
			t.Fatalf("round trip to %s: %v", addr, err)
		}
		connects, echoes = append(connects, c), append(echoes, e)
	}
	return connects, echoes
}

// echoPayload sends n random bytes through the echo server at addr and
// checks they come back whole and in order; it returns how long that took.
func echoPayload(t *testing.T, addr string, n int) time.Duration {
	t.Helper()
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(rand.N(256))
	}
	start := time.Now()
	c, err := net.DialTimeout("tcp4", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	werr := make(chan error, 1)
	go func() { _, err := c.Write(want); werr <- err }()
	got := make([]byte, n)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading the echo of %d bytes: %v", n, err)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for got[i] == want[i] {
			i++
		}
		t.Fatalf("the %d bytes echoed differ from those sent at byte %d", n, i)
	}
	return time.Since(start)
}

// TestDelayer proves the delayer delays: TCP between the root namespace
// and a namespace that queues the packets it gets from there takes at least the delay
// longer per round trip and carries 1 MiB intact at TCP's pace; with the delayer killed
// the rules let packets through undelayed (--queue-bypass); UDP datagrams
// under jitter and loss arrive in the order sent, none sooner than delay -
// jitter, and about the fraction asked for lost; after the heal the round
// trip is as before.
func TestDelayer(t *testing.T) {
	requireRoot(t)
	claimRun(t)
	ns := nodeNS(1)
	setupNetwork(t, []string{ns}, []string{nodeIP(1)})
	addr := nodeIP(1) + ":7000"
	echoServer(t, ns, addr)
	median := func(ds []time.Duration) time.Duration { return slices.Sorted(slices.Values(ds))[len(ds)/2] }

	baseC, baseE := roundTrips(t, addr, 5)
	t.Logf("undelayed: connect %v, echo %v (medians of 5)", median(baseC), median(baseE))

	const d = 100 * time.Millisecond
	p := startDelayer(t, ns, delaySpec{delay: d})
	queueFrom(t, ns, []string{clientIP})
	cs, es := roundTrips(t, addr, 5)
	for i := range cs {
		if cs[i] < d || es[i] < d {
			t.Errorf("round trip %d under a %v delay: connect %v, echo %v; want each at least %v", i, d, cs[i], es[i], d)
		}
	}
	if m := median(es); m > d+250*time.Millisecond {
		t.Errorf("echo under a %v delay took %v (median), want about the delay", d, m)
	}
	took := echoPayload(t, addr, 1<<20)
	if took > 10*time.Second { // two packets per delay (held on the way out, TSQ) take 36 s
		t.Errorf("1 MiB took %v to echo under a %v delay: TCP held to a few packets per round trip", took, d)
	}
	t.Logf("delayed %v: connect %v, echo %v (medians of 5); 1 MiB echoed intact in %v", d, median(cs), median(es), took.Round(time.Millisecond))

	p.stop(syscall.SIGKILL) // the rule stays: the kernel must let the packets by
	cs, es = roundTrips(t, addr, 3)
	if m := slices.Min(es); m >= d {
		t.Errorf("with the delayer killed and its rule in place, the fastest echo took %v; want undelayed (--queue-bypass)", m)
	}
	t.Logf("delayer killed, rule kept: connect %v, echo %v (medians of 3)", median(cs), median(es))

	const jd, jj, loss, n = 50 * time.Millisecond, 20 * time.Millisecond, 0.1, 500
	p = startDelayer(t, ns, delaySpec{delay: jd, jitter: jj, loss: loss})
	delays := udpThrough(t, ns, n)
	if len(delays) < n*(1-2*loss) || len(delays) > n*(1-loss/2) {
		t.Errorf("%d of %d datagrams arrived at %g loss, want about %d", len(delays), n, loss, int(n*(1-loss)))
	}
	lo, hi := slices.Min(delays), slices.Max(delays)
	if lo < jd-jj {
		t.Errorf("a datagram arrived %v after it was sent, sooner than delay - jitter = %v", lo, jd-jj)
	}
	if hi-lo < jj/2 || hi > jd+jj+250*time.Millisecond {
		t.Errorf("datagram delays from %v to %v at %v ±%v: want a spread of at least %v around the delay", lo, hi, jd, jj, jj/2)
	}
	t.Logf("UDP at %v ±%v, %g loss: %d of %d arrived in order, delays %v to %v (median %v)",
		jd, jj, loss, len(delays), n, lo.Round(100*time.Microsecond), hi.Round(100*time.Microsecond), median(delays).Round(100*time.Microsecond))

	heal(t, ns)
	t.Logf("%s", stopDelayer(t, p))
	cs, es = roundTrips(t, addr, 3)
	if m := slices.Min(es); m >= d {
		t.Errorf("after the heal the fastest echo took %v; want undelayed", m)
	}
	t.Logf("healed: connect %v, echo %v (medians of 3)", median(cs), median(es))
}

// udpThrough sends n numbered datagrams, one every 4 ms, from the root
// namespace to node 1's address in namespace ns, then markers until one arrives (the queue is
// FIFO, so every datagram before it has arrived or was dropped), checks
// they arrived in the order sent, and returns how long each that arrived
// took.
func udpThrough(t *testing.T, ns string, n int) []time.Duration {
	t.Helper()
	var rx *net.UDPConn
	inNamespace(t, ns, func() (err error) {
		rx, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(nodeIP(1))})
		return err
	})
	defer rx.Close()
	_ = rx.SetReadBuffer(4 << 20)
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	epoch := time.Now()
	sent := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(4 * time.Millisecond)
		defer tick.Stop()
		b := make([]byte, 16)
		for seq := uint32(0); ; seq++ {
			select {
			case <-stop:
				sent <- nil
				return
			case <-tick.C:
			}
			binary.BigEndian.PutUint32(b, seq)
			binary.BigEndian.PutUint64(b[8:], uint64(time.Since(epoch)))
			if _, err := tx.Write(b); err != nil {
				sent <- err
				return
			}
		}
	}()
	var delays []time.Duration
	last := int64(-1)
	b := make([]byte, 64)
	_ = rx.SetReadDeadline(time.Now().Add(60 * time.Second))
	for {
		m, err := rx.Read(b)
		if err != nil {
			close(stop)
			t.Fatalf("reading datagrams (%d arrived): %v", len(delays), err)
		}
		at := time.Since(epoch)
		if m != 16 {
			t.Fatalf("a datagram of %d bytes, sent 16", m)
		}
		seq := int64(binary.BigEndian.Uint32(b))
		if seq <= last {
			t.Errorf("datagram %d arrived after %d", seq, last)
		}
		last = seq
		if seq >= int64(n) {
			break
		}
		delays = append(delays, at-time.Duration(binary.BigEndian.Uint64(b[8:])))
	}
	close(stop)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	return delays
}
