package testutil

import "github.com/twmb/franz-go/pkg/kmsg"

// SubscribeClientMetrics is the IncrementalAlterConfigs request that
// sets a client-metrics subscription (KIP-714's CLIENT_METRICS resource
// name) to the configs kv (name, value, ...).
func SubscribeClientMetrics(name string, kv ...string) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	return req
}
