package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// machine is a test Machine: Load waits for release (when set) and fails
// with loadErr; installed and unloaded count what the runtime did.
type machine struct {
	sync.Mutex
	sh        *Shard
	release   chan struct{}
	loadErr   error
	installed bool // guarded by the lock
	unloaded  bool // guarded by the lock
}

func (m *machine) Load(ctx context.Context) (func(), error) {
	if m.release != nil {
		select {
		case <-m.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if m.loadErr != nil {
		return nil, m.loadErr
	}
	return func() {
		if !m.sh.Active() {
			panic("install before the shard is active")
		}
		m.installed = true
	}, nil
}

func (m *machine) Unloaded() { m.unloaded = true }

type fixture struct {
	rt *Runtime[*machine]

	mu       sync.Mutex
	machines []*machine // every one made, in order
	hold     bool       // new machines wait for release
	failLoad error
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{}
	f.rt = New(Config[*machine]{Topic: "__test", AppendTimeout: 5 * time.Second, New: func(sh *Shard) *machine {
		f.mu.Lock()
		defer f.mu.Unlock()
		m := &machine{sh: sh, loadErr: f.failLoad}
		if f.hold {
			m.release = make(chan struct{})
		}
		f.machines = append(f.machines, m)
		return m
	}})
	t.Cleanup(f.rt.Close)
	return f
}

// waitActive polls until partition's shard is active (or fails).
func waitActive(t *testing.T, rt *Runtime[*machine], partition int32) *machine {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := rt.Get(partition)
		if err == nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition %d not active: %v", partition, err)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLoadAndUnloadByEpoch(t *testing.T) {
	f := newFixture(t)
	f.hold = true
	f.rt.SetOwned(map[int32]int32{0: 1})
	if _, err := f.rt.Get(0); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("loading shard: %v, want COORDINATOR_LOAD_IN_PROGRESS", err)
	}
	if _, loading := f.rt.Active(); !loading {
		t.Fatal("Active does not report the loading shard")
	}
	if _, err := f.rt.Get(1); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("unowned partition: %v, want NOT_COORDINATOR", err)
	}
	first := f.machines[0]
	close(first.release)
	if m := waitActive(t, f.rt, 0); m != first {
		t.Fatal("Get returned another machine")
	}
	first.Lock()
	if !first.installed {
		t.Error("the loaded state was not installed")
	}
	first.Unlock()

	// The same epoch again keeps the shard; a new epoch replaces it.
	f.rt.SetOwned(map[int32]int32{0: 1})
	if len(f.machines) != 1 {
		t.Fatalf("SetOwned with the same epoch made %d machines", len(f.machines))
	}
	f.hold = false
	f.rt.SetOwned(map[int32]int32{0: 2})
	first.Lock()
	gone, unloaded := first.sh.State() == Gone, first.unloaded
	first.Unlock()
	if !gone || !unloaded || first.sh.Context().Err() == nil {
		t.Fatalf("the epoch-1 shard was not unloaded (gone %v, unloaded %v)", gone, unloaded)
	}
	second := waitActive(t, f.rt, 0)
	if second == first || second.sh.Epoch() != 2 {
		t.Fatalf("active shard has epoch %d", second.sh.Epoch())
	}

	// Lost: unloaded at once.
	f.rt.SetOwned(map[int32]int32{})
	if _, err := f.rt.Get(0); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("lost partition: %v, want NOT_COORDINATOR", err)
	}
	if _, ok := f.rt.Lookup(0); ok {
		t.Fatal("Lookup finds a lost partition")
	}
}

func TestUnloadedWhileLoadingIsNotInstalled(t *testing.T) {
	f := newFixture(t)
	f.hold = true
	f.rt.SetOwned(map[int32]int32{0: 1})
	m := f.machines[0]
	f.rt.SetOwned(map[int32]int32{})
	close(m.release)
	f.rt.Close() // waits for the load
	m.Lock()
	defer m.Unlock()
	if m.installed || m.sh.State() != Gone {
		t.Fatalf("a shard unloaded while loading was installed (state %d)", m.sh.State())
	}
}

func TestLoadFailureGivesThePartitionUp(t *testing.T) {
	f := newFixture(t)
	f.failLoad = errors.New("unreadable")
	f.rt.SetOwned(map[int32]int32{0: 1})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := f.rt.Lookup(0); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a partition whose load failed is still owned")
		}
		time.Sleep(time.Millisecond)
	}
	f.failLoad = nil
	f.rt.SetOwned(map[int32]int32{0: 1}) // retried
	waitActive(t, f.rt, 0)
}

