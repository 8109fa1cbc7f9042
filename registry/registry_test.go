package registry

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/goleak"

	"github.com/samsa-io/samsa/internal/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memLog is a _schemas partition in memory: appends in one leader epoch,
// reads up to its end.
type memLog struct {
	mu    sync.Mutex
	recs  []Record
	epoch int32
	moved chan struct{}
}

func newMemLog() *memLog { return &memLog{epoch: 1, moved: make(chan struct{})} }

func (l *memLog) Ensure(context.Context) error { return nil }

func (l *memLog) Read(ctx context.Context, from int64, wait time.Duration) ([]Record, int64, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		l.mu.Lock()
		end, moved := int64(len(l.recs)), l.moved
		if from < end {
			out := append([]Record(nil), l.recs[from:]...)
			l.mu.Unlock()
			return out, end, nil
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, from, ctx.Err()
		case <-t.C:
			return nil, from, nil
		case <-moved:
		}
	}
}

func (l *memLog) Append(_ context.Context, epoch int32, recs []Record) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if epoch != l.epoch {
		return 0, kerr.FencedLeaderEpoch
	}
	for _, r := range recs {
		r.Offset = int64(len(l.recs))
		l.recs = append(l.recs, r)
	}
	close(l.moved)
	l.moved = make(chan struct{})
	return int64(len(l.recs)) - 1, nil
}

// raw appends records as another writer (Confluent's) would.
func (l *memLog) raw(kvs ...string) {
	var recs []Record
	for i := 0; i+1 < len(kvs); i += 2 {
		r := Record{Key: []byte(kvs[i])}
		if kvs[i+1] != "" {
			r.Value = []byte(kvs[i+1])
		}
		recs = append(recs, r)
	}
	l.mu.Lock()
	epoch := l.epoch
	l.mu.Unlock()
	if _, err := l.Append(context.Background(), epoch, recs); err != nil {
		panic(err)
	}
}

// written returns the records in the log as key and value text.
func (l *memLog) written() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		out = append(out, string(r.Key)+" "+string(r.Value))
	}
	return out
}

// testRegistry is a registry over a memLog, leading its partition, served
// by an httptest server, with franz-go's client.
type testRegistry struct {
	*Registry
	log *memLog
	url string
	cl  *sr.Client
	// user and password, when set, are sent as basic credentials.
	user, password string
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	return startTestRegistry(t, newMemLog(), true, nil)
}

// startTestRegistry starts a registry over l; lead gives it the
// partition, leader is its Config.Leader.
func startTestRegistry(t *testing.T, l *memLog, lead bool, leader func(context.Context) (string, error)) *testRegistry {
	t.Helper()
	return startTestRegistryWith(t, l, lead, Config{Leader: leader})
}

// startTestRegistryWith is startTestRegistry with more of the
// registry's configuration.
func startTestRegistryWith(t *testing.T, l *memLog, lead bool, cfg Config) *testRegistry {
	t.Helper()
	cfg.Log, cfg.PollWait, cfg.Compatibility = l, 50*time.Millisecond, "backward"
	r := New(cfg)
	r.Start()
	srv := httptest.NewServer(r)
	t.Cleanup(func() {
		srv.Close()
		r.Close()
	})
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	tr := &testRegistry{Registry: r, log: l, url: srv.URL, cl: cl}
	if lead {
		r.SetOwned(map[int32]int32{0: 1})
		poll.Eventually(t, 10*time.Second, func() error {
			_, err := r.rt.Get(0)
			return err
		})
	}
	return tr
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wantCode checks that err is the registry's answer with that error code.
func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want error code %d", err, code)
	}
	if re.ErrorCode != code {
		t.Fatalf("got error code %d (%s), want %d", re.ErrorCode, re.Message, code)
	}
}

