package main

// The cluster link case (bench -link): Apache Kafka (one KRaft node) as
// the source, one samsa broker as the destination, on the same machine:
//
//   - copy: linkMB of 1 KiB records (uncompressed) written to a topic of
//     linkPartitions partitions on Kafka first; then a link is created on
//     samsa and timed until every mirror partition ends where the source
//     does: MB/s (10^6 bytes of record values) from the link's creation,
//     its first look at the source (metadata.refresh.interval.ms 100)
//     and the mirror topic's creation included.
//   - lag: a steady produce of linkRate records/s to the source for
//     linkLagFor, acks=all; every 50 ms the source's end offsets are
//     noted, and the lag of a note is how long the mirror took to reach
//     all of them (its end offsets polled every 20 ms): p50, p99, max.
//
// MirrorMaker 2 beside it, on the same two brokers: the same copy and the
// same lag, of a fresh topic of the same data, by Kafka's MirrorMaker in
// dedicated mode (mm2.properties: source->target, IdentityReplicationPolicy
// so the names match, tasks.max 4, group offset syncs, checkpoints and
// heartbeats off) timed from the JVM's start. Its jars (connect-mirror and
// its dependencies, mm2.pom.xml) are resolved into .cache/mm2-libs on first
// use, apart from internal/kafkaref's shared .cache/kafka-libs.

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/admin"
	"github.com/samsa-io/samsa/internal/kafkaref"
)

//go:embed mm2.pom.xml
var mm2Pom []byte

const (
	linkPartitions  = 4
	linkRecordBytes = 1024
	linkTopic       = "mirror-bench"
	mm2Topic        = "mirror-bench-mm2"
)

type linkPlan struct {
	mb     int           // the copy's size
	rate   int           // records/s of the steady produce
	lagFor time.Duration // how long it runs
}

func makeLinkPlan(quick bool) linkPlan {
	if quick {
		return linkPlan{mb: 64, rate: 2000, lagFor: 8 * time.Second}
	}
	return linkPlan{mb: 256, rate: 5000, lagFor: 30 * time.Second}
}

// mirrorResult is one mirror's copy and lag.
type mirrorResult struct {
	copied     int64 // bytes of values
	copyWall   time.Duration
	firstAt    time.Duration // from the start to the first record on samsa
	lags       []time.Duration
	lagRecords int64
}

type linkResult struct {
	link, mm2 mirrorResult
	mm2Err    error
	mm2Ver    string
}

// topicEnds are topic's end offsets by partition.
func topicEnds(ctx context.Context, adm *kadm.Client, topic string) (map[int32]int64, error) {
	los, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	var ferr error
	los.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			ferr = o.Err
		}
		out[o.Partition] = o.Offset
	})
	return out, ferr
}

func reached(mirror, source map[int32]int64) bool {
	for p, e := range source {
		if mirror[p] < e {
			return false
		}
	}
	return true
}

func runLink(ctx context.Context, cfg config, samsaBin string, plan linkPlan) (linkResult, error) {
	var res linkResult
	kb, err := startKafka(ctx, cfg.tools.libs, filepath.Join(cfg.tmp, "link-kafka"), "", cfg.tools.tls)
	if err != nil {
		return res, err
	}
	defer kb.stop(30 * time.Second)
	sb, err := startSamsa(ctx, samsaBin, filepath.Join(cfg.tmp, "link-samsa"), "", "", cfg.tools.tls)
	if err != nil {
		return res, err
	}
	defer sb.stop(30 * time.Second)

	src, err := kgo.NewClient(kgo.SeedBrokers(kb.addr), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return res, err
	}
	defer src.Close()
	dst, err := admin.New([]string{sb.addr})
	if err != nil {
		return res, err
	}
	defer dst.Close()
	// The mirror's ends are polled every 20 ms while its topic may not exist
	// yet: with kgo's default MetadataMinAge an unknown topic stays unknown
	// to the poller for 5 s, which the copy's time would include.
	dpoll, err := kgo.NewClient(kgo.SeedBrokers(sb.addr), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return res, err
	}
	defer dpoll.Close()
	m := mirrorBench{src: src, sadm: kadm.NewClient(src), dadm: kadm.NewClient(dpoll), plan: plan}

	res.link, err = m.run(ctx, "link", linkTopic, func() (func(), error) {
		err := dst.AlterLink(ctx, "bench", map[string]string{"create": "", "source.bootstrap.servers": kb.addr,
			"topics": linkTopic, "metadata.refresh.interval.ms": "100"}, nil)
		if err != nil {
			return nil, fmt.Errorf("create the link: %w", err)
		}
		return func() {}, nil
	})
	if err != nil {
		return res, err
	}

	progress("mm2: resolving MirrorMaker 2's jars")
	libs, err := kafkaref.ResolvePom(ctx, cfg.root, "mm2-libs", mm2Pom, "connect-mirror-*.jar")
	if err != nil {
		res.mm2Err = err
		return res, nil
	}
	res.mm2Ver = jarVersion(libs, "connect-mirror-")
	dir := filepath.Join(cfg.tmp, "link-mm2")
	res.mm2, res.mm2Err = m.run(ctx, "mm2", mm2Topic, func() (func(), error) {
		return startMM2(ctx, libs, dir, kb.addr, sb.addr)
	})
	if res.mm2Err != nil {
		if out, err := os.ReadFile(filepath.Join(dir, "mm2.log")); err == nil {
			res.mm2Err = fmt.Errorf("%w; the end of MirrorMaker's log:\n%s", res.mm2Err, kafkaref.Tail(out, 20))
		}
	}
	return res, nil
}

