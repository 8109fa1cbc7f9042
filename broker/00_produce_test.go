package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-io/samsa/logstore"
)

// checkProduceRecords holds Kafka's ProduceRequest.validateRecords rules and
// leaves everything else in the records to the log's validation.
func TestCheckProduceRecords(t *testing.T) {
	batch := func(c logstore.Codec) []byte {
		b, err := logstore.BuildBatch(0, c, []logstore.Record{{Key: []byte("k"), Value: []byte("v")}}, -1, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	magic1 := batch(logstore.CodecNone)
	magic1[16] = 1
	tiny := batch(logstore.CodecNone)
	tiny[11] = 5 // batch length 5: the log answers CORRUPT_MESSAGE
	cases := []struct {
		name    string
		version int16
		records []byte
		want    int16
	}{
		{"one batch", 3, batch(logstore.CodecGzip), 0},
		{"none", 9, nil, kerr.InvalidRecord.Code},
		{"magic 1", 9, magic1, kerr.InvalidRecord.Code},
		{"zstd at v3", 3, batch(logstore.CodecZstd), kerr.UnsupportedCompressionType.Code},
		{"zstd at v6", 6, batch(logstore.CodecZstd), kerr.UnsupportedCompressionType.Code},
		{"zstd at v7", 7, batch(logstore.CodecZstd), 0},
		{"two batches", 9, append(batch(logstore.CodecNone), batch(logstore.CodecLZ4)...), kerr.InvalidRecord.Code},
		{"trailing bytes", 9, append(batch(logstore.CodecNone), 0, 0, 0), kerr.InvalidRecord.Code},
		{"short header: the log's", 9, batch(logstore.CodecNone)[:40], 0},
		{"length below the minimum: the log's", 9, tiny, 0},
	}
	for _, c := range cases {
		if got := errCode(checkProduceRecords(c.version, c.records)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, kerr.ErrorForCode(got), kerr.ErrorForCode(c.want))
		}
	}
}
