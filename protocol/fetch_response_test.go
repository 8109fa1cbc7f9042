package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// frRecordSizes crosses every varint boundary of a compact length (len+1 of
// 127/128, 16383/16384, 2097151/2097152) and the 512-byte copy threshold of
// Chunks.Bytes.
var frRecordSizes = []int{0, 1, 126, 127, 128, 511, 512, 16382, 16383, 16384, 70000}

// segmentFiles writes records into two temp files, each record as one to
// three regions (spread over both files when split), with junk around them
// so that offsets are never zero by accident. About one region in three is
// a bytes region instead (junk around it in its Bytes too), so that file
// ranges and bytes mix within a partition and a response. It returns the
// regions per record.
func frSegmentFiles(t *testing.T, rng *rand.Rand, records [][]byte) [][]Region {
	t.Helper()
	dir := t.TempDir()
	var files [2]*os.File
	var sizes [2]int64
	for i := range files {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%020d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		files[i] = f
	}
	write := func(fi int, b []byte) Region {
		junk := make([]byte, rng.IntN(50))
		for i := range junk {
			junk[i] = 0xEE
		}
		if rng.IntN(3) == 0 {
			mem := append(append(bytes.Clone(junk), b...), junk...)
			return Region{Bytes: mem, Offset: int64(len(junk)), Length: int64(len(b))}
		}
		if _, err := files[fi].Write(junk); err != nil {
			t.Fatal(err)
		}
		sizes[fi] += int64(len(junk))
		if _, err := files[fi].Write(b); err != nil {
			t.Fatal(err)
		}
		r := Region{File: files[fi], Offset: sizes[fi], Length: int64(len(b))}
		sizes[fi] += int64(len(b))
		return r
	}
	out := make([][]Region, len(records))
	for i, rec := range records {
		if rec == nil {
			continue
		}
		rs := []Region{} // empty, not nil, for empty records
		rest := rec
		for parts := 1 + rng.IntN(3); len(rest) > 0; parts-- {
			n := len(rest)
			if parts > 1 {
				n = rng.IntN(len(rest) + 1)
			}
			if n > 0 {
				rs = append(rs, write(rng.IntN(2), rest[:n]))
			}
			rest = rest[n:]
		}
		out[i] = rs
	}
	return out
}

func frRandBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(rng.Uint32())
	}
	_, _ = rand.NewChaCha8(seed).Read(b)
	return b
}

func frSomeTags(rng *rand.Rand, first uint32) kmsg.Tags {
	var t kmsg.Tags
	for i := rng.IntN(3); i > 0; i-- {
		t.Set(first+uint32(rng.IntN(20)), frRandBytes(rng, rng.IntN(200)))
	}
	return t
}

