package restproxy

// v2 consumer instances (kafka-rest's ConsumersResource and
// KafkaConsumerState): each a franz-go client of the request's user, a
// member of its group once subscribed.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-io/samsa/internal/admin"
)

func (p *Proxy) consumerRoutes(add func(string, route)) {
	const inst = "/consumers/{group}/instances/{instance}"
	add("/consumers/{group}", route{"POST": p.createConsumer})
	add(inst, route{"DELETE": p.deleteConsumer})
	add(inst+"/subscription", route{"POST": onInstance(p, required, subscribe), "GET": onInstance(p, none, subscription), "DELETE": onInstance(p, none, unsubscribe)})
	add(inst+"/assignments", route{"POST": onInstance(p, required, assign), "GET": onInstance(p, none, assignments)})
	add(inst+"/positions", route{"POST": onInstance(p, required, seek)})
	add(inst+"/positions/beginning", route{"POST": onInstance(p, required, seekTo((*kadm.Client).ListStartOffsets))})
	add(inst+"/positions/end", route{"POST": onInstance(p, required, seekTo((*kadm.Client).ListEndOffsets))})
	add(inst+"/records", route{"GET": onInstance(p, none, p.records)})
	add(inst+"/offsets", route{"POST": onInstance(p, optional, commit), "GET": onInstance(p, required, committed)})
}

// bodyRule says whether a request has a body.
type bodyRule int

const (
	none     bodyRule = iota // no body is read
	optional                 // an empty body is nil
	required
)

// onInstance makes a handler of a consumer instance's resource: it holds
// the instance the request names for the request, decodes its body into a
// new B as rule says, and calls f.
func onInstance[B any](p *Proxy, rule bodyRule, f func(w http.ResponseWriter, r *http.Request, c *consumer, body *B) (any, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		c, err := p.instance(w, r)
		if err != nil {
			return nil, err
		}
		defer c.release()
		var body *B
		if rule != none {
			body = new(B)
			present, err := decodeBody(r, body, rule == optional)
			if err != nil {
				return nil, err
			}
			if !present {
				body = nil
			}
		}
		return f(w, r, c, body)
	}
}

// consumerTypes are the answer types of the consumers resource (every
// embedded format's, as Confluent's @Produces lists them).
var consumerTypes = []string{mediaV2, mediaJSON, mediaLegacy,
	"application/vnd.kafka.binary.v2+json", "application/vnd.kafka.json.v2+json",
	"application/vnd.kafka.avro.v2+json", "application/vnd.kafka.jsonschema.v2+json",
	"application/vnd.kafka.protobuf.v2+json"}

// createRequest is CreateConsumerInstanceRequest.
type createRequest struct {
	ID              *string `json:"id"`
	Name            *string `json:"name"`
	Format          *string `json:"format"`
	AutoOffsetReset *string `json:"auto.offset.reset"`
	AutoCommit      *string `json:"auto.commit.enable"`
	FetchMinBytes   *int32  `json:"fetch.min.bytes"`
	RequestTimeout  *int32  `json:"consumer.request.timeout.ms"`
}

