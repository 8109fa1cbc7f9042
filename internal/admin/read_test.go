package admin_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/admin"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestReadPartition reads pages of a partition as the message browser does.
func TestReadPartition(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	recs := []*kgo.Record{{Topic: "orders", Partition: 1, Value: []byte("x")}, {Topic: "orders", Partition: 0, Value: []byte("a")}, {Topic: "orders", Partition: 0, Value: []byte("b")}}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c, err := admin.New([]string{n.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := map[int32][]string{0: {"a", "b"}, 1: {"x"}, 2: nil}
	for p, values := range want {
		ms, err := c.Read(ctx, "orders", p, admin.Target{Kind: "start"}, 10, 2*time.Second)
		if err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, string(m.Value))
		}
		if !slices.Equal(got, values) {
			t.Errorf("partition %d: read %q, want %q", p, got, values)
		}
	}
	// From offset 1, at most one: the last record of partition 0.
	ms, err := c.Read(ctx, "orders", 0, admin.Target{Kind: "offset", Offset: 1}, 1, 2*time.Second)
	if err != nil || len(ms) != 1 || ms[0].Offset != 1 || string(ms[0].Value) != "b" {
		t.Fatalf("from offset 1: %+v %v", ms, err)
	}
	if _, err := c.Read(ctx, "orders", 7, admin.Target{Kind: "start"}, 1, time.Second); !errors.Is(err, admin.ErrUnknownPartition) {
		t.Fatalf("partition 7 of 3: %v, want ErrUnknownPartition", err)
	}
}
