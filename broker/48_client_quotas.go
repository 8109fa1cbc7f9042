package broker

// DescribeClientQuotas v0-1 (key 48) and AlterClientQuotas v0-1 (49),
// KIP-546: quotas of users, client ids and both, with defaults (a nil
// name), stored as entity configs in etcd and enforced by
// security.Quotas: producer_byte_rate on Produce, consumer_byte_rate on
// consumer fetches (bounded to the quota window, answered empty when over),
// controller_mutation_rate on CreateTopics, CreatePartitions and
// DeleteTopics (KIP-599: THROTTLING_QUOTA_EXCEEDED per topic from v6/v3/v5,
// throttled before); each with throttle_time_ms and the connection muted
// that long (KIP-219); request_percentage on the time a request's handler
// works (requestQuota).
// Describe needs DescribeConfigs on the cluster, Alter needs AlterConfigs.

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/controller"
	"github.com/samsa-io/samsa/security"
)

var quotaKeys = map[string]bool{
	security.ProducerByteRate: true, security.ConsumerByteRate: true,
	security.RequestPercentage: true, security.ControllerMutationRate: true,
}

// startQuotas loads the quota configs and watches them.
func (b *Broker) startQuotas(ctx context.Context) error {
	b.quotas = security.NewQuotas(int(b.props.Int32("quota.window.num")), time.Duration(b.props.Int32("quota.window.size.seconds"))*time.Second)
	if _, err := b.loadQuotas(ctx); err != nil {
		return err
	}
	b.store.WatchEntities(b.ctx, 0, func() {
		if _, err := b.loadQuotas(b.ctx); err != nil && b.ctx.Err() == nil {
			b.log.Warn("reloading quotas failed", "err", err)
		}
	})
	return nil
}

// quotaEntity is the entity of a stored config; false for none.
func quotaEntity(kind, name string) (security.QuotaEntity, bool) {
	switch kind {
	case controller.EntityUsers:
		return security.QuotaEntity{User: name}, true
	case controller.EntityClients:
		return security.QuotaEntity{ClientID: name}, true
	case controller.EntityUserClients:
		u, c, ok := controller.SplitUserClientName(name)
		return security.QuotaEntity{User: u, ClientID: c}, ok
	}
	return security.QuotaEntity{}, false
}

// entityStore is where an entity's config is stored.
func entityStore(e security.QuotaEntity) (kind, name string) {
	switch {
	case e.User != "" && e.ClientID != "":
		return controller.EntityUserClients, controller.UserClientName(e.User, e.ClientID)
	case e.User != "":
		return controller.EntityUsers, e.User
	}
	return controller.EntityClients, e.ClientID
}

func (b *Broker) readQuotas(ctx context.Context) (security.QuotaConfigs, error) {
	qc := security.QuotaConfigs{}
	for _, kind := range []string{controller.EntityUsers, controller.EntityClients, controller.EntityUserClients} {
		all, err := b.store.EntityConfigs(ctx, kind)
		if err != nil {
			return nil, err
		}
		for name, cfg := range all {
			e, ok := quotaEntity(kind, name)
			if !ok {
				continue
			}
			for k, v := range cfg {
				if !quotaKeys[k] {
					continue
				}
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					if qc[e] == nil {
						qc[e] = map[string]float64{}
					}
					qc[e][k] = f
				}
			}
		}
	}
	return qc, nil
}

func (b *Broker) loadQuotas(ctx context.Context) (security.QuotaConfigs, error) {
	qc, err := b.readQuotas(ctx)
	if err == nil {
		b.quotas.Load(qc)
	}
	return qc, err
}

// throttle records value against r's quota of key and returns the
// throttle time in ms, which also mutes r's connection (KIP-219).
func (b *Broker) throttle(r *request, key string, value int) int32 {
	user, client := quotaIdentity(r)
	t := b.quotas.Record(key, user, client, float64(value), time.Now())
	r.throttle = max(r.throttle, t)
	return int32(t / time.Millisecond)
}

