package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

func testPayload(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		if i%3 == 0 {
			b[i] = byte(r.IntN(256)) // partly random, partly compressible
		} else {
			b[i] = byte(i / 97)
		}
	}
	return b
}

func mustDecompress(t *testing.T, c Codec, src []byte, limit int) []byte {
	t.Helper()
	buf, err := decompress(c, src, limit)
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	defer putBuf(buf)
	return bytes.Clone(*buf)
}

func TestCodecRoundTrip(t *testing.T) {
	for _, c := range allCodecs[1:] {
		for _, n := range []int{0, 1, 1000, 100 << 10, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", c, n), func(t *testing.T) {
				src := testPayload(n, uint64(n))
				z, err := compress([]byte("prefix"), c, src)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(z, []byte("prefix")) {
					t.Fatal("compress did not append to dst")
				}
				z = z[len("prefix"):]
				if got := mustDecompress(t, c, z, max(n, 1)); !bytes.Equal(got, src) {
					t.Fatalf("round trip differs (%d bytes vs %d)", len(got), n)
				}
				if n > 0 {
					if _, err := decompress(c, z, n-1); !errors.Is(err, ErrDecompressedTooLarge) {
						t.Fatalf("limit n-1: err = %v", err)
					}
				}
			})
		}
	}
}

// TestDecompressOtherEncoders feeds frames written by the codec libraries'
// own stream writers (the way the Java client and librdkafka frame them)
// rather than by compress.
func TestDecompressOtherEncoders(t *testing.T) {
	src := testPayload(300<<10, 7)
	var gz, lz, zs bytes.Buffer

	gw := gzip.NewWriter(&gz)
	gw.Write(src[:1000]) // two gzip members, as a concatenating writer would produce
	gw.Close()
	gw = gzip.NewWriter(&gz)
	gw.Write(src[1000:])
	gw.Close()

	lw := lz4.NewWriter(&lz)
	if err := lw.Apply(lz4.BlockSizeOption(lz4.Block4Mb), lz4.BlockChecksumOption(true), lz4.ChecksumOption(true)); err != nil {
		t.Fatal(err)
	}
	lw.Write(src)
	lw.Close()

	zw, err := zstd.NewWriter(&zs) // streaming: no frame content size
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(src)
	zw.Close()

	tests := []struct {
		name string
		c    Codec
		z    []byte
	}{
		{"gzip multi-member", CodecGzip, gz.Bytes()},
		{"lz4 4MB blocks with checksums", CodecLZ4, lz.Bytes()},
		{"zstd stream", CodecZstd, zs.Bytes()},
		{"snappy raw block", CodecSnappy, snappy.Encode(nil, src)},
		{"snappy xerial", CodecSnappy, xerial.Encode(nil, src)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustDecompress(t, tt.c, tt.z, len(src)); !bytes.Equal(got, src) {
				t.Fatal("decoded bytes differ")
			}
		})
	}
	// Our xerial output is what the klauspost xerial reader (and Java's
	// SnappyInputStream format) expects.
	ours, err := compress(nil, CodecSnappy, src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(ours, xerialMagic) {
		t.Fatal("snappy output is not xerial framed")
	}
	got, err := xerial.Decode(ours)
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("xerial.Decode of our snappy: %v", err)
	}
}

func TestDecompressCorrupt(t *testing.T) {
	src := testPayload(50<<10, 3)
	for _, c := range allCodecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			z, err := compress(nil, c, src)
			if err != nil {
				t.Fatal(err)
			}
			cases := map[string][]byte{
				"empty":     {},
				"truncated": z[:len(z)/2],
				"garbage":   testPayload(200, 9),
			}
			for name, in := range cases {
				if _, err := decompress(c, in, 1<<20); !errors.Is(err, ErrInvalidRecord) {
					t.Errorf("%s: err = %v, want ErrInvalidRecord", name, err)
				}
			}
		})
	}
	// A xerial header followed by a block length running past the end.
	bad := append(bytes.Clone(xerial.Encode(nil, src))[:16], 0, 1, 0, 0, 1, 2)
	if _, err := decompress(CodecSnappy, bad, 1<<20); !errors.Is(err, ErrInvalidRecord) {
		t.Errorf("xerial block past end: %v", err)
	}
	if _, err := decompress(CodecSnappy, append(bytes.Clone(xerialMagic), 0, 0, 0, 1), 1<<20); !errors.Is(err, ErrInvalidRecord) {
		t.Errorf("truncated xerial header: %v", err)
	}
	if _, err := decompress(Codec(5), src, 1<<20); !errors.Is(err, ErrUnsupportedCompression) {
		t.Errorf("codec 5: %v", err)
	}
}

