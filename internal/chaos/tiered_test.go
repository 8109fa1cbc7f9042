package chaos

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/samsa-io/samsa/internal/poll"
	"github.com/samsa-io/samsa/internal/s3test"
	"github.com/samsa-io/samsa/internal/workload"
	"github.com/samsa-io/samsa/tiered"
)

// Tiered storage's phases (issue 26). Every samsa node tiers to one
// versitygw (internal/s3test) that runs in the root namespace on
// 127.0.0.1, through the s3test fault proxy on the bridge (clientIP, a
// port of its own): the object store the nodes reach over the network,
// which a phase cuts with iptables in the nodes' namespaces (the proxy's
// port only) or makes hang a request it picks. The first tiered phase
// creates tieredTopic (RF3, 4 KiB segments, local.retention.bytes=0: a
// node keeps locally only what is not copied yet) and starts a second
// workload on it; TestChaos checks it after the last phase, reading every
// partition back from offset 0, the copied part from the bucket.

const (
	tieredTopic = "chaos-tiered"
	tieredParts = 2
)

// tieredProps are the nodes' settings for tiering through the store's
// fault proxy: the remote log manager every 500 ms, the store's calls
// given up after 5 s (15 s with retries).
func (c *cluster) tieredProps() map[string]string {
	return c.storeFault.TieredProps(
		"rsm.config.storage.s3.api.call.attempt.timeout", "5000",
		"rsm.config.storage.s3.api.call.timeout", "15000",
		"remote.log.manager.task.interval.ms", "500",
		"remote.log.manager.copier.thread.pool.size", "4")
}

// startStore starts the object store and its fault proxy on the bridge.
func (c *cluster) startStore() {
	c.store = s3test.Start(c.t, "chaos")
	c.storeFault = c.store.FaultyAt(c.t, net.JoinHostPort(clientIP, "0"))
}

// storePort is the fault proxy's port, the one the store's cut drops.
func (c *cluster) storePort() int {
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(c.storeFault.Endpoint, "http://"))
	n, _ := strconv.Atoi(port)
	return n
}

// tieredState is the tiered workload, started by the first tiered phase.
type tieredState struct {
	w  *workload.Workload
	id string // the topic id, base64url as in object keys and etcd keys
}

// tieredStart creates the tiered topic and starts its workload, once, and
// waits until every partition has a segment copied.
func (s *suite) tieredStart() *tieredState {
	if s.tiered != nil {
		return s.tiered
	}
	s.createTopics(tieredParts, map[string]*string{
		"remote.storage.enable":  kmsg.StringPtr("true"),
		"internal.segment.bytes": kmsg.StringPtr("4096"),
		"local.retention.bytes":  kmsg.StringPtr("0"),
	}, tieredTopic)
	var id [16]byte
	poll.Eventually(s.t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md, err := s.adm.Metadata(ctx, tieredTopic)
		if err != nil {
			return err
		}
		td := md.Topics[tieredTopic]
		if td.Err != nil {
			return td.Err
		}
		id = td.ID
		return nil
	})
	w, err := workload.Start(workload.Config{
		NewClient:     func(opts ...kgo.Opt) (*kgo.Client, error) { return newClient(s.c.addrs, opts...) },
		Topic:         tieredTopic,
		Partitions:    tieredParts,
		Producers:     1,
		AssignReaders: 1,
		PerPartition:  true,
	})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(w.Stop)
	s.tiered = &tieredState{w: w, id: base64.RawURLEncoding.EncodeToString(id[:])}
	poll.Eventually(s.t, 90*time.Second, func() error {
		for p, off := range s.tieredOffsets(-5) {
			if off < 0 {
				return fmt.Errorf("%s-%d: nothing copied yet", tieredTopic, p)
			}
		}
		return nil
	})
	return s.tiered
}

// tieredOffsets asks the leaders of the tiered topic's partitions for
// ListOffsets at timestamp ts (-4 earliest local, -5 latest tiered): the
// offset of each partition, or the test fails after 30 s.
func (s *suite) tieredOffsets(ts int64) map[int32]int64 {
	out := map[int32]int64{}
	poll.Eventually(s.t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = tieredTopic
		for p := range int32(tieredParts) {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, ts
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, s.cl)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("%s-%d: %w", tieredTopic, p.Partition, err)
				}
				out[p.Partition] = p.Offset
			}
		}
		if len(out) != tieredParts {
			return fmt.Errorf("%d partitions answered", len(out))
		}
		return nil
	})
	return out
}

