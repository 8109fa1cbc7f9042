package main

// The tiered section of -scale (issue 26): samsa with tiered storage on,
// its bucket a versitygw process on this machine (make versitygw), 1 KiB
// records, acks=1, segments of 16 MiB, the remote log manager every
// second:
//   - produce to a topic with remote.storage.enable and
//     local.retention.bytes 0, against the same produce to a topic
//     without: MB/s, and the broker's CPU-s/GB from the first record to
//     the last segment uploaded (the upload's cost included), beside
//     the upload's own MB/s over that time and versitygw's CPU;
//   - a consume from the start of that topic, all of it in the bucket
//     but its active segments, against the same consume of the local
//     topic from the page cache: MB/s and CPU-s/GB;
//   - a topic of one partition with local.retention.bytes 100 MB
//     written with 4 times the produce volume (2 GiB; 128 MiB with
//     -quick), unpaced, then at half the upload's MB/s above: the most
//     the partition's directory held on disk while it was written and
//     uploaded, sampled every 200 ms, and at the end. Local retention
//     deletes only uploaded segments, so a producer faster than the
//     upload fills the disk until the upload catches up, in Kafka too.
// Apache Kafka is not measured: tiered storage needs a
// RemoteStorageManager plugin, and the one Kafka ships
// (LocalTieredStorage, in the kafka-storage test jar) is not among the
// jars bench resolves.

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/samsa-io/samsa/internal/admin"
	"github.com/samsa-io/samsa/internal/kafkaref"
	"github.com/samsa-io/samsa/internal/procstat"
	"github.com/samsa-io/samsa/internal/s3test"
)

const (
	tieredParts        = 4
	tieredSegmentBytes = 16 << 20
	tieredLocalBytes   = 100_000_000 // the retention case's local.retention.bytes
)

// scaleTiered runs the tiered section on samsa; for Kafka it says why
// there is nothing to run.
func scaleTiered(ctx context.Context, cfg config, sp scalePlan, res *scaleResults, b, samsaBin, dir string) error {
	if b == "kafka" {
		return nil // noted below
	}
	res.loads = append(res.loads, "tiered: samsa alone; Kafka not measured: its only RemoteStorageManager, LocalTieredStorage (kafka-storage test jar), is not among the jars bench resolves")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gw, st, err := startVersitygw(ctx, dir)
	if err != nil {
		return err
	}
	defer gw.stop(10 * time.Second)
	httpPort, err := kafkaref.FreePorts(1)
	if err != nil {
		return err
	}
	props := st.TieredProps("remote.log.manager.task.interval.ms", "1000",
		"samsa.http.listener", "127.0.0.1:"+strconv.Itoa(httpPort[0]))
	var overrides []string
	for _, k := range slices.Sorted(maps.Keys(props)) {
		overrides = append(overrides, k+"="+props[k])
	}
	br, err := startSamsa(ctx, samsaBin, dir, "", "", cfg.tools.tls, overrides...)
	if err != nil {
		return err
	}
	defer br.stop(30 * time.Second)
	adm, err := admin.New([]string{br.addr})
	if err != nil {
		return err
	}
	defer adm.Close()
	t := tieredRun{ctx: ctx, cfg: cfg, res: res, br: br, adm: adm, gwPid: gw.pid(), dataDir: filepath.Join(dir, "data"),
		metricsURL: "http://127.0.0.1:" + strconv.Itoa(httpPort[0]) + "/metrics"}
	return t.run(sp.pinnedBytes/2, sp.pinnedBytes*2)
}

type tieredRun struct {
	ctx        context.Context
	cfg        config
	res        *scaleResults
	br         *broker
	adm        *admin.Client
	gwPid      int
	dataDir    string
	metricsURL string
}

func (t *tieredRun) set(figure, unit string, lowerBetter bool, v float64) {
	t.res.set("tiered", figure, unit, lowerBetter, "samsa", v)
}

