package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/samsa-io/samsa/internal/admin"
)

// runLink is `samsa link`: cluster links, which mirror another cluster's
// topics here at their offsets (the broker's link_configs.go).
func runLink(ctx context.Context, args []string, std IO) error {
	name, args, err := sub(args, "link", "create", "list", "describe", "pause", "resume", "delete", "promote", "failover")
	if err != nil {
		return err
	}
	var c common
	fs := newFlags("link "+name, std, &c)
	source := fs.String("source-bootstrap-servers", "", "create: the source cluster's `host:port[,...]`")
	topics := fs.String("topics", "", "create: the source topics to mirror (comma-separated regexes); promote, failover: which mirror topics (default all)")
	groups := fs.String("groups", "", "create: the groups whose offsets are copied (comma-separated regexes)")
	syncConfigs := fs.Bool("sync-configs", false, "create: give mirror topics the source topics' configs")
	syncACLs := fs.Bool("sync-acls", false, "create: keep the ACLs --acl-filters selects as the source's (this cluster needs an authorizer)")
	aclFilters := fs.String("acl-filters", "", `create: with --sync-acls, the ACLs to copy, as Confluent's links take them: '{"aclFilters":[{"resourceFilter":{"resourceType":"topic","name":"orders","patternType":"match"},"accessFilter":{"operation":"any","permissionType":"any"}}]}', or @FILE`)
	var sourceCfg, linkCfg keyValues
	fs.Var(&sourceCfg, "source-config", "create: a Kafka client `property=value` for the source (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.*); repeatable")
	fs.Var(&linkCfg, "config", "create: a link `setting=value` (metadata.refresh.interval.ms); repeatable")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	if name != "list" && len(pos) != 1 {
		return usageErr("samsa link %s: expected one link name", name)
	}
	if name == "create" && *source == "" {
		return usageErr("samsa link create: --source-bootstrap-servers is required")
	}
	cl, ctx, done, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer done()
	switch name {
	case "list":
		names, err := cl.Links(ctx)
		if err != nil {
			return err
		}
		var links []admin.Link
		for _, n := range names {
			l, err := cl.Link(ctx, n)
			if err != nil {
				return err
			}
			links = append(links, l)
		}
		return list(std.Stdout, c.format, links, []string{"LINK", "STATE", "SOURCE", "TOPICS", "MIRRORS"}, func(l admin.Link) []string {
			return []string{l.Name, l.State, l.Configs["source.bootstrap.servers"], dash(l.Configs["topics"]), strconv.Itoa(len(l.Mirrors))}
		})
	case "create":
		set := map[string]string{"create": "", "source.bootstrap.servers": *source, "topics": *topics}
		if *groups != "" {
			set["groups"] = *groups
		}
		if *syncConfigs {
			set["sync.configs"] = "true"
		}
		if *syncACLs {
			set["sync.acls"] = "true"
		}
		if f, ok := strings.CutPrefix(*aclFilters, "@"); ok {
			b, err := os.ReadFile(f)
			if err != nil {
				return usageErr("--acl-filters: %v", err)
			}
			set["acl.filters"] = string(b)
		} else if *aclFilters != "" {
			set["acl.filters"] = *aclFilters
		}
		for _, kv := range sourceCfg.pairs() {
			set["source."+kv[0]] = kv[1]
		}
		for _, kv := range linkCfg.pairs() {
			set[kv[0]] = kv[1]
		}
		if err := cl.AlterLink(ctx, pos[0], set, nil); err != nil {
			return err
		}
		fmt.Fprintf(std.Stdout, "created link %s\n", pos[0])
		return nil
	case "pause", "resume":
		state := map[string]string{"pause": "paused", "resume": "active"}[name]
		if err := cl.AlterLink(ctx, pos[0], map[string]string{"state": state}, nil); err != nil {
			return err
		}
		fmt.Fprintf(std.Stdout, "link %s %s\n", pos[0], state)
		return nil
	case "delete":
		l, err := cl.Link(ctx, pos[0])
		if err != nil {
			return err
		}
		if err := cl.AlterLink(ctx, pos[0], nil, slices.Sorted(maps.Keys(l.Configs))); err != nil {
			return err
		}
		fmt.Fprintf(std.Stdout, "deleted link %s\n", pos[0])
		return nil
	case "describe":
		l, err := cl.Link(ctx, pos[0])
		if err != nil {
			return err
		}
		if c.format == "json" {
			return writeJSON(std.Stdout, l)
		}
		return printLink(std, l)
	case "promote", "failover":
		return promoteLink(ctx, cl, pos[0], name == "failover", *topics, c.format, std)
	}
	return nil
}

