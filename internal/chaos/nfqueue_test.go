package chaos

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The delayer is this package's test binary re-executed in a namespace
// with delayerEnv set (as the etcd helper is): it binds an NFQUEUE number
// of the namespace and gives each packet the fault's rules queue there its
// ACCEPT verdict only after a delay, in the order the packets came: netem's
// delay without its reordering, for kernels without sch_netem. It writes
// the few nfnetlink_queue messages it needs itself (no Go library for them
// is on the module proxy here).
const delayerEnv = "SAMSA_CHAOS_DELAYER" // its delaySpec; set, the test binary is a delayer

// delaySpec is a delayer's fault: every packet is held delay plus a uniform
// jitter in [-jitter, jitter], but never released before a packet queued
// earlier; loss is the fraction dropped instead.
type delaySpec struct {
	queue  uint16
	delay  time.Duration
	jitter time.Duration
	loss   float64
}

func (d delaySpec) String() string {
	return fmt.Sprintf("queue=%d delay=%v jitter=%v loss=%g", d.queue, d.delay, d.jitter, d.loss)
}

func parseDelaySpec(s string) (delaySpec, error) {
	var d delaySpec
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "queue":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 16)
			d.queue = uint16(n)
		case "delay":
			d.delay, err = time.ParseDuration(v)
		case "jitter":
			d.jitter, err = time.ParseDuration(v)
		case "loss":
			d.loss, err = strconv.ParseFloat(v, 64)
		default:
			err = errors.New("unknown field")
		}
		if err != nil {
			return d, fmt.Errorf("delay spec %q: %s: %v", s, f, err)
		}
	}
	if d.delay < 0 || d.jitter < 0 || d.jitter > d.delay || d.loss < 0 || d.loss > 1 {
		return d, fmt.Errorf("delay spec %q: want 0 <= jitter <= delay and 0 <= loss <= 1", s)
	}
	return d, nil
}

// nfnetlink_queue's messages and attributes (linux/netfilter/nfnetlink_queue.h).
const (
	nfqnlMsgPacket       = 0
	nfqnlMsgVerdict      = 1
	nfqnlMsgConfig       = 2
	nfqnlMsgVerdictBatch = 3

	nfqaPacketHdr  = 1
	nfqaVerdictHdr = 2

	nfqaCfgCmd      = 1
	nfqaCfgParams   = 2
	nfqaCfgQueueMax = 3
	nfqaCfgMask     = 4
	nfqaCfgFlags    = 5

	nfqnlCfgCmdBind = 1
	nfqnlCopyMeta   = 1 // the packet's metadata only: a verdict needs just its id
	nfqaCfgFGSO     = 4 // queue GSO packets whole instead of segmenting them

	nfDrop   = 0
	nfAccept = 1

	// delayerQueueLen is the kernel queue's length (its default, 1024, is
	// less than a fast link holds for 100 ms); past it the kernel drops.
	delayerQueueLen = 1 << 17
)

// nfq is a netlink socket bound to one queue.
type nfq struct {
	fd    int
	queue uint16
	seq   uint32
}

