package broker

// The cluster links' admin interface, for `samsa link` (internal/cli):
// a link is a config resource of samsa's own type 100 (CLUSTER_LINK),
// which Kafka does not have, as client-metrics subscriptions are Kafka's
// CLIENT_METRICS resources:
//
//   - IncrementalAlterConfigs SETs its configs (link.Key*), and with the
//     action "create" makes a new link (an existing one is refused); an
//     alter that leaves no config deletes the link, refused while it has
//     mirror topics not promoted. The actions "promote.topics" and
//     "failover.topics" (a topic filter, empty for all) promote its
//     mirror topics (link.go); actions are not stored.
//   - DescribeConfigs returns its configs (secrets hidden) and, read-only,
//     its state, each mirror topic's state ("mirror.<topic>") and the
//     status of each mirror partition led by the broker asked
//     ("partition.<topic>.<p>", JSON): `samsa link describe` asks every
//     broker.
//     Only when asked for by name, "lag.history" is the link's lag over
//     time on the broker asked (link.LagSample, JSON), for the console.
//   - ListConfigResources lists the links when asked for type 100 alone
//     (an unfiltered listing stays Kafka's).
// Each needs AlterConfigs or DescribeConfigs on the cluster.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/link"
)

// linkResourceType is samsa's CLUSTER_LINK config resource.
const linkResourceType kmsg.ConfigResourceType = 100

// Link alter actions.
const (
	linkActionCreate   = "create"
	linkActionPromote  = "promote.topics"
	linkActionFailover = "failover.topics"
)

func (b *Broker) alterLink(ctx context.Context, name string, validateOnly bool, edit func(map[string]string) (map[string]string, error)) error {
	if name == "" {
		return fmt.Errorf("%w: a cluster link needs a name", kerr.InvalidRequest)
	}
	actions := map[string]string{}
	err := b.store.UpdateEntityConfig(ctx, controller.EntityLinks, name, func(cur map[string]string) (map[string]string, error) {
		next, err := edit(cur)
		if err != nil {
			return nil, err
		}
		clear(actions)
		for _, k := range []string{linkActionCreate, linkActionPromote, linkActionFailover} {
			if v, ok := next[k]; ok {
				actions[k] = v
				delete(next, k)
			}
		}
		_, create := actions[linkActionCreate]
		switch {
		case create && len(cur) > 0:
			return nil, fmt.Errorf("%w: cluster link %s already exists", kerr.InvalidRequest, name)
		case !create && len(cur) == 0:
			return nil, fmt.Errorf("%w: cluster link %s does not exist", kerr.ResourceNotFound, name)
		case len(next) == 0:
			if busy := b.linkMirrors(name, func(st string) bool { return st != promoted }); len(busy) > 0 {
				return nil, fmt.Errorf("%w: cluster link %s still mirrors %v: promote or fail them over first", kerr.InvalidRequest, name, busy)
			}
		default:
			spec, err := link.ParseSpec(name, next)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", config.ErrInvalidConfig, err)
			}
			if spec.SyncACLs && b.authz == nil {
				return nil, fmt.Errorf("%w: %s: %v", config.ErrInvalidConfig, link.KeySyncACLs, errNoAuthorizer)
			}
		}
		for _, k := range []string{linkActionPromote, linkActionFailover} {
			if v, ok := actions[k]; ok {
				if _, err := link.ParseFilter(v); err != nil {
					return nil, fmt.Errorf("%w: %s: %v", config.ErrInvalidConfig, k, err)
				}
			}
		}
		if validateOnly {
			return nil, errValidateOnly
		}
		return next, nil
	})
	if err != nil || validateOnly {
		return ignoreValidateOnly(err)
	}
	if err := b.loadLinks(ctx); err != nil {
		return err
	}
	for _, k := range []string{linkActionPromote, linkActionFailover} {
		if v, ok := actions[k]; ok {
			if err := b.promoteMirrors(ctx, name, v, k == linkActionFailover); err != nil {
				return err
			}
		}
	}
	b.kickLinks()
	return nil
}

