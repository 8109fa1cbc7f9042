package clientmetrics

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	metricsv1 "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// compressWith compresses b as a client does for codec (Kafka's record
// batch framing: xerial for snappy when xerial is true, an LZ4 frame).
func compressWith(t testing.TB, codec int8, b []byte, xerial bool) []byte {
	t.Helper()
	var out bytes.Buffer
	switch codec {
	case 0:
		return b
	case 1:
		w := gzip.NewWriter(&out)
		w.Write(b)
		w.Close()
	case 2:
		block := snappy.Encode(nil, b)
		if !xerial {
			return block
		}
		out.Write([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1})
		out.Write(binary.BigEndian.AppendUint32(nil, uint32(len(block))))
		out.Write(block)
	case 3:
		w := lz4.NewWriter(&out)
		w.Write(b)
		w.Close()
	case 4:
		w, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		return w.EncodeAll(b, nil)
	}
	return out.Bytes()
}

func zstdBomb(t testing.TB) []byte { return compressWith(t, 4, make([]byte, 1<<20), false) }

func TestDecodeCodecs(t *testing.T) {
	raw := payload(t, "org.apache.kafka.producer.record.send.rate", 12.5, "client_id", "p1")
	for _, tc := range []struct {
		name   string
		codec  int8
		xerial bool
	}{{"none", 0, false}, {"gzip", 1, false}, {"snappy", 2, false}, {"snappy xerial", 2, true}, {"lz4", 3, false}, {"zstd", 4, false}} {
		t.Run(tc.name, func(t *testing.T) {
			pts, err := Decode(tc.codec, compressWith(t, tc.codec, raw, tc.xerial), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if len(pts) != 1 || pts[0].Name != "org.apache.kafka.producer.record.send.rate" || pts[0].Value != 12.5 ||
				len(pts[0].Attrs) != 1 || pts[0].Attrs[0] != (Attr{"client_id", "p1"}) {
				t.Fatalf("points %+v", pts)
			}
		})
	}
	if _, err := Decode(4, zstdBomb(t), 64<<10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("1 MiB of zeros against 64 KiB: %v, want too large", err)
	}
}

// The kinds of sums, and what is skipped: histograms, NaN, array
// attributes, empty names.
func TestDecodeKinds(t *testing.T) {
	num := func(v float64, kv ...*commonv1.KeyValue) []*metricsv1.NumberDataPoint {
		return []*metricsv1.NumberDataPoint{{Attributes: kv, Value: &metricsv1.NumberDataPoint_AsDouble{AsDouble: v}}}
	}
	sum := func(name string, mono bool, temp metricsv1.AggregationTemporality) *metricsv1.Metric {
		return &metricsv1.Metric{Name: name, Data: &metricsv1.Metric_Sum{Sum: &metricsv1.Sum{IsMonotonic: mono, AggregationTemporality: temp, DataPoints: num(1)}}}
	}
	arr := &commonv1.KeyValue{Key: "a", Value: &commonv1.AnyValue{Value: &commonv1.AnyValue_ArrayValue{ArrayValue: &commonv1.ArrayValue{}}}}
	md := &metricsv1.MetricsData{ResourceMetrics: []*metricsv1.ResourceMetrics{{ScopeMetrics: []*metricsv1.ScopeMetrics{{Metrics: []*metricsv1.Metric{
		sum("counter", true, metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE),
		sum("delta", true, metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA),
		sum("updown", false, metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE),
		sum("deltasum", false, metricsv1.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA),
		{Name: "hist", Data: &metricsv1.Metric_Histogram{Histogram: &metricsv1.Histogram{}}},
		{Name: "nan", Data: &metricsv1.Metric_Gauge{Gauge: &metricsv1.Gauge{DataPoints: num(nan())}}},
		{Name: "array", Data: &metricsv1.Metric_Gauge{Gauge: &metricsv1.Gauge{DataPoints: num(1, arr)}}},
		{Name: "", Data: &metricsv1.Metric_Gauge{Gauge: &metricsv1.Gauge{DataPoints: num(1)}}},
	}}}}}}
	b, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := Decode(0, b, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Kind{"counter": Counter, "delta": DeltaCount, "updown": UpDown, "deltasum": DeltaSum}
	if len(pts) != len(want) {
		t.Fatalf("points %+v, want %v", pts, want)
	}
	for _, p := range pts {
		if want[p.Name] != p.Kind {
			t.Errorf("%s: kind %d, want %d", p.Name, p.Kind, want[p.Name])
		}
	}
}

func nan() float64 { z := 0.0; return z / z }

// FuzzDecode: whatever a client pushes, Decode returns points or one of
// its errors, never panics, and never yields more than its bounds.
func FuzzDecode(f *testing.F) {
	raw := payload(f, "org.apache.kafka.consumer.fetch.manager.records.lag", 3, "topic", "t", "partition", "0")
	for codec := int8(0); codec <= 4; codec++ {
		f.Add(codec, compressWith(f, codec, raw, true))
	}
	f.Add(int8(2), compressWith(f, 2, raw, false))
	f.Add(int8(4), zstdBomb(f))
	f.Add(int8(7), raw)
	f.Fuzz(func(t *testing.T, codec int8, b []byte) {
		pts, err := Decode(codec, b, 64<<10)
		if err != nil {
			if !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnsupportedCompression) {
				t.Fatalf("error %v of no Kafka kind", err)
			}
			return
		}
		if len(pts) > maxPushPoint {
			t.Fatalf("%d points", len(pts))
		}
		for _, p := range pts {
			if len(p.Name) > maxNameLen || len(p.Attrs) > maxAttrs {
				t.Fatalf("point past the bounds: %+v", p)
			}
		}
		s := NewStore(Limits{Clients: 2, SeriesPerClient: 8, History: 4}, nil)
		s.Record([16]byte{1}, Client{}, pts, s.now())
		if n := len(s.Clients()[0].Series); n > 8 {
			t.Fatalf("%d series kept", n)
		}
	})
}