// storeCut makes the object store unreachable from every node (its
// port dropped both ways) for the phase's hold. Meanwhile produce and
// local fetch go on, and no node deletes a local segment that is not
// copied whole (its local log starts at or below the copy's end); once
// healed, the copies resume.
func (s *suite) storeCut() (string, func()) {
	tw := s.tieredStart()
	tw.w.SetPhase("object store unreachable")
	start, reads := time.Now(), tw.w.Reads()
	for id := 1; id <= len(s.c.nodes); id++ {
		cutPorts(s.t, nodeNS(id), []string{clientIP}, s.c.storePort(), false, false)
	}
	return fmt.Sprintf("the object store (port %d) unreachable from every node", s.c.storePort()), func() {
		copied, local := s.tieredOffsets(-5), s.tieredOffsets(-4)
		for p := range int32(tieredParts) {
			if local[p] > copied[p]+1 {
				s.t.Errorf("store down: %s-%d's local log starts at %d, past the copy's end %d", tieredTopic, p, local[p], copied[p]+1)
			}
		}
		if acks := tw.w.AckTimes(start, time.Now())[-1]; len(acks) == 0 {
			s.t.Errorf("store down: no produce to %s acknowledged", tieredTopic)
		}
		if tw.w.Reads() == reads {
			s.t.Errorf("store down: nothing of %s read", tieredTopic)
		}
		for id := 1; id <= len(s.c.nodes); id++ {
			heal(s.t, nodeNS(id))
		}
		poll.Eventually(s.t, 90*time.Second, func() error {
			now := s.tieredOffsets(-5)
			for p := range int32(tieredParts) {
				if now[p] <= copied[p] {
					return fmt.Errorf("store healed: %s-%d still copied to %d", tieredTopic, p, now[p]+1)
				}
			}
			return nil
		})
	}
}

// killDuringUpload kills (SIGKILL) the leader of the tiered topic's
// partition 0 while it uploads a segment: its manifest, the last object
// of a copy, hangs at the store until the kill. The next leader carries
// on from the metadata: the segment killed half way is in no metadata
// and none of its objects stays, the remote segments follow each other
// without gap or overlap, and the bucket holds exactly their objects.
func (s *suite) killDuringUpload() (string, func()) {
	tw := s.tieredStart()
	tw.w.SetPhase("kill -9 leader during an upload")
	obj := tiered.Partition{Topic: tieredTopic, TopicID: tw.id, Partition: 0}
	prefix := fmt.Sprintf("/%s/%s-%s/0/", s.c.store.Bucket, tieredTopic, tw.id)
	s.c.storeFault.SetFor(s3test.Hang, func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, prefix) && strings.HasSuffix(r.URL.Path, ".manifest")
	})
	var held string
	poll.Eventually(s.t, 60*time.Second, func() error {
		if h := s.c.storeFault.Held(); len(h) > 0 {
			held = h[0]
			return nil
		}
		return errors.New("no manifest upload of partition 0 under way")
	})
	// The key's name is <base offset>-<segment id>.manifest.
	base, seg, _ := strings.Cut(strings.TrimSuffix(path.Base(held), ".manifest"), "-")
	leader := s.tieredLeader()
	s.c.node(leader).stop(syscall.SIGKILL)
	s.c.storeFault.Set(s3test.Pass)
	return fmt.Sprintf("kill -9 node %d, uploading segment %s (base %s) of %s-0", leader, seg, base, tieredTopic), func() {
		s.c.node(leader).start(s.t)
		poll.Eventually(s.t, 90*time.Second, func() error { return s.checkBucket(obj, seg) })
	}
}

// tieredLeader is the leader of the tiered topic's partition 0.
func (s *suite) tieredLeader() int32 {
	var leader int32
	poll.Eventually(s.t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md, err := s.adm.Metadata(ctx, tieredTopic)
		if err != nil {
			return err
		}
		if leader = md.Topics[tieredTopic].Partitions[0].Leader; leader < 1 {
			return fmt.Errorf("%s-0 has no leader", tieredTopic)
		}
		return nil
	})
	return leader
}

