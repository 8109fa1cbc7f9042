package clientmetrics

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Limits bound a Store.
type Limits struct {
	Clients         int           // client instances kept
	SeriesPerClient int           // series kept of each
	BytesPerClient  int           // bytes of series names and attributes kept of each (seriesSize)
	History         int           // values kept of each plotted series
	Expiry          time.Duration // an instance that pushed nothing for this long is dropped
}

// DefaultLimits are a broker's: at most about half a GiB however clients
// push, a few MiB for a thousand clients as they do.
var DefaultLimits = Limits{Clients: 1000, SeriesPerClient: 1000, BytesPerClient: 512 << 10, History: 120, Expiry: 15 * time.Minute}

// Plotted are parts of metric names whose series keep a history: request
// latency, record send rate and the consumer's lag as it sees it. At most
// maxPlotted series of an instance keep one.
var Plotted = []string{"request.latency", "record.send.rate", "records.lag"}

const maxPlotted = 32

// The labels every exported series has.
const (
	LabelInstanceID      = "client_instance_id"
	LabelClientID        = "client_id"
	LabelSoftwareName    = "client_software_name"
	LabelSoftwareVersion = "client_software_version"
)

// Store keeps what client instances pushed; safe for concurrent use.
type Store struct {
	lim Limits
	now func() time.Time

	mu      sync.Mutex
	clients map[[16]byte]*client // guarded by mu
}

type client struct {
	id          [16]byte
	c           Client
	first, last time.Time
	pushes      int64
	connected   bool
	series      map[string]*series
	bytes       int // seriesSize of every series
	plotted     int // series with a history
}

type series struct {
	name    string
	kind    Kind
	attrs   []Attr // sorted by key
	value   float64
	updated time.Time
	hist    []Sample // plotted series only, oldest first
}

// seriesSize is what a series of key (seriesKey) counts against
// Limits.BytesPerClient: its name and attributes, and its bookkeeping.
func seriesSize(key string) int { return len(key) + 128 }

// drop forgets a series.
func (cl *client) drop(key string, se *series) {
	delete(cl.series, key)
	cl.bytes -= seriesSize(key)
	if se.hist != nil {
		cl.plotted--
	}
}

// Sample is one value of a series at a time (Unix milliseconds).
type Sample struct {
	T int64   `json:"t"`
	V float64 `json:"v"`
}

// NewStore returns an empty Store (zero limits take DefaultLimits').
func NewStore(lim Limits, now func() time.Time) *Store {
	d := DefaultLimits
	lim.Clients = cmp.Or(lim.Clients, d.Clients)
	lim.SeriesPerClient = cmp.Or(lim.SeriesPerClient, d.SeriesPerClient)
	lim.BytesPerClient = cmp.Or(lim.BytesPerClient, d.BytesPerClient)
	lim.History = cmp.Or(lim.History, d.History)
	lim.Expiry = cmp.Or(lim.Expiry, d.Expiry)
	if now == nil {
		now = time.Now
	}
	return &Store{lim: lim, now: now, clients: map[[16]byte]*client{}}
}

func seriesKey(name string, attrs []Attr) string {
	var sb strings.Builder
	sb.WriteString(name)
	for _, a := range attrs {
		sb.WriteByte(0)
		sb.WriteString(a.Key)
		sb.WriteByte(0)
		sb.WriteString(a.Value)
	}
	return sb.String()
}

func plotted(name string) bool {
	for _, p := range Plotted {
		if strings.Contains(name, p) {
			return true
		}
	}
	return false
}

