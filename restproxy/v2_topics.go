package restproxy

// v2 topics and partitions: metadata, offsets and produce
// (kafka-rest's TopicsResource, PartitionsResource, ProduceToTopicAction
// and ProduceToPartitionAction).

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceTimeout bounds one produce request: the producer's
// delivery.timeout.ms (120 s) in Confluent's.
const produceTimeout = 120 * time.Second

func (p *Proxy) v2Routes(add func(string, route)) {
	add("/topics", route{"GET": p.listTopics})
	add("/topics/{topic}", route{"GET": p.getTopic, "POST": p.produceTopic})
	add("/topics/{topic}/partitions", route{"GET": p.listPartitions})
	add("/topics/{topic}/partitions/{partition}", route{"GET": p.getPartition, "POST": p.producePartition})
	add("/topics/{topic}/partitions/{partition}/offsets", route{"GET": p.partitionOffsets})
	p.consumerRoutes(add)
}

// v2Partition is GetPartitionResponse.
type v2Partition struct {
	Partition int32       `json:"partition"`
	Leader    int32       `json:"leader"`
	Replicas  []v2Replica `json:"replicas"`
}

type v2Replica struct {
	Broker int32 `json:"broker"`
	Leader bool  `json:"leader"`
	InSync bool  `json:"in_sync"`
}

func partitionOf(pd kmsg.MetadataResponseTopicPartition) v2Partition {
	out := v2Partition{Partition: pd.Partition, Leader: pd.Leader, Replicas: []v2Replica{}}
	for _, r := range pd.Replicas {
		out.Replicas = append(out.Replicas, v2Replica{Broker: r, Leader: r == pd.Leader, InSync: slices.Contains(pd.ISR, r)})
	}
	return out
}

// metaClient is the user's client for a request answered with v2's
// metadata types.
func (p *Proxy) metaClient(w http.ResponseWriter, r *http.Request) (*userClient, error) {
	if !accepts(w, r, metadataTypes...) {
		return nil, errNotAcceptable
	}
	return p.client(r)
}

func (p *Proxy) listTopics(w http.ResponseWriter, r *http.Request) (any, error) {
	u, err := p.metaClient(w, r)
	if err != nil {
		return nil, err
	}
	td, err := u.adm.ListTopics(r.Context())
	if err != nil {
		return nil, err
	}
	if err := td.Error(); err != nil && !errors.Is(err, kerr.TopicAuthorizationFailed) {
		return nil, err
	}
	names := []string{}
	for _, t := range td {
		if t.Err == nil {
			names = append(names, t.Topic)
		}
	}
	slices.Sort(names)
	return names, nil
}

// topicDetail is the metadata of one topic, its partitions sorted; 40401
// when the cluster does not have it.
func topicDetail(ctx context.Context, u *userClient, topic string) ([]kmsg.MetadataResponseTopicPartition, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, u.admc)
	if err != nil {
		return nil, err
	}
	if len(resp.Topics) != 1 {
		return nil, errTopicNotFound
	}
	mt := resp.Topics[0]
	if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return nil, errTopicNotFound
		}
		return nil, err
	}
	slices.SortFunc(mt.Partitions, func(a, b kmsg.MetadataResponseTopicPartition) int { return int(a.Partition - b.Partition) })
	return mt.Partitions, nil
}

func (p *Proxy) getTopic(w http.ResponseWriter, r *http.Request) (any, error) {
	u, err := p.metaClient(w, r)
	if err != nil {
		return nil, err
	}
	topic := r.PathValue("topic")
	td, err := topicDetail(r.Context(), u, topic)
	if err != nil {
		return nil, err
	}
	rcs, err := u.adm.DescribeTopicConfigs(r.Context(), topic)
	if err != nil {
		return nil, err
	}
	configs := map[string]*string{}
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, rc.Err
		}
		for _, c := range rc.Configs {
			configs[c.Key] = c.Value
		}
	}
	parts := []v2Partition{}
	for _, pd := range td {
		parts = append(parts, partitionOf(pd))
	}
	return struct {
		Name       string             `json:"name"`
		Configs    map[string]*string `json:"configs"`
		Partitions []v2Partition      `json:"partitions"`
	}{topic, configs, parts}, nil
}

