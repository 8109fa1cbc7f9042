package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Record batch v2 (magic 2), all integers big endian:
//
//	offset size field
//	     0    8 baseOffset
//	     8    4 batchLength          bytes after this field (total size - 12)
//	    12    4 partitionLeaderEpoch
//	    16    1 magic                2
//	    17    4 crc                  CRC32C of bytes 21..end
//	    21    2 attributes           bits 0-2 codec, 3 timestamp type (1 = LogAppendTime),
//	                                 4 transactional, 5 control, 6 delete horizon set
//	    23    4 lastOffsetDelta
//	    27    8 baseTimestamp
//	    35    8 maxTimestamp
//	    43    8 producerId
//	    51    2 producerEpoch
//	    53    4 baseSequence
//	    57    4 records count
//	    61    - records (compressed as one blob when codec != none)

// BatchHeaderSize is the size of a v2 record batch header.
const BatchHeaderSize = 61

// batchLengthMin is the smallest legal batchLength: a header with no records.
const batchLengthMin = BatchHeaderSize - 12

const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// DefaultMaxUncompressed bounds decompression when the caller gives no
// limit (ValidateBatch with maxUncompressed <= 0, ForEachRecord).
const DefaultMaxUncompressed = 128 << 20

// Errors returned by the batch functions. Kafka codes: ErrCorruptMessage →
// CORRUPT_MESSAGE (2), ErrInvalidRecord → INVALID_RECORD (87),
// ErrUnsupportedCompression → UNSUPPORTED_COMPRESSION_TYPE (76). ErrCorruptBatch
// is a storage-side error (a short or inconsistent batch read back from disk).
var (
	ErrCorruptMessage         = errors.New("logstore: corrupt message")
	ErrInvalidRecord          = errors.New("logstore: invalid record")
	ErrUnsupportedCompression = errors.New("logstore: unsupported compression type")
	ErrCorruptBatch           = errors.New("logstore: corrupt batch")
	// ErrUnsupportedMagic wraps ErrInvalidRecord: errors.Is(err,
	// ErrInvalidRecord) holds for it too.
	ErrUnsupportedMagic = fmt.Errorf("%w: unsupported magic (only v2 record batches)", ErrInvalidRecord)
	// ErrDecompressedTooLarge wraps ErrInvalidRecord: a batch whose records
	// decompress to more than the allowed bound.
	ErrDecompressedTooLarge = fmt.Errorf("%w: decompressed records exceed the limit", ErrInvalidRecord)
)

func errMagic(m int8) error { return fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, m) }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRecord}, args...)...)
}

// BatchHeader is the parsed fixed header of a v2 record batch.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32 // batchLength field: bytes after the first 12
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// ParseBatchHeader decodes the first BatchHeaderSize bytes of b. It checks
// nothing but the length of b (ErrCorruptBatch when short): no magic, CRC or
// length consistency.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, ErrCorruptBatch
	}
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:           int64(be.Uint64(b[0:])),
		Length:               int32(be.Uint32(b[8:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[12:])),
		Magic:                int8(b[16]),
		CRC:                  be.Uint32(b[17:]),
		Attributes:           int16(be.Uint16(b[21:])),
		LastOffsetDelta:      int32(be.Uint32(b[23:])),
		BaseTimestamp:        int64(be.Uint64(b[27:])),
		MaxTimestamp:         int64(be.Uint64(b[35:])),
		ProducerID:           int64(be.Uint64(b[43:])),
		ProducerEpoch:        int16(be.Uint16(b[51:])),
		BaseSequence:         int32(be.Uint32(b[53:])),
		NumRecords:           int32(be.Uint32(b[57:])),
	}, nil
}

// Size is the whole batch size in bytes: 12 + Length.
func (h BatchHeader) Size() int64 { return 12 + int64(h.Length) }

// LastOffset is BaseOffset + LastOffsetDelta.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Codec is the compression codec in the attributes (may be an unknown 5..7).
func (h BatchHeader) Codec() Codec { return Codec(h.Attributes & attrCodecMask) }

// IsTransactional reports attribute bit 4.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// IsControl reports attribute bit 5 (transaction markers).
func (h BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// LogAppendTime reports attribute bit 3: MaxTimestamp is the broker's append
// time and every record's timestamp is MaxTimestamp.
func (h BatchHeader) LogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// IsIdempotent reports whether the batch carries a producer id.
func (h BatchHeader) IsIdempotent() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence number of the batch's last record, wrapping
// at MaxInt32 as Kafka does; -1 when the batch has no sequence.
func (h BatchHeader) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	return addSequence(h.BaseSequence, h.LastOffsetDelta)
}