// jarVersion is the version in the name of the jar of libs starting with
// prefix, "?" without one.
func jarVersion(libs, prefix string) string {
	m, _ := filepath.Glob(filepath.Join(libs, prefix+"[0-9]*.jar"))
	if len(m) == 0 {
		return "?"
	}
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m[0]), prefix), ".jar")
}

// startMM2 runs MirrorMaker 2 in dedicated mode from source (Kafka) to
// target (samsa), mirroring mm2Topic under its own name; the returned
// func stops it.
func startMM2(ctx context.Context, libs, dir, source, target string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	props := strings.Join([]string{
		"clusters = source, target",
		"source.bootstrap.servers = " + source,
		"target.bootstrap.servers = " + target,
		"source->target.enabled = true",
		"target->source.enabled = false",
		"source->target.topics = " + mm2Topic,
		"replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
		"tasks.max = " + fmt.Sprint(linkPartitions),
		"replication.factor = 1",
		"config.storage.replication.factor = 1",
		"offset.storage.replication.factor = 1",
		"status.storage.replication.factor = 1",
		"offset-syncs.topic.replication.factor = 1",
		"heartbeats.topic.replication.factor = 1",
		"checkpoints.topic.replication.factor = 1",
		"sync.group.offsets.enabled = false",
		"emit.checkpoints.enabled = false",
		"emit.heartbeats.enabled = false",
		"sync.topic.acls.enabled = false",
		"refresh.topics.interval.seconds = 5",
		"",
	}, "\n")
	path := filepath.Join(dir, "mm2.properties")
	if err := os.WriteFile(path, []byte(props), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "mm2.log"))
	if err != nil {
		return nil, err
	}
	cmd := kafkaref.Java(ctx, libs, []string{"-Xmx1g", "-Djava.awt.headless=true"},
		"org.apache.kafka.connect.mirror.MirrorMaker", path)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	return func() { stopMM2(cmd, logf) }, nil
}

