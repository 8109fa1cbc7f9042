package logstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"time"
)

// Validation of produced batches: Append checks each client batch once,
// here, as Kafka's UnifiedLog.analyzeAndValidateRecords and LogValidator
// do: the header (base offset 0, size, CRC, counts, control bit,
// sequence, codec), then one walk over the records that checks their
// framing and the topic's per-record rules, then, when compression.type
// names a codec other than the batch's, one re-compression of the records
// already decompressed for the walk. A batch kept as sent is rewritten in
// place (offsets, epoch, max timestamp), never re-encoded.

// Compression is compression.type: the codec a topic stores batches with.
// The zero value, CompressionProducer, keeps each batch's codec as sent.
type Compression int8

const (
	CompressionProducer Compression = iota // "producer"
	CompressionNone                        // "uncompressed"
	CompressionGzip                        // "gzip"
	CompressionSnappy                      // "snappy"
	CompressionLZ4                         // "lz4"
	CompressionZstd                        // "zstd"
)

var compressionNames = [...]string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}

// ParseCompression reads a compression.type value (Kafka's names).
func ParseCompression(name string) (Compression, error) {
	for i, n := range compressionNames {
		if n == name {
			return Compression(i), nil
		}
	}
	return 0, fmt.Errorf("%w: compression.type %q", ErrUnsupportedCompression, name)
}

func (c Compression) String() string {
	if c >= 0 && int(c) < len(compressionNames) {
		return compressionNames[c]
	}
	return fmt.Sprintf("compression(%d)", int8(c))
}

// codec is the codec a batch sent with src is stored with.
func (c Compression) codec(src Codec) Codec {
	if c <= CompressionProducer || c > CompressionZstd {
		return src
	}
	return Codec(c - 1)
}

// RecordError names one record of a produced batch that broke the topic's
// rules: Index is its position in the batch (Kafka's batch_index) and
// Message Kafka's reason.
type RecordError struct {
	Index   int32
	Message string
}

// RecordErrors is Append's error when records of a batch break the
// topic's rules: a record without a key on a compacted topic
// (ErrInvalidRecord), a CreateTime timestamp outside
// message.timestamp.before/after.max.ms or a producer-set LogAppendTime
// (ErrInvalidTimestamp, which wins when both occur, as in Kafka). Records
// lists every record at fault in order; the batch is refused whole.
type RecordErrors struct {
	Err     error // ErrInvalidRecord or ErrInvalidTimestamp
	Records []RecordError
}

func (e *RecordErrors) Error() string {
	if len(e.Records) == 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v: %d records refused; record %d: %s", e.Err, len(e.Records), e.Records[0].Index, e.Records[0].Message)
}

func (e *RecordErrors) Unwrap() error { return e.Err }

// recordRules are the per-record checks of Kafka's
// LogValidator.validateRecord for one append.
type recordRules struct {
	compact       bool
	createTime    bool  // the topic's message.timestamp.type
	now           int64 // append time, ms
	before, after int64 // message.timestamp.before/after.max.ms; MaxInt64 = no limit
	tp            string
	keyless       string // the message for a record without a key, built once
	badTimestamp  bool   // check refused a record for its timestamp
}

func newRecordRules(cfg *Config, tp string, now time.Time) recordRules {
	r := recordRules{compact: cfg.Compact, createTime: cfg.TimestampType == CreateTime, now: now.UnixMilli(),
		before: cfg.TimestampBeforeMaxMs, after: cfg.TimestampAfterMaxMs, tp: tp}
	if r.before <= 0 {
		r.before = math.MaxInt64
	}
	if r.after <= 0 {
		r.after = math.MaxInt64
	}
	return r
}

// check applies the rules to record i of a batch with header h, whose
// timestamp (BaseTimestamp + delta) is ts; it returns the error to report
// for it, if any. The key rule comes first: a record breaking both gets
// only the key error, as in Kafka.
func (r *recordRules) check(h *BatchHeader, i int32, rec *rawRecord, ts int64, errs []RecordError) []RecordError {
	if r.compact && rec.key == nil {
		if r.keyless == "" {
			r.keyless = "Compacted topic cannot accept message without key in topic partition " + r.tp
		}
		return append(errs, RecordError{Index: i, Message: r.keyless})
	}
	switch {
	case r.createTime:
		// A LogAppendTime bit on a CreateTime topic is cleared on append:
		// the records' own timestamps are the ones stored.
		if ts == -1 {
			return errs
		}
		// Kafka's arithmetic, overflow included.
		if diff := r.now - ts; diff > r.before || -diff > r.after {
			r.badTimestamp = true
			return append(errs, RecordError{Index: i, Message: fmt.Sprintf(
				"Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
				ts, h.BaseOffset+int64(rec.offsetDelta), r.now-r.before, r.now+r.after)})
		}
	case h.LogAppendTime():
		r.badTimestamp = true
		return append(errs, RecordError{Index: i, Message: fmt.Sprintf(
			"Invalid timestamp type in message DefaultRecord(offset=%d, timestamp=%d, key=%d bytes, value=%d bytes). "+
				"Producer should not set timestamp type to LogAppendTime.",
			h.BaseOffset+int64(rec.offsetDelta), h.MaxTimestamp, len(rec.key), len(rec.value))})
	}
	return errs
}