func printLink(std IO, l admin.Link) error {
	fmt.Fprintf(std.Stdout, "LINK    %s\nSTATE   %s\nSOURCE  %s\nTOPICS  %s\nGROUPS  %s\n", l.Name, l.State,
		l.Configs["source.bootstrap.servers"], dash(l.Configs["topics"]), dash(l.Configs["groups"]))
	for _, k := range slices.Sorted(maps.Keys(l.Errors)) {
		if k == "" {
			fmt.Fprintf(std.Stdout, "ERROR   %s\n", l.Errors[k])
		} else {
			fmt.Fprintf(std.Stdout, "ERROR   %s: %s\n", k, l.Errors[k])
		}
	}
	fmt.Fprintln(std.Stdout)
	if err := table(std.Stdout, []string{"MIRROR", "STATE"}, rowsOf(l.Mirrors, func(m admin.MirrorTopic) []string {
		return []string{m.Topic, m.State}
	})); err != nil {
		return err
	}
	fmt.Fprintln(std.Stdout)
	return table(std.Stdout, []string{"TOPIC", "PARTITION", "LEADER", "SOURCE-END", "MIRROR-END", "LAG", "LAG-SECONDS", "ERROR"},
		rowsOf(l.Partitions, func(p admin.MirrorPartition) []string {
			return []string{p.Topic, strconv.Itoa(int(p.Partition)), strconv.Itoa(int(p.Leader)), strconv.FormatInt(p.SourceEnd, 10),
				strconv.FormatInt(p.MirrorEnd, 10), strconv.FormatInt(p.Lag, 10), strconv.FormatInt(p.LagSeconds, 10), dash(p.Error)}
		}))
}

func rowsOf[T any](items []T, row func(T) []string) [][]string {
	out := make([][]string, 0, len(items))
	for _, it := range items {
		out = append(out, row(it))
	}
	return out
}

// promoteResult is what promote and failover report per mirror topic.
type promoteResult struct {
	Topic string `json:"topic"`
	State string `json:"state"`
	// Left is, per partition, how many records the mirror had not copied
	// when it was failed over (from its leader's last fetch).
	Left map[int32]int64 `json:"left,omitempty"`
}

// promoteLink promotes (or fails over) a link's mirror topics and waits
// until they are writable.
func promoteLink(ctx context.Context, cl *admin.Client, name string, failover bool, topics, format string, std IO) error {
	before, err := cl.Link(ctx, name)
	if err != nil {
		return err
	}
	action := "promote.topics"
	if failover {
		action = "failover.topics"
	}
	if err := cl.AlterLink(ctx, name, map[string]string{action: topics}, nil); err != nil {
		return err
	}
	match, err := topicFilter(topics)
	if err != nil {
		return usageErr("--topics: %v", err)
	}
	for {
		l, err := cl.Link(ctx, name)
		if err != nil {
			return err
		}
		var out []promoteResult
		all := true
		for _, m := range l.Mirrors {
			if !match(m.Topic) {
				continue
			}
			r := promoteResult{Topic: m.Topic, State: m.State}
			if failover {
				for _, p := range before.Partitions {
					if p.Topic == m.Topic && p.Lag > 0 {
						if r.Left == nil {
							r.Left = map[int32]int64{}
						}
						r.Left[p.Partition] = p.Lag
					}
				}
			}
			all = all && m.State == "promoted"
			out = append(out, r)
		}
		if all {
			return list(std.Stdout, format, out, []string{"TOPIC", "STATE", "LEFT-BEHIND"}, func(r promoteResult) []string {
				var left []string
				for _, p := range slices.Sorted(maps.Keys(r.Left)) {
					left = append(left, fmt.Sprintf("%d:%d", p, r.Left[p]))
				}
				return []string{r.Topic, r.State, dash(strings.Join(left, ","))}
			})
		}
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.New("the mirror topics did not reach the source's end before --timeout: see samsa link describe")
		case <-t.C:
		}
	}
}

// topicFilter matches topic names with comma-separated regexes (each a
// whole name); empty matches all.
func topicFilter(v string) (func(string) bool, error) {
	var res []func(string) bool
	for _, r := range strings.Split(v, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		re, err := regexp.Compile("^(?:" + r + ")$")
		if err != nil {
			return nil, err
		}
		res = append(res, re.MatchString)
	}
	return func(s string) bool {
		if len(res) == 0 {
			return true
		}
		for _, m := range res {
			if m(s) {
				return true
			}
		}
		return false
	}, nil
}
