package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterConfigsRequest sets a topic's configs (name, value pairs), replacing
// its overrides.
func alterConfigsRequest(v int16, topic string, kv ...string) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version = v
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	return req
}

// AlterConfigs replaces a topic's overrides (validate-only changes
// nothing); an unknown config is INVALID_CONFIG, a bad value
// INVALID_CONFIG, an unknown topic UNKNOWN_TOPIC_OR_PARTITION, and alice (no
// ACLs) TOPIC_AUTHORIZATION_FAILED.
func TestAlterConfigsHandler(t *testing.T) {
	b := startHandlerTest(t, nil)
	b.createTopic("ac", 1, "retention.ms", "1000")
	retention := func() string {
		resp := b.do(describeConfigsRequest(4, kmsg.ConfigResourceTypeTopic, "ac", "retention.ms")).(*kmsg.DescribeConfigsResponse)
		return *resp.Resources[0].Configs[0].Value
	}
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode }
	for _, v := range []int16{0, 1, 2} {
		validate := alterConfigsRequest(v, "ac", "retention.ms", "7")
		validate.ValidateOnly = true
		wantCode(t, "validate only", code(b.do(validate)), nil)
		if got := retention(); got == "7" {
			t.Errorf("v%d: validate-only set retention.ms", v)
		}
		want := []string{"2000", "3000", "4000"}[v]
		wantCode(t, "alter", code(b.do(alterConfigsRequest(v, "ac", "retention.ms", want))), nil)
		if got := retention(); got != want {
			t.Errorf("v%d: retention.ms %s, want %s", v, got, want)
		}
	}
	wantCode(t, "unknown config", code(b.do(alterConfigsRequest(2, "ac", "no.such.config", "1"))), kerr.InvalidConfig)
	wantCode(t, "bad value", code(b.do(alterConfigsRequest(2, "ac", "retention.ms", "soon"))), kerr.InvalidConfig)
	wantCode(t, "unknown topic", code(b.do(alterConfigsRequest(2, "nope", "retention.ms", "1"))), kerr.UnknownTopicOrPartition)
	wantCode(t, "as alice", code(b.as("alice", alterConfigsRequest(2, "ac", "retention.ms", "1"))), kerr.TopicAuthorizationFailed)
	if got := retention(); got != "4000" {
		t.Errorf("after the refused changes: retention.ms %s, want 4000", got)
	}
}
