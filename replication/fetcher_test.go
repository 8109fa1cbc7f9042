package replication

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/samsa-io/samsa/logstore"
)

// followerLog opens a log in a temporary directory holding, for each
// (epoch, count) pair in turn, count records written under that epoch.
func followerLog(t *testing.T, epochs ...[2]int) *logstore.Log {
	t.Helper()
	l, err := logstore.Open(t.TempDir(), logstore.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for _, e := range epochs {
		recs := make([]logstore.Record, e[1])
		for i := range recs {
			recs[i] = logstore.Record{Timestamp: 1, Value: []byte("v")}
		}
		b, err := logstore.EncodeBatch(logstore.BatchSpec{BaseOffset: l.EndOffset(), PartitionLeaderEpoch: int32(e[0]),
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsFollower(b, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func TestTruncationOffset(t *testing.T) {
	tests := []struct {
		name        string
		ours        [][2]int // (epoch, records) of the follower's log
		leaderEpoch int32
		leaderEnd   int64
		target      int64
		done        bool
	}{
		// The fault seen: we led epoch 1 to 1449's equivalent (15 here);
		// the leader's epoch 1 ends at 12.
		{"our tail of the same epoch ran further", [][2]int{{0, 10}, {1, 5}}, 1, 12, 12, true},
		{"the leader's epoch ends past our end", [][2]int{{0, 10}, {1, 5}}, 1, 20, 15, true},
		// The leader names epoch 2, which we never had: cut to the end of
		// our epoch 1 (our largest up to 2), then ask again.
		{"an epoch we never had", [][2]int{{0, 10}, {1, 5}, {3, 4}}, 2, 30, 15, false},
		// Kafka answers an epoch older than all it knows with the start of
		// its first: nothing of ours is known to match.
		{"an epoch older than all of ours", [][2]int{{4, 10}}, 2, 7, 0, true},
		{"the leader knows no epoch of ours", [][2]int{{0, 10}}, -1, -1, 0, true},
	}
	for _, tt := range tests {
		l := followerLog(t, tt.ours...)
		target, done := truncationOffset(l, tt.leaderEpoch, tt.leaderEnd)
		if target != tt.target || done != tt.done {
			t.Errorf("%s: truncationOffset(epoch %d, end %d) = %d, %v; want %d, %v", tt.name, tt.leaderEpoch, tt.leaderEnd, target, done, tt.target, tt.done)
		}
	}
}

// A replica that became leader and wrote nothing holds an epoch that
// starts at its log end; when it follows again, truncating at its end
// drops that epoch, or it would report it as its last fetched epoch, be
// told it diverged, and never fetch again (Kafka's truncateTo does the
// same).
func TestTruncateAtTheEndDropsAnEmptyEpoch(t *testing.T) {
	l := followerLog(t, [2]int{0, 10}, [2]int{1, 5})
	if err := l.AssignEpoch(2); err != nil {
		t.Fatal(err)
	}
	if e := l.LatestEpoch(); e != 2 {
		t.Fatalf("latest epoch %d after AssignEpoch(2)", e)
	}
	// The new leader never had epoch 2: its epoch 1 ends at 15.
	target, done := truncationOffset(l, 1, 15)
	if target != 15 || !done {
		t.Fatalf("truncationOffset = %d, %v; want 15, true", target, done)
	}
	if end, err := l.TruncateTo(target); err != nil || end != 15 {
		t.Fatalf("TruncateTo(15) = %d, %v", end, err)
	}
	if e := l.LatestEpoch(); e != 1 {
		t.Fatalf("latest epoch %d after truncating at the end; want 1 (the empty epoch 2 dropped)", e)
	}
	if l.EndOffset() != 15 {
		t.Fatalf("log end %d, want 15: no record goes", l.EndOffset())
	}
}

// silentLeader listens for a leader that reads every request and answers
// none; it returns the address and the connections accepted.
func silentLeader(t *testing.T) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns := make(chan net.Conn, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c)
			conns <- c
		}
	}()
	return ln.Addr().String(), conns
}

// A leader that stops answering (its packets dropped by a partition) is
// given up on a few seconds after the fetch's wait, and dialled again, not
// after replica.socket.timeout.ms: here that timeout is an hour, and the
// fetcher must still come back with a new connection.
func TestFetcherDropsASilentLeader(t *testing.T) {
	addr, conns := silentLeader(t)
	m := NewManager(Config{
		NodeID:  2,
		Resolve: func(int32) (string, bool) { return addr, true },
		MaxWait: 100 * time.Millisecond,
		Timeout: time.Hour,
	})
	defer m.Close()
	l := followerLog(t, [2]int{0, 3})
	m.Follow(&Replica{Topic: "t", Partition: 0, Log: l}, 1, 0)
	deadline := time.After(60 * time.Second)
	for i := 0; i < 2; i++ {
		select {
		case c := <-conns:
			defer c.Close()
		case <-deadline:
			t.Fatalf("%d connections from the fetcher in 60 s; want a second one after the first went silent", i)
		}
	}
}

// Closing the manager while a request waits on a silent leader cuts the
// request short through its context; the fetcher then closes its
// connection, which must not race with (or be dereferenced, nil, by) the
// context's callback that cut it short. TestChaos crashed there when a
// broker was killed.
func TestFetcherCloseDuringARequest(t *testing.T) {
	addr, conns := silentLeader(t)
	l := followerLog(t, [2]int{0, 3})
	for range 30 {
		m := NewManager(Config{
			NodeID:  2,
			Resolve: func(int32) (string, bool) { return addr, true },
			MaxWait: 100 * time.Millisecond,
			Timeout: time.Hour,
		})
		m.Follow(&Replica{Topic: "t", Partition: 0, Log: l}, 1, 0)
		select {
		case c := <-conns:
			defer c.Close()
		case <-time.After(10 * time.Second):
			t.Fatal("no connection from the fetcher in 10 s")
		}
		m.Close()
	}
}
