package testutil

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/controller"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// A broker's Close leaves no goroutine, no open file and no registration in
// etcd behind (DESIGN.md, Concurrency).
func TestBrokerCloseLeavesNothingBehind(t *testing.T) {
	etcd, err := controller.StartEmbedded(controller.EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	store, err := controller.Open(ctx, controller.Config{Endpoints: etcd.Endpoints(), Prefix: "/samsa", NodeID: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	// Let the etcd server and the observing store settle before counting.
	runtime.GC()
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)

	n := StartBroker(t, map[string]string{
		"etcd.endpoints":            etcd.Endpoints()[0],
		"auto.create.topics.enable": "true",
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics("leak"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "leak", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if fs := cl.PollFetches(ctx); len(fs.Records()) != 1 {
		t.Fatalf("consumed %d records, errors %v", len(fs.Records()), fs.Errors())
	}
	if bs, err := store.Brokers(ctx); err != nil || len(bs) != 1 {
		t.Fatalf("registered brokers %v, err %v; want the one broker", bs, err)
	}
	cl.Close()
	n.Stop()

	Eventually(t, 30*time.Second, func() error {
		if g := runtime.NumGoroutine(); g > goroutines {
			return fmt.Errorf("%d goroutines, %d before the broker started", g, goroutines)
		}
		if f := openFDs(t); f > fds {
			return fmt.Errorf("%d open files, %d before the broker started", f, fds)
		}
		bs, err := store.Brokers(ctx)
		if err != nil {
			return err
		}
		if len(bs) != 0 {
			return fmt.Errorf("still registered: %v", bs)
		}
		return nil
	})
}