func (t *tieredRun) run(bytes, retentionBytes int64) error {
	const size = 1024
	n := bytes / size
	// Eight segments a partition at least (-quick writes 32 MiB).
	seg := strconv.FormatInt(min(max(bytes/tieredParts/8, 1<<20), tieredSegmentBytes), 10)
	if err := t.create("local", tieredParts, "segment.bytes", seg); err != nil {
		return err
	}
	if err := t.create("tiered", tieredParts, "segment.bytes", seg, "remote.storage.enable", "true", "local.retention.bytes", "0"); err != nil {
		return err
	}
	pids := []int{t.br.pid}
	produce := func(topic string, records int64) loadSpec {
		return loadSpec{client: clientKgo, produce: true, addr: t.br.addr, topic: topic, records: records, size: size, acks: "1", linger: "default"}
	}
	fig := fmt.Sprintf("produce %s p=%d", fmtBytes(bytes), tieredParts)
	off, err := measureLoad(t.ctx, t.cfg, produce("local", n), pids)
	if err != nil {
		return err
	}
	t.set(fig+", tiering off", "MB/s", false, off.mbps)
	t.set(fig+", tiering off: broker CPU", "s/GB", true, off.cpuPerGB)

	began := time.Now()
	cpu0, err := cpuOf(pids)
	if err != nil {
		return err
	}
	gw0, err := procstat.CPUTime(t.gwPid)
	if err != nil {
		return err
	}
	on, err := t.cfg.tools.runLoad(t.ctx, produce("tiered", n), timeoutFor(bytes))
	if err != nil {
		return err
	}
	lag, err := t.uploaded("tiered", 0, 10*time.Minute)
	if err != nil {
		return err
	}
	took := lag.done.Sub(began)
	cpu1, err := cpuOf(pids)
	if err != nil {
		return err
	}
	gw1, err := procstat.CPUTime(t.gwPid)
	if err != nil {
		return err
	}
	remote := lag.remote
	gb := float64(on.bytes) / 1e9
	t.set(fig+", tiering on", "MB/s", false, on.mbps)
	t.set(fig+", on: CPU to last upload", "s/GB", true, (cpu1-cpu0).Seconds()/gb)
	t.set(fig+", on: upload", "MB/s", false, float64(remote)/1e6/took.Seconds())
	t.set(fig+", on: upload lag at its end", "MB", true, float64(lag.atEnd)/1e6)
	t.set(fig+", on: versitygw CPU", "s/GB", true, (gw1-gw0).Seconds()/gb)

	consume := func(topic string) loadSpec {
		return loadSpec{client: clientKgo, addr: t.br.addr, topic: topic, records: n, size: size}
	}
	cfig := fmt.Sprintf("consume %s p=%d", fmtBytes(bytes), tieredParts)
	local, err := measureLoad(t.ctx, t.cfg, consume("local"), pids)
	if err != nil {
		return err
	}
	t.set(cfig+", local (page cache)", "MB/s", false, local.mbps)
	t.set(cfig+", local: broker CPU", "s/GB", true, local.cpuPerGB)
	fetched0, err := t.remoteFetched("tiered")
	if err != nil {
		return err
	}
	fromRemote, err := measureLoad(t.ctx, t.cfg, consume("tiered"), pids)
	if err != nil {
		return err
	}
	fetched1, err := t.remoteFetched("tiered")
	if err != nil {
		return err
	}
	t.set(cfig+", remote", "MB/s", false, fromRemote.mbps)
	t.set(cfig+", remote: broker CPU", "s/GB", true, fromRemote.cpuPerGB)
	t.set(cfig+", remote: read from bucket", "%", false, 100*float64(fetched1-fetched0)/float64(max(fromRemote.bytes, 1)))

	// Unpaced, the producer outruns the upload, and local retention
	// deletes only what is uploaded; paced at half the upload's rate,
	// it does not.
	if err := t.retention("retained-unpaced", retentionBytes/size, 0); err != nil {
		return err
	}
	upload := float64(remote) / 1e6 / took.Seconds()
	return t.retention("retained-paced", retentionBytes/size, upload/2*1e6/size)
}

// retention writes records to a one-partition topic with
// local.retention.bytes 100 MB, at rate records/s (0: unpaced), and
// samples its directory's size on disk until every rolled segment is
// uploaded.
func (t *tieredRun) retention(topic string, records int64, rate float64) error {
	if err := t.create(topic, 1, "segment.bytes", strconv.Itoa(tieredSegmentBytes), "remote.storage.enable", "true",
		"local.retention.bytes", strconv.Itoa(tieredLocalBytes)); err != nil {
		return err
	}
	partDir := filepath.Join(t.dataDir, topic+"-0")
	var mu sync.Mutex
	var peak, last int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			n := dirBytes(partDir)
			mu.Lock()
			peak, last = max(peak, n), n
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	s := loadSpec{client: clientKgo, produce: true, addr: t.br.addr, topic: topic, records: records, size: 1024, acks: "1", linger: "default", rate: rate}
	timeout := timeoutFor(records * 1024)
	if rate > 0 {
		timeout += time.Duration(float64(records) / rate * float64(time.Second))
	}
	r, err := t.cfg.tools.runLoad(t.ctx, s, timeout)
	if err == nil {
		_, err = t.uploaded(topic, tieredLocalBytes, 10*time.Minute)
	}
	close(stop)
	<-sampled
	if err != nil {
		return err
	}
	pace := "unpaced"
	if rate > 0 {
		pace = fmt.Sprintf("at %.0f MB/s", rate*1024/1e6)
	}
	fig := fmt.Sprintf("%s %s p=1, local %d MB", fmtBytes(r.bytes), pace, tieredLocalBytes/1_000_000)
	t.set(fig+": most on disk", "MB", true, float64(peak)/1e6)
	t.set(fig+": on disk at end", "MB", true, float64(last)/1e6)
	t.set(fig+": produce", "MB/s", false, r.mbps)
	return nil
}

