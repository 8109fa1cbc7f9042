package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/admin"
	"github.com/samsa-io/samsa/internal/cli"
	"github.com/samsa-io/samsa/internal/s3test"
	"github.com/samsa-io/samsa/internal/testutil"
)

// TestTieredVisible: what a tiered partition holds locally and remotely,
// its upload lag and its remote reads, as each surface shows them once
// the broker copied and deleted locally all it could:
//   - Kafka 4.4's kafka-log-dirs.sh reports the local log only, as
//     Kafka's ReplicaManager.describeLogDirs does (UnifiedLog.size(), the
//     local segments): the bytes of the .log files on disk;
//   - `samsa topic describe` (table and JSON) adds the remote bytes,
//     equal to the .log objects in the bucket, the upload lag and the
//     one-minute rate of remote fetches;
//   - /metrics has Kafka 4.4's RemoteStorageMetrics names (KIP-405,
//     KIP-930, KIP-963) per topic and samsa's per partition.
func TestTieredVisible(t *testing.T) {
	t.Parallel()
	topic := "tiered-visible"
	n, st := tieredBrokerWith(t, topic)
	cl := newKgo(t, n.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // several segments of 4 KiB
	const total = 60
	produceValues(t, cl, topic, 0, total)
	consumer := newKgo(t, n.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchMaxBytes(3000))

	// Settled: every segment copied and gone locally (the active one
	// rolled by local retention), and read back from the bucket.
	var desc admin.Topic
	testutil.Eventually(t, 60*time.Second, func() error {
		desc = describeTopicJSON(t, n.Addr(), topic)
		r := desc.Partitions[0].Remote
		switch {
		case desc.Tiered == nil || r == nil:
			return fmt.Errorf("samsa topic describe shows no remote log: %+v", desc)
		case r.CopyLagSegments != 0 || r.RemoteSegments == 0 || r.LocalStartOffset != total || r.CopiedEndOffset != total || r.LocalBytes != 0:
			return fmt.Errorf("not settled: %+v", *r)
		}
		return nil
	})
	consumeTieredValues(t, consumer, total)
	r := *desc.Partitions[0].Remote

	// The files of deleted segments go once no read holds them.
	var onDisk int64
	testutil.Eventually(t, 30*time.Second, func() error {
		if onDisk = fileBytes(t, n.PartitionDir(topic, 0), ".log"); onDisk != r.LocalBytes {
			return fmt.Errorf("the .log files hold %d bytes, the local log %d", onDisk, r.LocalBytes)
		}
		return nil
	})
	inBucket := bucketBytes(t, st, ".log")
	if desc.Partitions[0].Size != onDisk {
		t.Errorf("local bytes: size (DescribeLogDirs) %d, the .log files %d", desc.Partitions[0].Size, onDisk)
	}
	if r.RemoteBytes != inBucket || r.RemoteStartOffset != 0 || r.CopyLagBytes != 0 || r.DeleteLagSegments != 0 {
		t.Errorf("remote log %+v; the bucket's .log objects: %d bytes", r, inBucket)
	}
	if logDirs := kafkaLogDirs(t, n.Addr(), topic); logDirs[topic+"-0"] != onDisk {
		t.Errorf("kafka-log-dirs: %v, want %s-0 at %d (the local log)", logDirs, topic, onDisk)
	}

	testutil.Eventually(t, 30*time.Second, func() error { // the meter ticks every 5 s
		if desc = describeTopicJSON(t, n.Addr(), topic); desc.Tiered.RemoteFetchBytesPerSec <= 0 || desc.Tiered.RemoteCopyBytesPerSec <= 0 {
			return fmt.Errorf("remote rates %+v", *desc.Tiered)
		}
		return nil
	})
	var out bytes.Buffer
	ctx := testCtx(t, 30*time.Second)
	if code := cli.Run(ctx, []string{"topic", "describe", topic, "--bootstrap-server", n.Addr()}, cli.IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out}); code != 0 {
		t.Fatalf("samsa topic describe: exit %d\n%s", code, out.String())
	}
	for _, want := range []string{`(?m)^PARTITION\s+LEADER\s+EPOCH\s+REPLICAS\s+ISR\s+OFFLINE\s+START\s+END\s+LOCAL\s+REMOTE\s+UPLOAD LAG\s*$`,
		`(?m)^0\s+\d+\s+0\s+\d+\s+\d+\s+0\s+` + strconv.Itoa(total) + `\s+[0-9.]+K?i?B\s+[0-9.]+K?i?B\s+0B\s*$`,
		`(?m)^REMOTE FETCH [0-9.]+[KM]?i?B/s$`} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("samsa topic describe: no line %s in\n%s", want, out.String())
		}
	}

	body := scrapeText(n.Broker.HTTPAddr())
	metric := func(name string) string {
		m := regexp.MustCompile(`(?m)^kafka_server_brokertopicmetrics_` + name + `\{topic="` + topic + `"\} (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Errorf("/metrics: no %s of %s", name, topic)
			return ""
		}
		return m[1]
	}
	for name, want := range map[string]string{
		"remotelogsizebytes": strconv.FormatInt(inBucket, 10), "remotelogmetadatacount": strconv.FormatInt(r.RemoteSegments, 10),
		"remotecopylagbytes": "0", "remotecopylagsegments": "0", "remotedeletelagbytes": "0", "remotedeletelagsegments": "0",
		"remotecopyerrors_total": "0", "remotefetcherrors_total": "0",
	} {
		if got := metric(name); got != want {
			t.Errorf("/metrics: %s of %s is %s, want %s", name, topic, got, want)
		}
	}
	for _, name := range []string{"remotefetchbytes_total", "remotecopybytes_total", "remotelogsizecomputationtime"} {
		if got := metric(name); got == "" || name != "remotelogsizecomputationtime" && got == "0" {
			t.Errorf("/metrics: %s of %s is %q", name, topic, got)
		}
	}
	part := `{partition="0",topic="` + topic + `"} `
	if !strings.Contains(body, "samsa_tiered_remote_log_size_bytes"+part+strconv.FormatInt(inBucket, 10)+"\n") ||
		!strings.Contains(body, "samsa_tiered_remote_copy_lag_bytes"+part+"0\n") {
		t.Errorf("/metrics: no per-partition remote size %d and copy lag 0 of %s-0", inBucket, topic)
	}
}

// describeTopicJSON runs `samsa topic describe --format json`.
func describeTopicJSON(t *testing.T, addr, topic string) admin.Topic {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := cli.Run(testCtx(t, 30*time.Second), []string{"topic", "describe", topic, "--format", "json", "--bootstrap-server", addr},
		cli.IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}); code != 0 {
		t.Fatalf("samsa topic describe: exit %d: %s", code, errOut.String())
	}
	var d admin.Topic
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("samsa topic describe --format json: %v\n%s", err, out.String())
	}
	return d
}

// fileBytes sums the sizes of the files in dir whose names end in ext.
func fileBytes(t *testing.T, dir, ext string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if filepath.Ext(e.Name()) != ext {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// bucketBytes sums the sizes of the objects in st's bucket whose keys
// end in suffix.
func bucketBytes(t *testing.T, st *s3test.Store, suffix string) int64 {
	t.Helper()
	var n int64
	p := s3.NewListObjectsV2Paginator(st.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(st.Bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			if strings.HasSuffix(aws.ToString(o.Key), suffix) {
				n += aws.ToInt64(o.Size)
			}
		}
	}
	return n
}
