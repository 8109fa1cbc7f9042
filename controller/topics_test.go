package controller

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestCreateDuplicateDeleteRecreate(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)

	asg := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}
	id := mustCreate(t, s, "orders", asg, map[string]string{"cleanup.policy": "compact"})

	topics, rev, err := s.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rev <= 0 {
		t.Errorf("revision %d", rev)
	}
	tp := topics["orders"]
	if tp == nil || len(topics) != 1 {
		t.Fatalf("topics %v", topics)
	}
	if tp.ID != id || tp.Name != "orders" {
		t.Errorf("id/name %x %s", tp.ID, tp.Name)
	}
	if len(tp.Assignment) != 3 || !slices.Equal(tp.Assignment[1], []int32{2, 3, 1}) {
		t.Errorf("assignment %v", tp.Assignment)
	}
	if tp.Configs["cleanup.policy"] != "compact" || len(tp.Configs) != 1 {
		t.Errorf("configs %v", tp.Configs)
	}
	for p, st := range tp.Partitions {
		if st.Leader != asg[p][0] || st.LeaderEpoch != 0 || !slices.Equal(st.ISR, asg[p]) || st.Version <= 0 {
			t.Errorf("partition %d state %+v", p, st)
		}
	}

	// Duplicate, with another id: refused, first one untouched.
	if err := s.CreateTopic(ctx, "orders", NewUUID(), [][]int32{{1}}, nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	if got := mustTopic(t, s, "orders"); got.ID != id || len(got.Assignment) != 3 {
		t.Errorf("duplicate create changed the topic: %+v", got)
	}

	// A topic whose name extends another's is independent.
	mustCreate(t, s, "orders2", [][]int32{{1}}, nil)

	if err := s.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Topic(ctx, "orders"); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("Topic after delete: %v", err)
	}
	if err := s.DeleteTopic(ctx, "orders"); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("second delete: %v", err)
	}
	// No key of the topic is left; the other topic is intact.
	for _, k := range []string{s.topicKey("orders"), s.topicConfigKey("orders")} {
		r, err := s.cli.Get(ctx, k, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range r.Kvs {
			if string(kv.Key) == k || string(kv.Key[:len(k)+1]) == k+"/" {
				t.Errorf("key left after delete: %s", kv.Key)
			}
		}
	}
	if o2 := mustTopic(t, s, "orders2"); len(o2.Partitions) != 1 || o2.Partitions[0].Version == 0 {
		t.Errorf("orders2 damaged: %+v", o2)
	}

	// Re-create: a new id, new assignment, no old configs.
	id2 := mustCreate(t, s, "orders", [][]int32{{2}}, nil)
	got := mustTopic(t, s, "orders")
	if got.ID != id2 || got.ID == id || len(got.Partitions) != 1 || len(got.Configs) != 0 {
		t.Errorf("re-created topic %+v", got)
	}
}

func TestCreateTopicMarkedForDeletion(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	if _, err := s.cli.Put(ctx, s.deleteMarkerKey("t"), ""); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTopic(ctx, "t", NewUUID(), [][]int32{{1}}, nil); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("create of a topic marked for deletion: %v", err)
	}
}

func TestCreateTopicInvalid(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	tests := []struct {
		name string
		id   [16]byte
		asg  [][]int32
	}{
		{"", NewUUID(), [][]int32{{1}}},
		{"a/b", NewUUID(), [][]int32{{1}}},
		{"..", NewUUID(), [][]int32{{1}}},
		{"zero-id", [16]byte{}, [][]int32{{1}}},
		{"no-partitions", NewUUID(), nil},
		{"empty-replicas", NewUUID(), [][]int32{{1}, {}}},
		{"negative-replica", NewUUID(), [][]int32{{-1}}},
		{"duplicate-replica", NewUUID(), [][]int32{{1, 2, 1}}},
	}
	for _, tt := range tests {
		if err := s.CreateTopic(ctx, tt.name, tt.id, tt.asg, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: err %v, want ErrInvalid", tt.name, err)
		}
	}
	topics, _, err := s.Topics(ctx)
	if err != nil || len(topics) != 0 {
		t.Errorf("topics after invalid creates: %v %v", topics, err)
	}
}

func TestCreateTopicManyPartitions(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	asg := make([][]int32, 1000)
	for p := range asg {
		asg[p] = []int32{int32(p % 3), int32(p%3 + 1)}
	}
	mustCreate(t, s, "big", asg, nil)
	tp := mustTopic(t, s, "big")
	if len(tp.Partitions) != 1000 {
		t.Fatalf("%d partitions", len(tp.Partitions))
	}
	for p, st := range tp.Partitions {
		if st.Leader != asg[p][0] || st.Version == 0 {
			t.Fatalf("partition %d: %+v", p, st)
		}
	}
}

