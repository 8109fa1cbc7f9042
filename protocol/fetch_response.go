package protocol

import (
	"fmt"
	"io"
	"os"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendFetchResponse appends to c the BODY of a Fetch response at version
// (no size prefix, no response header), encoded exactly as kmsg's
// FetchResponse.AppendTo encodes it, except that a partition's records may
// come from regions (file ranges, sent with sendfile, or bytes; see
// Region):
//
//   - for partition resp.Topics[ti].Partitions[pi], when regions != nil and
//     regions[ti][pi] != nil (ti, pi in range), the records are the
//     concatenation of those regions (an empty non-nil slice is empty, not
//     null, records) and the partition's RecordBatches is ignored;
//   - otherwise the records are RecordBatches (nil encodes null). Slices of
//     512 bytes or more are referenced, not copied: keep them unchanged
//     until c is written.
//
// Every other field comes from resp; resp.Version is ignored. Layout by
// version (Kafka's FetchResponse.json): ThrottleMillis v1+; ErrorCode and
// SessionID v7+; per topic the name up to v12 and the topic ID from v13; per
// partition LastStableOffset and AbortedTransactions (nullable) v4+,
// LogStartOffset v5+, PreferredReadReplica v11+. From v12 the message is
// flexible: compact lengths, tagged-field sections everywhere, and the
// partition tags DivergingEpoch (0), CurrentLeader (1) and SnapshotID (2),
// each written when it differs from its default (-1s) or carries unknown
// tags, as kmsg does. The response tag NodeEndpoints (0, resp.Brokers) is
// written from v16 only when non-empty; unlike kmsg, which would also write
// it at v12-15 (Kafka rejects that as a non-default field at an unsupported
// version). Unknown tags (UnknownTags) follow the known ones, by key.
//
// Errors (a region with negative bounds or a bytes range outside its Bytes,
// records longer than 2^31-1 bytes) are recorded in c and returned by
// c.Err and c.WriteTo.
//
// Regions are of any type whose underlying type is Region's (RegionType):
// a log's own region type is encoded as it is, never copied into Regions
// first.
func AppendFetchResponse[R RegionType](c *Chunks, version int16, resp *kmsg.FetchResponse, regions [][][]R) {
	flexible := version >= 12
	if version >= 1 {
		c.buf = kbin.AppendInt32(c.buf, resp.ThrottleMillis)
	}
	if version >= 7 {
		c.buf = kbin.AppendInt16(c.buf, resp.ErrorCode)
		c.buf = kbin.AppendInt32(c.buf, resp.SessionID)
	}
	c.appendArrayLen(len(resp.Topics), flexible)
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		if version <= 12 {
			c.appendString(t.Topic, flexible)
		} else {
			c.buf = kbin.AppendUuid(c.buf, t.TopicID)
		}
		var topicRegions [][]R
		if ti < len(regions) {
			topicRegions = regions[ti]
		}
		c.appendArrayLen(len(t.Partitions), flexible)
		for pi := range t.Partitions {
			var rs []R
			if pi < len(topicRegions) {
				rs = topicRegions[pi]
			}
			appendFetchPartition(c, version, &t.Partitions[pi], rs)
		}
		if flexible {
			c.appendTagsWithCount(&t.UnknownTags)
		}
	}
	if flexible {
		writeBrokers := version >= 16 && len(resp.Brokers) > 0
		n := resp.UnknownTags.Len()
		if writeBrokers {
			n++
		}
		c.buf = kbin.AppendUvarint(c.buf, uint32(n))
		if writeBrokers {
			s := c.scratch[:0]
			s = kbin.AppendCompactArrayLen(s, len(resp.Brokers))
			for i := range resp.Brokers {
				b := &resp.Brokers[i]
				s = kbin.AppendInt32(s, b.NodeID)
				s = kbin.AppendCompactString(s, b.Host)
				s = kbin.AppendInt32(s, b.Port)
				s = kbin.AppendCompactNullableString(s, b.Rack)
				s = fetchAppendTags(s, &b.UnknownTags)
			}
			c.appendTag(0, s)
		}
		c.buf = resp.UnknownTags.AppendEach(c.buf)
	}
}

// RegionType is any type with Region's fields (the logstore's Region is
// one).
type RegionType interface {
	~struct {
		File   *os.File
		Offset int64
		Length int64
		Bytes  []byte
	}
}