func (p *Proxy) createConsumer(w http.ResponseWriter, r *http.Request) (any, error) {
	if !accepts(w, r, consumerTypes...) {
		return nil, errNotAcceptable
	}
	var req createRequest
	if _, err := decodeBody(r, &req, true); err != nil {
		return nil, err
	}
	group := r.PathValue("group")
	c := &consumer{p: p, held: make(chan struct{}, 1), format: formatBinary, reset: kgo.NewOffset().AtEnd(), autoCommit: true,
		minBytes: -1, timeout: p.cfg.RequestTimeout, used: time.Now(), owned: map[string]map[int32]bool{}, handed: map[tp]int64{}}
	switch {
	case req.ID != nil:
		c.key = instanceKey{group, *req.ID}
	case req.Name != nil:
		c.key = instanceKey{group, *req.Name}
	default:
		c.key = instanceKey{group, "rest-consumer-" + randomID()}
	}
	if c.key.name == "" {
		return nil, errUnprocessable("name may not be empty")
	}
	if req.Format != nil {
		c.format = strings.ToLower(*req.Format)
		if !knownFormat(c.format) {
			return nil, errUnprocessable("Unknown embedded format %q", *req.Format)
		}
	}
	if req.AutoOffsetReset != nil {
		switch strings.ToLower(*req.AutoOffsetReset) {
		case "earliest", "smallest":
			c.reset = kgo.NewOffset().AtStart()
		case "latest", "largest":
		case "none":
			c.reset = kgo.NewOffset().AtCommitted()
		default:
			return nil, errf(422, 42204, "Invalid consumer configuration: Invalid value %s for configuration auto.offset.reset: String must be one of: latest, earliest, none", *req.AutoOffsetReset)
		}
	}
	if req.AutoCommit != nil {
		switch strings.ToLower(*req.AutoCommit) {
		case "true":
		case "false":
			c.autoCommit = false
		default:
			return nil, errf(422, 42204, "Invalid consumer configuration: Invalid value %s for configuration enable.auto.commit: Expected value to be either true or false", *req.AutoCommit)
		}
	}
	if req.FetchMinBytes != nil {
		c.minBytes = int64(*req.FetchMinBytes)
	}
	if req.RequestTimeout != nil && *req.RequestTimeout > 0 {
		c.timeout = time.Duration(*req.RequestTimeout) * time.Millisecond
	}
	u, err := p.client(r)
	if err != nil {
		return nil, err
	}
	c.u = u
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errClosed
	}
	if _, ok := p.consumers[c.key]; ok {
		p.mu.Unlock()
		return nil, errInstanceExists
	}
	p.consumers[c.key] = c
	p.mu.Unlock()
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return struct {
		InstanceID string `json:"instance_id"`
		BaseURI    string `json:"base_uri"`
	}{c.key.name, scheme + "://" + r.Host + "/consumers/" + pathEscape(group) + "/instances/" + pathEscape(c.key.name)}, nil
}

// owns reports whether the request comes from the user who created c
// (with the same password): an instance is its creator's alone.
func (p *Proxy) owns(r *http.Request, c *consumer) bool {
	if p.cfg.SASLMechanism == "" {
		return true
	}
	user, pass, _ := r.BasicAuth()
	return admin.LoginKey(user, pass) == c.u.key
}

// instance is the consumer instance a request names, held for the
// request (one request at a time per instance, as Confluent's state is
// synchronized); release it with done.
func (p *Proxy) instance(w http.ResponseWriter, r *http.Request) (*consumer, error) {
	if !accepts(w, r, consumerTypes...) {
		return nil, errNotAcceptable
	}
	key := instanceKey{r.PathValue("group"), r.PathValue("instance")}
	p.mu.Lock()
	c := p.consumers[key]
	p.mu.Unlock()
	if c == nil || !p.owns(r, c) {
		return nil, errInstanceNotFound
	}
	if !c.acquire(r.Context()) {
		return nil, errInstanceNotFound
	}
	return c, nil
}

func (p *Proxy) deleteConsumer(w http.ResponseWriter, r *http.Request) (any, error) {
	c, err := p.instance(w, r)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.consumers[c.key] == c {
		delete(p.consumers, c.key)
	}
	p.mu.Unlock()
	c.closeHeld()
	return noContent{}, nil
}

// subscriptionBody is ConsumerSubscriptionRecord.
type subscriptionBody struct {
	Topics       []string `json:"topics"`
	TopicPattern *string  `json:"topic_pattern"`
}