func (t *tieredRun) create(topic string, parts int32, kv ...string) error {
	configs := map[string]*string{}
	for i := 0; i+1 < len(kv); i += 2 {
		configs[kv[i]] = kadm.StringPtr(kv[i+1])
	}
	ctx, cancel := context.WithTimeout(t.ctx, 30*time.Second)
	defer cancel()
	r, err := t.adm.ADM.CreateTopic(ctx, parts, 1, configs, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

type uploadLag struct {
	atEnd  int64     // bytes rolled and not uploaded when the wait began
	remote int64     // bytes in the bucket at the end
	done   time.Time // when the last segment was in the bucket
}

// uploaded waits until every rolled segment of topic is in the bucket
// and local retention has deleted what it keeps no more (samsa topic
// describe's view, the REMOTE_LOG resource): no upload lag, at most
// localRetention bytes and the active segment left locally, and the
// copy's end unmoved for 3 s (a segment just rolled is not counted as
// lag until it is synced).
func (t *tieredRun) uploaded(topic string, localRetention int64, timeout time.Duration) (uploadLag, error) {
	deadline := time.Now().Add(timeout)
	var lag uploadLag
	first, lastEnd := true, int64(-1)
	for {
		ctx, cancel := context.WithTimeout(t.ctx, 30*time.Second)
		d, err := t.adm.Topic(ctx, topic)
		cancel()
		if err != nil {
			return lag, err
		}
		done := true
		var pending, remote, end int64
		for _, p := range d.Partitions {
			r := p.Remote
			if r == nil {
				done = false
				continue
			}
			pending += r.CopyLagBytes
			remote += r.RemoteBytes
			end += r.CopiedEndOffset
			if r.CopyLagSegments > 0 || r.LocalBytes > localRetention+tieredSegmentBytes {
				done = false
			}
		}
		if first {
			lag.atEnd, first = pending, false
		}
		switch {
		case !done || end != lastEnd:
			lag.done, lastEnd = time.Time{}, end
		case lag.done.IsZero():
			lag.done = time.Now()
		case time.Since(lag.done) >= 3*time.Second:
			lag.remote = remote
			return lag, nil
		}
		if time.Now().After(deadline) {
			return lag, fmt.Errorf("%s: not all uploaded after %v: %+v", topic, timeout, d.Partitions)
		}
		select {
		case <-t.ctx.Done():
			return lag, t.ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func processExited(p *brokerProc) bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// remoteFetched reads the broker's remotefetchbytes_total of topic from
// its /metrics.
func (t *tieredRun) remoteFetched(topic string) (int64, error) {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.metricsURL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	prefix := `kafka_server_brokertopicmetrics_remotefetchbytes_total{topic="` + topic + `"} `
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int64(f), err
		}
	}
	return 0, nil // nothing read from the bucket yet
}

// dirBytes sums the sizes of the files under dir (0 when it is not there).
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// startVersitygw runs versitygw (make versitygw) on a free loopback port
// over dir/bucket with a bucket "tiered", and returns it as a Store.
func startVersitygw(ctx context.Context, dir string) (*brokerProc, *s3test.Store, error) {
	bin, err := s3test.Binary()
	if err != nil {
		return nil, nil, err
	}
	ports, err := kafkaref.FreePorts(1)
	if err != nil {
		return nil, nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	root := filepath.Join(dir, "bucket")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, "--access", s3test.AccessKey, "--secret", s3test.SecretKey, "--region", s3test.Region,
		"--port", addr, "--quiet", "posix", root)
	p, err := startProc("versitygw", addr, filepath.Join(dir, "versitygw.log"), cmd)
	if err != nil {
		return nil, nil, err
	}
	st := s3test.Store{Endpoint: "http://" + addr, Bucket: "tiered"}
	cl := st.Client()
	deadline := time.Now().Add(time.Minute)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := cl.CreateBucket(cctx, &s3.CreateBucketInput{Bucket: aws.String(st.Bucket)})
		cancel()
		if err == nil {
			return p, &st, nil
		}
		if time.Now().After(deadline) || processExited(p) {
			_ = p.stop(5 * time.Second)
			return nil, nil, fmt.Errorf("versitygw at %s: %w; log tail:\n%s", addr, err, p.logTail(20))
		}
		select {
		case <-ctx.Done():
			_ = p.stop(5 * time.Second)
			return nil, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
