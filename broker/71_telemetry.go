package broker

// GetTelemetrySubscriptions (71) v0 and PushTelemetry (72) v0, KIP-714:
// clients ask which of their metrics to push and how often, then push
// them (clientmetrics.Manager, which plays Kafka 4.4's
// ClientMetricsManager and decodes the OTLP payloads Kafka hands to a
// receiver plugin). Kafka advertises both only with a receiver plugin
// configured; samsa has its own receiver, so it always does. Neither
// checks an ACL, as in Kafka: any authenticated principal pushes its own
// metrics (anyPrincipal).
//
// The subscriptions are the CLIENT_METRICS config resources (type 16),
// set with IncrementalAlterConfigs and AlterConfigs, read with
// DescribeConfigs, listed by ListConfigResources; they are kept in etcd as
// the entity configs of kind client-metrics, and every broker watches
// them. Altering or describing them needs AlterConfigs or
// DescribeConfigs on the cluster.

import (
	"context"
	"errors"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/clientmetrics"
	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/internal/config"
)

func (b *Broker) handleGetTelemetrySubscriptions(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	a, err := b.telemetry.Subscriptions(req.ClientInstanceID, b.telemetryClient(r))
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	resp.ClientInstanceID, resp.SubscriptionID = a.InstanceID, a.SubscriptionID
	resp.AcceptedCompressionTypes = clientmetrics.Compressions
	resp.PushIntervalMillis, resp.TelemetryMaxBytes = a.IntervalMs, a.MaxBytes
	resp.DeltaTemporality = true
	resp.RequestedMetrics = a.Metrics
	return resp, nil
}

func (b *Broker) handlePushTelemetry(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	err := b.telemetry.Push(clientmetrics.Push{InstanceID: req.ClientInstanceID, SubscriptionID: req.SubscriptionID,
		Terminating: req.Terminating, Compression: req.CompressionType, Metrics: req.Metrics}, b.telemetryClient(r))
	if err != nil {
		b.log.Debug("push telemetry refused", "client", clientmetrics.UUIDString(req.ClientInstanceID), "err", err)
	}
	resp.ErrorCode = errCode(err)
	return resp, nil
}

// telemetryClient is what the client-metrics match selectors see of a
// request's client.
func (b *Broker) telemetryClient(r *request) clientmetrics.Client {
	c := clientmetrics.Client{ConnID: r.connID, SoftwareName: "unknown", SoftwareVersion: "unknown"}
	if r.hdr.ClientID != nil {
		c.ClientID = *r.hdr.ClientID
	}
	if r.software != nil && r.software.name != "" {
		c.SoftwareName, c.SoftwareVersion = r.software.name, r.software.version
	}
	if r.conn != nil {
		if a, ok := r.conn.RemoteAddr().(*net.TCPAddr); ok {
			c.Address, c.Port = a.IP.String(), a.Port
		}
	}
	return c
}

// telemetryErrCode maps the client-metrics errors to Kafka's codes.
func telemetryErrCode(err error) (int16, bool) {
	switch {
	case errors.Is(err, clientmetrics.ErrInvalidRequest):
		return kerr.InvalidRequest.Code, true
	case errors.Is(err, clientmetrics.ErrInvalidConfig):
		return kerr.InvalidConfig.Code, true
	case errors.Is(err, clientmetrics.ErrThrottled):
		return kerr.ThrottlingQuotaExceeded.Code, true
	case errors.Is(err, clientmetrics.ErrUnknownSubscription):
		return kerr.UnknownSubscriptionID.Code, true
	case errors.Is(err, clientmetrics.ErrUnsupportedCompression):
		return kerr.UnsupportedCompressionType.Code, true
	case errors.Is(err, clientmetrics.ErrTooLarge):
		return kerr.TelemetryTooLarge.Code, true
	case errors.Is(err, clientmetrics.ErrInvalidRecord):
		return kerr.InvalidRecord.Code, true
	}
	return 0, false
}

// startClientMetrics loads the subscriptions and watches them.
func (b *Broker) startClientMetrics(ctx context.Context) error {
	if err := b.loadClientMetrics(ctx); err != nil {
		return err
	}
	b.store.WatchClientMetrics(b.ctx, 0, func() {
		if err := b.loadClientMetrics(b.ctx); err != nil && b.ctx.Err() == nil {
			b.log.Warn("reloading client metrics subscriptions failed", "err", err)
		}
	})
	return nil
}

func (b *Broker) loadClientMetrics(ctx context.Context) error {
	all, err := b.store.EntityConfigs(ctx, controller.EntityClientMetrics)
	if err != nil {
		return err
	}
	b.telemetry.SetSubscriptions(all)
	return nil
}

// clientMetricsConfig is a subscription's configs (empty for none).
func (b *Broker) clientMetricsConfig(ctx context.Context, name string) (map[string]string, error) {
	return b.store.EntityConfig(ctx, controller.EntityClientMetrics, name)
}

// alterClientMetrics applies edit to a subscription's configs in one
// compare-and-set on its etcd key, validated as Kafka validates them; an
// empty result removes the subscription.
func (b *Broker) alterClientMetrics(ctx context.Context, name string, validateOnly bool, edit func(cur map[string]string) (map[string]string, error)) error {
	validate := func(_, next map[string]string) error { return clientmetrics.Validate(name, next) }
	err := b.store.UpdateEntityConfig(ctx, controller.EntityClientMetrics, name, validatedEdit(edit, validate, validateOnly))
	if err != nil || validateOnly {
		return ignoreValidateOnly(err)
	}
	return b.loadClientMetrics(ctx)
}

// describeClientMetrics is a subscription's DescribeConfigs entries, as
// Kafka 4.4 describes them: all three, the unset ones with their
// defaults.
func describeClientMetrics(cfg map[string]string, includeSynonyms, includeDocs bool) []config.Entry {
	var out []config.Entry
	for _, d := range clientmetrics.ConfigDefs {
		e := config.Entry{Name: d.Name, Value: kmsg.StringPtr(d.Default), Source: int8(kmsg.ConfigSourceDefaultConfig), Type: int8(kmsg.ConfigTypeList)}
		if d.Name == clientmetrics.ConfigInterval {
			e.Type = int8(kmsg.ConfigTypeInt)
		}
		if includeDocs {
			e.Doc = d.Doc
		}
		if v, ok := cfg[d.Name]; ok {
			e.Value, e.Source = kmsg.StringPtr(v), int8(kmsg.ConfigSourceClientMetricsConfig)
			if includeSynonyms {
				e.Synonyms = []config.Synonym{{Name: d.Name, Value: kmsg.StringPtr(v), Source: e.Source}}
			}
		}
		out = append(out, e)
	}
	return out
}
