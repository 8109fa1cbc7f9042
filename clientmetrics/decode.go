package clientmetrics

import (
	"errors"
	"math"
	"strconv"

	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/samsa-io/samsa/logstore"
)

// Kind is how a data point's value adds up over pushes.
type Kind uint8

const (
	Gauge      Kind = iota // the value is the current one
	Counter                // monotonic sum, cumulative
	DeltaCount             // monotonic sum, the increase since the last push
	UpDown                 // non-monotonic sum, cumulative
	DeltaSum               // non-monotonic sum, the change since the last push
)

// Point is one decoded data point.
type Point struct {
	Name  string
	Kind  Kind
	Attrs []Attr // as pushed, in order
	Value float64
}

// Attr is one attribute of a data point.
type Attr struct{ Key, Value string }

// Bounds on what one push may bring: points beyond them are dropped.
const (
	maxNameLen   = 255
	maxAttrs     = 16
	maxAttrLen   = 255
	maxPushPoint = 10000
)

// Decode decompresses a pushed payload (a codec id as in record batches;
// the output at most limit bytes, else ErrTooLarge) and decodes its OTLP
// MetricsData into points: the data points of gauges and sums, with
// their string, integer, double and boolean attributes. Histograms and
// summaries are skipped. Bytes that do not decompress or decode are
// ErrInvalidRecord.
func Decode(codec int8, payload []byte, limit int) ([]Point, error) {
	raw := payload
	if codec != 0 {
		var err error
		raw, err = logstore.Decompress(logstore.Codec(codec), payload, limit)
		switch {
		case errors.Is(err, logstore.ErrDecompressedTooLarge):
			return nil, errorf(ErrTooLarge, "decompressed telemetry is larger than the maximum allowed size [%d]", limit)
		case errors.Is(err, logstore.ErrUnsupportedCompression):
			return nil, errorf(ErrUnsupportedCompression, "unknown compression type [%d]", codec)
		case err != nil:
			return nil, errorf(ErrInvalidRecord, "telemetry payload: %v", err)
		}
	}
	var md metricsv1.MetricsData
	if err := (proto.UnmarshalOptions{RecursionLimit: 32}).Unmarshal(raw, &md); err != nil {
		return nil, errorf(ErrInvalidRecord, "telemetry payload: %v", err)
	}
	var out []Point
	add := func(m *metricsv1.Metric, kind Kind, dps []*metricsv1.NumberDataPoint) {
		for _, dp := range dps {
			if len(out) >= maxPushPoint || len(dp.GetAttributes()) > maxAttrs {
				continue
			}
			p := Point{Name: m.GetName(), Kind: kind}
			switch v := dp.GetValue().(type) {
			case *metricsv1.NumberDataPoint_AsDouble:
				p.Value = v.AsDouble
			case *metricsv1.NumberDataPoint_AsInt:
				p.Value = float64(v.AsInt)
			default:
				continue
			}
			if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
				continue
			}
			ok := true
			for _, kv := range dp.GetAttributes() {
				s, good := attrString(kv.GetValue())
				if !good || kv.GetKey() == "" || len(kv.GetKey()) > maxAttrLen || len(s) > maxAttrLen {
					ok = false
					break
				}
				p.Attrs = append(p.Attrs, Attr{kv.GetKey(), s})
			}
			if ok {
				out = append(out, p)
			}
		}
	}
	for _, rm := range md.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if m.GetName() == "" || len(m.GetName()) > maxNameLen {
					continue
				}
				switch d := m.GetData().(type) {
				case *metricsv1.Metric_Gauge:
					add(m, Gauge, d.Gauge.GetDataPoints())
				case *metricsv1.Metric_Sum:
					delta := d.Sum.GetAggregationTemporality() == metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
					kind := map[[2]bool]Kind{{true, false}: Counter, {true, true}: DeltaCount, {false, false}: UpDown, {false, true}: DeltaSum}[[2]bool{d.Sum.GetIsMonotonic(), delta}]
					add(m, kind, d.Sum.GetDataPoints())
				}
			}
		}
	}
	return out, nil
}

// attrString is an attribute's value as a label value; false for the
// kinds a label cannot hold (arrays, maps, bytes).
func attrString(v *commonv1.AnyValue) (string, bool) {
	switch x := v.GetValue().(type) {
	case *commonv1.AnyValue_StringValue:
		return x.StringValue, true
	case *commonv1.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10), true
	case *commonv1.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64), true
	case *commonv1.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue), true
	}
	return "", false
}