// TestReadsConfluentRecords: records written to _schemas in Confluent's
// documented format (as its registry writes them) are served.
func TestReadsConfluentRecords(t *testing.T) {
	tr := newTestRegistry(t)
	ctx := ctxT(t)
	rec := `{"type":"record","name":"r","fields":[{"name":"a","type":"int"}]}`
	quoted := strings.ReplaceAll(rec, `"`, `\"`)
	tr.log.raw(
		`{"keytype":"NOOP","magic":0}`, ``,
		`{"keytype":"SCHEMA","subject":"Kafka-value","version":1,"magic":1}`, `{"subject":"Kafka-value","version":1,"id":1,"schema":"\"string\"","deleted":false}`,
		`{"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}`, `{"subject":"orders-value","version":1,"id":7,"schemaType":"AVRO","schema":"`+quoted+`","deleted":false,"offset":3,"ts":1700000000000}`,
		`{"keytype":"SCHEMA","subject":"gone-value","version":1,"magic":1}`, `{"subject":"gone-value","version":1,"id":9,"schema":"\"long\"","deleted":false}`,
		`{"keytype":"SCHEMA","subject":"gone-value","version":1,"magic":1}`, ``,
		`{"keytype":"CONFIG","subject":null,"magic":0}`, `{"compatibilityLevel":"FULL"}`,
		`{"keytype":"CONFIG","subject":"orders-value","magic":0}`, `{"subject":"orders-value","compatibilityLevel":"NONE"}`,
		`{"keytype":"MODE","magic":0}`, `{"mode":"READWRITE"}`,
		`{"keytype":"DELETE_SUBJECT","subject":"Kafka-value","magic":0}`, `{"subject":"Kafka-value","version":1}`,
		`not json`, `{}`,
		`{"keytype":"SOMETHING_NEWER","magic":0}`, `{"x":1}`,
	)
	poll.Eventually(t, 10*time.Second, func() error {
		if next, _ := tr.state.applied(); next < 11 {
			return errors.New("not replayed yet")
		}
		return nil
	})
	subjects, err := tr.cl.Subjects(ctx)
	if err != nil || strings.Join(subjects, ",") != "orders-value" {
		t.Fatalf("subjects %v, %v; want orders-value (Kafka-value soft-deleted, gone-value hard-deleted)", subjects, err)
	}
	s, err := tr.cl.SchemaByID(ctx, 7)
	if err != nil || s.Schema != rec {
		t.Fatalf("id 7: %+v, %v", s, err)
	}
	ss, err := tr.cl.SchemaByVersion(sr.WithParams(ctx, sr.ShowDeleted), "Kafka-value", 1)
	if err != nil || ss.ID != 1 || ss.Schema.Schema != `"string"` {
		t.Fatalf("Kafka-value v1 (deleted): %+v, %v", ss, err)
	}
	if _, err := tr.cl.SchemaByID(ctx, 9); err == nil {
		t.Fatal("id 9 was tombstoned, still served")
	}
	if c := tr.cl.Compatibility(ctx); c[0].Err != nil || c[0].Level != sr.CompatFull {
		t.Fatalf("global compatibility %+v", c)
	}
	if c := tr.cl.Compatibility(ctx, "orders-value"); c[0].Err != nil || c[0].Level != sr.CompatNone {
		t.Fatalf("orders-value compatibility %+v", c)
	}
	// New ids follow the highest one read, a hard-deleted one's too (as
	// Confluent's id generator counts them).
	got, err := tr.cl.CreateSchema(ctx, "next-value", sr.Schema{Schema: `"bytes"`})
	if err != nil || got.ID != 10 {
		t.Fatalf("registered %+v, %v; want id 10", got, err)
	}
}

