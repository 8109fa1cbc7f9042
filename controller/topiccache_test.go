package controller

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/samsa-io/samsa/internal/poll"
)

// cacheMatches reports how the topic cache of s differs from a fresh read
// of etcd.
func cacheMatches(t *testing.T, s *Store) error {
	t.Helper()
	ctx := testCtx(t)
	cached, _, err := s.CachedTopics(ctx)
	if err != nil {
		return err
	}
	fresh, _, err := s.Topics(ctx)
	if err != nil {
		return err
	}
	if len(cached) != len(fresh) {
		return fmt.Errorf("cache has %d topics, etcd %d", len(cached), len(fresh))
	}
	for name, f := range fresh {
		if c := cached[name]; !reflect.DeepEqual(c, f) {
			return fmt.Errorf("topic %s: cache %+v, etcd %+v", name, c, f)
		}
	}
	return nil
}

// The topic cache follows every kind of change another store makes (a
// create, a state, a config, added partitions, a delete and a re-create),
// equal to a fresh read each time; a topic that did not change stays the
// same value.
func TestTopicCacheFollowsChanges(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	other := openStore(t, e, 2)
	ctx := testCtx(t)
	mustCreate(t, other, "before", [][]int32{{1, 2}}, map[string]string{"retention.ms": "1"})
	if err := cacheMatches(t, s); err != nil {
		t.Fatal(err) // the first call reads etcd
	}
	steady, _, err := s.CachedTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	settle := func(what string) {
		t.Helper()
		poll.Eventually(t, 10*time.Second, func() error {
			if err := cacheMatches(t, s); err != nil {
				return fmt.Errorf("after %s: %w", what, err)
			}
			return nil
		})
	}

	mustCreate(t, other, "t", [][]int32{{1, 2}, {2, 1}, {1}}, nil)
	settle("create")
	st := mustTopic(t, other, "t").Partitions[1]
	st.ISR, st.LeaderEpoch = []int32{2}, st.LeaderEpoch+1
	rev, err := other.UpdatePartitionState(ctx, "t", 1, st)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AwaitTopics(ctx, rev); err != nil {
		t.Fatal(err)
	}
	got, _, err := s.CachedTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := got["t"].Partitions[1]; p.Version != rev || !slices.Equal(p.ISR, []int32{2}) {
		t.Errorf("after AwaitTopics(%d): state %+v", rev, p)
	}
	if got["before"] != steady["before"] {
		t.Error("a topic that did not change is a new value")
	}
	settle("state change")

	if err := other.SetTopicConfig(ctx, "t", map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	settle("config change")
	if err := other.AddPartitions(ctx, "t", [][]int32{{2}, {1, 2}}); err != nil {
		t.Fatal(err)
	}
	settle("added partitions")
	if err := other.DeleteTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	settle("delete")
	mustCreate(t, other, "t", [][]int32{{2}}, nil)
	settle("re-create")

	// ReloadTopics shows a write at once.
	mustCreate(t, other, "now", [][]int32{{1}}, nil)
	fresh, _, err := s.ReloadTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fresh["now"] == nil {
		t.Error("ReloadTopics does not show a topic created before it")
	}
	settle("reload")
}

// A watch callback comes for each change, and for one made between the
// snapshot and the start of the watch.
func TestWatchCachedTopicsFires(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	other := openStore(t, e, 2)
	ctx := testCtx(t)
	_, rev, err := s.CachedTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, other, "early", [][]int32{{1}}, nil)
	poll.Eventually(t, 10*time.Second, func() error {
		got, _, err := s.CachedTopics(ctx)
		if err != nil {
			return err
		}
		return errorIf(got["early"] == nil, "early not cached")
	})
	var c counter
	if err := s.WatchCachedTopics(ctx, rev, c.inc); err != nil {
		t.Fatal(err)
	}
	n := waitMore(t, &c, 0, "create before the watch")
	mustCreate(t, other, "t", [][]int32{{1, 2}}, nil)
	n = waitMore(t, &c, n, "create")
	st := mustTopic(t, other, "t").Partitions[0]
	st.ISR = []int32{1}
	if _, err := other.UpdatePartitionState(ctx, "t", 0, st); err != nil {
		t.Fatal(err)
	}
	waitMore(t, &c, n, "state change")
}

// When the cache's watch breaks (etcd's connection cut), the changes made
// meanwhile are read again once it is back.
func TestTopicCacheAfterCut(t *testing.T) {
	e := startEtcd(t)
	p := newTCPProxy(t, e.Endpoints()[0])
	s := openStoreAt(t, p.Endpoints(), 1)
	other := openStore(t, e, 2)
	ctx := testCtx(t)
	mustCreate(t, other, "a", [][]int32{{1}}, nil)
	poll.Eventually(t, 10*time.Second, func() error { return cacheMatches(t, s) })
	p.Cut()
	mustCreate(t, other, "b", [][]int32{{1, 2}}, nil)
	if err := other.DeleteTopic(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	p.Heal()
	poll.Eventually(t, 30*time.Second, func() error { return cacheMatches(t, s) })
}
