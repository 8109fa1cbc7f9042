package cli

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/admin"
)

func runConsume(ctx context.Context, args []string, std IO) error {
	var c common
	fs := newFlags("consume", std, &c)
	fs.Lookup("format").Usage = "`format` of each record: value (one value a line), json, or a kcat format string: " +
		"%t topic, %p partition, %o offset, %k key, %s value, %K/%S key/value length, %T timestamp (ms), %h headers, %x/%X key/value in hex, \\n \\t"
	fs.Lookup("format").DefValue, c.format = "value", "value"
	var (
		offset  = fs.String("offset", "start", "where to start: start, end, an offset, or @millis (the first record at or after that time); with --group, only where the group has no committed offset")
		group   = fs.String("group", "", "consume as a member of consumer group `G`, committing what was printed")
		num     = fs.Int("num", 0, "stop after `N` records (0: no limit)")
		atEnd   = fs.Bool("exit", false, "stop at the end of the partitions (their end offsets when consume started)")
		parts   strs
		maxWait = fs.Duration("fetch-max-wait", 0, "the fetch max wait (0: the client's default)")
	)
	fs.IntVar(num, "n", 0, "short for --num")
	fs.StringVar(offset, "o", "start", "short for --offset")
	fs.StringVar(group, "g", "", "short for --group")
	fs.BoolVar(atEnd, "e", false, "short for --exit (kcat's -e)")
	fs.Var(&parts, "partition", "consume only this partition (repeatable)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("samsa consume: name one topic")
	}
	topic := pos[0]
	if err := c.checkConn(); err != nil {
		return err
	}
	print, err := recordPrinter(c.format)
	if err != nil {
		return err
	}
	target, err := admin.ParseTarget(*offset)
	if err != nil {
		return usageErr("--offset %v", err)
	}
	var start kgo.Offset
	switch target.Kind {
	case "start":
		start = kgo.NewOffset().AtStart()
	case "end":
		start = kgo.NewOffset().AtEnd()
	case "offset":
		start = kgo.NewOffset().At(target.Offset)
	case "timestamp":
		start = kgo.NewOffset().AfterMilli(target.Millis)
	}
	var partIDs []int32
	for _, p := range parts {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return usageErr("--partition %q: expected a partition number", p)
		}
		partIDs = append(partIDs, int32(n))
	}
	opts := []kgo.Opt{kgo.ConsumeResetOffset(start)}
	if *maxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(*maxWait))
	}
	switch {
	case *group != "" && len(partIDs) > 0:
		return usageErr("--group and --partition: a group member is assigned its partitions")
	case *group != "":
		opts = append(opts, kgo.ConsumerGroup(*group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	case len(partIDs) > 0:
		m := map[int32]kgo.Offset{}
		for _, p := range partIDs {
			m[p] = start
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: m}))
	default:
		opts = append(opts, kgo.ConsumeTopics(topic))
	}
	cl, err := c.client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	// --exit: the end offsets now, and how far each partition has to go.
	var remaining map[int32]int64
	if *atEnd {
		ends, err := cl.ADM.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if err := ends.Error(); err != nil {
			return err
		}
		remaining = map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) {
			if len(partIDs) == 0 || slices.Contains(partIDs, o.Partition) {
				remaining[o.Partition] = o.Offset
			}
		})
		if err := trimCaughtUp(ctx, cl, *group, topic, target, remaining); err != nil {
			return err
		}
	}
	w := bufio.NewWriter(std.Stdout)
	defer w.Flush()
	var printed []*kgo.Record
	count := 0
	for (*num == 0 || count < *num) && (remaining == nil || len(remaining) > 0) {
		fs := cl.KGO.PollRecords(ctx, max(*num-count, 0))
		if ctx.Err() != nil {
			break
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return ferr
		}
		for _, r := range fs.Records() {
			if *num > 0 && count >= *num {
				break
			}
			if remaining != nil {
				end, ok := remaining[r.Partition]
				if !ok || r.Offset >= end {
					continue
				}
				if r.Offset+1 >= end {
					delete(remaining, r.Partition)
				}
			}
			if err := print(w, r); err != nil {
				return err
			}
			count++
			printed = append(printed, r)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if *group != "" && len(printed) > 0 {
		cctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		if err := cl.KGO.CommitRecords(cctx, printed...); err != nil {
			return fmt.Errorf("committing the group's offsets: %w", err)
		}
	}
	return nil
}

// trimCaughtUp drops from remaining the partitions with nothing to read
// before their end: empty, or starting at (or past) the end.
func trimCaughtUp(ctx context.Context, cl *admin.Client, group, topic string, target admin.Target, remaining map[int32]int64) error {
	from, err := cl.Resolve(ctx, target, topic)
	if err != nil {
		return err
	}
	var committed kadm.OffsetResponses
	if group != "" {
		if committed, err = cl.ADM.FetchOffsetsForTopics(ctx, group, topic); err != nil {
			return err
		}
	}
	for p, end := range remaining {
		at := int64(-1)
		if o, ok := committed.Lookup(topic, p); ok && o.Err == nil && o.At >= 0 {
			at = o.At
		} else if o, ok := from.Lookup(topic, p); ok {
			at = o.At
		}
		if at >= end {
			delete(remaining, p)
		}
	}
	return nil
}

// recordPrinter returns what prints one record in format.
func recordPrinter(format string) (func(w *bufio.Writer, r *kgo.Record) error, error) {
	switch {
	case format == "value" || format == "table":
		return func(w *bufio.Writer, r *kgo.Record) error {
			w.Write(r.Value)
			return w.WriteByte('\n')
		}, nil
	case format == "json":
		return func(w *bufio.Writer, r *kgo.Record) error {
			return json.NewEncoder(w).Encode(jsonRecord(r))
		}, nil
	case strings.Contains(format, "%"):
		return kcatFormat(format), nil
	}
	return nil, usageErr("--format %q: expected value, json, or a format string with %%s, %%k, ...", format)
}

// jsonRecord is a record as consume --format json prints it: key and
// value as text (JSON strings; a value that is JSON itself stays a string).
func jsonRecord(r *kgo.Record) any {
	type header struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	out := struct {
		Topic     string   `json:"topic"`
		Partition int32    `json:"partition"`
		Offset    int64    `json:"offset"`
		Timestamp int64    `json:"timestamp"`
		Key       *string  `json:"key"`
		Value     *string  `json:"value"`
		Headers   []header `json:"headers"`
	}{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Headers: []header{}}
	if r.Key != nil {
		k := string(r.Key)
		out.Key = &k
	}
	if r.Value != nil {
		v := string(r.Value)
		out.Value = &v
	}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, header{h.Key, string(h.Value)})
	}
	return out
}

