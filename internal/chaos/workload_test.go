package chaos

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/workload"
)

const (
	topic = "chaos"
	parts = 4
	group = "chaos-readers"
)

// newClient is a client of the brokers at addrs.
func newClient(addrs []string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RetryTimeout(60 * time.Second)}, opts...)...)
}

// startWorkload starts the Jepsen-style queue workload (internal/workload)
// on the brokers at addrs: producers of unique values, one goroutine per
// partition each so that a partition without a leader holds up no other,
// assign-mode and consumer-group readers, and a watcher of the group's
// committed offsets.
func startWorkload(addrs []string, producers, groupReaders, assignReaders int) (*workload.Workload, error) {
	return workload.Start(workload.Config{
		NewClient:     func(opts ...kgo.Opt) (*kgo.Client, error) { return newClient(addrs, opts...) },
		Topic:         topic,
		Partitions:    parts,
		Group:         group,
		Producers:     producers,
		GroupReaders:  groupReaders,
		AssignReaders: assignReaders,
		PerPartition:  true,
		WatchCommits:  true,
	})
}
