//go:build linux

package compat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/samsa-io/samsa/internal/poll"
)

// holdDialer dials real connections whose writes a test can hold back, as
// a network cut holds them in the client's kernel, and deliver later: the
// held bytes then arrive together with the close the client made
// meanwhile, as TCP retransmits them once the cut heals. While cut, new
// dials fail.
type holdDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []*heldConn
}

func (d *holdDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("holdDialer: cut")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	hc := &heldConn{TCPConn: c.(*net.TCPConn)}
	d.conns = append(d.conns, hc)
	return hc, nil
}

// setCut starts or ends the cut: while it lasts, every connection made so
// far holds what the client writes and what it closes.
func (d *holdDialer) setCut(cut bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = cut
	if cut {
		for _, c := range d.conns {
			c.mu.Lock()
			c.holding = true
			c.mu.Unlock()
		}
	}
}

// deliverAbandoned delivers, on each connection the client wrote to and
// then closed during the cut, what it wrote, with its close in the same
// segment, and waits until the broker has closed its end (it closes once
// it has read the close, after serving what came before it). It returns
// how many such connections there were.
func (d *holdDialer) deliverAbandoned(t *testing.T) int {
	t.Helper()
	d.mu.Lock()
	conns := append([]*heldConn(nil), d.conns...)
	d.mu.Unlock()
	n := 0
	for _, c := range conns {
		c.mu.Lock()
		held, closed := c.held, c.closed
		c.mu.Unlock()
		if !closed || len(held) == 0 {
			continue
		}
		n++
		raw, err := c.TCPConn.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		// Corked, the bytes wait in the socket and the FIN of the
		// shutdown rides on their segment.
		var serr error
		if err := raw.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, 1)
		}); err != nil || serr != nil {
			t.Fatalf("TCP_CORK: %v %v", err, serr)
		}
		if _, err := c.TCPConn.Write(held); err != nil {
			t.Fatal(err)
		}
		if err := c.TCPConn.CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if err := c.TCPConn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, c.TCPConn); err != nil {
			t.Fatalf("waiting for the broker to close the abandoned connection: %v", err)
		}
		_ = c.TCPConn.Close()
	}
	return n
}

// closeAll closes every connection the dialer made, for the test's end.
func (d *holdDialer) closeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		_ = c.TCPConn.Close()
	}
}

// heldConn is a holdDialer's connection.
type heldConn struct {
	*net.TCPConn

	mu      sync.Mutex
	holding bool   // guarded by mu
	held    []byte // guarded by mu; written while holding
	closed  bool   // guarded by mu; closed by the client while holding
}

func (c *heldConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	return c.TCPConn.Write(p)
}

func (c *heldConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding && len(c.held) > 0 {
		c.closed = true
		return nil
	}
	return c.TCPConn.Close()
}

// heldClient is a kgo client to addr dialing through a holdDialer, with
// short request and retry timeouts so that it gives up during a cut.
func heldClient(t *testing.T, addr string, opts ...kgo.Opt) (*holdDialer, *kgo.Client) {
	t.Helper()
	d := &holdDialer{}
	t.Cleanup(d.closeAll) // after the client's close
	opts = append([]kgo.Opt{kgo.Dialer(d.DialContext), kgo.RequestTimeoutOverhead(time.Second), kgo.RetryTimeout(2 * time.Second)}, opts...)
	return d, newKgo(t, addr, opts...)
}

// giveUp makes commit(at) during a cut, which must fail (the client gives
// up on its connection, the request held in it), and heals the cut.
func (d *holdDialer) giveUp(t *testing.T, ctx context.Context, what string, commit func(context.Context, int64) error, at int64) {
	t.Helper()
	d.setCut(true)
	cutCtx, cancel := context.WithTimeout(ctx, 4*time.Second)
	err := commit(cutCtx, at)
	cancel()
	if err == nil {
		t.Fatalf("%s %d during the cut succeeded", what, at)
	}
	d.setCut(false)
}

// TestOffsetCommitGivenUpNotApplied is the chaos suite's "committed
// offsets went back" after the group's coordinator was cut from its
// clients: a member commits offset 100 on a connection the cut holds; its
// client gives up on it (a request timeout) and closes it; after the heal
// the member commits 200 on a new connection; then the held commit
// arrives, with the close. Kafka applies it (the generation is current)
// and the group goes back to 100; samsa refuses a member's commit from an
// older connection than one its commits have come on since.
func TestOffsetCommitGivenUpNotApplied(t *testing.T) {
	const topic, group = "given-up", "given-up-group"
	n := grpBroker(t)
	adm := newAdmin(t, n.Addr())
	createTopic(t, adm, topic, 1, nil)
	id := topicID(t, adm, topic)

	d, cl := heldClient(t, n.Addr())

	// A member of a classic group, joined by hand so that nothing but
	// the test's commits goes to the coordinator.
	ctx := testCtx(t, 60*time.Second)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType = group, "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 60_000, 60_000
	jp := kmsg.NewJoinGroupRequestProtocol()
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{topic}
	jp.Name, jp.Metadata = "range", meta.AppendTo(nil)
	join.Protocols = append(join.Protocols, jp)
	joined, err := join.RequestWith(ctx, cl)
	if err == nil && joined.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = joined.MemberID
		joined, err = join.RequestWith(ctx, cl)
	}
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "JoinGroup", joined.ErrorCode, nil)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = group, joined.Generation, joined.MemberID
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	synced, err := sync.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "SyncGroup", synced.ErrorCode, nil)

	commit := func(ctx context.Context, at int64) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation, req.MemberID = group, joined.Generation, joined.MemberID
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, at, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	if err := commit(ctx, 10); err != nil {
		t.Fatalf("commit 10: %v", err)
	}

	d.giveUp(t, ctx, "commit", commit, 100)
	if err := commit(ctx, 200); err != nil {
		t.Fatalf("commit 200 after the heal: %v", err)
	}
	if got := d.deliverAbandoned(t); got == 0 {
		t.Fatal("the client closed no connection it had written to during the cut")
	}

	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := fetched.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("committed offset of %s-0: %+v (found %v)", topic, o, ok)
	}
	if o.At != 200 {
		t.Fatalf("committed offset went back from 200 to %d: the commit given up on was applied after the newer one", o.At)
	}

	// The member's commits on its newest connection are still applied.
	if err := commit(ctx, 300); err != nil {
		t.Fatalf("commit 300: %v", err)
	}
}

