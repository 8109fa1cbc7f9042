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
// MirrorMaker 2 beside it (the comparison) needs Kafka's
// connect-mirror jars, which internal/kafkaref does not fetch yet.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/admin"
)

const (
	linkPartitions  = 4
	linkRecordBytes = 1024
	linkTopic       = "mirror-bench"
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

type linkResult struct {
	copied     int64 // bytes of values
	copyWall   time.Duration
	lags       []time.Duration
	lagRecords int64
}

// topicEnds are the bench topic's end offsets by partition.
func topicEnds(ctx context.Context, adm *kadm.Client) (map[int32]int64, error) {
	los, err := adm.ListEndOffsets(ctx, linkTopic)
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
	sadm := kadm.NewClient(src)
	if _, err := sadm.CreateTopic(ctx, linkPartitions, 1, nil, linkTopic); err != nil {
		return res, fmt.Errorf("create %s on Kafka: %w", linkTopic, err)
	}
	value := make([]byte, linkRecordBytes)
	n := plan.mb << 20 / linkRecordBytes
	progress("link: writing %d MiB to Kafka", plan.mb)
	var wg sync.WaitGroup
	var perr error
	var mu sync.Mutex
	for range n {
		wg.Add(1)
		src.Produce(ctx, &kgo.Record{Topic: linkTopic, Value: value}, func(_ *kgo.Record, err error) {
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
	want, err := topicEnds(ctx, sadm)
	if err != nil {
		return res, err
	}

	dst, err := admin.New([]string{sb.addr})
	if err != nil {
		return res, err
	}
	defer dst.Close()
	dadm := kadm.NewClient(dst.KGO)
	progress("link: mirroring into samsa")
	t0 := time.Now()
	if err := dst.AlterLink(ctx, "bench", map[string]string{"create": "", "source.bootstrap.servers": kb.addr,
		"topics": linkTopic, "metadata.refresh.interval.ms": "100"}, nil); err != nil {
		return res, fmt.Errorf("create the link: %w", err)
	}
	for {
		got, err := topicEnds(ctx, dadm)
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

	progress("link: lag under %d records/s for %s", plan.rate, plan.lagFor)
	type note struct {
		t    time.Time
		ends map[int32]int64
	}
	var notes []note
	var notesMu sync.Mutex
	lctx, cancel := context.WithTimeout(ctx, plan.lagFor)
	defer cancel()
	var produced atomic.Int64
	go func() { // the steady produce, in ticks of 10 ms
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		per := max(1, plan.rate/100)
		for {
			select {
			case <-lctx.Done():
				return
			case <-tick.C:
			}
			for range per {
				src.Produce(lctx, &kgo.Record{Topic: linkTopic, Value: value}, nil)
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
			if e, err := topicEnds(lctx, sadm); err == nil {
				notesMu.Lock()
				notes = append(notes, note{t, e})
				notesMu.Unlock()
			}
		}
	}()
	done := 0
	deadline := time.Now().Add(plan.lagFor + time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		got, err := topicEnds(ctx, dadm)
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
	if r.copyWall > 0 {
		fmt.Fprintf(w, "  copy of %d MB: %s, %.1f MB/s (link creation to the mirror's end at the source's)\n",
			r.copied/1e6, r.copyWall.Round(time.Millisecond), float64(r.copied)/1e6/r.copyWall.Seconds())
	}
	if len(r.lags) > 0 {
		s := slices.Clone(r.lags)
		slices.Sort(s)
		q := func(f float64) time.Duration { return s[min(len(s)-1, int(f*float64(len(s))))] }
		fmt.Fprintf(w, "  lag under %d records/s (%.1f MB/s) for %s: p50 %s, p99 %s, max %s (%d samples)\n",
			plan.rate, float64(plan.rate*linkRecordBytes)/1e6, plan.lagFor, fmtDur(q(0.5)), fmtDur(q(0.99)), fmtDur(s[len(s)-1]), len(s))
	}
	fmt.Fprintln(w, "  MirrorMaker 2: not measured (Kafka's connect-mirror jars are not fetched by internal/kafkaref)")
	if err != nil {
		fmt.Fprintln(w, "failed:", err)
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
