package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/samsa-io/samsa/replication"
)

// A new leader's coordinator waits until what earlier leaders acknowledged
// is committed in its epoch; losing the leadership ends the wait.
func TestAwaitEpochCommitted(t *testing.T) {
	b := &Broker{nodeID: 1}
	p := &partition{topic: "t", moved: make(chan struct{})}
	p.lead = replication.NewLeader(1, []int32{1, 2}, 10, time.Now())
	p.hw.Store(5)
	done := make(chan error, 1)
	go func() { done <- b.awaitEpochCommitted(context.Background(), p) }()
	select {
	case err := <-done:
		t.Fatalf("returned %v below the epoch start", err)
	case <-time.After(50 * time.Millisecond):
	}
	p.hw.Store(10)
	p.signal()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting at the epoch start")
	}

	p.hw.Store(5)
	go func() { done <- b.awaitEpochCommitted(context.Background(), p) }()
	p.mu.Lock()
	p.lead = nil
	p.mu.Unlock()
	p.signal()
	select {
	case err := <-done:
		if !errors.Is(err, errNotLeader) {
			t.Fatalf("after losing the leadership: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after losing the leadership")
	}
}