// addSequence adds delta (>= 0) to seq, wrapping past MaxInt32 to 0.
func addSequence(seq, delta int32) int32 {
	s := int64(seq) + int64(delta)
	if s > maxInt32 {
		s -= maxInt32 + 1
	}
	return int32(s)
}

const maxInt32 = 1<<31 - 1

// SplitBatches walks a Produce records blob and returns each batch as a
// sub-slice of b (no copy). It checks framing only: each batch must be
// whole, its batchLength >= 49 and its magic 2. An empty blob yields no
// batches.
func SplitBatches(b []byte) ([][]byte, error) {
	return appendBatches(nil, b)
}

// appendBatches is SplitBatches appending to out.
func appendBatches(out [][]byte, b []byte) ([][]byte, error) {
	for len(b) > 0 {
		if len(b) < BatchHeaderSize {
			return nil, invalidf("truncated batch header (%d bytes)", len(b))
		}
		length := int32(binary.BigEndian.Uint32(b[8:]))
		if length < batchLengthMin {
			// Kafka's log input stream calls this corrupt (CorruptRecordException).
			return nil, fmt.Errorf("%w: batch length %d below minimum %d", ErrCorruptMessage, length, batchLengthMin)
		}
		if m := int8(b[16]); m != 2 {
			return nil, errMagic(m)
		}
		size := 12 + int64(length)
		if size > int64(len(b)) {
			return nil, invalidf("batch length %d past the end of the records (%d bytes left)", length, len(b)-12)
		}
		out = append(out, b[:size:size])
		b = b[size:]
	}
	return out, nil
}

// ValidateBatch fully checks one batch sent by a client, before it is
// appended:
//   - magic 2, batchLength consistent with len(b), base offset 0
//     (ErrInvalidRecord);
//   - CRC32C over attributes..end (ErrCorruptMessage);
//   - NumRecords == LastOffsetDelta+1 > 0, not a control
//     batch, a non-negative base sequence when a producer id is set
//     (ErrInvalidRecord);
//   - a known codec (ErrUnsupportedCompression for 5..7);
//   - the records decode (decompressed into at most maxUncompressed bytes,
//     DefaultMaxUncompressed when <= 0; more is ErrDecompressedTooLarge),
//     exactly NumRecords of them with nothing left over, every length and
//     varint sane, offsetDelta == index (ErrInvalidRecord).
//
// It returns the parsed header. b is not modified.
func ValidateBatch(b []byte, maxUncompressed int) (BatchHeader, error) {
	info, err := ValidateBatchInfo(b, maxUncompressed)
	return info.Header, err
}

// BatchInfo is what ValidateBatchInfo learns from the records.
type BatchInfo struct {
	Header BatchHeader
	// MaxRecordTimestamp is the largest record timestamp (CreateTime,
	// BaseTimestamp + delta) and MaxTimestampDelta the offset delta of the
	// first record carrying it. Kafka stores this maximum as the batch's
	// MaxTimestamp for CreateTime topics (see SetMaxTimestamp).
	MaxRecordTimestamp int64
	MaxTimestampDelta  int32
	// MinRecordTimestamp is the smallest record timestamp (deltas may be
	// negative, so it can be below BaseTimestamp): with MaxRecordTimestamp,
	// the range to check against message.timestamp.before/after.max.ms,
	// which Kafka checks per record.
	MinRecordTimestamp int64
	// Keyless reports a record with a null key, which a compacted topic
	// refuses.
	Keyless bool
}

// ValidateBatchInfo is ValidateBatch that also reports the record-level
// maximum timestamp.
func ValidateBatchInfo(b []byte, maxUncompressed int) (BatchInfo, error) {
	var info BatchInfo
	if len(b) < BatchHeaderSize {
		return info, invalidf("batch of %d bytes is shorter than the header", len(b))
	}
	h, _ := ParseBatchHeader(b)
	info.Header = h
	if err := checkClientHeader(b, h); err != nil {
		return info, err
	}
	if maxUncompressed <= 0 {
		maxUncompressed = DefaultMaxUncompressed
	}
	data, buf, err := batchRecords(b, h, maxUncompressed)
	if err != nil {
		return info, err
	}
	if buf != nil {
		defer putBuf(buf)
	}
	_, err = checkRecords(&info, data, h, nil)
	return info, err
}

