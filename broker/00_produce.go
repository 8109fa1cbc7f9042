package broker

// Produce v3-v13 (v0-v2 advertised for librdkafka, refused: KIP-896).
// v3: record batch v2 only, transactional id. v5: log start offset. v7:
// zstd allowed. v8: record errors and error message. v9: flexible. v10-11:
// current leader tag (KIP-951). v12: TV2 transactions. v13: topic ids.
// acks=0 gets no response; an error then closes the connection, as in Kafka.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/security"
	"github.com/samsa-io/samsa/txn"
)

func (b *Broker) handleProduce(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acksValid := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	now := time.Now()
	if req.TransactionID == nil && hasTransactionalRecords(req) {
		// Kafka authorizes transactional records by their transactional
		// id: without one, the whole request is refused.
		if req.Acks == 0 {
			return nil, errors.New("acks=0 produce of transactional records without a transactional id")
		}
		return refuseProduce(req, resp, kerr.TransactionalIDAuthorizationFailed), nil
	}
	type waiter struct {
		p      *partition
		need   int64 // HW that acknowledges the write
		minISR int   // min.insync.replicas of the topic
		ti     int   // index in resp.Topics
		pi     int   // index in resp.Topics[ti].Partitions
	}
	var waits []waiter
	failed := false
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var t *topic
		if req.Version >= 13 {
			t = b.meta.topicByID(rt.TopicID)
		} else {
			t = b.meta.topic(rt.Topic)
		}
		name := rt.Topic
		if t != nil {
			name = t.name
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			var p *partition
			if t != nil && rp.Partition >= 0 && int(rp.Partition) < len(t.parts) {
				p = t.parts[rp.Partition]
			}
			var err error
			var res logstore.AppendResult
			switch {
			case !acksValid:
				err = kerr.InvalidRequiredAcks
			case b.authz != nil && (t != nil || req.Version < 13) && b.topicRefusal(r, security.OpWrite, name) != nil:
				// Kafka checks Write by name before the topic's existence.
				err = kerr.TopicAuthorizationFailed // authz.go
			case t == nil && req.Version >= 13:
				err = kerr.UnknownTopicID
			case t != nil && isInternalTopic(t.name):
				// Only the broker writes its internal topics.
				err = kerr.InvalidTopicException
			case p == nil:
				err = kerr.UnknownTopicOrPartition
			default:
				res, err = b.produceTo(ctx, p, t, req, rp.Records, now)
			}
			var re *logstore.RecordErrors
			if err != nil {
				failed = true
				sp.ErrorCode = produceErrCode(err)
				switch {
				case req.Version >= 8 && errors.As(err, &re):
					setRecordErrors(&sp, re)
					if p.Log != nil {
						sp.LogStartOffset = p.Log.StartOffset() // as Kafka, with record errors
					}
				case req.Version >= 8:
					sp.ErrorMessage = errMsg(err)
				}
			} else {
				sp.BaseOffset = res.FirstOffset
				sp.LogAppendTime = res.LogAppendTime
				sp.LogStartOffset = res.LogStartOffset
			}
			if t != nil {
				t.metrics.produced(len(rp.Records), res.FirstOffset, res.LastOffset, res.Duplicate, err)
			}
			st.Partitions = append(st.Partitions, sp)
			// A duplicate (an idempotent retry) waits as its first
			// attempt did: it may be appended and not yet committed, and
			// acknowledging it now loses it if this leader's tail is cut
			// (Kafka's DelayedProduce waits for its offsets too).
			if err == nil && req.Acks == -1 {
				waits = append(waits, waiter{p: p, need: res.LastOffset + 1, minISR: t.effectiveMinISR(p), ti: len(resp.Topics), pi: len(st.Partitions) - 1})
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	resp.ThrottleMillis = b.throttle(r, security.ProducerByteRate, r.size) // 48_client_quotas.go
	if req.Acks == 0 {
		if failed {
			return nil, errors.New("acks=0 produce failed")
		}
		return nil, nil
	}
	// acks=all: wait until the high watermark covers each write.
	if len(waits) > 0 {
		wctx, cancel := context.WithTimeout(ctx, time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond)
		defer cancel()
		defer func(start time.Time) { r.parked += time.Since(start) }(time.Now())
		for _, w := range waits {
			rp := &resp.Topics[w.ti].Partitions[w.pi]
			switch err := b.replicas.AwaitHW(wctx, w.p, w.need); {
			case err == nil:
				// Replicated to the whole ISR, but the ISR may have shrunk
				// below min.insync.replicas meanwhile (Kafka's
				// DelayedProduce check).
				if _, _, _, isr := w.p.State(); len(isr) < w.minISR {
					rp.ErrorCode, rp.BaseOffset = kerr.NotEnoughReplicasAfterAppend.Code, -1
				}
			case errors.Is(err, errNotLeader):
				rp.ErrorCode, rp.BaseOffset = kerr.NotLeaderForPartition.Code, -1
			default:
				rp.ErrorCode, rp.BaseOffset = kerr.RequestTimedOut.Code, -1
			}
		}
	}
	b.addProduceLeaders(ctx, r, resp)
	return resp, nil
}

// hasTransactionalRecords reports whether the first batch of any
// partition's records is transactional (Kafka's
// RequestUtils.hasTransactionalRecords).
func hasTransactionalRecords(req *kmsg.ProduceRequest) bool {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if h, err := logstore.ParseBatchHeader(rp.Records); err == nil && h.IsTransactional() {
				return true
			}
		}
	}
	return false
}

