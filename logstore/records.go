package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Record v2 (inside a batch, after decompression), varints zigzag encoded:
//
//	length         varint  bytes that follow
//	attributes     int8    unused
//	timestampDelta varlong from the batch's baseTimestamp
//	offsetDelta    varint  from the batch's baseOffset
//	keyLength      varint  -1 = null
//	key            bytes
//	valueLength    varint  -1 = null
//	value          bytes
//	headerCount    varint
//	headers        keyLength varint (>= 0), key, valueLength varint (-1 = null), value

// Header is a record header.
type Header struct {
	Key   string
	Value []byte // nil when null
}

// Record is one decoded record.
type Record struct {
	Offset    int64 // BaseOffset + offsetDelta
	Timestamp int64 // BaseTimestamp + delta; MaxTimestamp for LogAppendTime batches
	Key       []byte
	Value     []byte // Key and Value are nil when null
	Headers   []Header
}

var (
	errVarint    = errors.New("malformed varint")
	errTruncated = errors.New("truncated record")
)

// uvarint32 reads a base-128 varint of at most 5 bytes, as Kafka's
// ByteUtils.readVarint (bits past 32 are dropped as Java's int arithmetic
// drops them).
func uvarint32(b []byte) (uint32, int, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, errTruncated
		}
		c := b[i]
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, errVarint
}

// varint32 reads a zigzag varint.
func varint32(b []byte) (int32, int, error) {
	u, n, err := uvarint32(b)
	return int32(u>>1) ^ -int32(u&1), n, err
}

// varint64 reads a zigzag varlong of at most 10 bytes.
func varint64(b []byte) (int64, int, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		if i >= len(b) {
			return 0, 0, errTruncated
		}
		c := b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(v>>1) ^ -int64(v&1), i + 1, nil
		}
	}
	return 0, 0, errVarint
}

// rawRecord is a record parsed in place: its slices alias the input.
type rawRecord struct {
	timestampDelta int64
	offsetDelta    int32
	key, value     []byte // nil when null
	headerCount    int32
	headers        []byte // the encoded headers, already checked
}

// nextRecord parses the record at the start of b without allocating and
// returns it with the bytes after it. Every length is checked against the
// bytes actually present; errors wrap ErrInvalidRecord.
func nextRecord(b []byte) (rawRecord, []byte, error) {
	var r rawRecord
	size, n, err := varint32(b)
	if err != nil {
		return r, nil, invalidf("record length: %v", err)
	}
	b = b[n:]
	if size < 0 || int64(size) > int64(len(b)) {
		return r, nil, invalidf("record length %d with %d bytes left", size, len(b))
	}
	body, rest := b[:size], b[size:]
	if len(body) < 1 {
		return r, nil, invalidf("record length %d too small", size)
	}
	body = body[1:] // attributes
	if r.timestampDelta, n, err = varint64(body); err != nil {
		return r, nil, invalidf("timestamp delta: %v", err)
	}
	body = body[n:]
	if r.offsetDelta, n, err = varint32(body); err != nil {
		return r, nil, invalidf("offset delta: %v", err)
	}
	body = body[n:]
	if r.key, body, err = nullableBytes(body); err != nil {
		return r, nil, invalidf("key: %v", err)
	}
	if r.value, body, err = nullableBytes(body); err != nil {
		return r, nil, invalidf("value: %v", err)
	}
	if r.headerCount, n, err = varint32(body); err != nil {
		return r, nil, invalidf("header count: %v", err)
	}
	body = body[n:]
	if r.headerCount < 0 {
		return r, nil, invalidf("negative header count %d", r.headerCount)
	}
	r.headers = body
	for i := int32(0); i < r.headerCount; i++ {
		klen, n, err := varint32(body)
		if err != nil {
			return r, nil, invalidf("header %d key: %v", i, err)
		}
		body = body[n:]
		if klen < 0 || int64(klen) > int64(len(body)) {
			return r, nil, invalidf("header %d key length %d with %d bytes left", i, klen, len(body))
		}
		body = body[klen:]
		if _, body, err = nullableBytes(body); err != nil {
			return r, nil, invalidf("header %d value: %v", i, err)
		}
	}
	if len(body) != 0 {
		return r, nil, invalidf("record length %d leaves %d unread bytes", size, len(body))
	}
	return r, rest, nil
}

