package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

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
//
// The process also runs the embedded etcd server, whose goroutines come and
// go (one pair per client stream, tickers, compaction): a goroutine count
// cannot tell them from the broker's. The check goes by stacks, as goleak
// does: every goroutine but those running before the broker started and
// those of the etcd and gRPC servers (serverSide) must be gone. Nothing
// else lives beside the broker while it runs: the registration is read by
// short-lived stores, closed before the check.
func TestBrokerCloseLeavesNothingBehind(t *testing.T) {
	etcd, err := controller.StartEmbedded(controller.EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	before, fds := goleak.IgnoreCurrent(), openFDs(t)

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
	if bs, err := brokers(ctx, etcd); err != nil || len(bs) != 1 {
		t.Fatalf("registered brokers %v, err %v; want the one broker", bs, err)
	}
	cl.Close()
	n.Stop()

	Eventually(t, 30*time.Second, func() error {
		if err := goleak.Find(append(serverSide, before)...); err != nil {
			return err
		}
		if f := openFDs(t); f > fds {
			return fmt.Errorf("%d open files, %d before the broker started", f, fds)
		}
		return nil
	})
	Eventually(t, 30*time.Second, func() error {
		bs, err := brokers(ctx, etcd)
		if err != nil {
			return err
		}
		if len(bs) != 0 {
			return fmt.Errorf("still registered: %v", bs)
		}
		return nil
	})
}

// brokers reads the registered brokers with a store of its own, closed
// before it returns.
func brokers(ctx context.Context, etcd *controller.Embedded) ([]controller.BrokerInfo, error) {
	store, err := controller.Open(ctx, controller.Config{Endpoints: etcd.Endpoints(), Prefix: "/samsa", NodeID: 99})
	if err != nil {
		return nil, err
	}
	bs, err := store.Brokers(ctx)
	return bs, errors.Join(err, store.Close())
}

// serverSide are the goroutines of the embedded etcd server and of the gRPC
// server inside it, which start and end with its clients' streams and its
// own timers: never the broker's (a client's goroutines run in
// go.etcd.io/etcd/client/v3 and google.golang.org/grpc's client side).
var serverSide = []goleak.Option{
	// Started by the server once it is ready, maybe after StartEmbedded
	// returned: its client listeners (cmux, HTTP, gRPC) and leader monitor.
	goleak.IgnoreAnyFunction("go.etcd.io/etcd/server/v3/embed.(*serveCtx).startHandler.func1"),
	goleak.IgnoreAnyFunction("go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).GoAttach.func1"),
	goleak.IgnoreTopFunction("go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc.monitorLeader.func1"),
}
