package link

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// SourceTopic is a topic of the source that a link mirrors.
type SourceTopic struct {
	Name       string
	Partitions int32
	// Configs are the topic's own settings on the source (not the
	// defaults), for a link with sync.configs.
	Configs map[string]string
}

// Discover lists the source's topics that spec matches (internal topics
// never), with their configs when spec syncs them.
func Discover(ctx context.Context, cl *kgo.Client, spec *Spec) ([]SourceTopic, error) {
	adm := kadm.NewClient(cl)
	tds, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the source's topics: %w", err)
	}
	var out []SourceTopic
	var names []string
	for _, td := range tds.Sorted() {
		if td.IsInternal || !spec.MatchesTopic(td.Topic) {
			continue
		}
		if td.Err != nil {
			return nil, fmt.Errorf("source topic %s: %w", td.Topic, td.Err)
		}
		out = append(out, SourceTopic{Name: td.Topic, Partitions: int32(len(td.Partitions))})
		names = append(names, td.Topic)
	}
	if !spec.SyncCfgs || len(names) == 0 {
		return out, nil
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describing the source's topic configs: %w", err)
	}
	byName := map[string]map[string]string{}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("source topic %s configs: %w", rc.Name, rc.Err)
		}
		cfg := map[string]string{}
		for _, c := range rc.Configs {
			if c.Source == 1 /* DYNAMIC_TOPIC_CONFIG */ && c.Value != nil && !c.Sensitive {
				cfg[c.Key] = *c.Value
			}
		}
		byName[rc.Name] = cfg
	}
	for i := range out {
		out[i].Configs = byName[out[i].Name]
	}
	return out, nil
}

// SourceEnds are the high watermarks of a source topic's partitions now.
func SourceEnds(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int64, error) {
	los, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("source end offsets of %s: %w", topic, err)
	}
	out := map[int32]int64{}
	var errs []string
	los.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, fmt.Sprintf("%d: %v", o.Partition, o.Err))
			return
		}
		out[o.Partition] = o.Offset
	})
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("source end offsets of %s: %v", topic, errs)
	}
	return out, nil
}

// SourceGroupOffsets are the committed offsets on the source of the
// groups spec copies: group -> topic -> partition -> offset.
func SourceGroupOffsets(ctx context.Context, cl *kgo.Client, spec *Spec) (map[string]map[string]map[int32]int64, error) {
	if len(spec.Groups) == 0 {
		return nil, nil
	}
	adm := kadm.NewClient(cl)
	lgs, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the source's groups: %w", err)
	}
	var groups []string
	for _, g := range lgs.Groups() {
		if spec.MatchesGroup(g) {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		return nil, nil
	}
	out := map[string]map[string]map[int32]int64{}
	for _, r := range adm.FetchManyOffsets(ctx, groups...) {
		if r.Err != nil {
			return nil, fmt.Errorf("source offsets of group %s: %w", r.Group, r.Err)
		}
		r.Fetched.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.At < 0 {
				return
			}
			if out[r.Group] == nil {
				out[r.Group] = map[string]map[int32]int64{}
			}
			if out[r.Group][o.Topic] == nil {
				out[r.Group][o.Topic] = map[int32]int64{}
			}
			out[r.Group][o.Topic][o.Partition] = o.At
		})
	}
	return out, nil
}
