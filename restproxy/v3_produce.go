package restproxy

// v3 produce (kafka-rest's ProduceAction and ProduceBatchAction): a
// stream of records in one request, answered by a stream, or a batch of
// records with ids answered as successes and failures; each failed
// record answers the code Confluent's proxy maps its failure to.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceV3Body is v3's ProduceRequest.
type produceV3Body struct {
	PartitionID *int32     `json:"partition_id"`
	Headers     []v3Header `json:"headers"`
	Key         *v3Data    `json:"key"`
	Value       *v3Data    `json:"value"`
	Timestamp   *time.Time `json:"timestamp"`
}

type v3Header struct {
	Name  string  `json:"name"`
	Value *string `json:"value"` // base64
}

type v3Data struct {
	Type     *string         `json:"type"`
	Data     json.RawMessage `json:"data"`
	SchemaID *int32          `json:"schema_id"`
	Schema   *string         `json:"schema"`
	Subject  *string         `json:"subject"`
	// SchemaVersion and Strategy (TOPIC_NAME, RECORD_NAME,
	// TOPIC_RECORD_NAME) name the schema with Subject.
	SchemaVersion *int32  `json:"schema_version"`
	Strategy      *string `json:"subject_name_strategy"`
}

type v3DataAnswer struct {
	Type          string `json:"type"`
	Size          int    `json:"size"`
	Subject       string `json:"subject,omitempty"`
	SchemaID      *int   `json:"schema_id,omitempty"`
	SchemaVersion *int   `json:"schema_version,omitempty"`
}

type produceV3Answer struct {
	ErrorCode   int           `json:"error_code,omitempty"`
	Message     string        `json:"message,omitempty"`
	ClusterID   string        `json:"cluster_id,omitempty"`
	TopicName   string        `json:"topic_name,omitempty"`
	PartitionID *int32        `json:"partition_id,omitempty"`
	Offset      *int64        `json:"offset,omitempty"`
	Timestamp   string        `json:"timestamp,omitempty"`
	Key         *v3DataAnswer `json:"key,omitempty"`
	Value       *v3DataAnswer `json:"value,omitempty"`
}

// v3Bytes serializes one key or value of a v3 record: BINARY (base64),
// JSON or STRING, or with a schema (v3_schemas.go); absent data is null.
func (s *v3Schemas) v3Bytes(d *v3Data, isKey bool) ([]byte, *v3DataAnswer, error) {
	if d == nil {
		return nil, nil, nil
	}
	if s.wantsSchema(d) {
		return s.encode(d, isKey)
	}
	typ := "BINARY"
	if d.Type != nil {
		typ = strings.ToUpper(*d.Type)
	}
	var b []byte
	switch typ {
	case "BINARY":
		if !isNull(d.Data) {
			var s string
			if err := json.Unmarshal(d.Data, &s); err != nil {
				return nil, nil, errf(400, 400, "BINARY data must be a base64 string")
			}
			var err error
			if b, err = base64.StdEncoding.DecodeString(s); err != nil {
				return nil, nil, errf(400, 400, "BINARY data is not base64: %v", err)
			}
		}
	case "JSON":
		if !isNull(d.Data) {
			var err error
			if b, err = reencode(d.Data); err != nil {
				return nil, nil, errf(400, 400, "%v", err)
			}
		}
	case "STRING":
		if !isNull(d.Data) {
			var s string
			if err := json.Unmarshal(d.Data, &s); err != nil {
				return nil, nil, errf(400, 400, "STRING data must be a string")
			}
			b = []byte(s)
		}
	default:
		return nil, nil, errf(400, 400, "Unknown type %s", typ)
	}
	return b, &v3DataAnswer{Type: typ, Size: len(b)}, nil
}

// produceTarget is what a v3 produce learns of its topic before its
// records, as the Java producer of Confluent's proxy learns it from its
// metadata: the count of partitions (-1 while the producer has yet to
// learn them, a topic being created), or the failure every record
// answers.
type produceTarget struct {
	topic      string
	partitions int
	err        error
}

// produceTarget asks for the topic's metadata as the Java producer does,
// allowing auto creation: a broker creating topics on demand creates it.
// A topic the broker does not have fails every record with 40401, as
// the producer's wait for it fails ("not present in metadata"), and a
// topic the user may not describe with 40301.
func (q *v3req) produceTarget(topic string) (produceTarget, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(q.ctx(), q.u.admc)
	if err != nil {
		return produceTarget{}, err
	}
	t := produceTarget{topic: topic, partitions: -1, err: errTopicNotPresent(topic)}
	for _, mt := range resp.Topics {
		if mt.Topic == nil || *mt.Topic != topic {
			continue
		}
		switch err := kerr.ErrorForCode(mt.ErrorCode); {
		case err == nil:
			t.partitions, t.err = len(mt.Partitions), nil
		case errors.Is(err, kerr.UnknownTopicOrPartition):
		case kerr.IsRetriable(err): // being created: the producer waits for its leaders
			t.err = nil
		default:
			t.err = err
		}
	}
	return t, nil
}

