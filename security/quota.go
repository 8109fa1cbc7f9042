package security

import (
	"sync"
	"sync/atomic"
	"time"
)

// Client quotas as Kafka has them (KIP-13, KIP-55, KIP-219): a byte rate
// for produce (producer_byte_rate) and fetch (consumer_byte_rate) per
// user, client id, or both, with defaults; the rate measured over
// quota.window.num samples of quota.window.size.seconds, and a client over
// its quota throttled for
//
//	(rate - quota) / quota * window
//
// (the time until the measured rate falls back to the quota), told in
// throttle_time_ms and its connection muted for that long.

// Quota keys.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
)

// DefaultEntity is the name of the default user or client id.
const DefaultEntity = "<default>"

// QuotaEntity names a quota's entity: a user, a client id or both; ""
// for a part the entity has not, DefaultEntity for a default.
type QuotaEntity struct {
	User     string
	ClientID string
}

// QuotaConfigs are the quotas set, by entity.
type QuotaConfigs map[QuotaEntity]map[string]float64

// resolve finds the quota of key for a user and client id in Kafka's order
// of precedence, and the entity it is set on (the throttled unit).
func (qc QuotaConfigs) resolve(user, clientID, key string) (QuotaEntity, float64, bool) {
	d := DefaultEntity
	for _, e := range []QuotaEntity{
		{user, clientID}, {user, d}, {user, ""},
		{d, clientID}, {d, d}, {d, ""},
		{"", clientID}, {"", d},
	} {
		if v, ok := qc[e][key]; ok {
			return e, v, true
		}
	}
	return QuotaEntity{}, 0, false
}

// Quotas measures clients against their quotas.
type Quotas struct {
	windows int
	size    time.Duration
	configs atomic.Pointer[QuotaConfigs]

	mu    sync.Mutex
	rates map[rateKey]*rate // guarded by mu
}

type rateKey struct {
	key    string
	entity QuotaEntity
	user   string // the user and client id of the sensor: a quota set
	client string // on a default is had by each user (client) apart
}

// NewQuotas measures over windows samples of size each.
func NewQuotas(windows int, size time.Duration) *Quotas {
	q := &Quotas{windows: max(windows, 2), size: max(size, time.Millisecond), rates: map[rateKey]*rate{}}
	q.Load(nil)
	return q
}

// Load replaces the quota configs.
func (q *Quotas) Load(qc QuotaConfigs) {
	if qc == nil {
		qc = QuotaConfigs{}
	}
	q.configs.Store(&qc)
}

// Record counts value against the quota of key that applies to user and
// client id and returns how long to throttle them; 0 without a quota or
// within it.
func (q *Quotas) Record(key, user, clientID string, value float64, now time.Time) time.Duration {
	qc := *q.configs.Load()
	if len(qc) == 0 {
		return 0
	}
	e, bound, ok := qc.resolve(user, clientID, key)
	if !ok || bound <= 0 {
		return 0
	}
	rk := rateKey{key: key, entity: e}
	if e.User == DefaultEntity {
		rk.user = user
	}
	if e.ClientID == DefaultEntity {
		rk.client = clientID
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.rates[rk]
	if r == nil {
		r = &rate{samples: make([]sample, q.windows)}
		q.rates[rk] = r
	}
	r.record(value, now, q.size)
	observed, window := r.measure(now, q.size)
	if observed <= bound {
		return 0
	}
	t := time.Duration((observed - bound) / bound * float64(window))
	return min(t, time.Duration(q.windows)*q.size)
}

// rate is Kafka's Rate over a SampledStat: samples in a ring, each one
// window long.
type rate struct {
	samples []sample
	cur     int
}

type sample struct {
	start time.Time
	value float64
}

func (r *rate) record(v float64, now time.Time, size time.Duration) {
	s := &r.samples[r.cur]
	if s.start.IsZero() || now.Sub(s.start) >= size {
		r.cur = (r.cur + 1) % len(r.samples)
		s = &r.samples[r.cur]
		*s = sample{start: now}
	}
	s.value += v
}

// measure returns the rate per second over the live samples and the
// window it is over (at least windows-1 whole windows, as Kafka's Rate
// counts, so that a new client is not throttled for its first burst
// alone).
func (r *rate) measure(now time.Time, size time.Duration) (float64, time.Duration) {
	expire := time.Duration(len(r.samples)) * size
	var total float64
	oldest := now
	for i := range r.samples {
		s := &r.samples[i]
		if s.start.IsZero() || now.Sub(s.start) >= expire {
			*s = sample{}
			continue
		}
		total += s.value
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	if minimum := time.Duration(len(r.samples)-1) * size; elapsed < minimum {
		elapsed = minimum
	}
	return total / elapsed.Seconds(), elapsed
}