// checkClientHeader checks the header h of a client batch b: everything
// ValidateBatch checks but the records.
func checkClientHeader(b []byte, h BatchHeader) error {
	if h.Magic != 2 {
		return errMagic(h.Magic)
	}
	if h.Length < batchLengthMin || h.Size() != int64(len(b)) {
		return invalidf("batch length %d does not match %d bytes", h.Length, len(b))
	}
	// Kafka checks the base offset before the CRC (UnifiedLog.analyzeAndValidateRecords).
	if h.BaseOffset != 0 {
		return invalidf("base offset of a produced batch must be 0, got %d", h.BaseOffset)
	}
	if BatchCRC(b) != h.CRC {
		return ErrCorruptMessage
	}
	if h.LastOffsetDelta < 0 || h.NumRecords <= 0 || int64(h.NumRecords) != int64(h.LastOffsetDelta)+1 {
		return invalidf("record count %d inconsistent with last offset delta %d", h.NumRecords, h.LastOffsetDelta)
	}
	if h.IsControl() {
		return invalidf("clients may not write control batches")
	}
	if h.ProducerID >= 0 && h.BaseSequence < 0 {
		return invalidf("invalid sequence %d for producer id %d", h.BaseSequence, h.ProducerID)
	}
	if c := h.Codec(); !c.Known() {
		return fmt.Errorf("%w: codec id %d", ErrUnsupportedCompression, int8(c))
	}
	return nil
}

// batchRecords returns the uncompressed records data of the whole batch b
// with header h (a known codec): b's own bytes, or a pooled buffer of at
// most limit bytes that the caller returns with putBuf.
func batchRecords(b []byte, h BatchHeader, limit int) ([]byte, *[]byte, error) {
	body := b[BatchHeaderSize:h.Size()]
	c := h.Codec()
	if c == CodecNone {
		return body, nil, nil
	}
	buf, err := decompress(c, body, limit)
	if err != nil {
		return nil, nil, err
	}
	return *buf, buf, nil
}

// checkRecords walks the records of a client batch with header h in one
// pass, without allocating: their framing and offset deltas (an error
// ends the walk), and with rules, the topic's per-record rules, whose
// breaches it returns (the walk goes on, to name every record at fault).
// It fills info's timestamps and Keyless.
func checkRecords(info *BatchInfo, data []byte, h BatchHeader, rules *recordRules) ([]RecordError, error) {
	info.MaxRecordTimestamp, info.MinRecordTimestamp = -1, -1
	info.MaxTimestampDelta = 0
	var errs []RecordError
	for i := int32(0); i < h.NumRecords; i++ {
		r, rest, err := nextRecord(data)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		if r.offsetDelta != i {
			return nil, invalidf("record %d has offset delta %d", i, r.offsetDelta)
		}
		ts := h.BaseTimestamp + r.timestampDelta
		if i == 0 || ts > info.MaxRecordTimestamp {
			info.MaxRecordTimestamp = ts
			info.MaxTimestampDelta = i
		}
		if i == 0 || ts < info.MinRecordTimestamp {
			info.MinRecordTimestamp = ts
		}
		if r.key == nil {
			info.Keyless = true
		}
		if rules != nil {
			errs = rules.check(&h, i, &r, ts, errs)
		}
		data = rest
	}
	if len(data) != 0 {
		return nil, invalidf("%d bytes left after the last of %d records", len(data), h.NumRecords)
	}
	return errs, nil
}

// SetBaseOffset rewrites the base offset of the whole batch b in place. The
// field is outside the CRC. A b shorter than a header is left alone.
func SetBaseOffset(b []byte, off int64) {
	if len(b) < BatchHeaderSize {
		return
	}
	binary.BigEndian.PutUint64(b[0:], uint64(off))
}

// SetPartitionLeaderEpoch rewrites the partition leader epoch in place (outside
// the CRC).
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	if len(b) < BatchHeaderSize {
		return
	}
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
}

// SetLogAppendTime marks the batch LogAppendTime (attribute bit 3), sets
// MaxTimestamp to ts and recomputes the CRC.
func SetLogAppendTime(b []byte, ts int64) {
	if len(b) < BatchHeaderSize {
		return
	}
	attrs := binary.BigEndian.Uint16(b[21:]) | attrLogAppendTime
	binary.BigEndian.PutUint16(b[21:], attrs)
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	putCRC(b)
}

// SetMaxTimestamp marks the batch CreateTime (clears attribute bit 3), sets
// MaxTimestamp to ts and recomputes the CRC; it does nothing when both
// already hold. Kafka does this on append for CreateTime topics so that
// MaxTimestamp is the true maximum of the record timestamps (use
// BatchInfo.MaxRecordTimestamp).
func SetMaxTimestamp(b []byte, ts int64) {
	if len(b) < BatchHeaderSize {
		return
	}
	attrs := binary.BigEndian.Uint16(b[21:])
	if attrs&attrLogAppendTime == 0 && int64(binary.BigEndian.Uint64(b[35:])) == ts {
		return
	}
	binary.BigEndian.PutUint16(b[21:], attrs&^attrLogAppendTime)
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	putCRC(b)
}