func (p *Proxy) listPartitions(w http.ResponseWriter, r *http.Request) (any, error) {
	u, err := p.metaClient(w, r)
	if err != nil {
		return nil, err
	}
	td, err := topicDetail(r.Context(), u, r.PathValue("topic"))
	if err != nil {
		return nil, err
	}
	parts := []v2Partition{}
	for _, pd := range td {
		parts = append(parts, partitionOf(pd))
	}
	return parts, nil
}

// partitionDetail is the metadata of one partition: 40401 for an unknown
// topic, 40402 for an unknown partition.
func (p *Proxy) partitionDetail(w http.ResponseWriter, r *http.Request) (*userClient, kmsg.MetadataResponseTopicPartition, error) {
	var none kmsg.MetadataResponseTopicPartition
	if !accepts(w, r, metadataTypes...) {
		return nil, none, errNotAcceptable
	}
	part, err := pathInt(r, "partition")
	if err != nil {
		return nil, none, err
	}
	u, err := p.client(r)
	if err != nil {
		return nil, none, err
	}
	td, err := topicDetail(r.Context(), u, r.PathValue("topic"))
	if err != nil {
		return nil, none, err
	}
	i := slices.IndexFunc(td, func(pd kmsg.MetadataResponseTopicPartition) bool { return pd.Partition == part })
	if i < 0 {
		return nil, none, errPartitionNotFound
	}
	return u, td[i], nil
}

func (p *Proxy) getPartition(w http.ResponseWriter, r *http.Request) (any, error) {
	_, pd, err := p.partitionDetail(w, r)
	if err != nil {
		return nil, err
	}
	return partitionOf(pd), nil
}

func (p *Proxy) partitionOffsets(w http.ResponseWriter, r *http.Request) (any, error) {
	u, pd, err := p.partitionDetail(w, r)
	if err != nil {
		return nil, err
	}
	begin, end, err := offsetsOf(r.Context(), u.adm, r.PathValue("topic"), pd.Partition)
	if err != nil {
		return nil, err
	}
	return struct {
		Beginning int64 `json:"beginning_offset"`
		End       int64 `json:"end_offset"`
	}{begin, end}, nil
}

// offsetsOf is a partition's log start offset and high watermark.
func offsetsOf(ctx context.Context, adm *kadm.Client, topic string, part int32) (begin, end int64, err error) {
	lookup := func(lo kadm.ListedOffsets, err error) (int64, error) {
		if err != nil {
			return 0, err
		}
		o, ok := lo.Lookup(topic, part)
		if !ok {
			return 0, errPartitionNotFound
		}
		return o.Offset, o.Err
	}
	if begin, err = lookup(adm.ListStartOffsets(ctx, topic)); err != nil {
		return 0, 0, err
	}
	end, err = lookup(adm.ListEndOffsets(ctx, topic))
	return begin, end, err
}

// produceRequest is v2's ProduceRequest.
type produceRequest struct {
	Records []struct {
		Key       json.RawMessage `json:"key"`
		Value     json.RawMessage `json:"value"`
		Partition *int32          `json:"partition"`
	} `json:"records"`
	KeySchema     *string `json:"key_schema"`
	KeySchemaID   *int32  `json:"key_schema_id"`
	ValueSchema   *string `json:"value_schema"`
	ValueSchemaID *int32  `json:"value_schema_id"`
}

// partitionOffset is PartitionOffset: where a record went, or why not.
type partitionOffset struct {
	Partition *int32  `json:"partition"`
	Offset    *int64  `json:"offset"`
	ErrorCode *int    `json:"error_code"`
	Error     *string `json:"error"`
}

