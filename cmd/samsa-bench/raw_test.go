package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/samsa-io/samsa/internal/testutil"
)

// -raw produce writes records a real client reads back as written (every
// partition's offsets 0,1,2,..., every value -size bytes: the kgo consume
// checks both), and -raw consume counts them all; acks=all too.
func TestRawProduceAndConsume(t *testing.T) {
	n := testutil.StartBroker(t, nil)
	const size = 700
	// 1428 records a batch of 1 MB: 3 partitions x 1 request x 1428 = 4284.
	for _, acks := range []string{"1", "all"} {
		topic := "raw-" + acks
		var out, errb bytes.Buffer
		if code := run([]string{"produce", "-raw", "-brokers", n.Addr(), "-topic", topic, "-partitions", "3", "-records", "4000",
			"-size", "700", "-acks", acks, "-json", "-timeout", "60s"}, &out, &errb); code != 0 {
			t.Fatalf("raw produce acks=%s: exit %d: %s", acks, code, errb.String())
		}
		var r Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Records != 4284 || r.Bytes != 4284*size || r.P50ms <= 0 {
			t.Fatalf("raw produce acks=%s: %s (%v), want 4284 records of %d bytes and a latency", acks, out.String(), err, size)
		}
		for _, raw := range []bool{false, true} {
			args := []string{"consume", "-brokers", n.Addr(), "-topic", topic, "-records", "4284", "-size", "700", "-json", "-timeout", "60s"}
			if raw {
				args = append(args, "-raw")
			}
			out.Reset()
			errb.Reset()
			if code := run(args, &out, &errb); code != 0 {
				t.Fatalf("consume (raw %v) of the raw records: exit %d: %s", raw, code, errb.String())
			}
			var c Result
			if err := json.Unmarshal(out.Bytes(), &c); err != nil || c.Records != 4284 {
				t.Errorf("consume (raw %v): %s (%v), want 4284 records", raw, out.String(), err)
			}
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"produce", "-raw", "-brokers", n.Addr(), "-topic", "raw-1", "-records", "1", "-acks", "0"}, &out, &errb); code != 2 {
		t.Errorf("raw produce with acks 0: exit %d, want 2", code)
	}
}