// check is the failure of a record for the partition it names
// (partition may be nil), before it is produced.
func (t produceTarget) check(partition *int32) error {
	if t.err != nil {
		return t.err
	}
	if partition != nil && t.partitions >= 0 && int(*partition) >= t.partitions {
		return errPartitionNotPresent(t.topic, *partition, t.partitions)
	}
	return nil
}

// recordErr is the failure of a record the producer failed.
func (t produceTarget) recordErr(rec *kgo.Record, err error) *restError {
	if np := namedPartitionIn(rec.Context); np != nil && np.count.Load() > 0 {
		return errPartitionNotPresent(t.topic, np.p, int(np.count.Load()))
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return errTopicNotPresent(t.topic)
	}
	return kafkaErr(err)
}

// errTopicNotPresent and errPartitionNotPresent are the failures of
// records for a topic or partition the cluster does not have: the Java
// producer's wait for them in its metadata fails ("... not present in
// metadata after max.block.ms"), which Confluent's proxy answers 40401.
func errTopicNotPresent(topic string) *restError {
	return errf(404, 40401, "Topic %s not present in metadata.", topic)
}

func errPartitionNotPresent(topic string, p int32, count int) *restError {
	return errf(404, 40401, "Partition %d of topic %s with partition count %d is not present in metadata.", p, topic, count)
}

// v3RecordAnswer is the answer of a record that failed: Confluent's
// code for the failure (its StreamingResponse maps a record's exception
// to the code of its body, not to the HTTP status), and the message.
func v3RecordAnswer(err error) produceV3Answer {
	re := kafkaErr(err)
	return produceV3Answer{ErrorCode: re.code, Message: re.msg}
}

// v3Prepare is a v3 produce entry's record, or its failure before it is
// produced, checked in the order of Confluent's ProduceAction: a
// negative partition, then the key and value, then the topic's.
func (s *v3Schemas) v3Prepare(t produceTarget, req *produceV3Body) (*kgo.Record, *v3DataAnswer, *v3DataAnswer, error) {
	if req.PartitionID != nil && *req.PartitionID < 0 {
		return nil, nil, nil, errPartitionNotFound
	}
	rec, keyAns, valAns, err := s.v3Record(req)
	if err == nil {
		err = t.check(req.PartitionID)
	}
	return rec, keyAns, valAns, err
}

// maxInFlight bounds the records of one streamed produce not yet
// answered.
const maxInFlight = 1000

// produceV3 produces each record of the request's stream of JSON objects
// and answers each, in order, as a stream of JSON objects, reading the
// next records while the first are produced.
func produceV3(q *v3req) (any, error) {
	topic := q.r.PathValue("topic")
	if _, ok := requestFormat(q.r); !ok {
		return nil, errUnsupportedMedia
	}
	target, err := q.produceTarget(topic)
	if err != nil {
		return nil, err
	}
	schemas := &v3Schemas{p: q.p, r: q.r, topic: topic}
	rc := http.NewResponseController(q.w)
	rc.EnableFullDuplex() // answers go out while records come in
	type pending struct {
		done chan struct{}
		ans  produceV3Answer
	}
	queue := make(chan *pending, maxInFlight)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		enc := json.NewEncoder(q.w)
		enc.SetEscapeHTML(false)
		for p := range queue {
			<-p.done
			enc.Encode(p.ans)
			rc.Flush()
		}
	}()
	q.w.WriteHeader(http.StatusOK)
	dec := json.NewDecoder(q.r.Body)
	ctx, cancel := context.WithTimeout(q.ctx(), produceTimeout)
	defer cancel()
	for n := 0; ; n++ {
		var req produceV3Body
		err := dec.Decode(&req)
		if errors.Is(err, io.EOF) && n > 0 {
			break
		}
		p := &pending{done: make(chan struct{})}
		queue <- p
		if err != nil {
			msg := "Request body is empty. Data is required."
			if !errors.Is(err, io.EOF) {
				msg = "Error processing JSON: " + err.Error()
			}
			p.ans = produceV3Answer{ErrorCode: 400, Message: msg}
			close(p.done)
			break
		}
		rec, keyAns, valAns, rerr := schemas.v3Prepare(target, &req)
		if rerr != nil {
			p.ans = v3RecordAnswer(rerr)
			close(p.done)
			continue
		}
		q.u.kgo.Produce(ctx, rec, func(r *kgo.Record, err error) {
			if err != nil {
				p.ans = v3RecordAnswer(target.recordErr(r, err))
			} else {
				part, off := r.Partition, r.Offset
				p.ans = produceV3Answer{ErrorCode: 200, ClusterID: q.md.Cluster, TopicName: topic, PartitionID: &part, Offset: &off,
					Timestamp: r.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z"), Key: keyAns, Value: valAns}
			}
			close(p.done)
		})
	}
	close(queue)
	<-writerDone
	return handled{}, nil
}

