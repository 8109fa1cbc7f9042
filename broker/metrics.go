package broker

// Metrics, named as the Prometheus JMX exporter names Kafka's MBeans
// (lowercased kafka_<domain>_<type>_<name>, rates as _total counters), so
// that Kafka's dashboards and alerts work with few changes; the table is
// in README.md. Counters on the request path are pre-resolved children
// (an array indexed by API key and version, a struct per topic): a request
// costs a few atomic adds, no label lookup. Gauges (partition counts, log
// sizes, group lag) are computed when /metrics is scraped.

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/protocol"
)

// Buckets of the request time histograms, in milliseconds (Kafka's
// RequestMetrics are in ms, and so are the exporter's names).
var (
	latencyBucketsMs = []float64{0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}
	queueBucketsMs   = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 50, 100, 1000}
	throttleBuckets  = []float64{0, 1, 10, 100, 1000, 10000, 60000}
)

// kafkaRequestName is the name Kafka's RequestMetrics gives an API
// (ApiKeys' name): kmsg spells a few acronyms in capitals.
var kafkaRequestName = strings.NewReplacer("ISR", "Isr", "SASL", "Sasl", "ProducerIDs", "ProducerIds",
	"ProducerID", "ProducerId", "ACLs", "Acls", "SCRAM", "Scram").Replace

// reqMetrics are the pre-resolved children of one request name.
type reqMetrics struct {
	requests  []prometheus.Counter // by version
	total     prometheus.Observer
	queue     prometheus.Observer
	local     prometheus.Observer
	send      prometheus.Observer
	throttle  prometheus.Observer
	name      string
	errorsVec *prometheus.CounterVec
}

// topicMetrics are the pre-resolved children of one topic.
type topicMetrics struct {
	bytesIn, bytesOut, messagesIn prometheus.Counter
	produceTotal, produceFailed   prometheus.Counter
	fetchTotal, fetchFailed       prometheus.Counter
	bytesRejected                 prometheus.Counter
	// tiered storage (KIP-405's BrokerTopicMetrics)
	remoteCopyBytes, remoteCopies, remoteCopiesFailed    prometheus.Counter
	remoteFetchBytes, remoteFetches, remoteFetchesFailed prometheus.Counter
	remoteDeletes, remoteDeletesFailed                   prometheus.Counter
	auxStateBuilds, auxStateBuildsFailed                 prometheus.Counter
	// RemoteCopyBytesPerSec and RemoteFetchBytesPerSec's one-minute
	// rates, for the admin surfaces (tiered_status.go)
	remoteCopyRate, remoteFetchRate meter
}

// listenerMetrics are the connection counters of one listener.
type listenerMetrics struct {
	count          prometheus.Gauge
	created, close prometheus.Counter
}

// metrics holds the broker's collectors, in a registry of its own (tests
// run several brokers in one process).
type metrics struct {
	reg *prometheus.Registry

	byKey                 []*reqMetrics // by API key; nil: not served
	fetchConsumer         *reqMetrics
	fetchFollower         *reqMetrics
	errors                *prometheus.CounterVec
	topicVecs             []*prometheus.CounterVec // in topicMetrics' field order
	replicationBytesIn    prometheus.Counter
	replicationBytesOut   prometheus.Counter
	isrShrinks, isrExpand prometheus.Counter
	flush                 prometheus.Histogram
	connCount             *prometheus.GaugeVec
	connCreated, connDone *prometheus.CounterVec
	registryRequests      *prometheus.CounterVec // by method and route
	registryErrors        *prometheus.CounterVec // by route and Confluent error code

	mu        sync.Mutex
	topics    map[string]*topicMetrics    // guarded by mu
	listeners map[string]*listenerMetrics // guarded by mu
}

