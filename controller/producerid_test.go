package controller

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

// Blocks allocated concurrently from several stores (brokers) and several
// goroutines each never overlap, are contiguous, and continue after the
// stores are reopened.
func TestProducerIDBlocksUnique(t *testing.T) {
	e := startEtcd(t)
	stores := []*Store{openStore(t, e, 1), openStore(t, e, 2), openStore(t, e, 3)}
	ctx := testCtx(t)
	const size, workers, each = 100, 9, 15
	var mu sync.Mutex
	var firsts []int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%len(stores)]
			for i := 0; i < each; i++ {
				first, err := s.AllocateProducerIDBlock(ctx, size)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				firsts = append(firsts, first)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(firsts) != workers*each {
		t.Fatalf("%d blocks", len(firsts))
	}
	slices.Sort(firsts)
	for i, f := range firsts {
		if f != int64(i)*size {
			t.Fatalf("block %d starts at %d, want %d (blocks %v)", i, f, int64(i)*size, firsts)
		}
	}

	// A new store (a restarted broker) continues after the last block.
	s := openStore(t, e, 4)
	first, err := s.AllocateProducerIDBlock(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(workers*each) * size; first != want {
		t.Errorf("after reopen: %d, want %d", first, want)
	}
	if _, err := s.AllocateProducerIDBlock(ctx, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("size 0: %v", err)
	}
}

func TestProducerIDsExhausted(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	if _, err := s.cli.Put(ctx, s.producerIDBlockKey(), `{"version":1,"broker":1,"block_start":"0","block_end":"9223372036854775800"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AllocateProducerIDBlock(ctx, 1000); !errors.Is(err, ErrProducerIDsExhausted) {
		t.Errorf("past 2^63: %v", err)
	}
	first, err := s.AllocateProducerIDBlock(ctx, 7)
	if err != nil || first != 9223372036854775801 {
		t.Errorf("last block: %d %v", first, err)
	}
	if _, err := s.AllocateProducerIDBlock(ctx, 1); !errors.Is(err, ErrProducerIDsExhausted) {
		t.Errorf("after the last id: %v", err)
	}
}

func TestProducerIDBlockCorrupt(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	if _, err := s.cli.Put(ctx, s.producerIDBlockKey(), `{"block_end":"x"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AllocateProducerIDBlock(ctx, 10); !errors.Is(err, ErrCorrupt) {
		t.Errorf("corrupt block: %v", err)
	}
}

// A block allocated above a floor starts past it, and the blocks after it
// follow it.
func TestProducerIDBlockAbove(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	for _, tt := range []struct{ floor, want int64 }{{-1, 0}, {5000, 5001}, {10, 5011}, {-1, 5021}} {
		first, err := s.AllocateProducerIDBlockAbove(ctx, 10, tt.floor)
		if err != nil || first != tt.want {
			t.Fatalf("AllocateProducerIDBlockAbove(10, %d) = %d, %v; want %d", tt.floor, first, err, tt.want)
		}
	}
}
