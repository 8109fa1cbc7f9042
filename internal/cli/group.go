package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/samsa-io/samsa/internal/admin"
)

func runGroup(ctx context.Context, args []string, std IO) error {
	name, args, err := sub(args, "group", "list", "describe", "seek", "delete")
	if err != nil {
		return err
	}
	var c common
	fs := newFlags("group "+name, std, &c)
	to := fs.String("to", "", "seek: where to, `start|end|N|@millis`")
	topic := fs.String("topic", "", "seek: only this topic (default: every topic the group has offsets in)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	if name != "list" && len(pos) == 0 {
		return usageErr("samsa group %s: name a group", name)
	}
	var target admin.Target
	if name == "seek" {
		if len(pos) != 1 {
			return usageErr("samsa group seek: name one group")
		}
		if target, err = admin.ParseTarget(*to); err != nil {
			return usageErr("--to %v", err)
		}
	}
	cl, ctx, done, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	switch name {
	case "list":
		gs, err := cl.Groups(ctx)
		if err != nil {
			return err
		}
		return list(std.Stdout, c.format, gs, []string{"GROUP", "STATE", "TYPE", "COORDINATOR"}, func(g admin.GroupSummary) []string {
			return []string{g.Name, g.State, g.ProtocolType, strconv.Itoa(int(g.Coordinator))}
		})
	case "describe":
		return describeEach(std, c.format, pos, func(n string) (admin.Group, error) { return cl.Group(ctx, n) }, printGroup)
	case "seek":
		offs, err := cl.Seek(ctx, pos[0], *topic, target)
		if err != nil {
			return err
		}
		return list(std.Stdout, c.format, offs, []string{"TOPIC", "PARTITION", "NEW-OFFSET"}, func(o admin.GroupOffset) []string {
			return []string{o.Topic, strconv.Itoa(int(o.Partition)), strconv.FormatInt(o.Committed, 10)}
		})
	case "delete":
		for _, g := range pos {
			if err := cl.DeleteGroup(ctx, g); err != nil {
				return fmt.Errorf("group %s: %w", g, err)
			}
			if err := report(std, c.format, g, "deleted"); err != nil {
				return err
			}
		}
	}
	return nil
}

func printGroup(std IO, g admin.Group) error {
	fmt.Fprintf(std.Stdout, "GROUP        %s\nSTATE        %s\nPROTOCOL     %s\nCOORDINATOR  %d\nMEMBERS      %d\nTOTAL-LAG    %d\n\n",
		g.Name, g.State, g.Protocol, g.Coordinator, len(g.Members), g.TotalLag)
	var rows [][]string
	for _, o := range g.Offsets {
		committed, end, lag := "-", "-", "-"
		if o.Committed >= 0 {
			committed = strconv.FormatInt(o.Committed, 10)
		}
		if o.End >= 0 {
			end = strconv.FormatInt(o.End, 10)
		}
		if o.Lag >= 0 {
			lag = strconv.FormatInt(o.Lag, 10)
		}
		rows = append(rows, []string{o.Topic, strconv.Itoa(int(o.Partition)), committed, end, lag, dash(o.Member), dash(o.ClientID)})
	}
	return table(std.Stdout, []string{"TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID", "CLIENT-ID"}, rows)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