// requestQuota counts the time r's handler worked (since it started, less
// the time it waited for a long poll, acks=all or a rebalance) against
// request_percentage, as Kafka counts request handler thread time:
// percent of one thread over the quota window. A client over it is
// throttled (muted, and told in the response's throttle_time_ms; a
// consumer Fetch records its time before its response is encoded, in
// fetchThrottle). Not counted, as Kafka exempts them: brokers'
// cluster-action requests (replica fetches, WriteTxnMarkers).
func (b *Broker) requestQuota(r *request, resp kmsg.Response) {
	switch req := r.body.(type) {
	case *kmsg.WriteTxnMarkersRequest:
		return
	case *kmsg.FetchRequest:
		if req.ReplicaID >= 0 || (req.Version >= 15 && req.ReplicaState.ID >= 0) {
			return
		}
	}
	if resp == nil {
		return
	}
	t := b.requestTime(r)
	if t <= 0 {
		return
	}
	if tr, ok := resp.(interface {
		kmsg.ThrottleResponse
		kmsg.SetThrottleResponse
	}); ok {
		cur, _ := tr.Throttle()
		tr.SetThrottle(max(cur, int32(t/time.Millisecond)))
	}
}

// requestTime records r's handler work so far against its
// request_percentage, once per request, and returns the throttle time
// that calls for (which also mutes r's connection).
func (b *Broker) requestTime(r *request) time.Duration {
	if r.timed || r.started.IsZero() {
		return 0
	}
	r.timed = true
	work := time.Since(r.started) - r.parked
	if work <= 0 {
		return 0
	}
	user, client := quotaIdentity(r)
	t := b.quotas.Record(security.RequestPercentage, user, client, work.Seconds()*100, time.Now())
	r.throttle = max(r.throttle, t)
	return t
}

// quotaIdentity is the user and client id r's quotas are found by.
func quotaIdentity(r *request) (user, client string) {
	user = strings.TrimPrefix(r.principal, security.UserPrefix)
	if r.hdr.ClientID != nil {
		client = *r.hdr.ClientID
	}
	return user, client
}

// fetchThrottle is a consumer fetch's quotas, as KafkaApis applies them
// once the fetch is read: the response's size is recorded against
// consumer_byte_rate and the handler's work against request_percentage,
// and when either puts the client over its quota the fetch is answered
// empty with the larger throttle time (its connection muted that long)
// and the size taken back, since nothing was sent.
func (b *Broker) fetchThrottle(r *request, size int) int32 {
	t := max(time.Duration(b.throttle(r, security.ConsumerByteRate, size))*time.Millisecond, b.requestTime(r))
	if t > 0 {
		user, client := quotaIdentity(r)
		b.quotas.Record(security.ConsumerByteRate, user, client, -float64(size), time.Now())
	}
	return int32(t / time.Millisecond)
}

// mutationQuota counts n partitions created or deleted by r against its
// controller_mutation_rate (KIP-599), strict from the version given:
// THROTTLING_QUOTA_EXCEEDED for a mutation refused. Either way r's
// throttle (its response's throttle_time_ms, and the mute) is the
// bucket's time below zero.
func (b *Broker) mutationQuota(r *request, n int, strictSince int16) error {
	user, client := quotaIdentity(r)
	t, ok := b.quotas.Mutate(user, client, float64(n), r.hdr.Version >= strictSince, time.Now())
	r.throttle = max(r.throttle, t)
	if !ok {
		return kerr.ThrottlingQuotaExceeded
	}
	return nil
}

// throttleMillis is r's throttle so far, for a response's throttle_time_ms.
func (r *request) throttleMillis() int32 { return int32(r.throttle / time.Millisecond) }

// fetchQuotaBytes bounds a consumer fetch to what its consumer_byte_rate
// lets through in a quota window, as Kafka bounds fetch.max.bytes.
func (b *Broker) fetchQuotaBytes(r *request, maxBytes int32) int32 {
	user, client := quotaIdentity(r)
	if w, ok := b.quotas.WindowBytes(security.ConsumerByteRate, user, client); ok {
		return int32(min(int64(maxBytes), w))
	}
	return maxBytes
}

// wireEntity converts a request's entity; the error message is for the
// client.
func wireEntity(types []string, names []*string) (security.QuotaEntity, error) {
	var e security.QuotaEntity
	seen := map[string]bool{}
	for i, t := range types {
		if seen[t] {
			return e, errors.New("duplicate entity type " + t)
		}
		seen[t] = true
		name := security.DefaultEntity
		if names[i] != nil {
			name = *names[i]
		}
		switch t {
		case "user":
			e.User = name
		case "client-id":
			e.ClientID = name
		default:
			return e, errors.New("unsupported entity type " + t)
		}
	}
	if len(types) == 0 {
		return e, errors.New("empty entity")
	}
	return e, nil
}