func newMetrics(b *Broker) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), topics: map[string]*topicMetrics{}, listeners: map[string]*listenerMetrics{}}
	r := m.reg
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		r.MustRegister(v)
		return v
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		r.MustRegister(c)
		return c
	}
	histVec := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, []string{"request"})
		r.MustRegister(v)
		return v
	}
	requests := counterVec("kafka_network_requestmetrics_requests_total", "Requests served, by API and version (RequestsPerSec).", "request", "version")
	m.errors = counterVec("kafka_network_requestmetrics_errors_total", "Error codes in responses, by API and error (ErrorsPerSec; NONE not counted).", "request", "error")
	total := histVec("kafka_network_requestmetrics_totaltimems", "Time from a request's last byte read to its response's last byte written, in ms (TotalTimeMs).", latencyBucketsMs)
	queue := histVec("kafka_network_requestmetrics_requestqueuetimems", "Time from a request's last byte read to its handler's start, in ms: samsa has no request queue, this is header parsing and body decoding (RequestQueueTimeMs).", queueBucketsMs)
	local := histVec("kafka_network_requestmetrics_localtimems", "Time in the request's handler, in ms, including waits for acks=all and fetch.min.bytes (LocalTimeMs+RemoteTimeMs).", latencyBucketsMs)
	send := histVec("kafka_network_requestmetrics_responsesendtimems", "Time to write the response, in ms (ResponseSendTimeMs).", latencyBucketsMs)
	throttle := histVec("kafka_network_requestmetrics_throttletimems", "Throttle time the response carried, in ms (ThrottleTimeMs).", throttleBuckets)
	resolve := func(name string, maxVersion int16) *reqMetrics {
		rm := &reqMetrics{name: name, errorsVec: m.errors,
			total: total.WithLabelValues(name), queue: queue.WithLabelValues(name), local: local.WithLabelValues(name),
			send: send.WithLabelValues(name), throttle: throttle.WithLabelValues(name)}
		for v := int16(0); v <= maxVersion; v++ {
			rm.requests = append(rm.requests, requests.WithLabelValues(name, strconv.Itoa(int(v))))
		}
		return rm
	}
	m.byKey = make([]*reqMetrics, kmsg.MaxKey+1)
	for k, h := range handlers {
		m.byKey[k] = resolve(kafkaRequestName(k.Name()), h.max)
	}
	fetchMax := handlers[kmsg.Fetch].max
	m.fetchConsumer, m.fetchFollower = resolve("FetchConsumer", fetchMax), resolve("FetchFollower", fetchMax)

	for _, d := range [...][2]string{
		{"bytesin", "Bytes appended by producers (BytesInPerSec)."},
		{"bytesout", "Record bytes sent to consumers, followers excluded (BytesOutPerSec)."},
		{"messagesin", "Records appended by producers (MessagesInPerSec)."},
		{"totalproducerequests", "Partition produce requests (TotalProduceRequestsPerSec)."},
		{"failedproducerequests", "Partition produce requests that failed (FailedProduceRequestsPerSec)."},
		{"totalfetchrequests", "Partition fetch requests (TotalFetchRequestsPerSec)."},
		{"failedfetchrequests", "Partition fetch requests that failed (FailedFetchRequestsPerSec)."},
		{"bytesrejected", "Bytes of produce requests refused (BytesRejectedPerSec)."},
		{"remotecopybytes", "Bytes of segments copied to the object store (RemoteCopyBytesPerSec)."},
		{"remotecopyrequests", "Segment copies to the object store (RemoteCopyRequestsPerSec)."},
		{"remotecopyerrors", "Segment copies to the object store that failed (RemoteCopyErrorsPerSec)."},
		{"remotefetchbytes", "Record bytes read from the object store (RemoteFetchBytesPerSec)."},
		{"remotefetchrequests", "Reads of records from the object store (RemoteFetchRequestsPerSec)."},
		{"remotefetcherrors", "Reads of records from the object store that failed (RemoteFetchErrorsPerSec)."},
		{"remotedeleterequests", "Remote segments deleted (RemoteDeleteRequestsPerSec)."},
		{"remotedeleteerrors", "Remote segment deletions that failed (RemoteDeleteErrorsPerSec)."},
		{"buildremotelogauxstaterequests", "Follower logs rebuilt from the remote log metadata after OFFSET_MOVED_TO_TIERED_STORAGE (BuildRemoteLogAuxStateRequestsPerSec)."},
		{"buildremotelogauxstateerrors", "Follower log rebuilds from the remote log metadata that failed (BuildRemoteLogAuxStateErrorsPerSec)."},
	} {
		m.topicVecs = append(m.topicVecs, counterVec("kafka_server_brokertopicmetrics_"+d[0]+"_total", d[1], "topic"))
	}
	m.replicationBytesIn = counter("kafka_server_brokertopicmetrics_replicationbytesin_total", "Bytes appended by this broker's follower fetchers (ReplicationBytesInPerSec).")
	m.replicationBytesOut = counter("kafka_server_brokertopicmetrics_replicationbytesout_total", "Record bytes sent to followers (ReplicationBytesOutPerSec).")
	m.isrShrinks = counter("kafka_server_replicamanager_isrshrinks_total", "ISR shrinks of partitions led here (IsrShrinksPerSec).")
	m.isrExpand = counter("kafka_server_replicamanager_isrexpands_total", "ISR expansions of partitions led here (IsrExpandsPerSec).")
	m.flush = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kafka_log_logflushstats_logflushrateandtimems",
		Help: "Log flushes (fsync) and their time in ms (LogFlushRateAndTimeMs).", Buckets: latencyBucketsMs})
	r.MustRegister(m.flush)
	m.connCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kafka_server_socket_server_metrics_connections",
		Help: "Open client connections, by listener (socket-server-metrics connection-count; not _count, which Prometheus keeps for histograms)."}, []string{"listener"})
	r.MustRegister(m.connCount)
	m.connCreated = counterVec("kafka_server_socket_server_metrics_connection_creation_total", "Connections accepted, by listener (connection-creation-total).", "listener")
	m.connDone = counterVec("kafka_server_socket_server_metrics_connection_close_total", "Connections closed, by listener (connection-close-total).", "listener")
	m.registryRequests = counterVec("samsa_schema_registry_requests_total", "Schema registry requests answered, by method and route (the path pattern).", "method", "route")
	m.registryErrors = counterVec("samsa_schema_registry_errors_total", "Schema registry requests answered with an error, by route and Confluent's error code.", "route", "error_code")

	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.MustRegister(stateCollector{b})
	r.MustRegister(b.telemetry, b.telemetry.Store()) // client metrics (KIP-714): the broker's, and what clients push
	return m
}

