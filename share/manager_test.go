package share

import (
	"context"
	"testing"
	"time"
)

// A session ends with the connection that opened it, releasing what its
// member holds; a connection whose session was replaced (a new epoch 0 on
// another connection) or already ended ends nothing.
func TestManagerConnClosed(t *testing.T) {
	m := NewManager(Config{LockDuration: time.Hour})
	t.Cleanup(m.Close)
	tp := TP{Partition: 0}
	p, err := m.Partition(context.Background(), Key{Group: "g", Partition: 0}, func() int64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	open := func(member string, conn uint64) *Session {
		t.Helper()
		s, err := m.OpenSession("g", member, InitialEpoch, true, conn)
		if err != nil {
			t.Fatal(err)
		}
		m.Update(s, []TP{tp}, nil)
		return s
	}
	acquire := func(member string, first, last int64) int16 {
		t.Helper()
		got, _ := p.Acquire(member, []Batch{{Base: first, Last: last}}, 100, false, time.Now())
		if len(got) != 1 || got[0].First != first || got[0].Last != last {
			t.Fatalf("%s acquired %v, want %d-%d", member, got, first, last)
		}
		return got[0].Count
	}

	open("a", 1)
	acquire("a", 0, 4)
	m.ConnClosed(1)
	if n := acquire("b", 0, 4); n != 2 {
		t.Fatalf("after a's connection closed, b acquired 0-4 with delivery %d, want 2", n)
	}
	if _, err := m.OpenSession("g", "a", 1, true, 1); err == nil {
		t.Fatal("a's session outlived its connection")
	}

	// c reopens its session on connection 3: connection 2 closing is stale.
	open("c", 2)
	open("c", 3)
	acquire("c", 5, 9)
	m.ConnClosed(2)
	if got, _ := p.Acquire("d", []Batch{{Base: 5, Last: 9}}, 100, false, time.Now()); len(got) != 0 {
		t.Fatalf("a stale connection's close released %v", got)
	}
	if _, err := m.OpenSession("g", "c", 1, true, 3); err != nil {
		t.Fatalf("c's session on connection 3: %v", err)
	}
	m.ConnClosed(3)
	if _, err := m.OpenSession("g", "c", 2, true, 3); err == nil {
		t.Fatal("c's session outlived connection 3")
	}
	if len(m.conns) != 0 || len(m.sessions) != 0 {
		t.Fatalf("left %d connections, %d sessions", len(m.conns), len(m.sessions))
	}
}