// randomFetchResponse builds a response exercising every field; fields a
// version lacks are set anyway (the encoders must ignore them). Records use
// the given sizes in turn (-1: null).
func frRandomResponse(rng *rand.Rand, sizes []int) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.ThrottleMillis = rng.Int32()
	resp.ErrorCode = int16(rng.IntN(100))
	resp.SessionID = rng.Int32()
	if rng.IntN(2) == 0 {
		resp.UnknownTags = frSomeTags(rng, 5)
	}
	if rng.IntN(2) == 0 {
		for i := rng.IntN(4); i >= 0; i-- {
			b := kmsg.NewFetchResponseBroker()
			b.NodeID = rng.Int32()
			b.Host = fmt.Sprintf("broker-%d.example", rng.IntN(1000))
			b.Port = rng.Int32N(65536)
			if rng.IntN(2) == 0 {
				rack := fmt.Sprintf("rack-%d", rng.IntN(9))
				b.Rack = &rack
			}
			b.UnknownTags = frSomeTags(rng, 3)
			resp.Brokers = append(resp.Brokers, b)
		}
	}
	next := 0
	topics := rng.IntN(4)
	if len(sizes) > 0 && topics == 0 {
		topics = 1
	}
	for ti := 0; ti < topics || next < len(sizes); ti++ {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = fmt.Sprintf("topic-%d-%s", ti, bytes.Repeat([]byte{'x'}, rng.IntN(200)))
		for i := range t.TopicID {
			t.TopicID[i] = byte(rng.Uint32())
		}
		t.UnknownTags = frSomeTags(rng, 1)
		for pi := rng.IntN(4); pi >= 0; pi-- {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rng.Int32N(1000)
			p.ErrorCode = int16(rng.IntN(3) * 3)
			p.HighWatermark = rng.Int64()
			p.LastStableOffset = rng.Int64()
			p.LogStartOffset = rng.Int64()
			switch rng.IntN(3) {
			case 0: // nil
			case 1:
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case 2:
				for i := rng.IntN(5); i >= 0; i-- {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID = rng.Int64()
					a.FirstOffset = rng.Int64()
					a.UnknownTags = frSomeTags(rng, 0)
					p.AbortedTransactions = append(p.AbortedTransactions, a)
				}
			}
			if rng.IntN(2) == 0 {
				p.PreferredReadReplica = rng.Int32N(10)
			}
			// Tagged structs: unset, partly set, set, or only unknown tags.
			switch rng.IntN(4) {
			case 1:
				p.DivergingEpoch.Epoch = rng.Int32N(100)
			case 2:
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = rng.Int32(), rng.Int64()
			case 3:
				p.DivergingEpoch.UnknownTags = frSomeTags(rng, 0)
				p.DivergingEpoch.UnknownTags.Set(7, []byte{1, 2, 3})
			}
			switch rng.IntN(4) {
			case 1:
				p.CurrentLeader.LeaderEpoch = rng.Int32N(100)
			case 2:
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = rng.Int32(), rng.Int32()
			case 3:
				p.CurrentLeader.UnknownTags.Set(9, nil)
			}
			switch rng.IntN(4) {
			case 1:
				p.SnapshotID.EndOffset = rng.Int64N(100)
			case 2:
				p.SnapshotID.EndOffset, p.SnapshotID.Epoch = rng.Int64(), rng.Int32()
			case 3:
				p.SnapshotID.UnknownTags.Set(1, frRandBytes(rng, 130))
			}
			if rng.IntN(3) == 0 {
				p.UnknownTags = frSomeTags(rng, 10)
			}
			size := -1
			if next < len(sizes) {
				size = sizes[next]
				next++
			} else if rng.IntN(3) > 0 {
				size = rng.IntN(3000)
			}
			if size >= 0 {
				p.RecordBatches = frRandBytes(rng, size)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// kmsgEncoding is the oracle: kmsg's own encoding of resp at version, with
// the fields our encoder documents as not written at that version cleared.
func frKmsgEncoding(resp *kmsg.FetchResponse, version int16) []byte {
	cp := *resp
	cp.Version = version
	if version < 16 {
		cp.Brokers = nil
	}
	return cp.AppendTo(nil)
}

// flatten writes c through the copy path and checks Len.
func frFlatten(t *testing.T, c *Chunks) []byte {
	t.Helper()
	var buf bytes.Buffer
	var st Stats
	n, err := c.WriteTo(&buf, true, &st) // bytes.Buffer has no fd: copy path
	if err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	if n != int64(buf.Len()) || n != c.Len() {
		t.Fatalf("WriteTo returned %d, wrote %d, Len %d", n, buf.Len(), c.Len())
	}
	if st.SendfileBytes.Load() != 0 {
		t.Fatalf("sendfile used on a bytes.Buffer")
	}
	return buf.Bytes()
}

// checkFetchEncoding encodes resp at version three ways (records in memory,
// from regions where the records are non-null, from regions for a random
// subset) and compares each byte for byte with kmsg, then decodes ours with
// kmsg and re-encodes it.
func frCheck(t *testing.T, rng *rand.Rand, resp *kmsg.FetchResponse, version int16) {
	t.Helper()
	want := frKmsgEncoding(resp, version)

	// 1: no regions at all.
	var c Chunks
	AppendFetchResponse[Region](&c, version, resp, nil)
	if got := frFlatten(t, &c); !bytes.Equal(got, want) {
		t.Fatalf("v%d, memory records: encoding differs from kmsg (got %d bytes, want %d)\n%s", version, len(got), len(want), frFirstDiff(got, want))
	}

	// 2 and 3: records from files. Region lists come per partition; a nil
	// list means "use RecordBatches".
	var records [][]byte
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			records = append(records, p.RecordBatches)
		}
	}
	regs := frSegmentFiles(t, rng, records)
	for _, subset := range []bool{false, true} {
		regions := make([][][]Region, len(resp.Topics))
		mixed := *resp
		mixed.Topics = append([]kmsg.FetchResponseTopic(nil), resp.Topics...)
		i := 0
		for ti := range mixed.Topics {
			tp := &mixed.Topics[ti]
			tp.Partitions = append([]kmsg.FetchResponseTopicPartition(nil), tp.Partitions...)
			regions[ti] = make([][]Region, len(tp.Partitions))
			for pi := range tp.Partitions {
				r := regs[i]
				i++
				if r == nil || (subset && rng.IntN(2) == 0) {
					continue
				}
				regions[ti][pi] = r
				// The encoder must ignore RecordBatches here: poison it.
				tp.Partitions[pi].RecordBatches = []byte("must not be sent")
			}
		}
		if subset && len(regions) > 0 {
			regions = regions[:len(regions)-1] // out of range: memory records
			last := &mixed.Topics[len(mixed.Topics)-1]
			last.Partitions = resp.Topics[len(resp.Topics)-1].Partitions
		}
		c.Reset()
		AppendFetchResponse(&c, version, &mixed, regions)
		got := frFlatten(t, &c)
		if !bytes.Equal(got, want) {
			t.Fatalf("v%d, file records (subset %v): encoding differs from kmsg (got %d bytes, want %d)\n%s", version, subset, len(got), len(want), frFirstDiff(got, want))
		}
	}

	// Decode ours with kmsg and re-encode: catches trailing bytes kmsg's
	// reader would ignore.
	dec := kmsg.NewPtrFetchResponse()
	dec.Version = version
	ours := frFlatten(t, &c)
	if err := dec.ReadFrom(ours); err != nil {
		t.Fatalf("v%d: kmsg cannot decode our encoding: %v", version, err)
	}
	if again := frKmsgEncoding(dec, version); !bytes.Equal(again, ours) {
		t.Fatalf("v%d: decode+re-encode differs\n%s", version, frFirstDiff(again, ours))
	}
	if len(dec.Topics) != len(resp.Topics) {
		t.Fatalf("v%d: decoded %d topics, want %d", version, len(dec.Topics), len(resp.Topics))
	}
	for ti := range resp.Topics {
		for pi, p := range resp.Topics[ti].Partitions {
			d := dec.Topics[ti].Partitions[pi]
			if !bytes.Equal(d.RecordBatches, p.RecordBatches) || (d.RecordBatches == nil) != (p.RecordBatches == nil) {
				t.Fatalf("v%d t%d p%d: decoded records differ (nil %v want nil %v, %d bytes want %d)",
					version, ti, pi, d.RecordBatches == nil, p.RecordBatches == nil, len(d.RecordBatches), len(p.RecordBatches))
			}
		}
	}
}

func frFirstDiff(got, want []byte) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			lo, hi := max(i-8, 0), min(i+8, len(got), len(want))
			return fmt.Sprintf("first difference at byte %d: got % x, want % x", i, got[lo:hi], want[lo:hi])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (got %d, want %d bytes)", len(got), len(want))
}