// kcatFormat prints records as kcat -f does.
func kcatFormat(format string) func(w *bufio.Writer, r *kgo.Record) error {
	return func(w *bufio.Writer, r *kgo.Record) error {
		for i := 0; i < len(format); i++ {
			ch := format[i]
			if (ch != '%' && ch != '\\') || i+1 == len(format) {
				w.WriteByte(ch)
				continue
			}
			i++
			if ch == '\\' {
				switch format[i] {
				case 'n':
					w.WriteByte('\n')
				case 't':
					w.WriteByte('\t')
				case '\\':
					w.WriteByte('\\')
				default:
					w.WriteByte('\\')
					w.WriteByte(format[i])
				}
				continue
			}
			switch format[i] {
			case 't':
				w.WriteString(r.Topic)
			case 'p':
				w.WriteString(strconv.Itoa(int(r.Partition)))
			case 'o':
				w.WriteString(strconv.FormatInt(r.Offset, 10))
			case 'k':
				w.Write(r.Key)
			case 's':
				w.Write(r.Value)
			case 'K':
				w.WriteString(strconv.Itoa(len(r.Key)))
			case 'S':
				w.WriteString(strconv.Itoa(len(r.Value)))
			case 'T':
				w.WriteString(strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
			case 'x':
				w.WriteString(hex.EncodeToString(r.Key))
			case 'X':
				w.WriteString(hex.EncodeToString(r.Value))
			case 'h':
				for j, h := range r.Headers {
					if j > 0 {
						w.WriteByte(',')
					}
					fmt.Fprintf(w, "%s=%s", h.Key, h.Value)
				}
			case '%':
				w.WriteByte('%')
			default:
				w.WriteByte('%')
				w.WriteByte(format[i])
			}
		}
		return nil
	}
}
