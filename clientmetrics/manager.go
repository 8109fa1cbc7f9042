package clientmetrics

import (
	"container/list"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Client is what the broker knows of the connection a request came on.
type Client struct {
	ConnID          uint64
	ClientID        string
	SoftwareName    string // from ApiVersions v3+; "unknown" before
	SoftwareVersion string
	Address         string // the client's IP address
	Port            int
}

// Compressions are the codecs a client may compress its pushes with, in
// the broker's order of preference, as Kafka 4.4 lists them: zstd, lz4,
// gzip, snappy.
var Compressions = []int8{4, 3, 1, 2}

// Answer is a GetTelemetrySubscriptions answer.
type Answer struct {
	InstanceID     [16]byte
	SubscriptionID int32
	Metrics        []string // the prefixes to push; ["*"] for every metric
	IntervalMs     int32
	MaxBytes       int32
}

// Push is a PushTelemetry request.
type Push struct {
	InstanceID     [16]byte
	SubscriptionID int32
	Terminating    bool
	Compression    int8
	Metrics        []byte
}

// Kafka keeps at most this many client instances per broker, and forgets
// one that sent nothing for max(a minute, three push intervals).
const (
	maxInstances   = 16384
	instanceExpiry = time.Minute
)

// Manager is a broker's client-metrics state; safe for concurrent use.
type Manager struct {
	maxBytes func() int32
	now      func() time.Time
	store    *Store

	// Counts for the broker's own metrics (Kafka's client-metrics group).
	throttled, unknownSub, exported, exportErrors atomic.Int64

	mu      sync.Mutex
	subs    map[string]Subscription      // guarded by mu
	version int                          // guarded by mu; bumped by every change of subs
	raw     map[string]map[string]string // guarded by mu; the configs subs were parsed from
	inst    map[[16]byte]*list.Element   // guarded by mu; of lru
	lru     *list.List                   // guarded by mu; of *instance, most recently used first
	byConn  map[uint64][16]byte          // guarded by mu; the instance a connection last spoke for
}

// instance is one client instance (Kafka's ClientMetricsInstance).
type instance struct {
	id          [16]byte
	client      Client
	subID       int32
	version     int
	metrics     []string
	intervalMs  int32
	lastGet     int64 // ms
	lastPush    int64 // ms
	terminating bool
	lastErr     error
	seen        time.Time
}

// NewManager returns a Manager that exports what clients push to store.
// maxBytes is telemetry.max.bytes in effect; now is the clock (nil:
// time.Now).
func NewManager(store *Store, maxBytes func() int32, now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	return &Manager{maxBytes: maxBytes, now: now, store: store, subs: map[string]Subscription{},
		inst: map[[16]byte]*list.Element{}, lru: list.New(), byConn: map[uint64][16]byte{}}
}

// Store is where the Manager puts what clients push.
func (m *Manager) Store() *Store { return m.store }

// SetSubscriptions replaces the subscriptions with those of every
// CLIENT_METRICS resource (name -> configs); a resource whose configs do
// not parse is left out. Every instance gets its subscription anew on
// its next request.
//
// The same configs again change nothing: the broker hands them over on
// every read of the CLIENT_METRICS resources, and an instance evaluated
// anew forgets its state (a terminating client would be taken again).
func (m *Manager) SetSubscriptions(all map[string]map[string]string) {
	subs := map[string]Subscription{}
	raw := map[string]map[string]string{}
	for name, cfg := range all {
		if len(cfg) == 0 {
			continue
		}
		raw[name] = maps.Clone(cfg)
		if s, err := Parse(name, cfg); err == nil {
			subs[name] = s
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if maps.EqualFunc(raw, m.raw, maps.Equal) {
		return
	}
	m.subs, m.raw = subs, raw
	m.version++
}

// Names are the subscriptions' names, sorted.
func (m *Manager) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := range m.subs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Subscriptions answers GetTelemetrySubscriptions: id is the client's
// instance id, zero for a new one.
func (m *Manager) Subscriptions(id [16]byte, c Client) (Answer, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if id == ([16]byte{}) {
		id = m.newID()
	}
	in := m.instanceLocked(id, c, now)
	ms := now.UnixMilli()
	if ms-max(in.lastGet, in.lastPush) >= int64(in.intervalMs) {
		in.lastGet = ms
	} else if in.lastErr != ErrUnknownSubscription && in.lastErr != ErrUnsupportedCompression {
		m.throttled.Add(1)
		return Answer{}, errorf(ErrThrottled, "Request from the client [%s] arrived before the next push interval time", uuidString(id))
	}
	in.lastErr = nil
	return Answer{InstanceID: id, SubscriptionID: in.subID, Metrics: slices.Clone(in.metrics), IntervalMs: in.intervalMs, MaxBytes: m.maxBytes()}, nil
}

// Push accepts, or refuses with Kafka's error, a PushTelemetry request,
// and stores the metrics of one it accepts.
func (m *Manager) Push(p Push, c Client) error {
	if p.InstanceID == ([16]byte{}) || p.InstanceID == oneUUID {
		return errorf(ErrInvalidRequest, "Invalid request from the client [%s], invalid client instance id", uuidString(p.InstanceID))
	}
	now := m.now()
	limit := m.maxBytes()
	m.mu.Lock()
	in := m.instanceLocked(p.InstanceID, c, now)
	err := m.validatePushLocked(in, p, now.UnixMilli(), limit)
	in.terminating = p.Terminating
	in.lastErr = kindOf(err)
	client := in.client
	m.mu.Unlock()
	if err != nil || len(p.Metrics) == 0 {
		return err
	}
	points, err := Decode(p.Compression, p.Metrics, int(limit))
	if err == nil {
		m.exported.Add(1)
		m.store.Record(p.InstanceID, client, points, now)
	} else {
		m.exportErrors.Add(1)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.inst[p.InstanceID]; ok {
		e.Value.(*instance).lastErr = kindOf(err)
	}
	return err
}

func (m *Manager) validatePushLocked(in *instance, p Push, ms int64, limit int32) error {
	id := uuidString(p.InstanceID)
	if in.terminating {
		return errorf(ErrInvalidRequest, "Client [%s] sent the previous request with state terminating to TRUE, can not acceptany requests after that", id)
	}
	// The first push after a GetTelemetrySubscriptions is accepted
	// whenever it comes: clients add jitter to the interval.
	accept := in.lastGet > in.lastPush || ms-in.lastPush >= int64(in.intervalMs)
	if accept {
		in.lastPush = ms
	} else if !p.Terminating {
		m.throttled.Add(1)
		return errorf(ErrThrottled, "Request from the client [%s] arrived before the next push interval time", id)
	}
	if p.SubscriptionID != in.subID {
		m.unknownSub.Add(1)
		return errorf(ErrUnknownSubscription, "Unknown client subscription id for the client [%s]", id)
	}
	if p.Compression < 0 || p.Compression > 4 {
		return errorf(ErrUnsupportedCompression, "Unknown compression type [%d] is received in telemetry request from [%s]", p.Compression, id)
	}
	if len(p.Metrics) > int(limit) {
		return errorf(ErrTooLarge, "Telemetry request from [%s] is larger than the maximum allowed size [%d]", id, limit)
	}
	return nil
}

// kindOf is the sentinel of one of the package's errors.
func kindOf(err error) error {
	if e, ok := err.(*kafkaError); ok {
		return e.kind
	}
	return err
}

// ConnClosed forgets the instance that last spoke on a connection, as
// Kafka does when the connection closes; its metrics stay in the Store.
func (m *Manager) ConnClosed(connID uint64) {
	m.mu.Lock()
	id, ok := m.byConn[connID]
	if ok {
		delete(m.byConn, connID)
		if e, ok := m.inst[id]; ok {
			m.lru.Remove(e)
			delete(m.inst, id)
		}
	}
	m.mu.Unlock()
	if ok {
		m.store.Disconnected(id)
	}
}

// instanceLocked returns the instance of id, made now if unknown or
// made anew from the current subscriptions if they changed since.
func (m *Manager) instanceLocked(id [16]byte, c Client, now time.Time) *instance {
	m.expireLocked(now)
	var in *instance
	if e, ok := m.inst[id]; ok {
		in = e.Value.(*instance)
		if in.version < m.version {
			in = m.evaluateLocked(id, in.client)
			e.Value = in
		}
		m.lru.MoveToFront(e)
	} else {
		in = m.evaluateLocked(id, c)
		m.inst[id] = m.lru.PushFront(in)
		for m.lru.Len() > maxInstances {
			old := m.lru.Remove(m.lru.Back()).(*instance)
			delete(m.inst, old.id)
		}
	}
	in.seen = now
	m.byConn[c.ConnID] = id
	return in
}

// expireLocked forgets the instances that sent nothing for their expiry.
func (m *Manager) expireLocked(now time.Time) {
	for e := m.lru.Back(); e != nil; e = m.lru.Back() {
		in := e.Value.(*instance)
		if now.Sub(in.seen) < max(instanceExpiry, 3*time.Duration(in.intervalMs)*time.Millisecond) {
			return
		}
		m.lru.Remove(e)
		delete(m.inst, in.id)
		if m.byConn[in.client.ConnID] == in.id {
			delete(m.byConn, in.client.ConnID)
		}
	}
}

// evaluateLocked makes the instance of a client from the subscriptions
// matching it: the union of their metrics ("*" alone if any has it) and
// the shortest of their intervals.
func (m *Manager) evaluateLocked(id [16]byte, c Client) *instance {
	attrs := map[string]string{
		SelInstanceID: uuidString(id), SelClientID: c.ClientID,
		SelSoftwareName: c.SoftwareName, SelSoftwareVersion: c.SoftwareVersion,
		SelSourceAddress: c.Address, SelSourcePort: strconv.Itoa(c.Port),
	}
	interval := int32(DefaultIntervalMs)
	set := map[string]bool{}
	all := false
	for _, s := range m.subs {
		if !matches(s, attrs) {
			continue
		}
		for _, p := range s.Metrics {
			set[p] = true
			all = all || p == "*"
		}
		interval = min(interval, s.IntervalMs)
	}
	metrics := make([]string, 0, len(set))
	if all {
		metrics = append(metrics, "*")
	} else {
		for p := range set {
			metrics = append(metrics, p)
		}
		slices.Sort(metrics)
	}
	return &instance{id: id, client: c, version: m.version, metrics: metrics, intervalMs: interval,
		subID: subscriptionID(metrics, interval, id)}
}

// matches reports whether every selector of s matches its attribute in
// attrs, an empty one too (Kafka takes a request without a client id as
// one with an empty id, and matches the pattern against it).
func matches(s Subscription, attrs map[string]string) bool {
	for sel, re := range s.Match {
		if v, ok := attrs[sel]; !ok || !re.MatchString(v) {
			return false
		}
	}
	return true
}

// subscriptionID identifies an instance's subscription as Kafka does: the
// CRC32C of the metrics and the interval, XORed with the instance id's
// hash.
func subscriptionID(metrics []string, intervalMs int32, id [16]byte) int32 {
	s := "[" + strings.Join(metrics, ", ") + "]" + strconv.Itoa(int(intervalMs))
	crc := crc32.Checksum([]byte(s), crc32.MakeTable(crc32.Castagnoli))
	h := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return int32(crc) ^ int32(h>>32) ^ int32(h)
}

var oneUUID = [16]byte{15: 1}

// newID is a random instance id that no instance has, as Kafka's
// Uuid.randomUuid makes them: neither reserved nor printed with a
// leading '-'.
func (m *Manager) newID() [16]byte {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:])
		if _, used := m.inst[id]; used || id == ([16]byte{}) || id == oneUUID || id[0]>>2 == 62 {
			continue
		}
		return id
	}
}

// uuidString prints an id as Kafka's Uuid.toString does.
func uuidString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// UUIDString prints an instance id as Kafka does (URL-safe base64).
func UUIDString(id [16]byte) string { return uuidString(id) }

// The broker's own client-metrics metrics, as the Prometheus JMX exporter
// names Kafka's (kafka.server:type=client-metrics); the exports are the
// payloads decoded into the Store, Kafka's plugin exports.
var (
	descInstances  = prometheus.NewDesc("kafka_server_client_metrics_instances", "Client instances the broker keeps (instance-count; not _count, which Prometheus keeps for histograms).", nil, nil)
	descThrottled  = prometheus.NewDesc("kafka_server_client_metrics_throttle_total", "GetTelemetrySubscriptions and PushTelemetry requests refused before the push interval (throttle-count).", nil, nil)
	descUnknownSub = prometheus.NewDesc("kafka_server_client_metrics_unknown_subscription_request_total", "Pushes with a subscription id that is not the instance's (unknown-subscription-request-count).", nil, nil)
	descExported   = prometheus.NewDesc("kafka_server_client_metrics_plugin_export_total", "Pushed payloads decoded and kept (plugin-export-count).", nil, nil)
	descExportErrs = prometheus.NewDesc("kafka_server_client_metrics_plugin_error_total", "Pushed payloads that did not decode (plugin-error-count).", nil, nil)
)

// Describe is prometheus.Collector's.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInstances, descThrottled, descUnknownSub, descExported, descExportErrs} {
		ch <- d
	}
}

// Collect is prometheus.Collector's: the counts above, and (unchecked)
// what the Store keeps.
func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	n := len(m.inst)
	m.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descInstances, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(descThrottled, prometheus.CounterValue, float64(m.throttled.Load()))
	ch <- prometheus.MustNewConstMetric(descUnknownSub, prometheus.CounterValue, float64(m.unknownSub.Load()))
	ch <- prometheus.MustNewConstMetric(descExported, prometheus.CounterValue, float64(m.exported.Load()))
	ch <- prometheus.MustNewConstMetric(descExportErrs, prometheus.CounterValue, float64(m.exportErrors.Load()))
}