// refuseProduce answers every partition of req with err.
func refuseProduce(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, err *kerr.Error) *kmsg.ProduceResponse {
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, err.Code
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// produceTo appends one partition's records. The handler keeps the
// protocol's rules (leadership, Kafka's ProduceRequest.validateRecords,
// min.insync.replicas); the log validates the batch itself, once, with the
// topic's rules and compression.type.
func (b *Broker) produceTo(ctx context.Context, p *partition, t *topic, req *kmsg.ProduceRequest, records []byte, now time.Time) (logstore.AppendResult, error) {
	if _, _, err := b.replicas.Leading(p, -1); err != nil {
		return logstore.AppendResult{}, err
	}
	if err := checkProduceRecords(req.Version, records); err != nil {
		return logstore.AppendResult{}, err
	}
	if err := b.mirrorRefusal(t.name); err != nil {
		return logstore.AppendResult{}, err
	}
	if err := b.checkSchemaIDs(ctx, t, records); err != nil {
		return logstore.AppendResult{}, err
	}
	if req.Acks == -1 {
		_, _, _, isr := p.State()
		if len(isr) < t.effectiveMinISR(p) {
			return logstore.AppendResult{}, kerr.NotEnoughReplicas
		}
	}
	var guard *logstore.VerificationGuard
	// From v12 (transactions version 2) the leader adds the partition to
	// the transaction rather than checking it is in, with or without
	// transaction.partition.verification.enable: the producer adds
	// nothing itself, and a partition left out would never get its marker.
	add := req.Version >= 12
	if h, err := logstore.ParseBatchHeader(records); err == nil && h.IsTransactional() && !h.IsControl() && (b.settings.TxnVerification || add) {
		// KIP-890 part 1 (txn_verify.go); a transactional batch without a
		// transactional id was refused above. The guard makes the append
		// fail if a marker lands before it (logstore/verify.go).
		var needed bool
		guard, needed = p.Log.StartTxnVerification(h.ProducerID, h.ProducerEpoch, add)
		if needed {
			tp := txn.TopicPartition{Topic: t.name, Partition: p.ID}
			if err := produceVerifyError(b.verifyTxnRetrying(ctx, *req.TransactionID, h.ProducerID, h.ProducerEpoch, tp, add)); err != nil {
				return logstore.AppendResult{}, err
			}
			if hook := b.txnVerifiedHook.Load(); hook != nil {
				(*hook)(t.name, p.ID)
			}
		}
	}
	return b.replicas.AppendVerified(p, records, now, guard)
}

// checkProduceRecords is Kafka's ProduceRequest.validateRecords for v3+:
// exactly one record batch, of magic 2, and zstd only from v7. It reads
// the first batch's header and nothing else; a header too short or a
// length out of range is left to the log's validation, which gives
// Kafka's answer for it.
func checkProduceRecords(version int16, records []byte) error {
	if len(records) == 0 {
		return fmt.Errorf("%w: produce requests with version %d must have at least one record batch per partition", logstore.ErrInvalidRecord, version)
	}
	h, err := logstore.ParseBatchHeader(records)
	if err != nil || h.Length < logstore.BatchHeaderSize-12 {
		return nil
	}
	if h.Magic != 2 {
		return fmt.Errorf("%w: produce requests with version %d are only allowed to contain record batches with magic version 2", logstore.ErrInvalidRecord, version)
	}
	if version < 7 && h.Codec() == logstore.CodecZstd {
		return fmt.Errorf("%w: produce requests with version %d are not allowed to use ZStandard compression", logstore.ErrUnsupportedCompression, version)
	}
	if h.Size() < int64(len(records)) {
		return fmt.Errorf("%w: produce requests with version %d are only allowed to contain exactly one record batch per partition", logstore.ErrInvalidRecord, version)
	}
	return nil
}

// setRecordErrors fills a v8+ partition answer for a batch refused for
// some of its records: one ErrorRecords entry (RecordErrors in Kafka's
// schema) per record, and Kafka's message
// (LogValidator.processRecordErrors).
func setRecordErrors(sp *kmsg.ProduceResponseTopicPartition, re *logstore.RecordErrors) {
	for _, r := range re.Records {
		e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		e.RelativeOffset = r.Index
		e.ErrorMessage = kmsg.StringPtr(r.Message)
		sp.ErrorRecords = append(sp.ErrorRecords, e)
	}
	var msg string
	if errors.Is(re, logstore.ErrInvalidTimestamp) {
		msg = "One or more records have been rejected due to invalid timestamp"
	} else {
		var sb strings.Builder
		fmt.Fprintf(&sb, "One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [", len(re.Records))
		for i, r := range re.Records[:min(3, len(re.Records))] {
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "RecordError(batchIndex=%d, message='%s')", r.Index, r.Message)
		}
		sb.WriteString("]")
		msg = sb.String()
	}
	sp.ErrorMessage = &msg
}

// produceErrCode is errCode for Produce, which never answers
// UNKNOWN_SERVER_ERROR: the Java idempotent producer writes duplicates after
// it (KAFKA-14034). An unexpected failure is a storage error.
func produceErrCode(err error) int16 {
	code := errCode(err)
	if code == kerr.UnknownServerError.Code {
		return kerr.KafkaStorageError.Code
	}
	return code
}