type produceResponse struct {
	Offsets       []partitionOffset `json:"offsets"`
	KeySchemaID   *int32            `json:"key_schema_id"`
	ValueSchemaID *int32            `json:"value_schema_id"`
}

func (p *Proxy) produceTopic(w http.ResponseWriter, r *http.Request) (any, error) {
	return p.produce(w, r, -1)
}

func (p *Proxy) producePartition(w http.ResponseWriter, r *http.Request) (any, error) {
	part, err := pathInt(r, "partition")
	if err != nil {
		return nil, err
	}
	return p.produce(w, r, part)
}

// produce serves POST /topics/{topic}[/partitions/{partition}]: part is
// the path's partition, -1 for none.
func (p *Proxy) produce(w http.ResponseWriter, r *http.Request, part int32) (any, error) {
	format, ok := requestFormat(r)
	if !ok || format == "" {
		return nil, errUnsupportedMedia
	}
	if !accepts(w, r, metadataTypes...) {
		return nil, errNotAcceptable
	}
	var req produceRequest
	if _, err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	if len(req.Records) == 0 {
		return nil, errUnprocessable("records may not be empty")
	}
	topic := r.PathValue("topic")
	u, err := p.client(r)
	if err != nil {
		return nil, err
	}
	enc := func(_ bool, raw json.RawMessage) ([]byte, error) { return encodeData(format, raw) }
	var keySchema, valueSchema *registeredSchema
	if schemaFormat(format) {
		if enc, keySchema, valueSchema, err = p.schemaEncoder(r, format, topic, &req); err != nil {
			return nil, err
		}
	}
	recs := make([]*kgo.Record, len(req.Records))
	explicit := false
	for i, pr := range req.Records {
		rec := &kgo.Record{Topic: topic}
		if rec.Key, err = enc(true, pr.Key); err != nil {
			return nil, err
		}
		if rec.Value, err = enc(false, pr.Value); err != nil {
			return nil, err
		}
		switch {
		case pr.Partition != nil:
			rec.Context = withPartition(r.Context(), *pr.Partition)
			explicit = true
		case part >= 0:
			rec.Context = withPartition(r.Context(), part)
			explicit = true
		}
		recs[i] = rec
	}
	ctx, cancel := context.WithTimeout(r.Context(), produceTimeout)
	defer cancel()
	if explicit {
		// A partition the topic does not have is the request's error,
		// as is a topic the cluster does not have.
		td, err := topicDetail(ctx, u, topic)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			if p, ok := partitionIn(rec.Context); ok && !slices.ContainsFunc(td, func(pd kmsg.MetadataResponseTopicPartition) bool { return pd.Partition == p }) {
				return nil, errPartitionNotFound
			}
		}
	}
	results := produceInOrder(ctx, u.kgo, recs)
	resp := produceResponse{Offsets: make([]partitionOffset, len(recs)), KeySchemaID: schemaID(keySchema), ValueSchemaID: schemaID(valueSchema)}
	status, unknown := http.StatusOK, 0
	for i, res := range results {
		if res.Err != nil {
			if errors.Is(res.Err, kerr.UnknownTopicOrPartition) {
				unknown++
			}
			code, msg := recordErrCode(res.Err), res.Err.Error()
			resp.Offsets[i] = partitionOffset{ErrorCode: &code, Error: &msg}
			switch code {
			case 40101:
				status = http.StatusUnauthorized
			case 40301:
				status = http.StatusForbidden
			}
			continue
		}
		part, off := res.Record.Partition, res.Record.Offset
		resp.Offsets[i] = partitionOffset{Partition: &part, Offset: &off}
	}
	if unknown == len(results) {
		return nil, errTopicNotFound
	}
	if status != http.StatusOK {
		writeJSON(w, status, resp)
		return handled{}, nil
	}
	return resp, nil
}

