package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster links are samsa's config resources of type 100 (CLUSTER_LINK):
// IncrementalAlterConfigs sets a link's configs and carries its actions
// (create, promote.topics, failover.topics), DescribeConfigs returns its
// configs and, read-only, its state; each broker describes the mirror
// partitions it leads, so Link asks every one. See the broker's
// link_configs.go.

// LinkResourceType is samsa's CLUSTER_LINK config resource.
const LinkResourceType kmsg.ConfigResourceType = 100

// Link is one cluster link.
type Link struct {
	Name       string            `json:"name"`
	State      string            `json:"state"` // active or paused
	Configs    map[string]string `json:"configs"`
	Errors     map[string]string `json:"errors,omitempty"` // "" for the link's own, else by topic
	Mirrors    []MirrorTopic     `json:"mirrors"`
	Partitions []MirrorPartition `json:"partitions"`
}

// MirrorTopic is a link's mirror topic.
type MirrorTopic struct {
	Topic   string `json:"topic"`
	State   string `json:"state"`             // mirroring, promoting or promoted
	Targets string `json:"targets,omitempty"` // while promoting: p:offset,...
	Done    string `json:"done,omitempty"`    // while promoting: the partitions that reached them
}

// MirrorPartition is what the leader of a mirror partition knows of it.
type MirrorPartition struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	Leader       int32  `json:"leader"`
	SourceStart  int64  `json:"source_start_offset"`
	SourceEnd    int64  `json:"source_end_offset"`
	MirrorEnd    int64  `json:"mirror_end_offset"`
	Lag          int64  `json:"lag"`
	LagSeconds   int64  `json:"lag_seconds"`
	SourceLeader int32  `json:"source_leader"`
	Error        string `json:"error,omitempty"`
}

// Links lists the cluster links by name.
func (c *Client) Links(ctx context.Context) ([]string, error) {
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.ResourceTypes = []int8{int8(LinkResourceType)}
	resp, err := req.RequestWith(ctx, c.KGO)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	var out []string
	for _, r := range resp.ConfigResources {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out, nil
}

// AlterLink sets and deletes configs of a link (and its actions).
func (c *Client) AlterLink(ctx context.Context, name string, set map[string]string, remove []string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = LinkResourceType, name
	for _, k := range slices.Sorted(maps.Keys(set)) {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value, cfg.Op = k, kmsg.StringPtr(set[k]), kmsg.IncrementalAlterConfigOpSet
		r.Configs = append(r.Configs, cfg)
	}
	for _, k := range remove {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op = k, kmsg.IncrementalAlterConfigOpDelete
		r.Configs = append(r.Configs, cfg)
	}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, c.KGO)
	if err != nil {
		return err
	}
	for _, rr := range resp.Resources {
		if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
			msg := ""
			if rr.ErrorMessage != nil {
				msg = *rr.ErrorMessage
			}
			return withMessage(err, msg)
		}
	}
	return nil
}

// Link describes a link, asking every broker for the mirror partitions
// it leads.
func (c *Client) Link(ctx context.Context, name string) (Link, error) {
	l := Link{Name: name, Configs: map[string]string{}}
	if err := c.describeLink(ctx, name, nil, l.merge); err != nil {
		return l, err
	}
	l.State = "active"
	if l.Configs["state"] != "" {
		l.State = l.Configs["state"]
	}
	slices.SortFunc(l.Mirrors, func(a, b MirrorTopic) int { return strings.Compare(a.Topic, b.Topic) })
	slices.SortFunc(l.Partitions, func(a, b MirrorPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return l, nil
}

// LagSample is a link's lag at one time (unix milliseconds): the records
// behind over all its mirror partitions, and the seconds behind of the
// one furthest behind.
type LagSample struct {
	Time    int64 `json:"t"`
	Records int64 `json:"records"`
	Seconds int64 `json:"seconds"`
}

// linkHistoryKey is the DescribeConfigs name of a link's lag history on
// one broker, given only when asked for by name.
const linkHistoryKey = "lag.history"

// LinkHistory is a link's lag over time, oldest first: each broker keeps
// the samples of the mirror partitions it leads, at the same times, and
// these add up.
func (c *Client) LinkHistory(ctx context.Context, name string) ([]LagSample, error) {
	byTime := map[int64]*LagSample{}
	err := c.describeLink(ctx, name, []string{linkHistoryKey}, func(_ int32, cfgs []kmsg.DescribeConfigsResponseResourceConfig) {
		for _, cfg := range cfgs {
			var ss []LagSample
			if cfg.Name != linkHistoryKey || cfg.Value == nil || json.Unmarshal([]byte(*cfg.Value), &ss) != nil {
				continue
			}
			for _, s := range ss {
				if cur := byTime[s.Time]; cur != nil {
					cur.Records += s.Records
					cur.Seconds = max(cur.Seconds, s.Seconds)
				} else {
					byTime[s.Time] = &s
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]LagSample, 0, len(byTime))
	for _, t := range slices.Sorted(maps.Keys(byTime)) {
		out = append(out, *byTime[t])
	}
	return out, nil
}

// describeLink asks every broker for a link's configs (names: all but
// those given only by name) and hands each answer to f; it fails when
// no broker knows the link.
func (c *Client) describeLink(ctx context.Context, name string, names []string, f func(broker int32, cfgs []kmsg.DescribeConfigsResponseResourceConfig)) error {
	meta, err := c.ADM.BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	found := false
	var firstErr error
	for _, b := range meta.Brokers {
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = LinkResourceType, name, names
		req.Resources = append(req.Resources, r)
		kr, err := c.KGO.Broker(int(b.NodeID)).Request(ctx, req)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("broker %d: %w", b.NodeID, err)
			}
			continue
		}
		for _, rr := range kr.(*kmsg.DescribeConfigsResponse).Resources {
			if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
				msg := ""
				if rr.ErrorMessage != nil {
					msg = *rr.ErrorMessage
				}
				if firstErr == nil {
					firstErr = withMessage(err, msg)
				}
				continue
			}
			found = true
			f(b.NodeID, rr.Configs)
		}
	}
	if !found {
		return firstErr
	}
	return nil
}

func (l *Link) merge(broker int32, cfgs []kmsg.DescribeConfigsResponseResourceConfig) {
	seenMirror := map[string]bool{}
	for _, m := range l.Mirrors {
		seenMirror[m.Topic] = true
	}
	for _, c := range cfgs {
		v := ""
		if c.Value != nil {
			v = *c.Value
		}
		switch {
		case !c.ReadOnly:
			if c.IsSensitive {
				v = "[hidden]"
			}
			l.Configs[c.Name] = v
		case c.Name == "error" || strings.HasPrefix(c.Name, "error."):
			if l.Errors == nil {
				l.Errors = map[string]string{}
			}
			l.Errors[strings.TrimPrefix(strings.TrimPrefix(c.Name, "error"), ".")] = v
		case strings.HasPrefix(c.Name, "mirror."):
			var m MirrorTopic
			if json.Unmarshal([]byte(v), &m) == nil && !seenMirror[c.Name[len("mirror."):]] {
				m.Topic = c.Name[len("mirror."):]
				seenMirror[m.Topic] = true
				l.Mirrors = append(l.Mirrors, m)
			}
		case strings.HasPrefix(c.Name, "partition."):
			var p MirrorPartition
			if json.Unmarshal([]byte(v), &p) == nil {
				p.Leader = broker
				l.Partitions = append(l.Partitions, p)
			}
		}
	}
}
