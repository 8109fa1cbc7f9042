package broker

// AlterConfigs v0-v2 (v2: flexible) replaces a topic's whole override set,
// a broker's dynamic configs (dynconfig.go) or a group's configs
// (group_configs.go). IncrementalAlterConfigs
// (44) v0-v1 (v1: flexible) edits them: SET, DELETE, APPEND and SUBTRACT
// (list configs only).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/security"
)

func (b *Broker) handleAlterConfigs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := b.alterResource(ctx, r, rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(map[string]string) (map[string]string, error) {
			next := map[string]string{}
			for _, c := range rr.Configs {
				if _, dup := next[c.Name]; dup {
					return nil, fmt.Errorf("%w: duplicate config %s", kerr.InvalidRequest, c.Name)
				}
				if c.Value == nil {
					return nil, fmt.Errorf("%w: null value for %s", config.ErrInvalidConfig, c.Name)
				}
				next[c.Name] = *c.Value
			}
			return next, nil
		})
		sr.ErrorCode, sr.ErrorMessage = errCode(err), errMsg(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		err := b.alterResource(ctx, r, rr.ResourceType, rr.ResourceName, req.ValidateOnly, func(cur map[string]string) (map[string]string, error) {
			next := maps.Clone(cur)
			if next == nil {
				next = map[string]string{}
			}
			seen := map[string]bool{}
			for _, c := range rr.Configs {
				if seen[c.Name] {
					return nil, fmt.Errorf("%w: duplicate config %s", kerr.InvalidRequest, c.Name)
				}
				seen[c.Name] = true
				val := ""
				if c.Value != nil {
					val = *c.Value
				}
				switch c.Op {
				case kmsg.IncrementalAlterConfigOpSet:
					if c.Value == nil {
						return nil, fmt.Errorf("%w: null value for %s", config.ErrInvalidConfig, c.Name)
					}
					next[c.Name] = val
				case kmsg.IncrementalAlterConfigOpDelete:
					delete(next, c.Name)
				case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
					if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig || rr.ResourceType == kmsg.ConfigResourceTypeClientMetrics || rr.ResourceType == linkResourceType {
						// Kafka 4.4 looks group and client-metrics configs
						// up among the topic configs here, so it refuses
						// every one.
						return nil, &codedError{kerr.InvalidConfig, fmt.Sprintf("Can't %s to key %s because its type is not LIST.", c.Op, c.Name)}
					}
					if !config.IsListTopicConfig(c.Name) {
						return nil, fmt.Errorf("%w: config %s is not a list, APPEND and SUBTRACT do not apply", config.ErrInvalidConfig, c.Name)
					}
					effective := b.cfg().TopicConfigs(cur)[c.Name]
					list := splitList(effective)
					for _, v := range splitList(val) {
						if c.Op == kmsg.IncrementalAlterConfigOpAppend {
							if !slices.Contains(list, v) {
								list = append(list, v)
							}
						} else {
							list = slices.DeleteFunc(list, func(s string) bool { return s == v })
						}
					}
					next[c.Name] = strings.Join(list, ",")
				default:
					return nil, fmt.Errorf("%w: unknown operation %d", kerr.InvalidRequest, c.Op)
				}
			}
			return next, nil
		})
		sr.ErrorCode, sr.ErrorMessage = errCode(err), errMsg(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// errValidateOnly stops a validate-only alter before it writes.
var errValidateOnly = errors.New("broker: validate only")

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// alterResource computes a resource's new overrides with edit, validates and
// stores them.
func (b *Broker) alterResource(ctx context.Context, r *request, typ kmsg.ConfigResourceType, name string, validateOnly bool,
	edit func(cur map[string]string) (map[string]string, error)) error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
	case kmsg.ConfigResourceTypeBroker:
		return b.alterBrokerConfigs(ctx, name, validateOnly, edit)
	case kmsg.ConfigResourceTypeGroupConfig:
		if err := b.groupRefusal(r, security.OpAlterConfigs, name); err != nil {
			return err
		}
		return b.alterGroupConfigs(ctx, name, validateOnly, edit)
	case kmsg.ConfigResourceTypeClientMetrics:
		return b.alterClientMetrics(ctx, name, validateOnly, edit)
	case linkResourceType:
		return b.alterLink(ctx, name, validateOnly, edit)
	case kmsg.ConfigResourceTypeBrokerLogger:
		if err := b.checkBrokerResource(name); err != nil {
			return err
		}
		next, err := edit(nil)
		if err != nil {
			return err
		}
		if len(next) > 0 {
			return fmt.Errorf("%w: broker loggers cannot be changed", kerr.InvalidRequest)
		}
		return nil
	default:
		return fmt.Errorf("%w: unsupported resource type %d", kerr.InvalidRequest, typ)
	}
	if b.meta.topic(name) == nil {
		return kerr.UnknownTopicOrPartition
	}
	// Read, edit and write in one compare-and-set on etcd's config key, so
	// that two concurrent alters never lose one another's change.
	err := b.store.UpdateTopicConfig(ctx, name, validatedEdit(edit, b.cfg().ValidateTopicChange, validateOnly))
	if err != nil || validateOnly {
		return ignoreValidateOnly(err)
	}
	return b.syncMetadata(ctx)
}

// validatedEdit is edit with its result checked by validate (given the
// configs before the edit and after); a validate-only alter stops there
// with errValidateOnly, before the store writes anything.
func validatedEdit(edit func(map[string]string) (map[string]string, error), validate func(cur, next map[string]string) error, validateOnly bool) func(map[string]string) (map[string]string, error) {
	return func(cur map[string]string) (map[string]string, error) {
		next, err := edit(cur)
		if err != nil {
			return nil, err
		}
		if err := validate(cur, next); err != nil {
			return nil, err
		}
		if validateOnly {
			return nil, errValidateOnly
		}
		return next, nil
	}
}

// ignoreValidateOnly is the outcome of a store update through
// validatedEdit: nil when it stopped for a validate-only alter.
func ignoreValidateOnly(err error) error {
	if errors.Is(err, errValidateOnly) {
		return nil
	}
	return err
}