// forTopic returns the children of a topic, made on first use.
func (m *metrics) forTopic(name string) *topicMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tm := m.topics[name]; tm != nil {
		return tm
	}
	c := make([]prometheus.Counter, len(m.topicVecs))
	for i, v := range m.topicVecs {
		c[i] = v.WithLabelValues(name)
	}
	tm := &topicMetrics{bytesIn: c[0], bytesOut: c[1], messagesIn: c[2], produceTotal: c[3], produceFailed: c[4],
		fetchTotal: c[5], fetchFailed: c[6], bytesRejected: c[7],
		remoteCopyBytes: c[8], remoteCopies: c[9], remoteCopiesFailed: c[10],
		remoteFetchBytes: c[11], remoteFetches: c[12], remoteFetchesFailed: c[13],
		remoteDeletes: c[14], remoteDeletesFailed: c[15], auxStateBuilds: c[16], auxStateBuildsFailed: c[17]}
	m.topics[name] = tm
	return tm
}

// dropTopic removes a deleted topic's series.
func (m *metrics) dropTopic(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.topics, name)
	for _, v := range m.topicVecs {
		v.DeleteLabelValues(name)
	}
}

// forListener returns the connection counters of a listener.
func (m *metrics) forListener(name string) *listenerMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if lm := m.listeners[name]; lm != nil {
		return lm
	}
	lm := &listenerMetrics{count: m.connCount.WithLabelValues(name), created: m.connCreated.WithLabelValues(name), close: m.connDone.WithLabelValues(name)}
	m.listeners[name] = lm
	return lm
}

// reqTimes are the instants of one request's life on its connection.
type reqTimes struct {
	read, start, end, sent time.Time
}

// observeRequest counts one served request. hdr is the header as read
// (before dispatch answers an ApiVersions of an unknown version in v0).
func (m *metrics) observeRequest(key, version int16, r *request, resp kmsg.Response, t reqTimes) {
	if key < 0 || int(key) >= len(m.byKey) || m.byKey[key] == nil {
		return
	}
	rm := m.byKey[key]
	rm.observe(version, resp, t)
	if kmsg.Key(key) == kmsg.Fetch {
		if fr, ok := r.body.(*kmsg.FetchRequest); ok {
			if fr.ReplicaID >= 0 || (fr.Version >= 15 && fr.ReplicaState.ID >= 0) {
				m.fetchFollower.observe(version, nil, t)
			} else {
				m.fetchConsumer.observe(version, nil, t)
			}
		}
	}
}