func nlattr(typ uint16, payload []byte) []byte {
	b := make([]byte, 4, 4+len(payload)+3)
	binary.NativeEndian.PutUint16(b[0:], uint16(4+len(payload)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// msg is an nfnetlink_queue message: the netlink header, nfgenmsg (family
// AF_UNSPEC, version 0, the queue number) and the attributes.
func (q *nfq) msg(typ uint16, flags uint16, attrs ...[]byte) []byte {
	q.seq++
	b := make([]byte, 20)
	binary.NativeEndian.PutUint16(b[4:], unix.NFNL_SUBSYS_QUEUE<<8|typ)
	binary.NativeEndian.PutUint16(b[6:], unix.NLM_F_REQUEST|flags)
	binary.NativeEndian.PutUint32(b[8:], q.seq)
	b[16], b[17] = unix.AF_UNSPEC, unix.NFNETLINK_V0
	binary.BigEndian.PutUint16(b[18:], q.queue)
	for _, a := range attrs {
		b = append(b, a...)
	}
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	return b
}

func (q *nfq) send(b []byte) error {
	return unix.Sendto(q.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// config sends a config message and waits for the kernel's answer.
func (q *nfq) config(attrs ...[]byte) error {
	if err := q.send(q.msg(nfqnlMsgConfig, unix.NLM_F_ACK, attrs...)); err != nil {
		return err
	}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(q.fd, buf, 0)
		if err != nil {
			return err
		}
		for b := buf[:n]; len(b) >= 16; {
			l := int(binary.NativeEndian.Uint32(b))
			if l < 16 || l > len(b) {
				return fmt.Errorf("nfqueue: bad netlink message length %d", l)
			}
			typ, seq := binary.NativeEndian.Uint16(b[4:]), binary.NativeEndian.Uint32(b[8:])
			if typ == unix.NLMSG_ERROR && seq == q.seq && l >= 20 {
				if errno := int32(binary.NativeEndian.Uint32(b[16:])); errno != 0 {
					return syscall.Errno(-errno)
				}
				return nil
			}
			b = b[(l+3)&^3:]
		}
	}
}

// openQueue binds queue number n of the current network namespace.
func openQueue(n uint16) (*nfq, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("nfqueue: netlink socket: %w", err)
	}
	q := &nfq{fd: fd, queue: n}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nfqueue: bind: %w", err)
	}
	// Room for every packet the queue can hold: a message the socket has no
	// room for is lost (counted as an overrun), and its packet goes
	// undelayed with the next batch verdict, which covers every id up to it.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20)
	params := append(be32(0), nfqnlCopyMeta)
	steps := [][][]byte{
		{nlattr(nfqaCfgCmd, []byte{nfqnlCfgCmdBind, 0, 0, unix.AF_INET})},
		{nlattr(nfqaCfgParams, params), nlattr(nfqaCfgQueueMax, be32(delayerQueueLen)),
			nlattr(nfqaCfgFlags, be32(nfqaCfgFGSO)), nlattr(nfqaCfgMask, be32(nfqaCfgFGSO))},
	}
	for _, attrs := range steps {
		if err := q.config(attrs...); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("nfqueue: configuring queue %d: %w", n, err)
		}
	}
	return q, nil
}

// verdict gives packet id its verdict; batch gives it to every packet
// queued up to id.
func (q *nfq) verdict(id uint32, verdict uint32, batch bool) error {
	typ := uint16(nfqnlMsgVerdict)
	if batch {
		typ = nfqnlMsgVerdictBatch
	}
	return q.send(q.msg(typ, 0, nlattr(nfqaVerdictHdr, append(be32(verdict), be32(id)...))))
}

// packets reads the queue's packet messages and calls f with each packet's
// id, until the socket fails; overruns counts the ENOBUFS seen.
func (q *nfq) packets(f func(id uint32), overruns *int) error {
	buf := make([]byte, 1<<20)
	for {
		n, _, err := unix.Recvfrom(q.fd, buf, 0)
		switch {
		case errors.Is(err, unix.ENOBUFS):
			*overruns++
			continue
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		}
		for b := buf[:n]; len(b) >= 16; {
			l := int(binary.NativeEndian.Uint32(b))
			if l < 16 || l > len(b) {
				return fmt.Errorf("nfqueue: bad netlink message length %d", l)
			}
			if binary.NativeEndian.Uint16(b[4:]) == unix.NFNL_SUBSYS_QUEUE<<8|nfqnlMsgPacket && l >= 20 {
				for a := b[20:l]; len(a) >= 4; {
					al := int(binary.NativeEndian.Uint16(a))
					if al < 4 || al > len(a) {
						break
					}
					if binary.NativeEndian.Uint16(a[2:])&^(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER) == nfqaPacketHdr && al >= 8 {
						f(binary.BigEndian.Uint32(a[4:]))
					}
					a = a[(al+3)&^3:]
				}
			}
			b = b[(l+3)&^3:]
		}
	}
}

// held is a queued packet and when it is due.
type held struct {
	id   uint32
	due  time.Time
	drop bool
}

// delayerStats is what a delayer did, printed when it exits.
type delayerStats struct {
	packets, dropped, overruns int
	late                       time.Duration // the latest release after its due time
}

// runDelayer is the delayer process: it binds the spec's queue, prints
// "delayer ready", holds every packet as the spec says until SIGTERM, then
// releases what it holds and prints its figures.
func runDelayer() int {
	spec, err := parseDelaySpec(os.Getenv(delayerEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos delayer:", err)
		return 1
	}
	q, err := openQueue(spec.queue)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos delayer:", err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	ch := make(chan held, delayerQueueLen)
	var st delayerStats
	readErr := make(chan error, 1)
	go func() {
		var last time.Time
		readErr <- q.packets(func(id uint32) {
			h := held{id: id, due: time.Now().Add(spec.delay)}
			if spec.jitter > 0 {
				h.due = h.due.Add(time.Duration(rand.Int64N(int64(2*spec.jitter)+1)) - spec.jitter)
			}
			if h.due.Before(last) { // keep the order: netem without reordering
				h.due = last
			}
			last = h.due
			h.drop = spec.loss > 0 && rand.Float64() < spec.loss
			ch <- h
		}, &st.overruns)
	}()
	fmt.Println("delayer ready:", spec)

	// The releaser: packets come due in the order they were queued; those
	// due together get one batch verdict (it covers every id up to the
	// last), a dropped one a verdict of its own first.
	var accept uint32
	var pending bool
	flush := func() error {
		if !pending {
			return nil
		}
		pending = false
		return q.verdict(accept, nfAccept, true)
	}
	release := func(h held) error {
		st.packets++
		st.late = max(st.late, time.Since(h.due))
		if h.drop {
			st.dropped++
			if err := flush(); err != nil {
				return err
			}
			return q.verdict(h.id, nfDrop, false)
		}
		accept, pending = h.id, true
		return nil
	}
	timer := time.NewTimer(time.Hour)
	code := 0
	var next *held // the first packet held, taken from ch
loop:
	for {
		if next == nil {
			select {
			case h := <-ch:
				next = &h
			case <-sig:
				break loop
			case err := <-readErr:
				fmt.Fprintln(os.Stderr, "chaos delayer: reading the queue:", err)
				code = 1
				break loop
			}
		}
		if wait := time.Until(next.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-sig:
				break loop
			}
		}
		err := release(*next)
		next = nil
	due:
		for err == nil {
			select {
			case h := <-ch:
				if time.Until(h.due) > 0 {
					next = &h
					break due
				}
				err = release(h)
			default:
				break due
			}
		}
		if err == nil {
			err = flush()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos delayer: verdict:", err)
			code = 1
			break
		}
	}
	// Release what is held (its rules are gone by now) rather than leave
	// the kernel to drop it when the socket closes.
	if next != nil {
		_ = release(*next)
	}
	for more := true; more; {
		select {
		case h := <-ch:
			_ = release(h)
		default:
			more = false
		}
	}
	_ = flush()
	fmt.Printf("delayer done: %d packets, %d dropped, %d socket overruns, latest release %v after its due time\n",
		st.packets, st.dropped, st.overruns, st.late.Round(time.Microsecond))
	return code
}