func TestAddPartitions(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	id := mustCreate(t, s, "t", [][]int32{{1, 2}, {2, 1}}, map[string]string{"a": "1"})
	before := mustTopic(t, s, "t")

	if err := s.AddPartitions(ctx, "t", [][]int32{{1, 2}, {2, 1}, {1, 2}}); err != nil {
		t.Fatal(err)
	}
	tp := mustTopic(t, s, "t")
	if tp.ID != id || len(tp.Assignment) != 5 || len(tp.Partitions) != 5 || tp.Configs["a"] != "1" {
		t.Fatalf("after add: %+v", tp)
	}
	for p := 0; p < 2; p++ {
		if tp.Partitions[p].Version != before.Partitions[p].Version {
			t.Errorf("partition %d state rewritten", p)
		}
	}
	for p := 2; p < 5; p++ {
		st := tp.Partitions[p]
		if st.Leader != tp.Assignment[p][0] || !slices.Equal(st.ISR, tp.Assignment[p]) || st.Version == 0 {
			t.Errorf("new partition %d: %+v", p, st)
		}
	}
	if err := s.AddPartitions(ctx, "nope", [][]int32{{1}}); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("unknown topic: %v", err)
	}
	if err := s.AddPartitions(ctx, "t", [][]int32{{1, 1}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad assignment: %v", err)
	}
	if err := s.AddPartitions(ctx, "t", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("nothing to add: %v", err)
	}
}

// Concurrent AddPartitions never lose or double a partition: every call
// either lands whole or returns ErrStale.
func TestAddPartitionsConcurrent(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	mustCreate(t, s, "t", [][]int32{{1}}, nil)
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.AddPartitions(ctx, "t", [][]int32{{1}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, ErrStale):
				t.Errorf("AddPartitions: %v", err)
			}
		}()
	}
	wg.Wait()
	tp := mustTopic(t, s, "t")
	if ok == 0 || len(tp.Partitions) != 1+ok {
		t.Fatalf("%d successful adds, %d partitions", ok, len(tp.Partitions))
	}
	for p, st := range tp.Partitions {
		if st.Version == 0 {
			t.Errorf("partition %d has no state", p)
		}
	}
}

func TestTopicConfig(t *testing.T) {
	e := startEtcd(t)
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	mustCreate(t, s, "t", [][]int32{{1}}, map[string]string{"a": "1", "b": "2"})

	if err := s.SetTopicConfig(ctx, "t", map[string]string{"c": "3"}); err != nil {
		t.Fatal(err)
	}
	if c := mustTopic(t, s, "t").Configs; len(c) != 1 || c["c"] != "3" {
		t.Errorf("after set: %v", c)
	}
	if err := s.SetTopicConfig(ctx, "t", nil); err != nil {
		t.Fatal(err)
	}
	if c := mustTopic(t, s, "t").Configs; c == nil || len(c) != 0 {
		t.Errorf("after clearing: %v", c)
	}
	if err := s.SetTopicConfig(ctx, "nope", map[string]string{"a": "1"}); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("unknown topic: %v", err)
	}
	if err := s.UpdateTopicConfig(ctx, "nope", func(m map[string]string) (map[string]string, error) { return m, nil }); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("update unknown topic: %v", err)
	}
	boom := errors.New("boom")
	if err := s.UpdateTopicConfig(ctx, "t", func(map[string]string) (map[string]string, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("update error: %v", err)
	}
}

// UpdateTopicConfig is a compare-and-set: concurrent read-modify-writes
// from several stores lose no update.
func TestTopicConfigCAS(t *testing.T) {
	e := startEtcd(t)
	stores := []*Store{openStore(t, e, 1), openStore(t, e, 2), openStore(t, e, 3)}
	ctx := testCtx(t)
	mustCreate(t, stores[0], "t", [][]int32{{1}}, map[string]string{"n": "0"})
	const perWorker = 10
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%len(stores)]
			for i := 0; i < perWorker; i++ {
				err := s.UpdateTopicConfig(ctx, "t", func(m map[string]string) (map[string]string, error) {
					n, err := strconv.Atoi(m["n"])
					if err != nil {
						return nil, err
					}
					m["n"] = strconv.Itoa(n + 1)
					m[fmt.Sprintf("w%d", w)] = "x"
					return m, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	c := mustTopic(t, stores[0], "t").Configs
	if c["n"] != strconv.Itoa(6*perWorker) || len(c) != 7 {
		t.Fatalf("configs after concurrent updates: %v", c)
	}
}

// With etcd's default --max-txn-ops (128), big topics are written in
// several fenced transactions and still come out whole.
func TestBigTopicsOnDefaultTxnLimit(t *testing.T) {
	e, err := StartEmbedded(EmbeddedConfig{Dir: t.TempDir() + "/etcd", MaxTxnOps: 128, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := openStore(t, e, 1)
	ctx := testCtx(t)
	asg := make([][]int32, 300)
	for p := range asg {
		asg[p] = []int32{int32(p % 5), int32(p%5 + 1)}
	}
	id := mustCreate(t, s, "big", asg, map[string]string{"a": "1"})
	if err := s.CreateTopic(ctx, "big", NewUUID(), asg, nil); !errors.Is(err, ErrTopicExists) {
		t.Errorf("duplicate: %v", err)
	}
	more := make([][]int32, 250)
	for p := range more {
		more[p] = []int32{7}
	}
	if err := s.AddPartitions(ctx, "big", more); err != nil {
		t.Fatal(err)
	}
	tp := mustTopic(t, s, "big")
	if tp.ID != id || len(tp.Partitions) != 550 || tp.Configs["a"] != "1" {
		t.Fatalf("topic: id %x, %d partitions, configs %v", tp.ID, len(tp.Partitions), tp.Configs)
	}
	for p, st := range tp.Partitions {
		if st.Version == 0 || st.Leader != tp.Assignment[p][0] {
			t.Fatalf("partition %d: %+v", p, st)
		}
	}
	if err := s.DeleteTopic(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	r, err := s.cli.Get(ctx, s.topicsPrefix(), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || r.Count != 0 {
		t.Errorf("keys left after delete: %d %v", r.Count, err)
	}
}
