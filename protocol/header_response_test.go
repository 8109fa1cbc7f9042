package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A response header parses back as AppendResponseHeader wrote it, with
// the tag section only for flexible requests other than ApiVersions.
func TestParseResponseHeader(t *testing.T) {
	for _, tt := range []struct {
		key, version int16
	}{{int16(kmsg.Fetch), 11}, {int16(kmsg.Fetch), 12}, {int16(kmsg.OffsetForLeaderEpoch), 4}, {int16(kmsg.ApiVersions), 3}} {
		req := kmsg.RequestForKey(tt.key)
		req.SetVersion(tt.version)
		h := Header{Key: tt.key, Version: tt.version, CorrelationID: 77, Flexible: req.IsFlexible()}
		frame := append(AppendResponseHeader(nil, h), "body"...)
		corr, body, err := ParseResponseHeader(frame, tt.key, tt.version)
		if err != nil || corr != 77 || !bytes.Equal(body, []byte("body")) {
			t.Errorf("%s v%d: %d %q %v", kmsg.NameForKey(tt.key), tt.version, corr, body, err)
		}
	}
	if _, _, err := ParseResponseHeader([]byte{0, 0, 0, 1, 0x80}, int16(kmsg.Fetch), 12); err == nil {
		t.Error("truncated tags parsed")
	}
	if _, _, err := ParseResponseHeader([]byte{0, 0}, int16(kmsg.Fetch), 12); err == nil {
		t.Error("a 2-byte header parsed")
	}
}

// A framed Fetch response is the size, the header and kmsg's encoding of
// the body, and releases its regions once written.
func TestNewFetchResponse(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = []byte{}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	h := Header{Key: int16(kmsg.Fetch), Version: 12, CorrelationID: 5, Flexible: true}
	released := 0
	fr, err := NewFetchResponse[Region](h, resp, nil, func() { released++ })
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := fr.WriteTo(&out, false, nil); err != nil {
		t.Fatal(err)
	}
	resp.SetVersion(12)
	if want := AppendResponse(nil, h, resp); !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("frame %x, want %x", out.Bytes(), want)
	}
	fr.Release()
	if released != 1 {
		t.Fatalf("released %d times, want once", released)
	}
}

// DecodeResponse decodes the answer to its request and refuses an answer
// with another correlation id.
func TestDecodeResponse(t *testing.T) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12 // flexible: response header v1
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 12
	resp.ClusterID = kmsg.StringPtr("c")
	frame := binary.BigEndian.AppendUint32(nil, 7)
	frame = append(frame, 0) // no tags
	frame = resp.AppendTo(frame)
	got := kmsg.NewPtrMetadataResponse()
	if err := DecodeResponse(frame, req, 7, got); err != nil || got.ClusterID == nil || *got.ClusterID != "c" {
		t.Fatalf("DecodeResponse: %v, cluster id %v", err, got.ClusterID)
	}
	if err := DecodeResponse(frame, req, 8, kmsg.NewPtrMetadataResponse()); err == nil {
		t.Fatal("an answer with correlation id 7 was taken for 8")
	}
}