// TestDecompressionBomb: 32 MiB of zeros compressed with each codec must be
// refused at a 256 KiB limit without allocating anywhere near 32 MiB.
func TestDecompressionBomb(t *testing.T) {
	const big, limit = 32 << 20, 256 << 10
	zeros := make([]byte, big)
	var zs bytes.Buffer
	zw, _ := zstd.NewWriter(&zs)
	zw.Write(zeros)
	zw.Close()
	fcs, err := compress(nil, CodecZstd, zeros)
	if err != nil {
		t.Fatal(err)
	}
	bombs := []struct {
		name string
		c    Codec
		z    []byte
	}{
		{"zstd with content size", CodecZstd, fcs},
		{"zstd stream", CodecZstd, zs.Bytes()},
		{"snappy raw", CodecSnappy, snappy.Encode(nil, zeros)},
	}
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4} {
		z, err := compress(nil, c, zeros)
		if err != nil {
			t.Fatal(err)
		}
		bombs = append(bombs, struct {
			name string
			c    Codec
			z    []byte
		}{c.String(), c, z})
	}
	zeros = nil
	for _, bomb := range bombs {
		t.Run(bomb.name, func(t *testing.T) {
			// Warm the pools so that decoder construction is not counted.
			if _, err := decompress(bomb.c, bomb.z, limit); !errors.Is(err, ErrDecompressedTooLarge) {
				t.Fatalf("err = %v, want ErrDecompressedTooLarge", err)
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := decompress(bomb.c, bomb.z, limit)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrDecompressedTooLarge) {
				t.Fatalf("err = %v", err)
			}
			// Output buffers grow with the real output up to the limit
			// (zstd retries with a 4x larger one), plus decoder state.
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d", alloc)
			if alloc > 2<<20 {
				t.Fatalf("allocated %d bytes refusing a %d byte bomb at limit %d", alloc, big, limit)
			}
		})
	}
	// The same bombs go through ValidateBatch as INVALID_RECORD.
	for _, bomb := range bombs {
		b := kmsgBatch(t, refBatch{codec: CodecNone, producerID: -1, producerEpoch: -1, baseSequence: -1,
			records: bomb.z, numRecords: 1, lastDelta: 0})
		b[22] |= byte(bomb.c)
		refixCRC(b)
		if _, err := ValidateBatch(b, limit); !errors.Is(err, ErrInvalidRecord) || !errors.Is(err, ErrDecompressedTooLarge) {
			t.Errorf("%s batch: err = %v", bomb.name, err)
		}
	}
}

func TestSnappyClaimedLengthNotAllocated(t *testing.T) {
	// A raw snappy block claiming 1 GiB of output in a few bytes.
	claim := []byte{0x80, 0x80, 0x80, 0x80, 0x04, 0x00}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := decompress(CodecSnappy, claim, 1<<20)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrDecompressedTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Fatalf("allocated %d bytes for a claimed length", alloc)
	}
}

// TestDecompressConcurrent shares the pooled decoders between goroutines
// using different limits (run with -race).
func TestDecompressConcurrent(t *testing.T) {
	src := testPayload(200<<10, 11)
	var frames [5][]byte
	for _, c := range allCodecs[1:] {
		z, err := compress(nil, c, src)
		if err != nil {
			t.Fatal(err)
		}
		frames[c] = z
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				c := Codec(1 + (g+i)%4)
				limit := len(src) + i*1000
				if g%2 == 1 {
					limit = len(src) / 2
				}
				buf, err := decompress(c, frames[c], limit)
				switch {
				case limit < len(src):
					if !errors.Is(err, ErrDecompressedTooLarge) {
						errs <- fmt.Errorf("%s limit %d: %v", c, limit, err)
						return
					}
				case err != nil:
					errs <- fmt.Errorf("%s: %v", c, err)
					return
				case !bytes.Equal(*buf, src):
					errs <- fmt.Errorf("%s: wrong output", c)
					return
				default:
					putBuf(buf)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