// nullableBytes reads a varint length (-1 = null) and that many bytes.
func nullableBytes(b []byte) ([]byte, []byte, error) {
	l, n, err := varint32(b)
	if err != nil {
		return nil, nil, err
	}
	b = b[n:]
	switch {
	case l == -1:
		return nil, b, nil
	case l < -1:
		return nil, nil, fmt.Errorf("negative length %d", l)
	case int64(l) > int64(len(b)):
		return nil, nil, fmt.Errorf("length %d with %d bytes left", l, len(b))
	}
	return b[:l:l], b[l:], nil
}

// decodeHeaders decodes headers already checked by nextRecord.
func decodeHeaders(b []byte, count int32) []Header {
	if count == 0 {
		return nil
	}
	hs := make([]Header, 0, count)
	for i := int32(0); i < count; i++ {
		klen, n, _ := varint32(b)
		b = b[n:]
		key := string(b[:klen])
		b = b[klen:]
		var val []byte
		val, b, _ = nullableBytes(b)
		hs = append(hs, Header{Key: key, Value: val})
	}
	return hs
}

// ForEachRecord decodes the records of one whole batch b in order,
// decompressing them when needed (bounded by DefaultMaxUncompressed), and
// calls fn for each; fn returns false to stop. The Key, Value and header
// Value slices alias b or an internal buffer and are valid only until fn
// returns: copy them to keep them (or use DecodeRecords). The CRC is not
// checked (see CheckBatchCRC); every length is, and a malformed batch is
// ErrInvalidRecord / ErrCorruptBatch, never a panic.
func ForEachRecord(b []byte, fn func(Record) bool) error {
	return forEachRecord(b, DefaultMaxUncompressed, fn)
}

// ForEachRecordLimit is ForEachRecord with an explicit decompression bound.
func ForEachRecordLimit(b []byte, maxUncompressed int, fn func(Record) bool) error {
	if maxUncompressed <= 0 {
		maxUncompressed = DefaultMaxUncompressed
	}
	return forEachRecord(b, maxUncompressed, fn)
}

func forEachRecord(b []byte, limit int, fn func(Record) bool) error {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return err
	}
	if h.Magic != 2 {
		return errMagic(h.Magic)
	}
	if h.Length < batchLengthMin || h.Size() > int64(len(b)) {
		return fmt.Errorf("%w: batch length %d with %d bytes", ErrCorruptBatch, h.Length, len(b))
	}
	if h.NumRecords < 0 {
		return invalidf("negative record count %d", h.NumRecords)
	}
	c := h.Codec()
	if !c.Known() {
		return fmt.Errorf("%w: codec id %d", ErrUnsupportedCompression, int8(c))
	}
	data := b[BatchHeaderSize:h.Size()]
	if c != CodecNone {
		buf, err := decompress(c, data, limit)
		if err != nil {
			return err
		}
		defer putBuf(buf)
		data = *buf
	}
	logAppend := h.LogAppendTime()
	for i := int32(0); i < h.NumRecords; i++ {
		r, rest, err := nextRecord(data)
		if err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		data = rest
		rec := Record{
			Offset:    h.BaseOffset + int64(r.offsetDelta),
			Timestamp: h.BaseTimestamp + r.timestampDelta,
			Key:       r.key,
			Value:     r.value,
			Headers:   decodeHeaders(r.headers, r.headerCount),
		}
		if logAppend {
			rec.Timestamp = h.MaxTimestamp
		}
		if !fn(rec) {
			return nil
		}
	}
	if len(data) != 0 {
		return invalidf("%d bytes left after the last of %d records", len(data), h.NumRecords)
	}
	return nil
}

