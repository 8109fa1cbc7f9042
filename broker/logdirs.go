package broker

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/samsa-io/samsa/controller"
)

// A log directory fails as Kafka's does (LogDirFailureChannel, KIP-112):
// when one of its logs reports a storage error (an fsync, write or rename
// failing with EIO or ENOSPC), the whole directory goes offline. Its
// partitions stop being served here (KAFKA_STORAGE_ERROR), led or followed;
// the broker registers them as offline replicas, so that the controller
// elects other leaders and drops this broker from their ISRs; no new
// partition is placed there. The other directories keep serving. A restart
// tries the directory again. Unlike Kafka, a broker whose every directory
// failed keeps running, with every replica offline, instead of halting.

// logFailed is each log's logstore.Config.OnFailure: it must not block,
// so it only wakes logDirFailureLoop.
func (b *Broker) logFailed(dir string, err error) {
	b.log.Error("log directory failure", "log", dir, "err", err)
	select {
	case b.dirFailed <- struct{}{}:
	default:
	}
}

// onlineLogDirs are the log directories not taken offline.
func (b *Broker) onlineLogDirs() []string {
	b.offlineMu.Lock()
	defer b.offlineMu.Unlock()
	var out []string
	for _, d := range b.logDirs {
		if !b.offlineDirs[d] {
			out = append(out, d)
		}
	}
	return out
}

// logDirFailureLoop takes offline the directories of failed logs and
// their partitions, and registers the offline replicas, until ctx ends.
func (b *Broker) logDirFailureLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.dirFailed:
		}
		offline := b.takeFailedDirsOffline()
		for backoff := 100 * time.Millisecond; ctx.Err() == nil; backoff = min(2*backoff, 5*time.Second) {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := b.store.SetOfflineReplicas(rctx, offline)
			cancel()
			if err == nil {
				break
			}
			b.log.Warn("registering offline replicas", "err", err)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// takeFailedDirsOffline marks offline every directory holding a failed
// log, takes all their partitions offline, and returns every offline
// replica of this broker.
func (b *Broker) takeFailedDirsOffline() []controller.TopicPartition {
	ps := b.meta.allPartitions()
	b.offlineMu.Lock()
	for _, p := range ps {
		if p.Log.Failed() != nil {
			dir := filepath.Dir(p.Log.Dir())
			if !b.offlineDirs[dir] {
				b.log.Error("log directory offline: its partitions are no longer served here", "dir", dir)
			}
			b.offlineDirs[dir] = true
		}
	}
	var offline []controller.TopicPartition
	var newly []*partition
	for _, p := range ps {
		if !b.offlineDirs[filepath.Dir(p.Log.Dir())] {
			continue
		}
		offline = append(offline, controller.TopicPartition{Topic: p.Topic, Partition: p.ID})
		if !p.Offline() {
			newly = append(newly, p)
		}
	}
	all := len(b.offlineDirs) >= len(b.logDirs)
	b.offlineMu.Unlock()
	for _, p := range newly {
		p.SetOffline()
		b.replicas.ApplyRole(p)
	}
	if all {
		b.log.Error("every log directory is offline: no replica is served here", "log.dirs", b.logDirs)
	}
	slices.SortFunc(offline, func(x, y controller.TopicPartition) int {
		return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	return offline
}
