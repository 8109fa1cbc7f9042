package compat

// Tiered storage (KIP-405, issue 26) end to end: brokers with
// remote.log.storage.system.enable, a real versitygw as the bucket
// (internal/s3test), real clients. The bucket's manifests are the
// completeness check of what the leaders copied.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/s3test"
	"github.com/samsa-io/samsa/internal/testutil"
)

// tieredBrokerProps are server.properties of brokers tiering to st with
// Aiven's plugin's names, their remote log manager running every 100 ms.
func tieredBrokerProps(st *s3test.Store) map[string]string {
	props := tieredServerProps("true")
	maps.Copy(props, map[string]string{
		"rsm.config.storage.s3.bucket.name":        st.Bucket,
		"rsm.config.storage.s3.endpoint.url":       st.Endpoint,
		"rsm.config.storage.aws.access.key.id":     s3test.AccessKey,
		"rsm.config.storage.aws.secret.access.key": s3test.SecretKey,
		"remote.log.manager.task.interval.ms":      "100",
	})
	return props
}

// tieredTopicConfigs: remote storage on, 4 KiB segments.
func tieredTopicConfigs(extra ...string) map[string]*string {
	c := map[string]*string{"remote.storage.enable": strp("true"), "internal.segment.bytes": strp("4096")}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i]] = strp(extra[i+1])
	}
	return c
}

// remoteManifest is what a segment's manifest object records.
type remoteManifest struct {
	ID          string `json:"id"`
	StartOffset int64  `json:"start_offset"`
	EndOffset   int64  `json:"end_offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
}

// bucketManifests reads every manifest in the bucket and reports the
// objects no manifest names (a copy under way, or an orphan), in offset
// order.
func bucketManifests(ctx context.Context, st *s3test.Store) ([]remoteManifest, []string, error) {
	cl := st.Client()
	var ms []remoteManifest
	var keys []string
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String(st.Bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	for _, k := range keys {
		if !strings.HasSuffix(k, ".manifest") {
			continue
		}
		out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(k)})
		if err != nil {
			return nil, nil, err
		}
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil {
			return nil, nil, err
		}
		var m remoteManifest
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", k, err)
		}
		ms = append(ms, m)
	}
	var unnamed []string
	for _, k := range keys {
		if !slices.ContainsFunc(ms, func(m remoteManifest) bool { return strings.Contains(k, "-"+m.ID+".") }) {
			unnamed = append(unnamed, k)
		}
	}
	slices.SortFunc(ms, func(a, b remoteManifest) int { return int(a.StartOffset - b.StartOffset) })
	return ms, unnamed, nil
}

// waitCopied polls the bucket until its segments serve every offset from
// 0 to at least upTo exactly once, with no object outside a segment, and
// returns the manifests.
func waitCopied(t *testing.T, st *s3test.Store, upTo int64) []remoteManifest {
	t.Helper()
	var ms []remoteManifest
	testutil.Eventually(t, 60*time.Second, func() error {
		var unnamed []string
		var err error
		if ms, unnamed, err = bucketManifests(context.Background(), st); err != nil {
			return err
		}
		at := int64(0)
		for _, m := range ms {
			if m.StartOffset != at {
				return fmt.Errorf("segment %+v after offset %d: a gap or an overlap", m, at)
			}
			at = m.EndOffset
		}
		if at < upTo {
			return fmt.Errorf("copied up to %d, want %d", at, upTo)
		}
		if len(unnamed) > 0 {
			return fmt.Errorf("objects of no segment: %v", unnamed)
		}
		return nil
	})
	return ms
}

// produceValues produces n records of 400 bytes to partition 0 of topic,
// values numbered from first, acks=all, one batch each (so that 4 KiB
// segments roll every 9 records).
func produceValues(t *testing.T, cl *kgo.Client, topic string, first, n int) {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	for i := range n {
		r := &kgo.Record{Topic: topic, Value: tieredValue(first + i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// tieredValue is the value of the i-th record produceValues writes.
func tieredValue(i int) []byte { return fmt.Appendf(nil, "%06d-%s", i, strings.Repeat("v", 393)) }

// TestTieredUploadLeaderChange: the leader of a tiered partition copies
// its rolled segments to the bucket; after it is killed, the new leader
// continues from the remote log metadata, and the bucket's segments serve
// every offset once, with no object left that no segment names.
func TestTieredUploadLeaderChange(t *testing.T) {
	t.Parallel()
	st := s3test.Start(t, "tiered")
	c := testutil.StartCluster(t, 3, tieredBrokerProps(st))
	topic := "tiered-leader-change"
	createReplicatedTopic(t, c, topic, 1, 3, tieredTopicConfigs())
	cl := newClusterKgo(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	produceValues(t, cl, topic, 0, 100)
	first := waitCopied(t, st, 60)
	for _, m := range first {
		if m.LeaderEpoch != 0 {
			t.Errorf("segment %+v copied in epoch %d before any leader change", m, m.LeaderEpoch)
		}
	}

	old := waitLeader(t, c, topic, 0, -1, 30*time.Second).Leader
	c.Node(old).Kill()
	waitLeader(t, c, topic, 0, old, 60*time.Second)
	produceValues(t, cl, topic, 100, 100)
	ms := waitCopied(t, st, 160)
	if len(ms) <= len(first) || ms[len(ms)-1].LeaderEpoch == 0 {
		t.Errorf("after the leader change: %+v", ms)
	}
}
