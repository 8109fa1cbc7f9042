package main

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// compressionOpt is the kgo codec of -compression and, for a codec other
// than none, the values to write: windows of size bytes at random places
// of a 64 MiB text of random words (from 256), so that batches compress as
// text does (about 4:1 with zstd) and no two values of a batch repeat each
// other, which would flatter the codec.
func compressionOpt(name string, size int) (kgo.CompressionCodec, func() []byte, error) {
	var codec kgo.CompressionCodec
	switch name {
	case "none":
		return kgo.NoCompression(), nil, nil
	case "gzip":
		codec = kgo.GzipCompression()
	case "snappy":
		codec = kgo.SnappyCompression()
	case "lz4":
		codec = kgo.Lz4Compression()
	case "zstd":
		codec = kgo.ZstdCompression()
	default:
		return codec, nil, fmt.Errorf("-compression %q: want none, gzip, snappy, lz4 or zstd", name)
	}
	text := wordText(64<<20, 1)
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(2, 3))
	return codec, func() []byte {
		mu.Lock()
		at := r.IntN(len(text) - size)
		mu.Unlock()
		return text[at : at+size : at+size]
	}, nil
}

// wordText is n bytes of words drawn at random (seeded) from a vocabulary
// of 256 made-up words of 3 to 10 letters, separated by spaces.
func wordText(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed+1))
	words := make([][]byte, 256)
	for i := range words {
		w := make([]byte, 3+r.IntN(8))
		for j := range w {
			w[j] = 'a' + byte(r.IntN(26))
		}
		words[i] = w
	}
	out := make([]byte, 0, n+16)
	for len(out) < n {
		out = append(out, words[r.IntN(len(words))]...)
		out = append(out, ' ')
	}
	return out[:n]
}