// recordErrors turns the errors of a walk into Append's error.
func recordErrors(errs []RecordError, timestamp bool) error {
	e := &RecordErrors{Err: ErrInvalidRecord, Records: errs}
	if timestamp {
		e.Err = ErrInvalidTimestamp
	}
	return e
}

// tpName is the topic partition a log stores, for messages: the name of
// its directory (topic-partition, as Kafka names both).
func (l *Log) tpName() string { return filepath.Base(l.dir) }

// validateProduced is the validation pass of one client batch b (whole,
// magic 2, as SplitBatches returns it): Kafka's order, the base offset,
// max.message.bytes, the CRC and the rest of the header, then the records
// with the topic's rules. It returns the batch to store and its header:
// b itself, its max timestamp set to the records' largest for a CreateTime
// topic, or a new batch holding b's records compressed with the topic's
// codec.
func validateProduced(cfg *Config, b []byte, tp string, now time.Time) ([]byte, BatchHeader, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return nil, h, invalidf("truncated batch header (%d bytes)", len(b))
	}
	if h.BaseOffset != 0 {
		return nil, h, invalidf("base offset of a produced batch must be 0, got %d", h.BaseOffset)
	}
	if int64(len(b)) > int64(cfg.MaxMessageBytes) {
		return nil, h, fmt.Errorf("%w: batch of %d bytes, max.message.bytes %d", ErrMessageTooLarge, len(b), cfg.MaxMessageBytes)
	}
	if err := checkClientHeader(b, h); err != nil {
		return nil, h, err
	}
	src := h.Codec()
	dst := cfg.Compression.codec(src)
	data, buf, err := batchRecords(b, h, int(cfg.MaxUncompressedBytes))
	if err != nil {
		return nil, h, err
	}
	if buf != nil {
		defer putBuf(buf)
	}
	info := BatchInfo{Header: h}
	rules := newRecordRules(cfg, tp, now)
	errs, err := checkRecords(&info, data, h, &rules)
	if err != nil {
		return nil, h, err
	}
	if len(errs) > 0 {
		return nil, h, recordErrors(errs, rules.badTimestamp)
	}
	if cfg.TimestampType == CreateTime {
		// Kafka stores the true largest record timestamp as the batch's:
		// time index, roll and retention rely on it.
		h.MaxTimestamp = info.MaxRecordTimestamp
		h.Attributes &^= attrLogAppendTime
	}
	if dst == src {
		if cfg.TimestampType == CreateTime {
			SetMaxTimestamp(b, h.MaxTimestamp)
			h.CRC = binary.BigEndian.Uint32(b[17:])
		}
		return b, h, nil
	}
	out, err := recompressed(b, h, dst, data)
	if err != nil {
		return nil, h, err
	}
	if int64(len(out)) > int64(cfg.MaxMessageBytes) {
		return nil, h, fmt.Errorf("%w: batch of %d bytes as %s, max.message.bytes %d", ErrMessageTooLarge, len(out), dst, cfg.MaxMessageBytes)
	}
	nh, _ := ParseBatchHeader(out)
	return out, nh, nil
}

// recompressed returns a new batch with b's header (h's attributes and max
// timestamp) and the uncompressed records data compressed with c. The
// records are not re-encoded: their bytes do not depend on the codec.
func recompressed(b []byte, h BatchHeader, c Codec, data []byte) ([]byte, error) {
	out := make([]byte, BatchHeaderSize, BatchHeaderSize+len(data)/2+64)
	copy(out, b[:BatchHeaderSize])
	out, err := compress(out, c, data)
	if err != nil {
		return nil, err
	}
	if int64(len(out))-12 > maxInt32 {
		return nil, invalidf("batch of %d bytes is too large", len(out))
	}
	be := binary.BigEndian
	be.PutUint32(out[8:], uint32(len(out)-12))
	be.PutUint16(out[21:], uint16(h.Attributes)&^attrCodecMask|uint16(c))
	be.PutUint64(out[35:], uint64(h.MaxTimestamp))
	putCRC(out)
	return out, nil
}