// DecodeRecords returns copies of all records of the batch b.
func DecodeRecords(b []byte) ([]Record, error) {
	var out []Record
	err := ForEachRecord(b, func(r Record) bool {
		out = append(out, cloneRecord(r))
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// cloneRecord copies what r's slices alias (ForEachRecord's buffers).
func cloneRecord(r Record) Record {
	r.Key = cloneNullable(r.Key)
	r.Value = cloneNullable(r.Value)
	for i := range r.Headers {
		r.Headers[i].Value = cloneNullable(r.Headers[i].Value)
	}
	return r
}

func cloneNullable(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// BatchSpec describes a batch for EncodeBatch.
type BatchSpec struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32 // -1 from clients
	Codec                Codec
	ProducerID           int64 // -1: none
	ProducerEpoch        int16 // -1: none
	BaseSequence         int32 // -1: none
	Transactional        bool
	Control              bool
	// LogAppendTime sets the timestamp type; MaxTimestamp is then
	// AppendTime and records keep their own timestamps as deltas.
	LogAppendTime bool
	AppendTime    int64
	// KeepOffsets takes each record's offset delta from Record.Offset -
	// BaseOffset (offsets must increase; compaction leaves gaps) instead of
	// the record's index.
	KeepOffsets bool
}

// BuildBatch encodes recs as one v2 batch at base offset base (offset
// deltas 0..n-1; Record.Offset is ignored), compressed with codec, with the
// given producer fields (-1, -1, -1 for a non-idempotent batch) and a
// partition leader epoch of -1, CreateTime, and a valid CRC. Base timestamp
// is the first record's, MaxTimestamp the largest.
func BuildBatch(base int64, codec Codec, recs []Record, producerID int64, producerEpoch int16, baseSeq int32) ([]byte, error) {
	return EncodeBatch(BatchSpec{
		BaseOffset:           base,
		PartitionLeaderEpoch: -1,
		Codec:                codec,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		BaseSequence:         baseSeq,
	}, recs)
}

// EncodeBatch encodes recs as one v2 batch described by spec.
func EncodeBatch(spec BatchSpec, recs []Record) ([]byte, error) {
	if len(recs) == 0 {
		return nil, invalidf("a batch needs at least one record")
	}
	if !spec.Codec.Known() {
		return nil, fmt.Errorf("%w: codec id %d", ErrUnsupportedCompression, int8(spec.Codec))
	}
	baseTs := recs[0].Timestamp
	maxTs := baseTs
	for _, r := range recs {
		maxTs = max(maxTs, r.Timestamp)
	}
	raw := getBuf()
	defer putBuf(raw)
	body := *raw
	lastDelta := int64(-1)
	for i, r := range recs {
		delta := int64(i)
		if spec.KeepOffsets {
			delta = r.Offset - spec.BaseOffset
			if delta <= lastDelta || delta > maxInt32 {
				return nil, invalidf("record %d offset %d out of order for base %d", i, r.Offset, spec.BaseOffset)
			}
		}
		lastDelta = delta
		body = appendRecord(body, r.Timestamp-baseTs, int32(delta), r)
	}
	*raw = body

	out := make([]byte, BatchHeaderSize, BatchHeaderSize+len(body)/2+64)
	out, err := compress(out, spec.Codec, body)
	if err != nil {
		return nil, err
	}
	if int64(len(out))-12 > maxInt32 {
		return nil, invalidf("batch of %d bytes is too large", len(out))
	}
	attrs := uint16(spec.Codec)
	if spec.LogAppendTime {
		attrs |= attrLogAppendTime
		maxTs = spec.AppendTime
	}
	if spec.Transactional {
		attrs |= attrTransactional
	}
	if spec.Control {
		attrs |= attrControl
	}
	be := binary.BigEndian
	be.PutUint64(out[0:], uint64(spec.BaseOffset))
	be.PutUint32(out[8:], uint32(len(out)-12))
	be.PutUint32(out[12:], uint32(spec.PartitionLeaderEpoch))
	out[16] = 2
	be.PutUint16(out[21:], attrs)
	be.PutUint32(out[23:], uint32(lastDelta))
	be.PutUint64(out[27:], uint64(baseTs))
	be.PutUint64(out[35:], uint64(maxTs))
	be.PutUint64(out[43:], uint64(spec.ProducerID))
	be.PutUint16(out[51:], uint16(spec.ProducerEpoch))
	be.PutUint32(out[53:], uint32(spec.BaseSequence))
	be.PutUint32(out[57:], uint32(len(recs)))
	putCRC(out)
	return out, nil
}

func appendRecord(dst []byte, tsDelta int64, offDelta int32, r Record) []byte {
	size := 1 + varlongLen(tsDelta) + varintLen(offDelta) +
		nullableLen(r.Key) + nullableLen(r.Value) + varintLen(int32(len(r.Headers)))
	for _, h := range r.Headers {
		size += varintLen(int32(len(h.Key))) + len(h.Key) + nullableLen(h.Value)
	}
	dst = appendVarint(dst, int64(size))
	dst = append(dst, 0) // attributes
	dst = appendVarint(dst, tsDelta)
	dst = appendVarint(dst, int64(offDelta))
	dst = appendNullable(dst, r.Key)
	dst = appendNullable(dst, r.Value)
	dst = appendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = appendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendNullable(dst, h.Value)
	}
	return dst
}

func appendVarint(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return appendVarint(dst, -1)
	}
	return append(appendVarint(dst, int64(len(b))), b...)
}

func varlongLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func varintLen(v int32) int { return varlongLen(int64(v)) }

func nullableLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int32(len(b))) + len(b)
}
