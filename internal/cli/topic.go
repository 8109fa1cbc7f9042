package cli

import (
	"cmp"
	"context"
	"fmt"
	"strconv"

	"github.com/samsa-io/samsa/internal/admin"
)

func runTopic(ctx context.Context, args []string, std IO) error {
	name, args, err := sub(args, "topic", "list", "create", "describe", "alter", "delete")
	if err != nil {
		return err
	}
	var c common
	fs := newFlags("topic "+name, std, &c)
	var (
		partitions = fs.Int("partitions", -1, "partitions (create: -1 takes num.partitions; alter: the new total)")
		rf         = fs.Int("replication-factor", -1, "replication factor (-1 takes default.replication.factor)")
		internal   = fs.Bool("internal", false, "list internal topics too")
		configs    keyValues
		remove     strs
	)
	fs.IntVar(partitions, "p", -1, "short for --partitions")
	fs.IntVar(rf, "r", -1, "short for --replication-factor")
	fs.Var(&configs, "config", "a topic config `key=value` (create, alter; repeatable)")
	fs.Var(&configs, "c", "short for --config")
	fs.Var(&configs, "set", "alter: set a config `key=value` (repeatable)")
	fs.Var(&remove, "delete-config", "alter: remove a config override, back to the default (repeatable)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	if name != "list" && len(pos) == 0 {
		return usageErr("samsa topic %s: name a topic", name)
	}
	cl, ctx, done, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	switch name {
	case "list":
		ts, err := cl.Topics(ctx, *internal)
		if err != nil {
			return err
		}
		return list(std.Stdout, c.format, ts, []string{"NAME", "PARTITIONS", "REPLICAS", "RECORDS", "SIZE"}, func(t admin.TopicSummary) []string {
			return []string{t.Name, strconv.Itoa(t.Partitions), strconv.Itoa(t.ReplicationFactor), strconv.FormatInt(t.Records, 10), bytesText(t.Size)}
		})
	case "create":
		cfg := map[string]*string{}
		for _, kv := range configs.pairs() {
			cfg[kv[0]] = &kv[1]
		}
		type created struct {
			Topic string `json:"topic"`
			Error string `json:"error,omitempty"`
		}
		var out []created
		var firstErr error
		for _, t := range pos {
			err := cl.CreateTopic(ctx, t, int32(*partitions), int16(*rf), cfg)
			r := created{Topic: t}
			if err != nil {
				r.Error = err.Error()
				firstErr = cmp.Or(firstErr, fmt.Errorf("topic %s: %w", t, err))
			}
			out = append(out, r)
		}
		if c.format == "json" {
			if err := writeJSON(std.Stdout, out); err != nil {
				return err
			}
		} else {
			var rows [][]string
			for _, r := range out {
				rows = append(rows, []string{r.Topic, okOr(r.Error)})
			}
			if err := table(std.Stdout, []string{"TOPIC", "STATUS"}, rows); err != nil {
				return err
			}
		}
		return firstErr
	case "describe":
		return describeEach(std, c.format, pos, func(n string) (admin.Topic, error) { return cl.Topic(ctx, n) }, printTopic)
	case "alter":
		if len(pos) != 1 {
			return usageErr("samsa topic alter: name one topic")
		}
		set := map[string]string{}
		for _, kv := range configs.pairs() {
			set[kv[0]] = kv[1]
		}
		if len(set) == 0 && len(remove) == 0 && *partitions < 0 {
			return usageErr("samsa topic alter: nothing to change (--set, --delete-config, --partitions)")
		}
		if *partitions >= 0 {
			if err := cl.AddPartitions(ctx, pos[0], *partitions); err != nil {
				return err
			}
		}
		if len(set) > 0 || len(remove) > 0 {
			if err := cl.AlterTopicConfigs(ctx, pos[0], set, remove); err != nil {
				return err
			}
		}
		return report(std, c.format, pos[0], "altered")
	case "delete":
		var firstErr error
		var rows [][]string
		for _, t := range pos {
			err := cl.DeleteTopic(ctx, t)
			status := "deleted"
			if err != nil {
				status = err.Error()
				firstErr = cmp.Or(firstErr, fmt.Errorf("topic %s: %w", t, err))
			}
			rows = append(rows, []string{t, status})
		}
		if c.format == "json" {
			var out []map[string]string
			for _, r := range rows {
				out = append(out, map[string]string{"topic": r[0], "status": r[1]})
			}
			if err := writeJSON(std.Stdout, out); err != nil {
				return err
			}
		} else if err := table(std.Stdout, []string{"TOPIC", "STATUS"}, rows); err != nil {
			return err
		}
		return firstErr
	}
	return nil
}

func printTopic(std IO, t admin.Topic) error {
	fmt.Fprintf(std.Stdout, "NAME      %s\nID        %s\nINTERNAL  %v\nPARTITIONS %d\n", t.Name, t.ID, t.Internal, len(t.Partitions))
	headers := []string{"PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "START", "END", "SIZE"}
	if t.Tiered != nil {
		// Tiered storage: SIZE is the leader's local log, as
		// DescribeLogDirs reports it; the rates are the leaders'.
		fmt.Fprintf(std.Stdout, "REMOTE FETCH %s/s\nREMOTE COPY  %s/s\n", bytesText(int64(t.Tiered.RemoteFetchBytesPerSec)), bytesText(int64(t.Tiered.RemoteCopyBytesPerSec)))
		headers = append(headers[:len(headers)-1], "LOCAL", "REMOTE", "UPLOAD LAG")
	}
	fmt.Fprintln(std.Stdout)
	var rows [][]string
	for _, p := range t.Partitions {
		row := []string{strconv.Itoa(int(p.ID)), strconv.Itoa(int(p.Leader)), strconv.Itoa(int(p.LeaderEpoch)),
			ints(p.Replicas), ints(p.ISR), ints(p.Offline), strconv.FormatInt(p.StartOffset, 10), strconv.FormatInt(p.EndOffset, 10), bytesText(p.Size)}
		if t.Tiered != nil {
			remote, lag := int64(-1), int64(-1)
			if p.Remote != nil {
				remote, lag = p.Remote.RemoteBytes, p.Remote.CopyLagBytes
			}
			row = append(row, bytesText(remote), bytesText(lag))
		}
		rows = append(rows, row)
	}
	if err := table(std.Stdout, headers, rows); err != nil {
		return err
	}
	fmt.Fprintln(std.Stdout)
	rows = nil
	for _, cf := range t.Configs {
		rows = append(rows, []string{cf.Name, cf.Value, cf.Source})
	}
	return table(std.Stdout, []string{"CONFIG", "VALUE", "SOURCE"}, rows)
}

func okOr(e string) string {
	if e == "" {
		return "OK"
	}
	return e
}

// report prints what a command did to one thing.
func report(std IO, format, name, status string) error {
	if format == "json" {
		return writeJSON(std.Stdout, map[string]string{"name": name, "status": status})
	}
	_, err := fmt.Fprintf(std.Stdout, "%s %s\n", name, status)
	return err
}

// bytesText is a size as a person reads it (1.5KiB); "-" when unknown.
func bytesText(n int64) string {
	if n < 0 {
		return "-"
	}
	if n < 1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	v, unit := float64(n), "KMGTPE"
	i := -1
	for v >= 1024 && i < len(unit)-1 {
		v /= 1024
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + string(unit[i]) + "iB"
}
