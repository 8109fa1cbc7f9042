package clientmetrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func gauge(name string, v float64, attrs ...string) Point {
	p := Point{Name: name, Kind: Gauge, Value: v}
	for i := 0; i < len(attrs); i += 2 {
		p.Attrs = append(p.Attrs, Attr{attrs[i], attrs[i+1]})
	}
	return p
}

// What clients push is exported under the OTLP names, labelled with the
// instance, and the series of one name share their label names.
func TestStoreExport(t *testing.T) {
	c := newClock()
	s := NewStore(Limits{}, c.now)
	java := Client{ClientID: "p1", SoftwareName: "apache-kafka-java", SoftwareVersion: "4.4.0"}
	s.Record([16]byte{1}, java, []Point{
		gauge("org.apache.kafka.producer.node.request.latency.avg", 3, "node_id", "1"),
		{Name: "org.apache.kafka.producer.record.send.total", Kind: DeltaCount, Value: 5},
		gauge("kafka_server_replicamanager_leadercount", 99), // the broker's own name: not exported
		gauge("weird", 1, "client_id", "spoof"),              // an attribute named as an instance label
	}, c.now())
	c.advance(time.Second)
	s.Record([16]byte{1}, java, []Point{{Name: "org.apache.kafka.producer.record.send.total", Kind: DeltaCount, Value: 2}}, c.now())
	s.Record([16]byte{2}, Client{ClientID: "c1", SoftwareName: "librdkafka", SoftwareVersion: "2.12.0"}, []Point{
		gauge("org.apache.kafka.producer.node.request.latency.avg", 7),
	}, c.now())
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	want := `
# HELP org_apache_kafka_producer_node_request_latency_avg Pushed by clients (KIP-714): org.apache.kafka.producer.node.request.latency.avg.
# TYPE org_apache_kafka_producer_node_request_latency_avg gauge
org_apache_kafka_producer_node_request_latency_avg{client_id="c1",client_instance_id="AgAAAAAAAAAAAAAAAAAAAA",client_software_name="librdkafka",client_software_version="2.12.0",node_id=""} 7
org_apache_kafka_producer_node_request_latency_avg{client_id="p1",client_instance_id="AQAAAAAAAAAAAAAAAAAAAA",client_software_name="apache-kafka-java",client_software_version="4.4.0",node_id="1"} 3
# HELP org_apache_kafka_producer_record_send_total Pushed by clients (KIP-714): org.apache.kafka.producer.record.send.total.
# TYPE org_apache_kafka_producer_record_send_total counter
org_apache_kafka_producer_record_send_total{client_id="p1",client_instance_id="AQAAAAAAAAAAAAAAAAAAAA",client_software_name="apache-kafka-java",client_software_version="4.4.0"} 7
# HELP weird Pushed by clients (KIP-714): weird.
# TYPE weird gauge
weird{attr_client_id="spoof",client_id="p1",client_instance_id="AQAAAAAAAAAAAAAAAAAAAA",client_software_name="apache-kafka-java",client_software_version="4.4.0"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// The Store keeps at most Limits.Clients instances and
// Limits.SeriesPerClient series each, dropping the oldest, and the last
// Limits.History values of the plotted series.
func TestStoreBounds(t *testing.T) {
	c := newClock()
	s := NewStore(Limits{Clients: 2, SeriesPerClient: 3, History: 4}, c.now)
	for i := range 3 {
		c.advance(time.Second)
		s.Record([16]byte{byte(i + 1)}, Client{ClientID: string(rune('a' + i))}, []Point{gauge("m", 1)}, c.now())
	}
	if v := s.Clients(); len(v) != 2 || v[0].ClientID != "c" || v[1].ClientID != "b" {
		t.Fatalf("clients %+v, want c and b", v)
	}
	id := [16]byte{9}
	for i := range 6 {
		c.advance(time.Second)
		s.Record(id, Client{ClientID: "z"}, []Point{gauge("x.request.latency.avg", float64(i)), gauge("s", float64(i), "n", string(rune('0'+i)))}, c.now())
	}
	v := s.Clients()[0]
	if v.ClientID != "z" || len(v.Series) != 3 {
		t.Fatalf("client %+v, want z with 3 series", v)
	}
	for _, se := range v.Series {
		switch se.Name {
		case "x.request.latency.avg":
			if len(se.History) != 4 || se.History[3].V != 5 || se.History[0].V != 2 {
				t.Errorf("history %+v, want the last 4 values", se.History)
			}
		case "s":
			if se.Labels["n"] < "4" || se.History != nil {
				t.Errorf("series %+v: want one of the two newest, without history", se)
			}
		}
	}
	var many []Point
	for i := range maxPlotted + 8 {
		many = append(many, gauge("y.request.latency.avg", 1, "node_id", string(rune('A'+i))))
	}
	wide := NewStore(Limits{}, c.now)
	wide.Record([16]byte{10}, Client{ClientID: "many"}, many, c.now())
	withHistory := 0
	for _, v := range wide.Clients() {
		for _, se := range v.Series {
			if v.ClientID == "many" && se.History != nil {
				withHistory++
			}
		}
	}
	if withHistory != maxPlotted {
		t.Errorf("%d series keep a history, want %d", withHistory, maxPlotted)
	}
	c.advance(DefaultLimits.Expiry + time.Second)
	if v := s.Clients(); len(v) != 0 {
		t.Errorf("%d clients after the expiry", len(v))
	}
}

// What clients push never disturbs the broker's own metrics, whatever
// they name theirs, nor fails a scrape: a name the broker uses (samsa_
// ones included) is not exported, and of two series that come out under
// one name and label set (names or attributes differing only in the
// characters Prometheus refuses) one is.
func TestStoreExportCollisions(t *testing.T) {
	c := newClock()
	s := NewStore(Limits{}, c.now)
	own := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "samsa_schema_registry_requests_total", Help: "The broker's own."}, []string{"method", "route"})
	own.WithLabelValues("GET", "/subjects").Add(4)
	reg := prometheus.NewRegistry()
	reg.MustRegister(own, s)
	java := Client{ClientID: "p1", SoftwareName: "apache-kafka-java", SoftwareVersion: "4.4.0"}
	s.Record([16]byte{1}, java, []Point{
		{Name: "samsa.schema.registry.requests.total", Kind: Counter, Value: 1, Attrs: []Attr{{"method", "PUT"}, {"route", "/x"}}},
		gauge("a.b", 1, "node.id", "1"),
		gauge("a_b", 2, "node_id", "1"),
	}, c.now())
	for range 20 { // the collectors run concurrently: either may come first
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatalf("Gather: %v", err)
		}
		n := 0
		for _, mf := range mfs {
			switch mf.GetName() {
			case "samsa_schema_registry_requests_total":
				if len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetCounter().GetValue() != 4 {
					t.Fatalf("the broker's own metric: %v", mf.GetMetric())
				}
				n++
			case "a_b":
				if len(mf.GetMetric()) != 1 {
					t.Fatalf("a_b: %v", mf.GetMetric())
				}
				n++
			}
		}
		if n != 2 {
			t.Fatalf("gathered %d of the 2 families", n)
		}
	}
}

// A client's series are bounded in bytes too, not only in number: series
// with as many attributes as long as a push may bring are kept within
// half a MiB a client (about a hundredth of what a thousand of them
// would be), those of the last push first.
func TestStoreBytesPerClient(t *testing.T) {
	c := newClock()
	s := NewStore(Limits{}, c.now)
	for push := range 10 {
		var ps []Point
		for j := range 100 {
			var attrs []string
			for k := range maxAttrs {
				attrs = append(attrs, fmt.Sprintf("%0*d", maxAttrLen, k), fmt.Sprintf("%0*d", maxAttrLen, push*100+j))
			}
			ps = append(ps, gauge("m", 1, attrs...))
		}
		c.advance(time.Second)
		s.Record([16]byte{1}, Client{ClientID: "big"}, ps, c.now())
	}
	size, newest := 0, false
	for _, se := range s.Clients()[0].Series {
		size += len(se.Name)
		for k, v := range se.Labels {
			size += len(k) + len(v)
			newest = newest || k != v && v >= fmt.Sprintf("%0*d", maxAttrLen, 900) // of the last push
		}
	}
	if size > 512<<10 || !newest {
		t.Errorf("%d bytes of series kept (newest kept: %v), want at most 512 KiB with the newest", size, newest)
	}
}
