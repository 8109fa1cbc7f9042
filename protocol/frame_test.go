package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// countingReader counts how many bytes were asked of it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func frameOf(b []byte) []byte {
	return append(AppendSize(nil, len(b)), b...)
}

func TestReadFrame(t *testing.T) {
	big := bytes.Repeat([]byte{7}, 3<<20+5)
	tests := []struct {
		name    string
		in      []byte
		max     int32
		want    []byte
		wantErr error
	}{
		{"empty frame", frameOf(nil), 100, []byte{}, nil},
		{"small", frameOf([]byte("hello")), 100, []byte("hello"), nil},
		{"at max", frameOf([]byte("12345")), 5, []byte("12345"), nil},
		{"over max", frameOf([]byte("123456")), 5, nil, ErrFrameTooLarge},
		{"negative", []byte{0xff, 0xff, 0xff, 0xfe, 1, 2}, 100, nil, ErrFrameTooLarge},
		{"short size", []byte{0, 0}, 100, nil, io.ErrUnexpectedEOF},
		{"no size", nil, 100, nil, io.EOF},
		{"half body", append(AppendSize(nil, 10), 1, 2, 3), 100, nil, io.ErrUnexpectedEOF},
		{"large, read in chunks", frameOf(big), 4 << 20, big, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFrame(bytes.NewReader(tt.in), nil, tt.max)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("got %d bytes, err %v; want %d bytes", len(got), err, len(tt.want))
			}
		})
	}
}

// A huge size field with few bytes behind it must not make ReadFrame
// allocate the announced size.
func TestReadFrameDoesNotAllocateFromSize(t *testing.T) {
	in := append(AppendSize(nil, 90<<20), 1, 2, 3)
	var before, after uint64
	before = heapAlloc()
	_, err := ReadFrame(bytes.NewReader(in), nil, 100<<20)
	after = heapAlloc()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
	if grew := after - min(after, before); grew > 8<<20 {
		t.Fatalf("allocated %d bytes for a 3-byte body", grew)
	}
}

// A frame over the limit is refused after reading only the size.
func TestReadFrameRefusesBeforeReading(t *testing.T) {
	cr := &countingReader{r: bytes.NewReader(frameOf(make([]byte, 1000)))}
	if _, err := ReadFrame(cr, nil, 999); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if cr.n > 4+512 { // bytes.Reader may hand over more than asked only if asked
		t.Fatalf("read %d bytes", cr.n)
	}
}

func TestParseHeader(t *testing.T) {
	// A flexible request (Metadata v12) with a client id and tags.
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("cli"))
	frame := f.AppendRequest(nil, req, 42)[4:]
	h, body, err := ParseHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	if h.Key != 3 || h.Version != 12 || h.CorrelationID != 42 || h.ClientID == nil || *h.ClientID != "cli" || !h.Flexible {
		t.Fatalf("header = %+v", h)
	}
	got, err := DecodeBody(h, body)
	if err != nil {
		t.Fatal(err)
	}
	if got.(*kmsg.MetadataRequest).Version != 12 {
		t.Fatal("version lost")
	}

	// Non-flexible with a null client id.
	req.Version = 1
	frame = (&kmsg.RequestFormatter{}).AppendRequest(nil, req, 7)[4:]
	h, _, err = ParseHeader(frame)
	if err != nil || h.Flexible || h.ClientID != nil || h.CorrelationID != 7 {
		t.Fatalf("header = %+v, err %v", h, err)
	}

	// Unknown key and truncation.
	bad := binary.BigEndian.AppendUint16(nil, 9999)
	bad = append(bad, 0, 0, 0, 0, 0, 1, 0xff, 0xff)
	if _, _, err := ParseHeader(bad); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("unknown key: err = %v", err)
	}
	if _, _, err := ParseHeader(frame[:5]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated: err = %v", err)
	}
	if _, _, err := ParseHeader(append(frame[:8:8], 0, 50, 'x')); !errors.Is(err, ErrMalformed) {
		t.Fatalf("client id past the end: err = %v", err)
	}
}

func TestAppendResponseApiVersionsHeaderV0(t *testing.T) {
	resp := kmsg.NewPtrApiVersionsResponse()
	h := Header{Key: 18, Version: 3, CorrelationID: 5, Flexible: true}
	out := AppendResponse(nil, h, resp)
	if n := binary.BigEndian.Uint32(out); int(n) != len(out)-4 {
		t.Fatalf("size %d, frame %d", n, len(out)-4)
	}
	// correlation id, then the body directly: no tag byte in the header.
	body := out[8:]
	want := resp.AppendTo(nil)
	if !bytes.Equal(body, want) {
		t.Fatalf("ApiVersions response header is not v0")
	}
	// A flexible Metadata response has the tag byte.
	mh := Header{Key: 3, Version: 12, CorrelationID: 5, Flexible: true}
	mresp := kmsg.NewPtrMetadataResponse()
	out = AppendResponse(nil, mh, mresp)
	mresp.Version = 12
	if !bytes.Equal(out[8:], append([]byte{0}, mresp.AppendTo(nil)...)) {
		t.Fatalf("Metadata v12 response header lacks its tag section")
	}
}

func TestValidClientSoftware(t *testing.T) {
	for s, want := range map[string]bool{
		"librdkafka": true, "2.3.0": true, "franz-go": true, "a": true,
		"": false, "-x": false, "x-": false, "bad name": false, "ünï": false,
	} {
		if got := ValidClientSoftware(s); got != want {
			t.Errorf("ValidClientSoftware(%q) = %v", s, got)
		}
	}
}

// FuzzReadRequest feeds arbitrary bytes through framing, header parsing and
// body decoding: nothing may panic.
func FuzzReadRequest(f *testing.F) {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for _, r := range []kmsg.Request{
		kmsg.NewPtrMetadataRequest(), kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrProduceRequest(),
		kmsg.NewPtrFetchRequest(), kmsg.NewPtrCreateTopicsRequest(),
	} {
		for v := int16(0); v <= r.MaxVersion(); v += 3 {
			r.SetVersion(v)
			f.Add(fm.AppendRequest(nil, r, 1))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		frame, err := ReadFrame(bytes.NewReader(b), nil, 1<<20)
		if err != nil {
			return
		}
		h, body, err := ParseHeader(frame)
		if err != nil {
			return
		}
		_, _ = DecodeBody(h, body)
	})
}

// A buffer large enough is filled in place: pooled buffers are reused.
func TestReadFrameBodyReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 2<<20)
	body := bytes.Repeat([]byte{9}, 1<<20+3)
	got, err := ReadFrameBody(bytes.NewReader(body), buf, int32(len(body)))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("got %d bytes, err %v", len(got), err)
	}
	if &got[0] != &buf[:1][0] {
		t.Fatal("ReadFrameBody allocated although the buffer was large enough")
	}
}
