package broker

// Cordoning (KIP-1066, Kafka 4.3): cordoned.log.dirs, a static or dynamic
// broker config, names log directories that take no new partition (the
// Placer leaves them out), while the partitions already in them stay and
// keep serving. The broker registers its directories and the cordoned
// ones (controller.BrokerInfo); a broker whose every directory is
// cordoned is given no new replica: CreateTopics and CreatePartitions
// place none on it, and a manual assignment or reassignment naming it is
// INVALID_REPLICA_ASSIGNMENT, as Kafka's controller answers (Kafka 4.4
// answers INELIGIBLE_REPLICA only to an AlterPartition whose new ISR names
// an ineligible replica, never for cordoning).
// DescribeLogDirs reports IsCordoned, and AlterReplicaLogDirs refuses to
// move a replica into a cordoned directory. Uncordoning (the config
// deleted or changed) restores placement at once.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/config"
)

// cordonedDirs are this broker's cordoned log directories.
func (b *Broker) cordonedDirs() []string {
	b.cordonMu.Lock()
	defer b.cordonMu.Unlock()
	return slices.Clone(b.cordoned)
}

// applyCordon puts p's cordoned.log.dirs in effect: the Placer's, and
// the registration's when they changed. A stored value that does not
// name this broker's directories (AlterConfigs validated it against
// another broker's, at the cluster-wide default) cordons nothing. The
// etcd write runs under cordonApplyMu alone, so that the requests that
// read the registered directories (cordonedDirs) never wait for etcd.
func (b *Broker) applyCordon(ctx context.Context, p *config.Props) {
	dirs, err := p.CordonedLogDirs()
	if err != nil {
		b.log.Warn("dynamic broker configs: cordoning nothing", "err", err)
		dirs = nil
	}
	b.cordonApplyMu.Lock()
	defer b.cordonApplyMu.Unlock()
	if slices.Equal(dirs, b.cordonedDirs()) {
		return
	}
	b.placer.SetCordoned(dirs)
	if err := b.store.SetCordonedLogDirs(ctx, dirs); err != nil {
		b.log.Warn("registering cordoned log directories", "err", err)
		return // tried again at the next reload
	}
	b.cordonMu.Lock()
	b.cordoned = dirs
	b.cordonMu.Unlock()
	b.log.Info("cordoned log directories", "dirs", dirs)
}

// uncordoned are the brokers of bs that may take new replicas.
func uncordoned(bs []controller.BrokerInfo) []controller.BrokerInfo {
	return slices.DeleteFunc(slices.Clone(bs), controller.BrokerInfo.Cordoned)
}

// cordonRefusal is INVALID_REPLICA_ASSIGNMENT, with Kafka's message, when
// a manual assignment names a broker all of whose log directories are
// cordoned (the lowest such id, as Kafka checks them in order).
func cordonRefusal(bs []controller.BrokerInfo, assignment ...[]int32) error {
	var ids []int32
	for _, rs := range assignment {
		ids = append(ids, rs...)
	}
	slices.Sort(ids)
	for _, id := range ids {
		i := slices.IndexFunc(bs, func(bi controller.BrokerInfo) bool { return bi.ID == id })
		if i >= 0 && bs[i].Cordoned() {
			return &codedError{kerr.InvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes broker %d, but all its log directories are cordoned.", id)}
		}
	}
	return nil
}

// placementRefusal is INVALID_REPLICATION_FACTOR, with the message of
// Kafka's replica placer, when rf replicas cannot be placed on the usable
// (uncordoned) brokers. CreateTopics puts "Unable to replicate the
// partition <rf> time(s): " before it, CreatePartitions not.
func placementRefusal(rf, usable int, prefixed bool) error {
	var msg string
	switch {
	case usable == 0:
		msg = "All brokers are currently fenced, or have all their log directories cordoned."
	case rf > usable:
		msg = fmt.Sprintf("The target replication factor of %d cannot be reached because only %d broker(s) are registered or some brokers have all their log directories cordoned.", rf, usable)
	default:
		return nil
	}
	if prefixed {
		msg = fmt.Sprintf("Unable to replicate the partition %d time(s): %s", rf, msg)
	}
	return &codedError{kerr.InvalidReplicationFactor, msg}
}