// Record keeps the points an instance pushed at now.
func (s *Store) Record(id [16]byte, c Client, points []Point, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	cl := s.clients[id]
	if cl == nil {
		if len(s.clients) >= s.lim.Clients {
			oldest := slices.MinFunc(slices.Collect(maps.Values(s.clients)), func(a, b *client) int { return a.last.Compare(b.last) })
			delete(s.clients, oldest.id)
		}
		cl = &client{id: id, c: c, first: now, series: map[string]*series{}}
		s.clients[id] = cl
	}
	cl.c, cl.last, cl.connected = c, now, true
	cl.pushes++
	type pending struct {
		key string
		p   Point
	}
	var fresh []pending
	for _, p := range points {
		slices.SortStableFunc(p.Attrs, func(a, b Attr) int { return strings.Compare(a.Key, b.Key) })
		key := seriesKey(p.Name, p.Attrs)
		if se := cl.series[key]; se != nil {
			se.update(p, now, s.lim.History)
		} else {
			fresh = append(fresh, pending{key, p})
		}
	}
	// The new series that fit the client's bounds, then room for them:
	// the series updated longest ago go first.
	freshBytes, n := 0, 0
	for ; n < len(fresh) && n < s.lim.SeriesPerClient; n++ {
		size := seriesSize(fresh[n].key)
		if freshBytes+size > s.lim.BytesPerClient {
			break
		}
		freshBytes += size
	}
	fresh = fresh[:n]
	full := func() bool {
		return len(cl.series)+len(fresh) > s.lim.SeriesPerClient || cl.bytes+freshBytes > s.lim.BytesPerClient
	}
	if full() {
		olds := slices.SortedFunc(maps.Values(cl.series), func(a, b *series) int { return a.updated.Compare(b.updated) })
		for _, se := range olds {
			if !full() {
				break
			}
			cl.drop(seriesKey(se.name, se.attrs), se)
		}
	}
	for _, f := range fresh {
		if cl.series[f.key] != nil { // twice in one push
			cl.series[f.key].update(f.p, now, s.lim.History)
			continue
		}
		se := &series{name: f.p.Name, kind: f.p.Kind, attrs: f.p.Attrs}
		if cl.plotted < maxPlotted && plotted(se.name) {
			se.hist = make([]Sample, 0, 8)
			cl.plotted++
		}
		se.update(f.p, now, s.lim.History)
		cl.series[f.key] = se
		cl.bytes += seriesSize(f.key)
	}
}

func (se *series) update(p Point, now time.Time, history int) {
	if p.Kind == DeltaCount || p.Kind == DeltaSum {
		se.value += p.Value
	} else {
		se.value = p.Value
	}
	se.updated = now
	if se.hist != nil {
		if len(se.hist) >= history {
			se.hist = append(se.hist[:0], se.hist[len(se.hist)-history+1:]...)
		}
		se.hist = append(se.hist, Sample{now.UnixMilli(), se.value})
	}
}

// Disconnected marks an instance's connection closed.
func (s *Store) Disconnected(id [16]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cl := s.clients[id]; cl != nil {
		cl.connected = false
	}
}

func (s *Store) expireLocked(now time.Time) {
	for id, cl := range s.clients {
		if now.Sub(cl.last) > s.lim.Expiry {
			delete(s.clients, id)
		}
	}
}

// ClientView is what the console shows of one client instance.
type ClientView struct {
	InstanceID      string       `json:"instance_id"`
	ClientID        string       `json:"client_id"`
	SoftwareName    string       `json:"software_name"`
	SoftwareVersion string       `json:"software_version"`
	Address         string       `json:"address"`
	Connected       bool         `json:"connected"`
	FirstPush       time.Time    `json:"first_push"`
	LastPush        time.Time    `json:"last_push"`
	Pushes          int64        `json:"pushes"`
	Series          []SeriesView `json:"series"`
}

// SeriesView is one series of a ClientView.
type SeriesView struct {
	Name    string            `json:"name"`
	Labels  map[string]string `json:"labels,omitempty"`
	Counter bool              `json:"counter,omitempty"`
	Value   float64           `json:"value"`
	History []Sample          `json:"history,omitempty"`
}

// Clients are the instances kept, the last to push first, their series
// sorted by name and labels.
func (s *Store) Clients() []ClientView {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.now())
	out := make([]ClientView, 0, len(s.clients))
	for _, cl := range s.clients {
		v := ClientView{InstanceID: uuidString(cl.id), ClientID: cl.c.ClientID, SoftwareName: cl.c.SoftwareName,
			SoftwareVersion: cl.c.SoftwareVersion, Address: cl.c.Address, Connected: cl.connected,
			FirstPush: cl.first, LastPush: cl.last, Pushes: cl.pushes}
		for _, se := range cl.series {
			sv := SeriesView{Name: se.name, Counter: se.kind == Counter || se.kind == DeltaCount, Value: se.value, History: slices.Clone(se.hist)}
			if len(se.attrs) > 0 {
				sv.Labels = map[string]string{}
				for _, a := range se.attrs {
					sv.Labels[a.Key] = a.Value
				}
			}
			v.Series = append(v.Series, sv)
		}
		slices.SortFunc(v.Series, func(a, b SeriesView) int {
			return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(seriesKey("", attrsOf(a.Labels)), seriesKey("", attrsOf(b.Labels))))
		})
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b ClientView) int {
		return cmp.Or(b.LastPush.Compare(a.LastPush), strings.Compare(a.InstanceID, b.InstanceID))
	})
	return out
}

