package broker

// ListConfigResources v0-v1 (KIP-1142; v0 was ListClientMetricsResources):
// the resources that have configs to describe, of the types asked for
// (every type when none is): the groups with group configs, this cluster's
// client-metrics subscriptions, live brokers (as BROKER and BROKER_LOGGER)
// and every topic; v0 lists the client-metrics subscriptions alone. A
// type Kafka does not list is UNSUPPORTED_VERSION, as Kafka answers it. It needs DescribeConfigs on
// the cluster.

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/security"
)

func (b *Broker) handleListConfigResources(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if err := b.clusterRefusal(r, security.OpDescribeConfigs); err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	want := map[kmsg.ConfigResourceType]bool{}
	for _, t := range req.ResourceTypes {
		switch typ := kmsg.ConfigResourceType(t); typ {
		case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger,
			kmsg.ConfigResourceTypeClientMetrics, kmsg.ConfigResourceTypeGroupConfig, linkResourceType:
			want[typ] = true
		default:
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp, nil
		}
	}
	if req.Version == 0 {
		// v0 was ListClientMetricsResources: client metrics alone.
		want[kmsg.ConfigResourceTypeClientMetrics] = true
	}
	all := len(want) == 0
	add := func(typ kmsg.ConfigResourceType, name string) {
		cr := kmsg.NewListConfigResourcesResponseConfigResource()
		cr.Name, cr.Type = name, int8(typ)
		resp.ConfigResources = append(resp.ConfigResources, cr)
	}
	if all || want[kmsg.ConfigResourceTypeGroupConfig] {
		if m := b.groupCfgs.Load(); m != nil {
			for _, g := range slices.Sorted(maps.Keys(m.all)) {
				add(kmsg.ConfigResourceTypeGroupConfig, g)
			}
		}
	}
	if want[linkResourceType] && req.Version > 0 { // samsa's own: listed only when asked for
		if ls := b.links.Load(); ls != nil {
			for _, n := range slices.Sorted(maps.Keys(ls.links)) {
				add(linkResourceType, n)
			}
		}
	}
	if all || want[kmsg.ConfigResourceTypeClientMetrics] {
		for _, n := range b.telemetry.Names() {
			add(kmsg.ConfigResourceTypeClientMetrics, n)
		}
	}
	if all || want[kmsg.ConfigResourceTypeBroker] || want[kmsg.ConfigResourceTypeBrokerLogger] {
		brokers, err := b.liveBrokers(ctx)
		if err != nil {
			resp.ErrorCode = errCode(err)
			return resp, nil
		}
		slices.SortFunc(brokers, func(x, y controller.BrokerInfo) int { return int(x.ID - y.ID) })
		for _, typ := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeBroker} {
			if all || want[typ] {
				for _, br := range brokers {
					add(typ, strconv.Itoa(int(br.ID)))
				}
			}
		}
	}
	if all || want[kmsg.ConfigResourceTypeTopic] {
		var names []string
		for _, t := range b.meta.topicList() {
			names = append(names, t.name)
		}
		slices.Sort(names)
		for _, n := range names {
			add(kmsg.ConfigResourceTypeTopic, n)
		}
	}
	return resp, nil
}
