package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produced is what produce reports: records written per partition.
type produced struct {
	Topic      string                   `json:"topic"`
	Records    int64                    `json:"records"`
	Partitions map[int32]*offsetRange   `json:"partitions"`
	mu         sync.Mutex               `json:"-"`
	failed     atomic.Pointer[errorBox] `json:"-"`
}

type offsetRange struct {
	First int64 `json:"first_offset"`
	Last  int64 `json:"last_offset"`
}

type errorBox struct{ err error }

func runProduce(ctx context.Context, args []string, std IO) error {
	var c common
	fs := newFlags("produce", std, &c)
	var (
		keySep    = fs.String("key-separator", "", "split each line at the first `SEP` into key and value (default: no key)")
		partition = fs.Int("partition", -1, "write every record to this partition (-1: by key, else round robin)")
		file      = fs.String("file", "", "read the records from `PATH`, one a line, with a progress bar on stderr")
		acks      = fs.String("acks", "all", "acks: all, 1 or 0")
		progress  = fs.Bool("progress", true, "with --file, show a progress bar on stderr")
		maxLine   = fs.Int("max-line-bytes", 16<<20, "the longest line (record) read")
		headers   keyValues
	)
	fs.StringVar(keySep, "K", "", "short for --key-separator (kcat's -K)")
	fs.Var(&headers, "header", "a header `key=value` on every record (repeatable)")
	fs.Var(&headers, "H", "short for --header (kcat's -H)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("samsa produce: name one topic")
	}
	topic := pos[0]
	opts := []kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5 * time.Millisecond)}
	switch *acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return usageErr("--acks %q: expected all, 1 or 0", *acks)
	}
	if *partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	var in io.Reader = std.Stdin
	var size int64
	if *file != "" {
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		in, size = f, st.Size()
	}
	cl, err := c.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var hdrs []kgo.RecordHeader
	for _, kv := range headers.pairs() {
		hdrs = append(hdrs, kgo.RecordHeader{Key: kv[0], Value: []byte(kv[1])})
	}
	res := &produced{Topic: topic, Partitions: map[int32]*offsetRange{}}
	var read atomic.Int64 // bytes of input read
	stop := func() {}
	if *file != "" && *progress {
		stop = showProgress(std.Stderr, size, &read, &res.Records)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), *maxLine)
	var wg sync.WaitGroup
	for sc.Scan() {
		line := sc.Text()
		read.Add(int64(len(line)) + 1)
		r := &kgo.Record{Value: []byte(line), Headers: hdrs}
		if *keySep != "" {
			if k, v, ok := strings.Cut(line, *keySep); ok {
				r.Key, r.Value = []byte(k), []byte(v)
			}
		}
		if *partition >= 0 {
			r.Partition = int32(*partition)
		}
		wg.Add(1)
		cl.KGO.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			res.record(r, err)
		})
		if res.failed.Load() != nil {
			break
		}
	}
	scanErr := sc.Err()
	if err := cl.KGO.Flush(ctx); err != nil && scanErr == nil {
		scanErr = err
	}
	wg.Wait()
	stop()
	if b := res.failed.Load(); b != nil {
		return fmt.Errorf("produce to %s: %w (%d records written)", topic, b.err, res.Records)
	}
	if scanErr != nil {
		return scanErr
	}
	if c.format == "json" {
		return writeJSON(std.Stdout, res)
	}
	var rows [][]string
	ids := make([]int32, 0, len(res.Partitions))
	for p := range res.Partitions {
		ids = append(ids, p)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, p := range ids {
		o := res.Partitions[p]
		rows = append(rows, []string{topic, fmt.Sprint(p), fmt.Sprint(o.First), fmt.Sprint(o.Last)})
	}
	fmt.Fprintf(std.Stdout, "produced %d records to %s\n", res.Records, topic)
	if len(rows) == 0 {
		return nil
	}
	return table(std.Stdout, []string{"TOPIC", "PARTITION", "FIRST-OFFSET", "LAST-OFFSET"}, rows)
}

func (p *produced) record(r *kgo.Record, err error) {
	if err != nil {
		p.failed.CompareAndSwap(nil, &errorBox{err})
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Records++
	o := p.Partitions[r.Partition]
	if o == nil {
		o = &offsetRange{First: r.Offset, Last: r.Offset}
		p.Partitions[r.Partition] = o
	}
	o.First, o.Last = min(o.First, r.Offset), max(o.Last, r.Offset)
}

// showProgress draws a progress bar of read out of total bytes on w
// five times a second, until the returned stop is called.
func showProgress(w io.Writer, total int64, read *atomic.Int64, records *int64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	draw := func() {
		frac := 1.0
		if total > 0 {
			frac = min(float64(read.Load())/float64(total), 1)
		}
		const width = 30
		n := int(frac * width)
		fmt.Fprintf(w, "\r[%s%s] %3.0f%% %d bytes", strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100, read.Load())
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				draw()
				fmt.Fprintln(w)
				return
			case <-t.C:
				draw()
			}
		}
	}()
	return func() { close(done); <-finished }
}