func attrsOf(m map[string]string) []Attr {
	var out []Attr
	for k, v := range m {
		out = append(out, Attr{k, v})
	}
	slices.SortFunc(out, func(a, b Attr) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Describe sends nothing: the metrics are whatever clients push, so the
// Store is an unchecked collector.
func (s *Store) Describe(chan<- *prometheus.Desc) {}

// Collect exports every series kept: the metric named after the OTLP name
// (dots and other characters Prometheus refuses made underscores), a
// counter for monotonic sums and a gauge otherwise, labelled with the
// instance's four labels and the point's attributes. The series of one
// name share one label set, the union of their attributes (empty where a
// series lacks one); a name the broker uses itself (kafka_, samsa_, go_,
// process_) is not exported, one pushed as two kinds is exported as the
// kind first seen, and of series that come out with the same name and
// labels (names or attributes differing only in characters Prometheus
// refuses) one is.
func (s *Store) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.now())
	type family struct {
		kind   prometheus.ValueType
		help   string
		keys   []string // attribute label names, sorted
		series []*series
		owners []*client
	}
	fams := map[string]*family{}
	for _, cl := range s.clients {
		for _, se := range cl.series {
			name := promName(se.name)
			if name == "" {
				continue
			}
			vt := prometheus.GaugeValue
			if se.kind == Counter || se.kind == DeltaCount {
				vt = prometheus.CounterValue
			}
			f := fams[name]
			if f == nil {
				f = &family{kind: vt, help: "Pushed by clients (KIP-714): " + se.name + "."}
				fams[name] = f
			}
			if f.kind != vt {
				continue
			}
			for _, a := range se.attrs {
				if k := labelName(a.Key); !slices.Contains(f.keys, k) {
					f.keys = append(f.keys, k)
				}
			}
			f.series = append(f.series, se)
			f.owners = append(f.owners, cl)
		}
	}
	seen := map[string]bool{}
	for name, f := range fams {
		slices.Sort(f.keys)
		labels := append([]string{LabelInstanceID, LabelClientID, LabelSoftwareName, LabelSoftwareVersion}, f.keys...)
		desc := prometheus.NewDesc(name, f.help, labels, nil)
		for i, se := range f.series {
			cl := f.owners[i]
			vals := make([]string, len(labels))
			vals[0], vals[1], vals[2], vals[3] = uuidString(cl.id), cl.c.ClientID, cl.c.SoftwareName, cl.c.SoftwareVersion
			for _, a := range se.attrs {
				j, _ := slices.BinarySearch(f.keys, labelName(a.Key))
				vals[4+j] = a.Value
			}
			k := name + "\x00" + strings.Join(vals, "\x00")
			if seen[k] {
				continue
			}
			seen[k] = true
			if m, err := prometheus.NewConstMetric(desc, f.kind, se.value, vals...); err == nil {
				ch <- m
			}
		}
	}
}

// promName is the Prometheus name of an OTLP metric name ("" to skip).
func promName(n string) string {
	b := []byte(n)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || c >= '0' && c <= '9' && i > 0) {
			b[i] = '_'
		}
	}
	out := string(b)
	for _, p := range []string{"kafka_", "samsa_", "go_", "process_", "promhttp_", "__"} {
		if strings.HasPrefix(out, p) {
			return ""
		}
	}
	return out
}

// labelName is the label of an attribute: Prometheus' characters, and
// never one of the four instance labels or a reserved name.
func labelName(k string) string {
	b := []byte(k)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9' && i > 0) {
			b[i] = '_'
		}
	}
	out := string(b)
	switch {
	case out == LabelInstanceID, out == LabelClientID, out == LabelSoftwareName, out == LabelSoftwareVersion, strings.HasPrefix(out, "__"):
		return "attr_" + out
	}
	return out
}
