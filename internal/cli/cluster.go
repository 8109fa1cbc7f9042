package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/samsa-io/samsa/internal/admin"
)

// errUnhealthy makes cluster health exit with status 1.
var errUnhealthy = errors.New("cluster unhealthy")

func runCluster(ctx context.Context, args []string, std IO) error {
	name, args, err := sub(args, "cluster", "info", "health", "balance")
	if err != nil {
		return err
	}
	var c common
	fs := newFlags("cluster "+name, std, &c)
	dryRun := fs.Bool("dry-run", false, "balance: print the plan, change nothing")
	topics := fs.String("topics", "", "balance: only these `topics` (comma-separated; default every non-internal topic)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	cl, ctx, done, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	switch name {
	case "balance":
		return balance(ctx, cl, c.format, *dryRun, splitComma(*topics), std)
	case "info":
		info, err := cl.Cluster(ctx)
		if err != nil {
			return err
		}
		if c.format == "json" {
			return writeJSON(std.Stdout, info)
		}
		fmt.Fprintf(std.Stdout, "CLUSTER     %s\nCONTROLLER  %d\nTOPICS      %d\nPARTITIONS  %d\n\n", info.ID, info.Controller, info.Topics, info.Partitions)
		var rows [][]string
		for _, b := range info.Brokers {
			ctrl := ""
			if b.Controller {
				ctrl = "*"
			}
			rows = append(rows, []string{strconv.Itoa(int(b.ID)) + ctrl, b.Host, strconv.Itoa(int(b.Port)), dash(b.Rack),
				strconv.Itoa(b.Leaders), strconv.Itoa(b.Replicas), strconv.FormatBool(b.Reachable)})
		}
		return table(std.Stdout, []string{"BROKER", "HOST", "PORT", "RACK", "LEADERS", "REPLICAS", "REACHABLE"}, rows)
	case "health":
		h, err := cl.Health(ctx)
		if err != nil {
			return err
		}
		if c.format == "json" {
			err = writeJSON(std.Stdout, h)
		} else {
			fmt.Fprintf(std.Stdout, "HEALTHY              %v\nCONTROLLER           %d\nBROKERS              %s\nUNREACHABLE BROKERS  %s\nLEADERLESS           %s\nUNDER-REPLICATED     %s\n",
				h.Healthy, h.Controller, ints(h.Brokers), dash(ints(h.UnreachableBrokers)),
				dash(strings.Join(h.LeaderlessPartition, ",")), dash(strings.Join(h.UnderReplicated, ",")))
		}
		if err == nil && !h.Healthy {
			err = fmt.Errorf("%w: %s", errUnhealthy, strings.Join(h.Problems, "; "))
		}
		return err
	}
	return nil
}

// balance plans (admin.PlanBalance) and, unless dryRun, applies it: the
// replicas and preferred leaders even out over the brokers.
func balance(ctx context.Context, cl *admin.Client, format string, dryRun bool, topics []string, std IO) error {
	parts, racks, err := cl.Placement(ctx, topics...)
	if err != nil {
		return err
	}
	plan := admin.PlanBalance(parts, racks, cl.Cordoned(ctx, slices.Sorted(maps.Keys(racks))))
	if format == "json" {
		if err := writeJSON(std.Stdout, plan); err != nil {
			return err
		}
	} else {
		var rows [][]string
		for _, m := range plan.Moves {
			kind := "move"
			if m.Reorder {
				kind = "leader"
			}
			rows = append(rows, []string{m.Topic, strconv.Itoa(int(m.Partition)), ints(m.From), ints(m.To), kind, strconv.FormatInt(m.Bytes, 10)})
		}
		if len(rows) == 0 {
			fmt.Fprintln(std.Stdout, "balanced: nothing to move")
		} else if err := table(std.Stdout, []string{"TOPIC", "PARTITION", "REPLICAS", "NEW REPLICAS", "CHANGE", "BYTES TO COPY"}, rows); err != nil {
			return err
		}
		fmt.Fprintln(std.Stdout)
		var loads [][]string
		for i, b := range plan.Before {
			a := plan.After[i]
			loads = append(loads, []string{strconv.Itoa(int(b.ID)), fmt.Sprintf("%d -> %d", b.Replicas, a.Replicas),
				fmt.Sprintf("%d -> %d", b.Leaders, a.Leaders), fmt.Sprintf("%d -> %d", b.Bytes, a.Bytes)})
		}
		if err := table(std.Stdout, []string{"BROKER", "REPLICAS", "PREFERRED LEADERS", "BYTES"}, loads); err != nil {
			return err
		}
	}
	if dryRun || len(plan.Moves) == 0 {
		return nil
	}
	if err := cl.ApplyBalance(ctx, plan); err != nil {
		return err
	}
	if format != "json" {
		fmt.Fprintf(std.Stdout, "\napplied %d changes\n", len(plan.Moves))
	}
	return nil
}

func splitComma(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