func entityComponents(e security.QuotaEntity) (types []string, names []*string) {
	add := func(t, n string) {
		types = append(types, t)
		if n == security.DefaultEntity {
			names = append(names, nil)
		} else {
			names = append(names, kmsg.StringPtr(n))
		}
	}
	if e.User != "" {
		add("user", e.User)
	}
	if e.ClientID != "" {
		add("client-id", e.ClientID)
	}
	return types, names
}

func (b *Broker) handleDescribeClientQuotas(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if err := b.clusterRefusal(r, security.OpDescribeConfigs); err != nil {
		resp.ErrorCode = errCode(err)
		return resp, nil
	}
	qc, err := b.readQuotas(ctx)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
		return resp, nil
	}
	matches := func(e security.QuotaEntity) bool {
		parts := map[string]string{"user": e.User, "client-id": e.ClientID}
		for _, c := range req.Components {
			v, ok := parts[c.EntityType]
			if !ok {
				return false
			}
			switch c.MatchType {
			case 0: // exact
				if c.Match == nil || v != *c.Match {
					return false
				}
			case 1: // default
				if v != security.DefaultEntity {
					return false
				}
			case 2: // any
				if v == "" {
					return false
				}
			}
		}
		if req.Strict {
			n := 0
			for _, v := range parts {
				if v != "" {
					n++
				}
			}
			return n == len(req.Components)
		}
		return true
	}
	// entries is nullable, and null only for an error: Kafka's clients
	// read an empty answer as an empty list.
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	var ents []security.QuotaEntity
	for e := range qc {
		if matches(e) {
			ents = append(ents, e)
		}
	}
	sort.Slice(ents, func(i, j int) bool {
		return ents[i].User+"\x00"+ents[i].ClientID < ents[j].User+"\x00"+ents[j].ClientID
	})
	for _, e := range ents {
		ent := kmsg.NewDescribeClientQuotasResponseEntry()
		types, names := entityComponents(e)
		for i := range types {
			ce := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ce.Type, ce.Name = types[i], names[i]
			ent.Entity = append(ent.Entity, ce)
		}
		keys := make([]string, 0, len(qc[e]))
		for k := range qc[e] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, qc[e][k]
			ent.Values = append(ent.Values, v)
		}
		resp.Entries = append(resp.Entries, ent)
	}
	return resp, nil
}

func (b *Broker) handleAlterClientQuotas(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	refusal := b.clusterRefusal(r, security.OpAlterConfigs)
	for _, entry := range req.Entries {
		res := kmsg.NewAlterClientQuotasResponseEntry()
		var types []string
		var names []*string
		for _, c := range entry.Entity {
			ce := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ce.Type, ce.Name = c.Type, c.Name
			res.Entity = append(res.Entity, ce)
			types, names = append(types, c.Type), append(names, c.Name)
		}
		e, err := wireEntity(types, names)
		switch {
		case refusal != nil:
			err = refusal
		case err != nil:
			err = errors.Join(kerr.InvalidRequest, err)
		default:
			for _, op := range entry.Ops {
				if !quotaKeys[op.Key] {
					err = errors.Join(kerr.InvalidRequest, errors.New("invalid configuration key "+op.Key))
				} else if !op.Remove && op.Value <= 0 {
					err = errors.Join(kerr.InvalidRequest, errors.New("quota "+op.Key+" must be positive"))
				}
			}
		}
		if err == nil && !req.ValidateOnly {
			kind, name := entityStore(e)
			err = b.store.UpdateEntityConfig(ctx, kind, name, func(cfg map[string]string) (map[string]string, error) {
				for _, op := range entry.Ops {
					if op.Remove {
						delete(cfg, op.Key)
					} else {
						cfg[op.Key] = strconv.FormatFloat(op.Value, 'f', -1, 64)
					}
				}
				return cfg, nil
			})
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
		}
		resp.Entries = append(resp.Entries, res)
	}
	if refusal == nil && !req.ValidateOnly {
		if _, err := b.loadQuotas(ctx); err != nil {
			return nil, err
		}
	}
	return resp, nil
}