// linkMirrors are the mirror topics of a link whose state keep accepts.
func (b *Broker) linkMirrors(name string, keep func(state string) bool) []string {
	ls := b.links.Load()
	if ls == nil {
		return nil
	}
	var out []string
	for t, m := range ls.mirrors {
		if m[mirrorLink] == name && keep(m[mirrorState]) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// promoteMirrors promotes the mirror topics of a link that filter
// matches: a failover at once, a promote once each partition reached the
// source's high watermark of now (the mirror leaders finish it).
func (b *Broker) promoteMirrors(ctx context.Context, name, filter string, failover bool) error {
	match, err := link.ParseFilter(filter)
	if err != nil {
		return err
	}
	topics := b.linkMirrors(name, func(st string) bool { return st == mirroring || st == promoting })
	for _, t := range topics {
		if !match(t) {
			continue
		}
		var targets map[int32]int64
		if !failover {
			cl := b.linkMgr.Client(name)
			if cl == nil {
				return fmt.Errorf("%w: cluster link %s is paused or its source config is bad: resume it, or fail over", kerr.InvalidRequest, name)
			}
			lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			targets, err = link.SourceEnds(lctx, cl, t)
			if err == nil {
				// The consumers stopped on the source: their last commits.
				if spec, perr := link.ParseSpec(name, b.links.Load().links[name]); perr == nil {
					err = b.syncLinkGroups(lctx, spec, func(topic string) bool { return topic == t })
				}
			}
			cancel()
			if err != nil {
				return fmt.Errorf("%w: %v (a source that is gone needs a failover)", kerr.InvalidRequest, err)
			}
		}
		err := b.store.UpdateEntityConfig(ctx, controller.EntityMirrors, t, func(cur map[string]string) (map[string]string, error) {
			if cur[mirrorLink] != name || cur[mirrorState] == promoted {
				return cur, nil
			}
			if failover {
				cur[mirrorState] = promoted
				delete(cur, mirrorTargets)
				delete(cur, mirrorDone)
				return cur, nil
			}
			if cur[mirrorState] != promoting {
				cur[mirrorState] = promoting
				cur[mirrorTargets] = formatPartitionOffsets(targets)
				delete(cur, mirrorDone)
			}
			return cur, nil
		})
		if err != nil {
			return err
		}
	}
	return b.loadLinks(ctx)
}

// linkHistoryKey names a link's lag history in DescribeConfigs.
const linkHistoryKey = "lag.history"

// describeLink is a link's DescribeConfigs entries; its lag history only
// when names asks for it.
func (b *Broker) describeLink(name string, names []string) ([]config.Entry, error) {
	ls := b.links.Load()
	if ls == nil || ls.links[name] == nil {
		return nil, fmt.Errorf("%w: cluster link %s does not exist", kerr.ResourceNotFound, name)
	}
	cfg := ls.links[name]
	var out []config.Entry
	add := func(k, v string, readOnly, sensitive bool) {
		e := config.Entry{Name: k, Source: int8(kmsg.ConfigSourceDynamicTopicConfig), ReadOnly: readOnly, Sensitive: sensitive, Type: int8(kmsg.ConfigTypeString)}
		if !sensitive {
			e.Value = kmsg.StringPtr(v)
		}
		out = append(out, e)
	}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		add(k, cfg[k], false, link.Sensitive(k))
	}
	errs := b.linkErrors(name)
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		if k == "" {
			add("error", errs[k], true, false)
		} else {
			add("error."+k, errs[k], true, false)
		}
	}
	for _, t := range b.linkMirrors(name, func(string) bool { return true }) {
		m := ls.mirrors[t]
		v, _ := json.Marshal(map[string]string{"state": m[mirrorState], "targets": m[mirrorTargets], "done": m[mirrorDone]})
		add("mirror."+t, string(v), true, false)
	}
	for _, st := range b.linkMgr.Status() {
		if st.Link != name {
			continue
		}
		v, _ := json.Marshal(st)
		add(fmt.Sprintf("partition.%s.%d", st.Topic, st.Partition), string(v), true, false)
	}
	if slices.Contains(names, linkHistoryKey) {
		v, _ := json.Marshal(b.linkMgr.History(name))
		add(linkHistoryKey, string(v), true, false)
	}
	return out, nil
}