func TestAppendFetchResponseMatchesKmsg(t *testing.T) {
	empty := kmsg.NewPtrFetchResponse()

	emptyTopic := kmsg.NewPtrFetchResponse()
	emptyTopic.Topics = append(emptyTopic.Topics, kmsg.NewFetchResponseTopic())

	defaults := kmsg.NewPtrFetchResponse()
	{
		tp := kmsg.NewFetchResponseTopic()
		tp.Topic = "t"
		tp.Partitions = append(tp.Partitions, kmsg.NewFetchResponseTopicPartition())
		p := kmsg.NewFetchResponseTopicPartition()
		p.RecordBatches = []byte{}
		tp.Partitions = append(tp.Partitions, p)
		defaults.Topics = append(defaults.Topics, tp)
	}

	for version := int16(0); version <= 18; version++ {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(version), 42))
			for name, resp := range map[string]*kmsg.FetchResponse{
				"empty":       empty,
				"empty-topic": emptyTopic,
				"defaults":    defaults,
				"sizes":       frRandomResponse(rng, frRecordSizes),
			} {
				t.Run(name, func(t *testing.T) { frCheck(t, rng, resp, version) })
			}
			for i := range 25 {
				t.Run(fmt.Sprintf("random%d", i), func(t *testing.T) {
					frCheck(t, rng, frRandomResponse(rng, nil), version)
				})
			}
		})
	}
}

