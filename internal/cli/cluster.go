package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// errUnhealthy makes cluster health exit with status 1.
var errUnhealthy = errors.New("cluster unhealthy")

func runCluster(ctx context.Context, args []string, std IO) error {
	name, args, err := sub(args, "cluster", "info", "health")
	if err != nil {
		return err
	}
	var c common
	fs := newFlags("cluster "+name, std, &c)
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