// TestWritesConfluentRecords: what samsa writes is Confluent's format,
// byte for byte as its Jackson writes it.
func TestWritesConfluentRecords(t *testing.T) {
	tr := newTestRegistry(t)
	ctx := ctxT(t)
	if _, err := tr.cl.CreateSchema(ctx, "s", sr.Schema{Schema: ` "string" `}); err != nil {
		t.Fatal(err)
	}
	if r := tr.cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatForward}, "s"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if r := tr.cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if r := tr.cl.SetMode(ctx, sr.ModeReadWrite); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if _, err := tr.cl.DeleteSubject(ctx, "s", sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.cl.DeleteSubject(ctx, "s", sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"keytype":"NOOP","magic":0} `,
		`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1} {"subject":"s","version":1,"id":1,"schemaType":"AVRO","schema":"\"string\"","deleted":false}`,
		`{"keytype":"CONFIG","subject":"s","magic":0} {"subject":"s","compatibilityLevel":"FORWARD"}`,
		`{"keytype":"CONFIG","magic":0} {"compatibilityLevel":"FULL"}`,
		`{"keytype":"MODE","magic":0} {"mode":"READWRITE"}`,
		`{"keytype":"DELETE_SUBJECT","subject":"s","magic":0} {"subject":"s","version":1}`,
		`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1} `,
		`{"keytype":"CONFIG","subject":"s","magic":0} `,
	}
	if got := tr.log.written(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records written:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStaleWriterIsFenced: once the partition has another leader epoch,
// the old writer's appends are refused and the registry says it cannot
// write, rather than assigning ids from a state that may be stale.
func TestStaleWriterIsFenced(t *testing.T) {
	tr := newTestRegistry(t)
	ctx := ctxT(t)
	if _, err := tr.cl.CreateSchema(ctx, "a", sr.Schema{Schema: `"string"`}); err != nil {
		t.Fatal(err)
	}
	tr.log.mu.Lock()
	tr.log.epoch = 2
	tr.log.mu.Unlock()
	_, err := tr.cl.CreateSchema(ctx, "b", sr.Schema{Schema: `"long"`})
	wantCode(t, err, 50003)
	// Led again in the new epoch: it loads and writes.
	tr.SetOwned(map[int32]int32{0: 2})
	poll.Eventually(t, 10*time.Second, func() error {
		_, err := tr.cl.CreateSchema(ctx, "b", sr.Schema{Schema: `"long"`})
		return err
	})
	// Without the partition, no writes at all.
	tr.SetOwned(nil)
	_, err = tr.cl.CreateSchema(ctx, "c", sr.Schema{Schema: `"int"`})
	wantCode(t, err, 50003)
	// Reads go on.
	if s, err := tr.cl.SchemaByID(ctx, 2); err != nil || s.Schema != `"long"` {
		t.Fatalf("id 2: %+v, %v", s, err)
	}
}

// TestForwardsWrites: a registry that does not write forwards writes to
// the one that does, once, and serves its reads itself.
func TestForwardsWrites(t *testing.T) {
	l := newMemLog()
	writer := startTestRegistry(t, l, true, nil)
	other := startTestRegistry(t, l, false, func(context.Context) (string, error) { return writer.url, nil })
	ctx := ctxT(t)
	got, err := other.cl.CreateSchema(ctx, "a", sr.Schema{Schema: `"string"`})
	if err != nil || got.ID != 1 {
		t.Fatalf("registered through the other registry: %+v, %v", got, err)
	}
	if r := other.cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "a"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if _, err := other.cl.DeleteSubject(ctx, "a", sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	// Errors come back as the writer gave them.
	_, err = other.cl.DeleteSubject(ctx, "a", sr.SoftDelete)
	wantCode(t, err, 40404)
	// A registry forwarding to one that does not write either: 50003, no loop.
	third := startTestRegistry(t, l, false, func(context.Context) (string, error) { return other.url, nil })
	writer.SetOwned(nil)
	_, err = third.cl.CreateSchema(ctx, "b", sr.Schema{Schema: `"long"`})
	wantCode(t, err, 50003)
	// No leader known: 50004.
	nobody := startTestRegistry(t, l, false, func(context.Context) (string, error) { return "", errors.New("no leader") })
	_, err = nobody.cl.CreateSchema(ctx, "b", sr.Schema{Schema: `"long"`})
	wantCode(t, err, 50004)
}
