package broker

// DescribeConfigs v1-v4. v1: synonyms and sources. v3: types and
// documentation. v4: flexible. Topic (2), broker (4) and group (32,
// group_configs.go) resources; broker loggers (8) have no entries. samsa's
// own: CLUSTER_LINK (100, link_configs.go), REMOTE_LOG (101,
// tiered_status.go).

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/security"
)

func (b *Broker) handleDescribeConfigs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []config.Entry
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if t := b.meta.topic(rr.ResourceName); t == nil {
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				sr.ErrorMessage = kmsg.StringPtr("topic " + rr.ResourceName + " does not exist")
			} else {
				entries = b.cfg().DescribeTopic(t.configs, req.IncludeSynonyms, req.IncludeDocumentation)
			}
		case kmsg.ConfigResourceTypeBroker:
			if err := b.checkBrokerResource(rr.ResourceName); err != nil {
				sr.ErrorCode, sr.ErrorMessage = errCode(err), errMsg(err)
			} else {
				if rr.ResourceName == "" {
					entries = b.cfg().DescribeBrokerDefault(req.IncludeSynonyms, req.IncludeDocumentation)
				} else {
					entries = b.cfg().DescribeBroker(req.IncludeSynonyms, req.IncludeDocumentation)
				}
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			err := checkGroupResource(rr.ResourceName)
			if err == nil {
				err = b.groupRefusal(r, security.OpDescribeConfigs, rr.ResourceName)
			}
			if err != nil {
				sr.ErrorCode, sr.ErrorMessage = errCode(err), errMsg(err)
			} else {
				entries = b.cfg().DescribeGroup(b.groupConfig(rr.ResourceName), req.IncludeSynonyms, req.IncludeDocumentation)
				sr.ErrorMessage = kmsg.StringPtr("") // as Kafka answers a group

			}
		case kmsg.ConfigResourceTypeClientMetrics:
			var cfg map[string]string
			err := error(&codedError{kerr.InvalidRequest, "Client metrics subscription name must not be empty"})
			if rr.ResourceName != "" {
				cfg, err = b.clientMetricsConfig(ctx, rr.ResourceName)
			}
			if err != nil {
				sr.ErrorCode, sr.ErrorMessage = errCode(err), errMsg(err)
			} else {
				entries = describeClientMetrics(cfg, req.IncludeSynonyms, req.IncludeDocumentation)
				sr.ErrorMessage = kmsg.StringPtr("") // as Kafka answers it
			}
		case kmsg.ConfigResourceTypeBrokerLogger:
			if err := b.checkBrokerResource(rr.ResourceName); err != nil {
				sr.ErrorCode, sr.ErrorMessage = errCode(err), errMsg(err)
			}
		case linkResourceType:
			var err error
			if entries, err = b.describeLink(rr.ResourceName, rr.ConfigNames); err != nil {
				sr.ErrorCode, sr.ErrorMessage = errCode(err), errMsg(err)
			}
		case remoteLogResourceType:
			var err error
			if entries, err = b.describeRemoteLog(rr.ResourceName); err != nil {
				sr.ErrorCode, sr.ErrorMessage = errCode(err), errMsg(err)
			}
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			sr.ErrorMessage = kmsg.StringPtr("unsupported resource type")
		}
		for _, e := range entries {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.Name) {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.ReadOnly, c.IsSensitive = e.Name, e.Value, e.ReadOnly, e.Sensitive
			c.Source = kmsg.ConfigSource(e.Source)
			c.IsDefault = e.Source == int8(kmsg.ConfigSourceDefaultConfig)
			c.ConfigType = kmsg.ConfigType(e.Type)
			if req.IncludeDocumentation && e.Doc != "" {
				c.Documentation = kmsg.StringPtr(e.Doc)
			}
			for _, s := range e.Synonyms {
				cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				cs.Name, cs.Value, cs.Source = s.Name, s.Value, kmsg.ConfigSource(s.Source)
				c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
			}
			sr.Configs = append(sr.Configs, c)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// checkBrokerResource accepts this broker's id, or "" for the cluster-wide
// default, as a broker resource name.
func (b *Broker) checkBrokerResource(name string) error {
	if name == "" {
		return nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest
	}
	if int32(id) != b.nodeID {
		return kerr.InvalidRequest
	}
	return nil
}
