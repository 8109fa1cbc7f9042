// Package clientmetrics receives the metrics that Kafka clients push
// (KIP-714) and keeps them for the broker's /metrics and the console.
//
// A Manager plays Kafka 4.4's ClientMetricsManager: it holds the
// client-metrics subscriptions (the CLIENT_METRICS config resources: a
// list of metric name prefixes, a push interval and client match
// selectors), gives each client instance the union of the subscriptions
// matching it (GetTelemetrySubscriptions), and accepts its pushes
// (PushTelemetry) at most once per push interval, refusing with the
// errors Kafka answers (ErrThrottled, ErrUnknownSubscription,
// ErrUnsupportedCompression, ErrTooLarge, ErrInvalidRequest). Where
// Kafka hands an accepted payload to a receiver plugin, the Manager
// decodes it itself: the payload is an OTLP MetricsData protobuf
// (opentelemetry-proto's metrics.proto), compressed with the codec the
// request names (Kafka's framing, as in record batches). A payload that
// does not decode is ErrInvalidRecord, one whose decompressed size passes
// telemetry.max.bytes ErrTooLarge.
//
// A Store keeps the decoded gauges and sums of each client instance,
// bounded: at most Limits.Clients instances (the one that pushed least
// recently is dropped for a new one) and Limits.SeriesPerClient series
// each (the series updated least recently is dropped for a new one).
// Sums pushed with delta temporality are added up into counters. The
// series named in Plotted keep their last Limits.History values with
// their times, for the console's plots. The Store is a Prometheus
// collector: each metric is exported under its OTLP name with the dots
// made underscores, labelled with client_instance_id, client_id,
// client_software_name and client_software_version and the data point's
// attributes.
package clientmetrics