// v3Record is the Kafka record of a v3 produce request's entry.
func (s *v3Schemas) v3Record(req *produceV3Body) (*kgo.Record, *v3DataAnswer, *v3DataAnswer, error) {
	rec := &kgo.Record{Topic: s.topic}
	var keyAns, valAns *v3DataAnswer
	var err error
	if rec.Key, keyAns, err = s.v3Bytes(req.Key, true); err != nil {
		return nil, nil, nil, err
	}
	if rec.Value, valAns, err = s.v3Bytes(req.Value, false); err != nil {
		return nil, nil, nil, err
	}
	for _, h := range req.Headers {
		kh := kgo.RecordHeader{Key: h.Name}
		if h.Value != nil {
			if kh.Value, err = base64.StdEncoding.DecodeString(*h.Value); err != nil {
				return nil, nil, nil, errf(400, 400, "header %s is not base64: %v", h.Name, err)
			}
		}
		rec.Headers = append(rec.Headers, kh)
	}
	if req.Timestamp != nil {
		rec.Timestamp = *req.Timestamp
	}
	if req.PartitionID != nil {
		rec.Context = withPartition(context.Background(), *req.PartitionID)
	}
	return rec, keyAns, valAns, nil
}

// maxBatchEntries is kafka-rest's produce.batch.maximum.entries default.
const maxBatchEntries = 10

// produceBatch serves records:batch: entries with ids, answered as
// successes and failures.
func produceBatch(q *v3req) (any, error) {
	topic := q.r.PathValue("topic")
	var req struct {
		Entries []struct {
			ID json.RawMessage `json:"id"`
			produceV3Body
		} `json:"entries"`
	}
	if _, err := decodeBody(q.r, &req, false); err != nil {
		return nil, err
	}
	batchErr := func(msg string) error { return errf(400, 42208, "%s", msg) }
	switch {
	case len(req.Entries) == 0:
		return nil, batchErr("Empty batch.")
	case len(req.Entries) > maxBatchEntries:
		return nil, batchErr("Too many entries in batch.")
	}
	ids := make([]string, len(req.Entries))
	seen := map[string]bool{}
	for i, e := range req.Entries {
		if err := json.Unmarshal(e.ID, &ids[i]); err != nil || ids[i] == "" || len(ids[i]) > 80 {
			return nil, batchErr("Batch entry identifier is not a valid string.")
		}
		if seen[ids[i]] {
			return nil, batchErr("Batch entry IDs are not distinct.")
		}
		seen[ids[i]] = true
	}
	target, err := q.produceTarget(topic)
	if err != nil {
		return nil, err
	}
	type success struct {
		ID string `json:"id"`
		produceV3Answer
	}
	type failure struct {
		ID        string `json:"id"`
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	out := struct {
		Successes []success `json:"successes"`
		Failures  []failure `json:"failures"`
	}{[]success{}, []failure{}}
	fail := func(id string, err error) {
		a := v3RecordAnswer(err)
		out.Failures = append(out.Failures, failure{id, a.ErrorCode, a.Message})
	}
	schemas := &v3Schemas{p: q.p, r: q.r, topic: topic}
	var recs []*kgo.Record
	var recIDs []string
	answers := map[*kgo.Record][2]*v3DataAnswer{}
	for i := range req.Entries {
		e := &req.Entries[i]
		rec, keyAns, valAns, err := schemas.v3Prepare(target, &e.produceV3Body)
		if err != nil {
			fail(ids[i], err)
			continue
		}
		recs = append(recs, rec)
		recIDs = append(recIDs, ids[i])
		answers[rec] = [2]*v3DataAnswer{keyAns, valAns}
	}
	ctx, cancel := context.WithTimeout(q.ctx(), produceTimeout)
	defer cancel()
	for i, res := range produceInOrder(ctx, q.u.kgo, recs) {
		if res.Err != nil {
			fail(recIDs[i], target.recordErr(res.Record, res.Err))
			continue
		}
		part, off := res.Record.Partition, res.Record.Offset
		a := answers[res.Record]
		out.Successes = append(out.Successes, success{recIDs[i], produceV3Answer{ClusterID: q.md.Cluster, TopicName: topic, PartitionID: &part, Offset: &off,
			Timestamp: res.Record.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z"), Key: a[0], Value: a[1]}})
	}
	return out, nil
}