// checkBucket compares the bucket's objects of a partition with its
// remote log metadata: the segment killed (its id) is gone from both,
// the segments follow each other from the first, each has every object
// it records, and every object is of a segment recorded (copied, or
// being copied as the bucket was listed).
func (s *suite) checkBucket(obj tiered.Partition, killed string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys, err := s.bucketKeys(ctx, fmt.Sprintf("%s-%s/%d/", obj.Topic, obj.TopicID, obj.Partition))
	if err != nil {
		return err
	}
	md, err := s.remoteLogMetadata(ctx, obj)
	if err != nil {
		return err
	}
	named := map[string]bool{}
	for _, seg := range md.Copying {
		for _, k := range keys {
			named[k] = named[k] || strings.Contains(k, "-"+seg.ID+".")
		}
	}
	var errs []error
	at := int64(-1)
	for _, seg := range md.Segments {
		if at >= 0 && seg.StartOffset != at {
			errs = append(errs, fmt.Errorf("segment %s serves [%d, %d) after one ending at %d", seg.ID, seg.StartOffset, seg.EndOffset, at))
		}
		at = seg.EndOffset
		exts := []string{"manifest"}
		for ext := range seg.Sizes {
			exts = append(exts, ext)
		}
		for _, ext := range exts {
			k := seg.Key(obj, ext)
			if !slices.Contains(keys, k) {
				errs = append(errs, fmt.Errorf("segment %s's object %s missing", seg.ID, k))
			}
			named[k] = true
		}
	}
	for _, k := range keys {
		switch {
		case strings.Contains(k, "-"+killed+"."):
			errs = append(errs, fmt.Errorf("object %s of the segment killed half way left", k))
		case !named[k]:
			errs = append(errs, fmt.Errorf("object %s of no segment", k))
		}
	}
	for _, seg := range slices.Concat(md.Segments, md.Copying, md.Deleting) {
		if seg.ID == killed {
			errs = append(errs, fmt.Errorf("the segment killed half way still recorded: %+v", seg))
		}
	}
	if len(md.Segments) == 0 {
		errs = append(errs, errors.New("no remote segment recorded"))
	}
	return errors.Join(errs...)
}

// bucketKeys lists the bucket's keys under prefix.
func (s *suite) bucketKeys(ctx context.Context, prefix string) ([]string, error) {
	cl := s.c.store.Client()
	var keys []string
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String(s.c.store.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// remoteLogMetadata reads a partition's remote log metadata from etcd
// (controller's <root>/remote_log/<topic id>/<p>).
func (s *suite) remoteLogMetadata(ctx context.Context, obj tiered.Partition) (tiered.Metadata, error) {
	var md tiered.Metadata
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdAddr(1), etcdAddr(2), etcdAddr(3)}, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return md, err
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "", clientv3.WithFromKey())
	if err != nil {
		return md, err
	}
	suffix := fmt.Sprintf("/remote_log/%s/%d", obj.TopicID, obj.Partition)
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), suffix) {
			err := json.Unmarshal(kv.Value, &md)
			return md, err
		}
	}
	return md, fmt.Errorf("no etcd key ends with %s", suffix)
}

// checkTiered checks the tiered workload after the last phase: every
// acknowledged record read back from offset 0, each partition's old
// records from the bucket (its local log starts past them).
func (s *suite) checkTiered(ctx context.Context) {
	if s.tiered == nil {
		return
	}
	local := s.tieredOffsets(-4)
	vs, err := s.tiered.w.Check(ctx)
	for _, v := range vs {
		s.t.Errorf("VIOLATION in phase %q (%s): %s\n%s", v.Phase, tieredTopic, v, s.c.logsAround(v.At))
	}
	if err != nil {
		s.t.Errorf("%s: %v", tieredTopic, err)
	}
	for p, off := range local {
		if off == 0 {
			s.t.Errorf("%s-%d: the local log still starts at 0: nothing was read back from the bucket", tieredTopic, p)
		}
	}
	swept := 0
	for _, p := range s.c.nodes {
		swept += p.count("objects of no remote segment deleted")
	}
	s.t.Logf("chaos: %s: %s; local logs start at %v; %d sweeps deleted objects of no segment", tieredTopic, s.tiered.w.Summary(), local, swept)
}