// TestAppendFetchResponseHugeRecords crosses the last compact-length varint
// boundary (a 3-byte and a 4-byte uvarint), at a non-flexible and the
// flexible versions.
func TestAppendFetchResponseHugeRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	resp := frRandomResponse(rng, []int{2097150, 2097151, 2097152})
	for _, version := range []int16{4, 11, 12, 13, 16, 18} {
		frCheck(t, rng, resp, version)
	}
}

// TestAppendFetchResponseNodeEndpointsVersion: the NodeEndpoints tag is
// written from v16 only, and at v16+ it is exactly kmsg's.
func TestAppendFetchResponseNodeEndpointsVersion(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	b := kmsg.NewFetchResponseBroker()
	b.NodeID, b.Host, b.Port = 3, "h", 9092
	resp.Brokers = append(resp.Brokers, b)
	for version := int16(12); version <= 18; version++ {
		var c Chunks
		AppendFetchResponse[Region](&c, version, resp, nil)
		got := frFlatten(t, &c)
		cp := *resp
		cp.Version = version
		full := cp.AppendTo(nil)
		if version >= 16 {
			if !bytes.Equal(got, full) {
				t.Fatalf("v%d: NodeEndpoints differs from kmsg\n%s", version, frFirstDiff(got, full))
			}
			continue
		}
		cp.Brokers = nil
		if bare := cp.AppendTo(nil); !bytes.Equal(got, bare) {
			t.Fatalf("v%d: NodeEndpoints written below v16\n%s", version, frFirstDiff(got, bare))
		}
	}
}

func TestAppendFetchResponseBadRegions(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	resp := kmsg.NewPtrFetchResponse()
	tp := kmsg.NewFetchResponseTopic()
	tp.Partitions = append(tp.Partitions, kmsg.NewFetchResponseTopicPartition())
	resp.Topics = append(resp.Topics, tp)

	for name, tc := range map[string]struct {
		rs   []Region
		want error
	}{
		"nil file, no bytes": {[]Region{{Length: 10}}, ErrBadRegion},
		"negative length":    {[]Region{{File: f, Length: -1}}, ErrBadRegion},
		"negative offset":    {[]Region{{File: f, Offset: -5, Length: 1}}, ErrBadRegion},
		"over 2GiB": {[]Region{
			{File: f, Length: 1 << 30}, {File: f, Length: 1 << 30}, {File: f, Length: 1},
		}, ErrRecordsTooLarge},
	} {
		for _, version := range []int16{4, 12} {
			var c Chunks
			AppendFetchResponse(&c, version, resp, [][][]Region{{tc.rs}})
			if !errors.Is(c.Err(), tc.want) {
				t.Fatalf("%s v%d: Err() = %v, want %v", name, version, c.Err(), tc.want)
			}
			var buf bytes.Buffer
			if n, err := c.WriteTo(&buf, true, nil); !errors.Is(err, tc.want) || n != 0 || buf.Len() != 0 {
				t.Fatalf("%s v%d: WriteTo = %d, %v (wrote %d), want 0, %v", name, version, n, err, buf.Len(), tc.want)
			}
			c.Reset()
			if c.Err() != nil || c.Len() != 0 {
				t.Fatalf("%s: Reset kept err %v / len %d", name, c.Err(), c.Len())
			}
		}
	}
}

// TestAppendFetchResponseFrame shows the intended use with a size prefix
// patched in afterwards.
func TestAppendFetchResponseFrame(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	resp := frRandomResponse(rng, []int{1000, 20})
	var c Chunks
	c.Bytes([]byte{0, 0, 0, 0, 0, 0, 0, 42, 0}) // size, correlation id, header tags
	AppendFetchResponse[Region](&c, 12, resp, nil)
	if err := c.PutInt32At(0, int32(c.Len()-4)); err != nil {
		t.Fatal(err)
	}
	got := frFlatten(t, &c)
	body := frKmsgEncoding(resp, 12)
	want := append([]byte{0, 0, 0, 0, 0, 0, 0, 42, 0}, body...)
	n := len(want) - 4
	want[0], want[1], want[2], want[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	if !bytes.Equal(got, want) {
		t.Fatalf("framed encoding differs\n%s", frFirstDiff(got, want))
	}
}
