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

	mu      sync.Mutex
	rates   map[rateKey]*rate   // guarded by mu
	buckets map[rateKey]*bucket // controller_mutation_rate; guarded by mu
}

type rateKey struct {
	key    string
	entity QuotaEntity
	user   string // the user and client id of the sensor: a quota set
	client string // on a default is had by each user (client) apart
}

// NewQuotas measures over windows samples of size each.
func NewQuotas(windows int, size time.Duration) *Quotas {
	q := &Quotas{windows: max(windows, 2), size: max(size, time.Millisecond), rates: map[rateKey]*rate{}, buckets: map[rateKey]*bucket{}}
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

// Bound is the quota of key that applies to user and client id; ok false
// without one.
func (q *Quotas) Bound(key, user, clientID string) (bound float64, ok bool) {
	qc := *q.configs.Load()
	if len(qc) == 0 {
		return 0, false
	}
	_, bound, ok = qc.resolve(user, clientID, key)
	return bound, ok && bound > 0
}

// WindowBytes is the most a byte-rate quota lets through at once: the
// bound over all but one sample window (Kafka's getMaxValueInQuotaWindow,
// which bounds a consumer's fetch size); ok false without a quota.
func (q *Quotas) WindowBytes(key, user, clientID string) (int64, bool) {
	bound, ok := q.Bound(key, user, clientID)
	if !ok {
		return 0, false
	}
	return int64(min(bound*float64(q.windows-1)*q.size.Seconds(), 1<<31-1)), true
}

// sensorKey is the rate of key that user and client id are measured by.
func (q *Quotas) sensorKey(key, user, clientID string) (rateKey, float64, bool) {
	qc := *q.configs.Load()
	if len(qc) == 0 {
		return rateKey{}, 0, false
	}
	e, bound, ok := qc.resolve(user, clientID, key)
	if !ok || bound <= 0 {
		return rateKey{}, 0, false
	}
	rk := rateKey{key: key, entity: e}
	if e.User == DefaultEntity {
		rk.user = user
	}
	if e.ClientID == DefaultEntity {
		rk.client = clientID
	}
	return rk, bound, true
}

// Record counts value against the quota of key that applies to user and
// client id and returns how long to throttle them; 0 without a quota or
// within it. A negative value takes back what was counted (Kafka's
// unrecordQuotaSensor, for a fetch answered empty because throttled).
func (q *Quotas) Record(key, user, clientID string, value float64, now time.Time) time.Duration {
	rk, bound, ok := q.sensorKey(key, user, clientID)
	if !ok {
		return 0
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

// Mutate counts permits controller mutations (partitions created or
// deleted) against the controller_mutation_rate that applies to user and
// client id (KIP-599), measured as Kafka's TokenBucket: a bucket of
// windows × size × rate tokens, refilled at the rate. Strict (the
// versions that know THROTTLING_QUOTA_EXCEEDED), a mutation is refused
// while the bucket is below zero (ok false, with the time until it is
// not), and one made while it is not goes through even when it takes the
// bucket below. Permissive (older versions), every mutation goes through
// and the time the bucket is below zero is the throttle.
func (q *Quotas) Mutate(user, clientID string, permits float64, strict bool, now time.Time) (throttle time.Duration, ok bool) {
	rk, bound, found := q.sensorKey(ControllerMutationRate, user, clientID)
	if !found {
		return 0, true
	}
	burst := float64(q.windows) * q.size.Seconds() * bound
	q.mu.Lock()
	defer q.mu.Unlock()
	b := q.buckets[rk]
	if b == nil {
		b = &bucket{tokens: burst, last: now}
		q.buckets[rk] = b
	}
	b.tokens = min(burst, b.tokens+bound*now.Sub(b.last).Seconds())
	b.last = now
	below := func() time.Duration {
		return time.Duration(-b.tokens / bound * float64(time.Second)).Round(time.Millisecond)
	}
	if strict && b.tokens < 0 {
		return below(), false
	}
	b.tokens = min(burst, b.tokens-permits)
	if !strict && b.tokens < 0 {
		return below(), true
	}
	return 0, true
}

// bucket is Kafka's TokenBucket stat.
type bucket struct {
	tokens float64
	last   time.Time
}