func (rm *reqMetrics) observe(version int16, resp kmsg.Response, t reqTimes) {
	if version >= 0 && int(version) < len(rm.requests) {
		rm.requests[version].Inc()
	}
	if t.start.IsZero() { // answered before a handler ran
		t.start = t.end
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	rm.total.Observe(ms(t.sent.Sub(t.read)))
	rm.queue.Observe(ms(t.start.Sub(t.read)))
	rm.local.Observe(ms(t.end.Sub(t.start)))
	rm.send.Observe(ms(t.sent.Sub(t.end)))
	if resp == nil {
		return
	}
	if fr, ok := resp.(*protocol.FramedResponse); ok {
		resp = fr.Response
	}
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		ms, _ := tr.Throttle()
		rm.throttle.Observe(float64(ms))
	}
	responseErrors(resp, func(code int16) {
		if code != 0 {
			rm.errorsVec.WithLabelValues(rm.name, errorName(code)).Inc()
		}
	})
}

// errorName is Kafka's name of an error code (Errors' enum names).
func errorName(code int16) string {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return "UNKNOWN_" + strconv.Itoa(int(code))
}

// responseErrors calls fn with the error codes of a response's answers
// (top level and per partition, group or topic) for the APIs whose errors
// people watch; other responses count no errors.
func responseErrors(resp kmsg.Response, fn func(int16)) {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				fn(p.ErrorCode)
			}
		}
	case *kmsg.FetchResponse:
		fn(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				fn(p.ErrorCode)
			}
		}
	case *kmsg.ListOffsetsResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				fn(p.ErrorCode)
			}
		}
	case *kmsg.MetadataResponse:
		for _, t := range r.Topics {
			fn(t.ErrorCode)
		}
	case *kmsg.OffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				fn(p.ErrorCode)
			}
		}
	case *kmsg.OffsetFetchResponse:
		fn(r.ErrorCode)
		for _, g := range r.Groups {
			fn(g.ErrorCode)
		}
	case *kmsg.FindCoordinatorResponse:
		fn(r.ErrorCode)
		for _, c := range r.Coordinators {
			fn(c.ErrorCode)
		}
	case *kmsg.JoinGroupResponse:
		fn(r.ErrorCode)
	case *kmsg.SyncGroupResponse:
		fn(r.ErrorCode)
	case *kmsg.HeartbeatResponse:
		fn(r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		fn(r.ErrorCode)
	case *kmsg.InitProducerIDResponse:
		fn(r.ErrorCode)
	case *kmsg.ApiVersionsResponse:
		fn(r.ErrorCode)
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			fn(t.ErrorCode)
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			fn(t.ErrorCode)
		}
	}
}

// produced counts one partition's produce request: records appended
// (messages counted by offsets assigned) or the error.
func (tm *topicMetrics) produced(size int, firstOffset, lastOffset int64, duplicate bool, err error) {
	tm.produceTotal.Inc()
	switch {
	case err != nil:
		tm.produceFailed.Inc()
		tm.bytesRejected.Add(float64(size))
	case !duplicate:
		tm.bytesIn.Add(float64(size))
		tm.messagesIn.Add(float64(lastOffset - firstOffset + 1))
	}
}

// fetched counts one partition of a fetch.
func (m *metrics) fetched(t *topic, follower bool, size int64, err error) {
	if t == nil {
		return
	}
	t.metrics.fetchTotal.Inc()
	switch {
	case err != nil:
		t.metrics.fetchFailed.Inc()
	case follower:
		m.replicationBytesOut.Add(float64(size))
	default:
		t.metrics.bytesOut.Add(float64(size))
	}
}

// Gatherer is the broker's metrics registry, for /metrics.
func (b *Broker) Gatherer() prometheus.Gatherer { return b.metrics.reg }

func (m *metrics) isrChanged(shrunk, expanded bool) {
	if shrunk {
		m.isrShrinks.Inc()
	}
	if expanded {
		m.isrExpand.Inc()
	}
}

func (m *metrics) flushed(took time.Duration) {
	m.flush.Observe(float64(took) / float64(time.Millisecond))
}

// registryRequest counts a request the schema registry answered.
func (m *metrics) registryRequest(method, route string, code int) {
	m.registryRequests.WithLabelValues(httpMethodLabel(method), route).Inc()
	if code != 0 {
		m.registryErrors.WithLabelValues(route, strconv.Itoa(code)).Inc()
	}
}

// httpMethodLabel is a request's method as a label value: the methods
// HTTP defines by name, any other "other". The client names the method
// (any token), and each name would be a series kept for good.
func httpMethodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return "other"
}
