package logstore

import (
	"bytes"
	"testing"
)

// BenchmarkAppend appends batches of 16 × 1 KiB records (uncompressed).
func BenchmarkAppend(b *testing.B) {
	cfg := DefaultConfig()
	l := coreOpen(b, b.TempDir(), cfg)
	batch := coreBatch(b, 16, coreT0.UnixMilli(), 1024)
	buf := make([]byte, len(batch))
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, batch)
		if _, err := l.Append(buf, 1, coreT0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead locates 1 MiB of whole batches at a random-ish offset.
func BenchmarkRead(b *testing.B) {
	cfg := DefaultConfig()
	l := coreOpen(b, b.TempDir(), cfg)
	batch := coreBatch(b, 16, coreT0.UnixMilli(), 1024)
	for i := 0; i < 2000; i++ {
		if _, err := l.Append(bytes.Clone(batch), 1, coreT0); err != nil {
			b.Fatal(err)
		}
	}
	end := l.EndOffset()
	b.ReportAllocs()
	b.ResetTimer()
	var total int64
	for i := 0; i < b.N; i++ {
		off := int64(i*7919) % (end - 1000)
		res, err := l.Read(off, 1<<20, -1, true)
		if err != nil {
			b.Fatal(err)
		}
		total += res.Size
		res.Release()
	}
	b.SetBytes(total / int64(b.N))
}
