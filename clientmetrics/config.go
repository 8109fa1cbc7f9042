package clientmetrics

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The configs of a CLIENT_METRICS resource (Kafka's ClientMetricsConfigs).
const (
	ConfigMetrics  = "metrics"     // metric name prefixes; "*" (or "") for all
	ConfigInterval = "interval.ms" // push interval
	ConfigMatch    = "match"       // selector=regex, all of which must match
)

// Configs are the names of a CLIENT_METRICS resource's configs, sorted.
var Configs = []string{ConfigInterval, ConfigMatch, ConfigMetrics}

// ConfigDef is one config of a CLIENT_METRICS resource as Kafka defines
// it: its default, as DescribeConfigs shows it, and its documentation.
type ConfigDef struct{ Name, Default, Doc string }

// ConfigDefs are the configs, in Configs' order.
var ConfigDefs = []ConfigDef{
	{ConfigInterval, "300000", "Metrics push interval in milliseconds"},
	{ConfigMatch, "", "Client match criteria"},
	{ConfigMetrics, "", "Telemetry metric name prefix list"},
}

// The push interval: Kafka's default and bounds, in milliseconds.
const (
	DefaultIntervalMs = 5 * 60 * 1000
	minIntervalMs     = 100
	maxIntervalMs     = 3600000
)

// The client match selectors, each matched against one attribute of the
// client instance.
const (
	SelInstanceID      = "client_instance_id"
	SelClientID        = "client_id"
	SelSoftwareName    = "client_software_name"
	SelSoftwareVersion = "client_software_version"
	SelSourceAddress   = "client_source_address"
	SelSourcePort      = "client_source_port"
)

var selectors = []string{SelInstanceID, SelClientID, SelSoftwareName, SelSoftwareVersion, SelSourceAddress, SelSourcePort}

// Errors, each of which a broker answers with one Kafka error code.
var (
	ErrInvalidRequest         = errors.New("clientmetrics: invalid request")
	ErrInvalidConfig          = errors.New("clientmetrics: invalid config")
	ErrThrottled              = errors.New("clientmetrics: request before the push interval")
	ErrUnknownSubscription    = errors.New("clientmetrics: unknown subscription id")
	ErrUnsupportedCompression = errors.New("clientmetrics: unsupported compression type")
	ErrTooLarge               = errors.New("clientmetrics: telemetry too large")
	ErrInvalidRecord          = errors.New("clientmetrics: payload does not decode")
)

// kafkaError is one of the errors above with Kafka's message.
type kafkaError struct {
	kind error
	msg  string
}

func (e *kafkaError) Error() string { return e.msg }
func (e *kafkaError) Unwrap() error { return e.kind }

func errorf(kind error, format string, args ...any) error {
	return &kafkaError{kind, fmt.Sprintf(format, args...)}
}

// Subscription is one CLIENT_METRICS resource, parsed.
type Subscription struct {
	Name       string
	Metrics    []string
	IntervalMs int32
	Match      map[string]*regexp.Regexp // selector -> whole-value pattern
}

// splitList parses a LIST config as Kafka's ConfigDef does: trimmed,
// split at commas with the blanks around them; empty is no element.
func splitList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	out := strings.Split(v, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// Validate checks a CLIENT_METRICS resource's configs as Kafka 4.4 does
// (ClientMetricsConfigs.validate), with Kafka's messages.
func Validate(name string, cfg map[string]string) error {
	_, err := Parse(name, cfg)
	return err
}

// Parse validates a CLIENT_METRICS resource's configs and parses them.
func Parse(name string, cfg map[string]string) (Subscription, error) {
	s := Subscription{Name: name, IntervalMs: DefaultIntervalMs}
	if name == "" {
		return s, errorf(ErrInvalidRequest, "Subscription name can't be empty")
	}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if !slices.Contains(Configs, k) {
			return s, errorf(ErrInvalidRequest, "Unknown client metrics configuration: %s", k)
		}
	}
	if v, ok := cfg[ConfigInterval]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return s, errorf(ErrInvalidConfig, "Invalid value %s for configuration %s: Not a number of type INT", v, ConfigInterval)
		}
		if n < minIntervalMs || n > maxIntervalMs {
			return s, errorf(ErrInvalidRequest, "Invalid value %d for %s, interval must be between 100 and 3600000 (1 hour)", n, ConfigInterval)
		}
		s.IntervalMs = int32(n)
	}
	s.Metrics = splitList(cfg[ConfigMetrics])
	m, err := parseMatch(splitList(cfg[ConfigMatch]))
	if err != nil {
		return s, err
	}
	s.Match = m
	return s, nil
}

// parseMatch parses selector=regex patterns (Kafka's
// parseMatchingPatterns): the selector one of the six, the regex matching
// the whole attribute. A pattern is split at every '=', and Java's split
// drops trailing empty parts, so "a=b=c" and "client_id=" are refused.
func parseMatch(patterns []string) (map[string]*regexp.Regexp, error) {
	out := map[string]*regexp.Regexp{}
	for _, p := range patterns {
		parts := strings.Split(p, "=")
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
		bad := errorf(ErrInvalidConfig, "Illegal client matching pattern: %s", p)
		if len(parts) != 2 {
			return nil, bad
		}
		sel := strings.TrimSpace(parts[0])
		if !slices.Contains(selectors, sel) {
			return nil, bad
		}
		re, err := regexp.Compile(`^(?:` + strings.TrimSpace(parts[1]) + `)$`)
		if err != nil {
			return nil, bad
		}
		out[sel] = re
	}
	return out, nil
}