// schemaEncoder is the encoder of a produce request's keys and values in
// a schema format, with the schemas it gives (by text or by id), as
// kafka-rest's produceWithSchema: a key (value) without a key (value)
// schema is refused.
func (p *Proxy) schemaEncoder(r *http.Request, format, topic string, req *produceRequest) (func(bool, json.RawMessage) ([]byte, error), *registeredSchema, *registeredSchema, error) {
	cl, err := p.registry(r)
	if err != nil {
		return nil, nil, nil, err
	}
	keySchema, err := p.requestSchema(r.Context(), cl, format, topic+"-key", req.KeySchema, req.KeySchemaID)
	if err != nil {
		return nil, nil, nil, err
	}
	valueSchema, err := p.requestSchema(r.Context(), cl, format, topic+"-value", req.ValueSchema, req.ValueSchemaID)
	if err != nil {
		return nil, nil, nil, err
	}
	enc := func(key bool, raw json.RawMessage) ([]byte, error) {
		s := valueSchema
		if key {
			s = keySchema
		}
		switch {
		case isNull(raw):
			return nil, nil
		case s == nil && key:
			return nil, errf(422, 42201, "Request includes keys but does not include key schema")
		case s == nil:
			return nil, errf(422, 42202, "Request includes values but does not include value schema")
		}
		return encodeSchemaData(s, raw)
	}
	return enc, keySchema, valueSchema, nil
}

func schemaID(s *registeredSchema) *int32 {
	if s == nil {
		return nil
	}
	id := int32(s.id)
	return &id
}

// produceInOrder produces recs and returns their results in recs'
// order (ProduceSync's come as the partitions' batches complete).
func produceInOrder(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) []kgo.ProduceResult {
	index := make(map[*kgo.Record]int, len(recs))
	for i, rec := range recs {
		index[rec] = i
	}
	out := make([]kgo.ProduceResult, len(recs))
	for _, res := range cl.ProduceSync(ctx, recs...) {
		out[index[res.Record]] = res
	}
	return out
}

// handled: the handler wrote the answer itself.
type handled struct{}

// partitionKey marks a record's Context with the partition the request
// named for it (a *namedPartition).
type partitionKey struct{}

// namedPartition is the partition a request named for a record, and
// the count of the topic's partitions when the partitioner found it out
// of range (0 until then).
type namedPartition struct {
	p     int32
	count atomic.Int32
}

func withPartition(ctx context.Context, p int32) context.Context {
	return context.WithValue(ctx, partitionKey{}, &namedPartition{p: p})
}

func partitionIn(ctx context.Context) (int32, bool) {
	np := namedPartitionIn(ctx)
	if np == nil {
		return 0, false
	}
	return np.p, true
}

func namedPartitionIn(ctx context.Context) *namedPartition {
	if ctx == nil {
		return nil
	}
	np, _ := ctx.Value(partitionKey{}).(*namedPartition)
	return np
}

// partitioner sends a record to the partition its request named, and
// the others as the Java producer's default partitioner does (murmur2 of
// the key; sticky without one).
type partitioner struct{ def kgo.Partitioner }

func (p partitioner) ForTopic(t string) kgo.TopicPartitioner {
	return &topicPartitioner{def: p.def.ForTopic(t)}
}

type topicPartitioner struct{ def kgo.TopicPartitioner }

func (tp *topicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	if _, ok := partitionIn(r.Context); ok {
		return true
	}
	return tp.def.RequiresConsistency(r)
}

func (tp *topicPartitioner) Partition(r *kgo.Record, n int) int {
	if np := namedPartitionIn(r.Context); np != nil {
		if int(np.p) >= n {
			np.count.Store(int32(n)) // the client fails the record
		}
		return int(np.p)
	}
	return tp.def.Partition(r, n)
}

func (tp *topicPartitioner) OnNewBatch() {
	if o, ok := tp.def.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}