// appendFetchPartition appends one partition; rs != nil means the records
// are those regions.
func appendFetchPartition[R RegionType](c *Chunks, version int16, p *kmsg.FetchResponseTopicPartition, rs []R) {
	flexible := version >= 12
	c.buf = kbin.AppendInt32(c.buf, p.Partition)
	c.buf = kbin.AppendInt16(c.buf, p.ErrorCode)
	c.buf = kbin.AppendInt64(c.buf, p.HighWatermark)
	if version >= 4 {
		c.buf = kbin.AppendInt64(c.buf, p.LastStableOffset)
	}
	if version >= 5 {
		c.buf = kbin.AppendInt64(c.buf, p.LogStartOffset)
	}
	if version >= 4 {
		at := p.AbortedTransactions
		if flexible {
			c.buf = kbin.AppendCompactNullableArrayLen(c.buf, len(at), at == nil)
		} else {
			c.buf = kbin.AppendNullableArrayLen(c.buf, len(at), at == nil)
		}
		for i := range at {
			c.buf = kbin.AppendInt64(c.buf, at[i].ProducerID)
			c.buf = kbin.AppendInt64(c.buf, at[i].FirstOffset)
			if flexible {
				c.appendTagsWithCount(&at[i].UnknownTags)
			}
		}
	}
	if version >= 11 {
		c.buf = kbin.AppendInt32(c.buf, p.PreferredReadReplica)
	}
	switch {
	case rs != nil:
		var total int64
		for _, r := range rs {
			total += max(Region(r).Length, 0)
		}
		c.appendRecordsLen(total, flexible)
		for _, r := range rs {
			c.Region(Region(r))
		}
	case p.RecordBatches == nil:
		if flexible {
			c.buf = append(c.buf, 0)
		} else {
			c.buf = kbin.AppendInt32(c.buf, -1)
		}
	default:
		c.appendRecordsLen(int64(len(p.RecordBatches)), flexible)
		c.Bytes(p.RecordBatches)
	}
	if !flexible {
		return
	}
	de, cl, sn := &p.DivergingEpoch, &p.CurrentLeader, &p.SnapshotID
	writeDE := de.Epoch != -1 || de.EndOffset != -1 || de.UnknownTags.Len() > 0
	writeCL := cl.LeaderID != -1 || cl.LeaderEpoch != -1 || cl.UnknownTags.Len() > 0
	writeSn := sn.EndOffset != -1 || sn.Epoch != -1 || sn.UnknownTags.Len() > 0
	n := p.UnknownTags.Len()
	for _, w := range [...]bool{writeDE, writeCL, writeSn} {
		if w {
			n++
		}
	}
	c.buf = kbin.AppendUvarint(c.buf, uint32(n))
	if writeDE {
		s := kbin.AppendInt32(c.scratch[:0], de.Epoch)
		s = kbin.AppendInt64(s, de.EndOffset)
		c.appendTag(0, fetchAppendTags(s, &de.UnknownTags))
	}
	if writeCL {
		s := kbin.AppendInt32(c.scratch[:0], cl.LeaderID)
		s = kbin.AppendInt32(s, cl.LeaderEpoch)
		c.appendTag(1, fetchAppendTags(s, &cl.UnknownTags))
	}
	if writeSn {
		s := kbin.AppendInt64(c.scratch[:0], sn.EndOffset)
		s = kbin.AppendInt32(s, sn.Epoch)
		c.appendTag(2, fetchAppendTags(s, &sn.UnknownTags))
	}
	c.buf = p.UnknownTags.AppendEach(c.buf)
}

// appendTag appends a tagged field: key, size, body. body is usually
// c.scratch, which it keeps for reuse.
func (c *Chunks) appendTag(key uint32, body []byte) {
	c.buf = kbin.AppendUvarint(c.buf, key)
	c.buf = kbin.AppendUvarint(c.buf, uint32(len(body)))
	c.buf = append(c.buf, body...)
	c.scratch = body[:0]
}

func (c *Chunks) appendArrayLen(n int, flexible bool) {
	if flexible {
		c.buf = kbin.AppendCompactArrayLen(c.buf, n)
	} else {
		c.buf = kbin.AppendArrayLen(c.buf, n)
	}
}

func (c *Chunks) appendString(s string, flexible bool) {
	if flexible {
		c.buf = kbin.AppendCompactString(c.buf, s)
	} else {
		c.buf = kbin.AppendString(c.buf, s)
	}
}

func (c *Chunks) appendTagsWithCount(t *kmsg.Tags) {
	c.buf = fetchAppendTags(c.buf, t)
}

// fetchAppendTags appends a tagged-field section holding only unknown
// tags: their count, then each one.
func fetchAppendTags(dst []byte, t *kmsg.Tags) []byte {
	dst = kbin.AppendUvarint(dst, uint32(t.Len()))
	return t.AppendEach(dst)
}

// FramedResponse is a whole response frame (size, response header, body)
// of bytes and regions, as NewFetchResponse builds it for Fetch: a
// handler returns it where others return a kmsg response, and the
// connection writes it with WriteTo (sendfile for the regions). The
// embedded response is what was encoded.
type FramedResponse struct {
	kmsg.Response
	frame   Chunks
	release func()
}

// NewFetchResponse frames resp for the request of header h: its header
// and the body AppendFetchResponse encodes around regions. release (may
// be nil) is called once by Release, after the frame is written or
// dropped; it lets the regions' files go.
func NewFetchResponse[R RegionType](h Header, resp *kmsg.FetchResponse, regions [][][]R, release func()) (*FramedResponse, error) {
	f := &FramedResponse{Response: resp, release: release}
	f.frame.Bytes(AppendResponseHeader([]byte{0, 0, 0, 0}, h))
	AppendFetchResponse(&f.frame, h.Version, resp, regions)
	err := f.frame.Err()
	if err == nil && f.frame.Len()-4 > 1<<31-1 {
		err = fmt.Errorf("protocol: fetch response of %d bytes", f.frame.Len())
	}
	if err == nil {
		err = f.frame.PutInt32At(0, int32(f.frame.Len()-4))
	}
	if err != nil {
		f.Release()
		return nil, err
	}
	return f, nil
}

// WriteTo writes the frame to w (sendfile for the file ranges when sendfile
// and w is a TCP connection) and releases it.
func (f *FramedResponse) WriteTo(w io.Writer, sendfile bool, st *Stats) (int64, error) {
	defer f.Release()
	return f.frame.WriteTo(w, sendfile, st)
}

// Release lets the frame's regions go; later calls do nothing.
func (f *FramedResponse) Release() {
	if r := f.release; r != nil {
		f.release = nil
		r()
	}
}
