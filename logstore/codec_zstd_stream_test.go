package logstore

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Streaming zstd encoders (kafka-go, the Java client) write frames without
// a content size; a payload far larger than the first buffer guess must
// still decode.
func TestUnzstdWithoutFrameContentSize(t *testing.T) {
	payload := bytes.Repeat([]byte("samsa record payload, compressible. "), 12000) // ~430 KiB
	var comp bytes.Buffer
	w, err := zstd.NewWriter(&comp, zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	// Two writes and a flush in between keep the encoder from knowing the size.
	w.Write(payload[:1000])
	w.Flush()
	w.Write(payload[1000:])
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var fh zstd.Header
	if err := fh.Decode(comp.Bytes()); err != nil {
		t.Fatal(err)
	}
	if fh.HasFCS {
		t.Fatalf("test setup: frame has a content size")
	}
	var buf []byte
	if err := unzstd(&buf, comp.Bytes(), 8<<20); err != nil {
		t.Fatalf("unzstd: %v", err)
	}
	if !bytes.Equal(buf, payload) {
		t.Fatalf("decoded %d bytes, want %d", len(buf), len(payload))
	}
	// Over the limit it is refused.
	if err := unzstd(&buf, comp.Bytes(), 100<<10); err == nil {
		t.Fatalf("decoded %d bytes past a 100 KiB limit", len(buf))
	}
}
