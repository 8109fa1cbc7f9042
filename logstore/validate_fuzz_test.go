package logstore

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// FuzzValidateProduced: the produce validation pass, under a compacted,
// timestamp-limited topic that re-compresses to zstd and under a
// LogAppendTime one, never panics, fails only with the validation errors,
// and what it accepts is a valid batch of the same records.
func FuzzValidateProduced(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	now := time.UnixMilli(1_700_000_000_000)
	cfgs := []Config{
		{Compact: true, TimestampBeforeMaxMs: 3600_000, TimestampAfterMaxMs: 3600_000, Compression: CompressionZstd, MaxUncompressedBytes: fuzzLimit},
		{TimestampType: LogAppendTime, MaxUncompressedBytes: fuzzLimit},
	}
	for i := range cfgs {
		cfgs[i] = cfgs[i].normalized()
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, in := range [][]byte{b, fixFraming(b)} {
			batches, err := SplitBatches(in)
			if err != nil || len(batches) != 1 {
				continue
			}
			for _, cfg := range cfgs {
				sent := bytes.Clone(batches[0])
				out, h, err := validateProduced(&cfg, sent, "fuzz-0", now)
				if err != nil {
					var re *RecordErrors
					if errors.As(err, &re) && len(re.Records) == 0 {
						t.Fatal("RecordErrors naming no record")
					}
					if !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrCorruptMessage) && !errors.Is(err, ErrUnsupportedCompression) &&
						!errors.Is(err, ErrMessageTooLarge) && !errors.Is(err, ErrInvalidTimestamp) {
						t.Fatalf("unexpected error class: %v", err)
					}
					continue
				}
				info, err := ValidateBatchInfo(out, fuzzLimit)
				if err != nil {
					t.Fatalf("accepted batch no longer validates: %v", err)
				}
				if info.Header != h || h.NumRecords != info.Header.NumRecords {
					t.Fatalf("header %+v, stored %+v", h, info.Header)
				}
				if cfg.Compression != CompressionProducer && h.Codec() != CodecZstd {
					t.Fatalf("stored with codec %v, want zstd", h.Codec())
				}
			}
		}
	})
}