func subscribe(_ http.ResponseWriter, _ *http.Request, c *consumer, req *subscriptionBody) (any, error) {
	if len(req.Topics) == 0 && (req.TopicPattern == nil || *req.TopicPattern == "") {
		return nil, errUnprocessable("A list (of Topics type) or a topic_pattern must be specified.")
	}
	if err := c.subscribe(req.Topics, req.TopicPattern); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

func subscription(_ http.ResponseWriter, _ *http.Request, c *consumer, _ *struct{}) (any, error) {
	return struct {
		Topics []string `json:"topics"`
	}{c.subscribedTopics()}, nil
}

func unsubscribe(_ http.ResponseWriter, _ *http.Request, c *consumer, _ *struct{}) (any, error) {
	if c.pattern == "" && len(c.topics) > 0 {
		c.stopClient()
	}
	return noContent{}, nil
}

// partitionsBody is ConsumerAssignmentRequest and ConsumerSeekToRequest.
type partitionsBody struct {
	Partitions []tp `json:"partitions"`
}

func assign(_ http.ResponseWriter, r *http.Request, c *consumer, req *partitionsBody) (any, error) {
	if err := c.assign(r.Context(), req.Partitions); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

func assignments(_ http.ResponseWriter, _ *http.Request, c *consumer, _ *struct{}) (any, error) {
	return partitionsBody{Partitions: c.assignment()}, nil
}

// seekBody is ConsumerSeekRequest.
type seekBody struct {
	Offsets []struct {
		Topic     string  `json:"topic"`
		Partition int32   `json:"partition"`
		Offset    int64   `json:"offset"`
		Metadata  *string `json:"metadata"`
	} `json:"offsets"`
	Timestamps []struct {
		Topic     string    `json:"topic"`
		Partition int32     `json:"partition"`
		Timestamp time.Time `json:"timestamp"`
		Metadata  *string   `json:"metadata"`
	} `json:"timestamps"`
}

func seek(_ http.ResponseWriter, r *http.Request, c *consumer, req *seekBody) (any, error) {
	to := map[tp]int64{}
	for _, o := range req.Offsets {
		to[tp{o.Topic, o.Partition}] = o.Offset
	}
	if len(req.Timestamps) > 0 {
		byTopic := map[string]map[int32]int64{}
		for _, t := range req.Timestamps {
			if byTopic[t.Topic] == nil {
				byTopic[t.Topic] = map[int32]int64{}
			}
			byTopic[t.Topic][t.Partition] = t.Timestamp.UnixMilli()
		}
		for topic, parts := range byTopic {
			for part, ms := range parts {
				lo, err := c.u.adm.ListOffsetsAfterMilli(r.Context(), ms, topic)
				if err != nil {
					return nil, err
				}
				o, ok := lo.Lookup(topic, part)
				if !ok {
					return nil, errPartitionNotFound
				}
				if o.Err != nil {
					return nil, o.Err
				}
				to[tp{topic, part}] = o.Offset
			}
		}
	}
	if err := c.seek(to); err != nil {
		return nil, err
	}
	return noContent{}, nil
}

// seekTo moves the positions of the request's partitions to the offsets
// list gives them.
func seekTo(list func(*kadm.Client, context.Context, ...string) (kadm.ListedOffsets, error)) func(http.ResponseWriter, *http.Request, *consumer, *partitionsBody) (any, error) {
	return func(_ http.ResponseWriter, r *http.Request, c *consumer, req *partitionsBody) (any, error) {
		if err := c.checkOwned(req.Partitions); err != nil {
			return nil, err
		}
		var topics []string
		for _, t := range req.Partitions {
			topics = append(topics, t.Topic)
		}
		to := map[tp]int64{}
		if len(topics) > 0 {
			lo, err := list(c.u.adm, r.Context(), topics...)
			if err != nil {
				return nil, err
			}
			for _, t := range req.Partitions {
				o, ok := lo.Lookup(t.Topic, t.Partition)
				if !ok {
					return nil, errPartitionNotFound
				}
				if o.Err != nil {
					return nil, o.Err
				}
				to[t] = o.Offset
			}
		}
		if err := c.seek(to); err != nil {
			return nil, err
		}
		return noContent{}, nil
	}
}

// consumerRecord is BinaryConsumerRecord and JsonConsumerRecord.
type consumerRecord struct {
	Topic     string          `json:"topic"`
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
}

// recordsFormat is the embedded format a GET of records asks for in its
// Accept header: binary for v2's own type or a wildcard (Confluent's
// binary reader also produces application/vnd.kafka.v2+json).
func recordsFormat(r *http.Request) string {
	format := ""
	for _, h := range r.Header.Values("Accept") {
		for _, part := range strings.Split(h, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			if rest, ok := strings.CutPrefix(strings.TrimSpace(mt), "application/vnd.kafka."); ok {
				if f, ok := strings.CutSuffix(rest, ".v2+json"); ok && knownFormat(f) && format == "" {
					format = f
				}
			}
		}
	}
	if format == "" {
		return formatBinary
	}
	return format
}

func (p *Proxy) records(w http.ResponseWriter, r *http.Request, c *consumer, _ *struct{}) (any, error) {
	format := recordsFormat(r)
	if format != c.format {
		return nil, errFormatMismatch
	}
	w.Header().Set("Content-Type", "application/vnd.kafka."+format+".v2+json")
	timeout := c.timeout
	if s := r.URL.Query().Get("timeout"); s != "" {
		if ms, err := parseInt(s); err == nil && ms >= 0 {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	maxBytes := p.cfg.RequestMaxBytes
	if s := r.URL.Query().Get("max_bytes"); s != "" {
		if n, err := parseInt(s); err == nil && n >= 0 {
			maxBytes = min(n, maxBytes)
		}
	}
	defer c.allowRebalance()
	recs, err := c.read(r.Context(), timeout, maxBytes)
	if err != nil {
		return nil, err
	}
	dec := func(b []byte) (json.RawMessage, error) { return decodeData(format, b) }
	if schemaFormat(format) {
		cl, err := p.registry(r)
		if err != nil {
			return nil, err
		}
		dec = func(b []byte) (json.RawMessage, error) { return p.decodeSchemaData(r.Context(), cl, format, b) }
	}
	out := make([]consumerRecord, 0, len(recs))
	for _, rec := range recs {
		k, err := dec(rec.Key)
		if err != nil {
			return nil, err
		}
		v, err := dec(rec.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, consumerRecord{Topic: rec.Topic, Key: k, Value: v, Partition: rec.Partition, Offset: rec.Offset})
	}
	c.handOut(recs)
	return out, nil
}

// commitBody is ConsumerOffsetCommitRequest.
type commitBody struct {
	Offsets []offsetMetadata `json:"offsets"`
}

// offsetMetadata is TopicPartitionOffsetMetadata.
type offsetMetadata struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Metadata  *string `json:"metadata"`
}

func commit(_ http.ResponseWriter, r *http.Request, c *consumer, req *commitBody) (any, error) {
	offs := kadm.Offsets{}
	if req == nil {
		for t, next := range c.handedOffsets() {
			offs.Add(kadm.Offset{Topic: t.Topic, Partition: t.Partition, At: next, LeaderEpoch: -1})
		}
	} else {
		// Confluent commits each given offset plus one: the offset of the
		// last record processed, not the next to read.
		for _, o := range req.Offsets {
			meta := ""
			if o.Metadata != nil {
				meta = *o.Metadata
			}
			offs.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset + 1, LeaderEpoch: -1, Metadata: meta})
		}
	}
	if err := c.commit(r.Context(), offs); err != nil {
		return nil, err
	}
	return []struct{}{}, nil
}

func committed(_ http.ResponseWriter, r *http.Request, c *consumer, req *partitionsBody) (any, error) {
	resps, err := fetchCommitted(r.Context(), c.u.adm, c.key.group)
	if err != nil {
		return nil, err
	}
	out := []offsetMetadata{}
	for _, t := range req.Partitions {
		o, ok := resps.Lookup(t.Topic, t.Partition)
		if !ok || o.At < 0 {
			continue
		}
		meta := o.Metadata
		out = append(out, offsetMetadata{Topic: t.Topic, Partition: t.Partition, Offset: o.At, Metadata: &meta})
	}
	return struct {
		Offsets []offsetMetadata `json:"offsets"`
	}{out}, nil
}