// TestStaleShardAppendRefused: a write queued in a shard that is unloaded
// before the writer reaches it is not appended, and one queued after is
// refused; both fail NOT_COORDINATOR.
func TestStaleShardAppendRefused(t *testing.T) {
	f := newFixture(t)
	f.rt.SetOwned(map[int32]int32{0: 1})
	m := waitActive(t, f.rt, 0)

	block, started := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	m.sh.Enqueue(Write{Append: func(ctx context.Context) error {
		close(started)
		<-block
		return nil
	}, Done: func(err error) { first <- err }})
	<-started
	appended := make(chan struct{}, 1)
	queued := make(chan error, 1)
	m.sh.Enqueue(Write{Append: func(context.Context) error {
		appended <- struct{}{}
		return nil
	}, Done: func(err error) { queued <- err }})

	f.rt.SetOwned(map[int32]int32{0: 2}) // a newer epoch: the shard is stale
	close(block)
	if err := <-first; err != nil {
		t.Fatalf("the write under way, which succeeded: %v", err)
	}
	if err := <-queued; !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("write queued before the unload: %v, want NOT_COORDINATOR", err)
	}
	select {
	case <-appended:
		t.Fatal("a write queued before the unload was appended after it")
	default:
	}
	late := make(chan error, 1)
	m.sh.Enqueue(Write{Append: func(context.Context) error {
		t.Error("a write queued after the unload was appended")
		return nil
	}, Done: func(err error) { late <- err }})
	if err := <-late; !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("write queued after the unload: %v, want NOT_COORDINATOR", err)
	}
	if err := m.sh.Append(func(ctx context.Context) error { return ctx.Err() }); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("direct append of an unloaded shard: %v, want NOT_COORDINATOR", err)
	}
}

// TestWritesInQueueOrder: writes queued under the machine's lock, from
// several goroutines, are appended one at a time in the order queued.
func TestWritesInQueueOrder(t *testing.T) {
	f := newFixture(t)
	f.rt.SetOwned(map[int32]int32{0: 1})
	m := waitActive(t, f.rt, 0)
	const n = 500
	var (
		queued   []int // guarded by m's lock
		mu       sync.Mutex
		appended []int // guarded by mu
		inFlight int   // guarded by mu
		overlap  bool  // guarded by mu
		wg       sync.WaitGroup
		senders  sync.WaitGroup
	)
	wg.Add(n)
	for w := range 4 {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for i := w; i < n; i += 4 {
				m.Lock() // as a coordinator changes its state and queues its record
				queued = append(queued, i)
				m.sh.Enqueue(Write{Append: func(context.Context) error {
					mu.Lock()
					inFlight++
					overlap = overlap || inFlight > 1
					mu.Unlock()
					mu.Lock()
					appended = append(appended, i)
					inFlight--
					mu.Unlock()
					return nil
				}, Done: func(error) { wg.Done() }})
				m.Unlock()
			}
		}()
	}
	senders.Wait()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	m.Lock()
	defer m.Unlock()
	if overlap {
		t.Error("two appends of one shard ran at once")
	}
	if fmt.Sprint(appended) != fmt.Sprint(queued) {
		t.Fatalf("appended in another order than queued:\n%v\n%v", appended, queued)
	}
}

func TestCloseWaitsAndRefusesGoroutines(t *testing.T) {
	f := newFixture(t)
	f.hold = true
	f.rt.SetOwned(map[int32]int32{0: 1, 1: 1})
	var ran sync.WaitGroup
	ran.Add(1)
	done := make(chan struct{})
	f.rt.Go(func() {
		ran.Done()
		<-f.rt.Context().Done()
		close(done)
	})
	ran.Wait()
	f.rt.Close()
	select {
	case <-done:
	default:
		t.Fatal("Close returned before a goroutine of the runtime ended")
	}
	if f.rt.Go(func() {}) {
		t.Fatal("Go started a goroutine after Close")
	}
	f.rt.SetOwned(map[int32]int32{2: 1})
	if _, ok := f.rt.Lookup(2); ok {
		t.Fatal("SetOwned after Close owns a partition")
	}
	for _, m := range f.machines {
		if m.sh.Context().Err() == nil {
			t.Fatal("a shard's context outlived Close")
		}
	}
}

func TestAppendError(t *testing.T) {
	for _, c := range []struct {
		err      error
		unloaded bool
		want     error
	}{
		{kerr.RequestTimedOut, true, kerr.NotCoordinator},
		{kerr.UnknownTopicOrPartition, false, kerr.CoordinatorNotAvailable},
		{kerr.NotEnoughReplicas, false, kerr.CoordinatorNotAvailable},
		{kerr.NotEnoughReplicasAfterAppend, false, kerr.CoordinatorNotAvailable},
		{kerr.RequestTimedOut, false, kerr.CoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, false, kerr.NotCoordinator},
		{kerr.KafkaStorageError, false, kerr.NotCoordinator},
		{fmt.Errorf("wrapped: %w", kerr.FencedLeaderEpoch), false, kerr.NotCoordinator},
		{kerr.UnknownLeaderEpoch, false, kerr.NotCoordinator},
		{kerr.MessageTooLarge, false, kerr.UnknownServerError},
		{kerr.RecordListTooLarge, false, kerr.UnknownServerError},
		{kerr.InvalidFetchSize, false, kerr.UnknownServerError},
		{kerr.CorruptMessage, false, kerr.CorruptMessage},
		{context.DeadlineExceeded, false, kerr.CoordinatorNotAvailable},
		{errors.New("other"), false, kerr.NotCoordinator},
	} {
		if got := AppendError(c.err, c.unloaded); got != c.want {
			t.Errorf("AppendError(%v, %v) = %v, want %v", c.err, c.unloaded, got, c.want)
		}
	}
}