func stopMM2(cmd *exec.Cmd, logf *os.File) {
	defer logf.Close()
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// mirrorBench runs the copy and the lag of one mirror of Kafka into samsa.
type mirrorBench struct {
	src        *kgo.Client
	sadm, dadm *kadm.Client
	plan       linkPlan
}

// run creates topic on Kafka, writes the copy's data to it, starts the
// mirror with start and times it until samsa's copy of topic ends where
// Kafka's does; then measures the lag under the steady produce.
func (m mirrorBench) run(ctx context.Context, name, topic string, start func() (stop func(), err error)) (mirrorResult, error) {
	var res mirrorResult
	if _, err := m.sadm.CreateTopic(ctx, linkPartitions, 1, nil, topic); err != nil {
		return res, fmt.Errorf("create %s on Kafka: %w", topic, err)
	}
	value := make([]byte, linkRecordBytes)
	n := m.plan.mb << 20 / linkRecordBytes
	progress("%s: writing %d MiB to Kafka", name, m.plan.mb)
	var wg sync.WaitGroup
	var perr error
	var mu sync.Mutex
	for range n {
		wg.Add(1)
		m.src.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				perr = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if perr != nil {
		return res, fmt.Errorf("produce to Kafka: %w", perr)
	}
	want, err := topicEnds(ctx, m.sadm, topic)
	if err != nil {
		return res, err
	}

	progress("%s: mirroring into samsa", name)
	t0 := time.Now()
	stop, err := start()
	if err != nil {
		return res, err
	}
	defer stop()
	for {
		got, err := topicEnds(ctx, m.dadm, topic)
		if res.firstAt == 0 && err == nil && reached(got, map[int32]int64{0: 1}) {
			res.firstAt = time.Since(t0)
		}
		if err == nil && reached(got, want) {
			break
		}
		if ctx.Err() != nil || time.Since(t0) > 10*time.Minute {
			return res, fmt.Errorf("the mirror did not catch up: %v of %v (%v)", got, want, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.copyWall = time.Since(t0)
	res.copied = int64(n) * linkRecordBytes

	progress("%s: lag under %d records/s for %s", name, m.plan.rate, m.plan.lagFor)
	type note struct {
		t    time.Time
		ends map[int32]int64
	}
	var notes []note
	var notesMu sync.Mutex
	lctx, cancel := context.WithTimeout(ctx, m.plan.lagFor)
	defer cancel()
	var produced atomic.Int64
	go func() { // the steady produce, in ticks of 10 ms
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		per := max(1, m.plan.rate/100)
		for {
			select {
			case <-lctx.Done():
				return
			case <-tick.C:
			}
			for range per {
				m.src.Produce(lctx, &kgo.Record{Topic: topic, Value: value}, nil)
			}
			produced.Add(int64(per))
		}
	}()
	go func() { // the source's ends, every 50 ms
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-tick.C:
			}
			t := time.Now()
			if e, err := topicEnds(lctx, m.sadm, topic); err == nil {
				notesMu.Lock()
				notes = append(notes, note{t, e})
				notesMu.Unlock()
			}
		}
	}()
	done := 0
	deadline := time.Now().Add(m.plan.lagFor + time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		got, err := topicEnds(ctx, m.dadm, topic)
		now := time.Now()
		notesMu.Lock()
		if err == nil {
			for done < len(notes) && reached(got, notes[done].ends) {
				res.lags = append(res.lags, now.Sub(notes[done].t))
				done++
			}
		}
		finished := lctx.Err() != nil && done == len(notes)
		notesMu.Unlock()
		if finished {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.lagRecords = produced.Load()
	if len(res.lags) == 0 {
		return res, fmt.Errorf("no lag measured")
	}
	return res, nil
}

func printLink(w io.Writer, r linkResult, plan linkPlan, version string, err error) {
	fmt.Fprintf(w, "\nCluster link, Apache Kafka (one KRaft node) into samsa %s (one broker), %d partitions, %d B records, uncompressed, same machine:\n\n",
		version, linkPartitions, linkRecordBytes)
	printMirror(w, "samsa's cluster link (the source's offsets)", "link creation", r.link, plan)
	if r.mm2Err == nil || r.mm2.copyWall > 0 {
		printMirror(w, "MirrorMaker "+r.mm2Ver+" dedicated mode, tasks.max "+fmt.Sprint(linkPartitions)+" (writes new offsets)",
			"the JVM's start", r.mm2, plan)
	}
	if r.mm2Err != nil {
		fmt.Fprintln(w, "  MirrorMaker 2 failed:", r.mm2Err)
	}
	if err != nil {
		fmt.Fprintln(w, "failed:", err)
	}
}

func printMirror(w io.Writer, name, from string, r mirrorResult, plan linkPlan) {
	if r.copyWall == 0 {
		return
	}
	fmt.Fprintf(w, "  %s:\n", name)
	fmt.Fprintf(w, "    copy of %d MB: %s, %.1f MB/s (%s to the mirror's end at the source's; first record after %s)\n",
		r.copied/1e6, r.copyWall.Round(time.Millisecond), float64(r.copied)/1e6/r.copyWall.Seconds(), from, fmtDur(r.firstAt))
	if rest := r.copyWall - r.firstAt; rest >= 100*time.Millisecond {
		fmt.Fprintf(w, "    from the first record on samsa to the end: %.1f MB/s\n", float64(r.copied)/1e6/rest.Seconds())
	}
	if len(r.lags) > 0 {
		s := slices.Clone(r.lags)
		slices.Sort(s)
		q := func(f float64) time.Duration { return s[min(len(s)-1, int(f*float64(len(s))))] }
		fmt.Fprintf(w, "    lag under %d records/s (%.1f MB/s) for %s: p50 %s, p99 %s, max %s (%d samples)\n",
			plan.rate, float64(plan.rate*linkRecordBytes)/1e6, plan.lagFor, fmtDur(q(0.5)), fmtDur(q(0.99)), fmtDur(s[len(s)-1]), len(s))
	}
}

// linkMain is bench -link.
func linkMain(ctx context.Context, cfg config, samsaBin, version string, quick bool) int {
	plan := makeLinkPlan(quick)
	r, err := runLink(ctx, cfg, samsaBin, plan)
	printLink(os.Stdout, r, plan, version, err)
	if err != nil {
		return 1
	}
	return 0
}