// TestTxnOffsetCommitGivenUpNotApplied is TestOffsetCommitGivenUpNotApplied
// for a transactional producer under transactions version 1, whose epoch
// stays the same from one transaction to the next: a TxnOffsetCommit of
// 100 sent into a cut is given up on and sent again; that transaction
// commits 100; the next one commits 200, and the held request, delivered
// with the close of its connection, arrives in between. It passes the
// transaction's verification (same producer id and epoch, the group's
// partition in the transaction), so Kafka holds it with the transaction's
// offsets and its marker moves the group back to 100; samsa refuses a
// producer's TxnOffsetCommit from an older connection than one its
// TxnOffsetCommits have come on since.
func TestTxnOffsetCommitGivenUpNotApplied(t *testing.T) {
	const topic, group, txnID = "txn-given-up", "txn-given-up-group", "txn-given-up-id"
	n := grpBroker(t)
	adm := newAdmin(t, n.Addr())
	createTopic(t, adm, topic, 1, nil)

	// Kafka 3.9's versions: EndTxn v4, transactions version 1.
	d, cl := heldClient(t, n.Addr(), kgo.MaxVersions(kversion.V3_9_0()))

	ctx := testCtx(t, 60*time.Second)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(txnID), 60_000
	inited, err := init.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "InitProducerID", inited.ErrorCode, nil)
	pid, epoch := inited.ProducerID, inited.ProducerEpoch

	// addOffsets retries CONCURRENT_TRANSACTIONS as clients do: EndTxn
	// answers once PrepareCommit is written, and the previous transaction
	// completes (markers, then CompleteCommit) after that, as in Kafka.
	addOffsets := func() {
		t.Helper()
		poll.Eventually(t, 10*time.Second, func() error {
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = txnID, pid, epoch, group
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); errors.Is(err, kerr.ConcurrentTransactions) {
				return err
			}
			wantCode(t, "AddOffsetsToTxn", resp.ErrorCode, nil)
			return nil
		})
	}
	commit := func(ctx context.Context, at int64) error {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txnID, group, pid, epoch
		req.Generation = -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, at, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	endTxn := func() {
		t.Helper()
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txnID, pid, epoch, true
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, "EndTxn", resp.ErrorCode, nil)
	}
	// committed waits for the group's committed offset to be want: the
	// marker that applies a transaction's offsets is written after EndTxn
	// answers. why says what another offset means.
	committed := func(want int64, why string) {
		t.Helper()
		poll.Eventually(t, 10*time.Second, func() error {
			fetched, err := adm.FetchOffsets(ctx, group)
			if err != nil {
				return err
			}
			o, ok := fetched.Lookup(topic, 0)
			if !ok || o.Err != nil {
				return fmt.Errorf("committed offset of %s-0: %+v (found %v)", topic, o, ok)
			}
			if o.At != want {
				return fmt.Errorf("committed %d, want %d: %s", o.At, want, why)
			}
			return nil
		})
	}

	// A first transaction: the client knows the group's coordinator.
	addOffsets()
	if err := commit(ctx, 10); err != nil {
		t.Fatalf("TxnOffsetCommit 10: %v", err)
	}
	endTxn()
	committed(10, "the first transaction's offset")

	addOffsets()
	d.giveUp(t, ctx, "TxnOffsetCommit", commit, 100)
	if err := commit(ctx, 100); err != nil {
		t.Fatalf("TxnOffsetCommit 100 after the heal: %v", err)
	}
	endTxn()
	committed(100, "the second transaction's offset")

	addOffsets()
	if err := commit(ctx, 200); err != nil {
		t.Fatalf("TxnOffsetCommit 200: %v", err)
	}
	if got := d.deliverAbandoned(t); got == 0 {
		t.Fatal("the client closed no connection it had written to during the cut")
	}
	endTxn()
	committed(200, "the TxnOffsetCommit given up on was applied with the next transaction")

	// The producer's TxnOffsetCommits on its newest connection are still
	// applied.
	addOffsets()
	if err := commit(ctx, 300); err != nil {
		t.Fatalf("TxnOffsetCommit 300: %v", err)
	}
	endTxn()
	committed(300, "the newest connection's TxnOffsetCommit")
}
