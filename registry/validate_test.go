package registry

import (
	"context"
	"errors"
	"testing"
	"time"
)

// laggingLog is a memLog whose long polls (the reader's) answer lag
// late: a broker whose reader has not yet fetched what was committed.
type laggingLog struct {
	*memLog
	lag time.Duration
}

func (l laggingLog) Read(ctx context.Context, from int64, wait time.Duration) ([]Record, int64, error) {
	if wait > 0 {
		t := time.NewTimer(l.lag)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, from, ctx.Err()
		case <-t.C:
		}
	}
	return l.memLog.Read(ctx, from, wait)
}

// TestCheckRecordAfterCatchUp: a schema id just committed to _schemas
// that this broker's reader has not read yet is refused by CheckRecord,
// and taken once CatchUp has read up to what was committed (the broker
// checks a refused batch again after it).
func TestCheckRecordAfterCatchUp(t *testing.T) {
	ml := newMemLog()
	r := New(Config{Log: laggingLog{ml, 500 * time.Millisecond}, PollWait: time.Minute})
	r.Start()
	t.Cleanup(func() { r.Close() })
	ml.raw(string(schemaRecord(schemaValue{Subject: "t-value", Version: 1, ID: 7, Schema: `"string"`}).Key),
		string(schemaRecord(schemaValue{Subject: "t-value", Version: 1, ID: 7, Schema: `"string"`}).Value))
	wire := []byte{0, 0, 0, 0, 7, 2, 'a'}
	if err := r.CheckRecord("t", false, TopicNameStrategy, wire); !errors.Is(err, ErrUnknownSchemaID) {
		t.Fatalf("before catching up: %v, want ErrUnknownSchemaID (the reader lags)", err)
	}
	if err := r.CatchUp(ctxT(t), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckRecord("t", false, TopicNameStrategy, wire); err != nil {
		t.Fatalf("after catching up: %v", err)
	}
	if err := r.CheckRecord("t", true, TopicNameStrategy, wire); !errors.Is(err, ErrUnknownSchemaID) {
		t.Errorf("as a key (subject t-key): %v, want ErrUnknownSchemaID", err)
	}
}
