package compat

// Produce v8+ RecordErrors (LogValidator's record errors): a batch refused
// for some of its records names each of them (batch_index, message) with
// Kafka's ErrorMessage, through a raw client, franz-go and librdkafka.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/kafkaref"
)

// recErrRecord is one record of recErrBatch: a null key when key is nil,
// a timestamp delta from the batch's.
type recErrRecord struct {
	key     []byte
	tsDelta int64
}

// recErrBatch is admBatch with timestamp deltas.
func recErrBatch(ts int64, recs []recErrRecord) []byte {
	krs := make([]kmsg.Record, len(recs))
	for i, r := range recs {
		krs[i] = kmsg.Record{TimestampDelta64: r.tsDelta, Key: r.key, Value: []byte(fmt.Sprintf("value-%d", i))}
	}
	return recordsBatch(ts, krs)
}

// recordsBatch is a record batch of recs (their offset deltas set in
// order), first timestamp ts, its CRC right.
func recordsBatch(ts int64, recs []kmsg.Record) []byte {
	var records []byte
	maxTs := ts
	for i, kr := range recs {
		kr.OffsetDelta = int32(i)
		enc := kr.AppendTo(nil)[1:] // Length 0 is one varint byte; drop it
		records = binary.AppendVarint(records, int64(len(enc)))
		records = append(records, enc...)
		maxTs = max(maxTs, ts+kr.TimestampDelta64)
	}
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: ts, MaxTimestamp: maxTs, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(recs)), Records: records}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	admFixCRC(b)
	return b
}

// recErrKeyless is a 100-record batch whose records 3, 13, ..., 93 have
// no key, with timestamps ts.
func recErrKeyless(ts int64) []byte {
	recs := make([]recErrRecord, 100)
	for i := range recs {
		if i%10 != 3 {
			recs[i].key = []byte(fmt.Sprintf("key-%d", i))
		}
	}
	return recErrBatch(ts, recs)
}

var recErrKeylessIndexes = []int32{3, 13, 23, 33, 43, 53, 63, 73, 83, 93}

// recErrIndexes returns the batch indexes of p's record errors.
func recErrIndexes(p kmsg.ProduceResponseTopicPartition) []int32 {
	var idx []int32
	for _, e := range p.ErrorRecords {
		idx = append(idx, e.RelativeOffset)
	}
	return idx
}

func recErrStr(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// recErrCheckRaw sends the keyless batch and a batch with bad timestamps
// to the broker at addr (compacted topic ctopic, ttopic with
// message.timestamp.after.max.ms=60000) and checks the answers.
func recErrCheckRaw(t *testing.T, addr, ctopic, ttopic string) {
	now := time.Now().UnixMilli()
	for _, v := range []int16{7, 8, 9, 12} {
		c := admDial(t, addr)
		p := admProducePartition(t, c.roundTrip(admProduceReq(ctopic, 0, -1, recErrKeyless(now)), v))
		if p.ErrorCode != kerr.InvalidRecord.Code || p.BaseOffset != -1 {
			t.Errorf("v%d keyless records: %v at %d, want INVALID_RECORD at -1", v, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
		}
		if v < 8 {
			if len(p.ErrorRecords) != 0 {
				t.Errorf("v%d: record errors %v before v8", v, recErrIndexes(p))
			}
			continue
		}
		if got := recErrIndexes(p); !slices.Equal(got, recErrKeylessIndexes) {
			t.Errorf("v%d: record errors at %v, want %v", v, got, recErrKeylessIndexes)
		}
		wantRec := "Compacted topic cannot accept message without key in topic partition " + ctopic + "-0"
		for _, e := range p.ErrorRecords {
			if e.ErrorMessage == nil || *e.ErrorMessage != wantRec {
				t.Errorf("v%d: record %d message %q, want %q", v, e.RelativeOffset, recErrStr(e.ErrorMessage), wantRec)
				break
			}
		}
		wantMsg := "One or more records have been rejected due to 10 record errors in total, and only showing the first three errors at most: [" +
			"RecordError(batchIndex=3, message='" + wantRec + "'), RecordError(batchIndex=13, message='" + wantRec + "'), " +
			"RecordError(batchIndex=23, message='" + wantRec + "')]"
		if p.ErrorMessage == nil || *p.ErrorMessage != wantMsg {
			t.Errorf("v%d: error message %q,\nwant %q", v, recErrStr(p.ErrorMessage), wantMsg)
		}
	}

	// Records 1 and 4 a day ahead, 3 a day behind (not limited: accepted).
	day := int64(86400_000)
	ahead := recErrBatch(now, []recErrRecord{{key: []byte("a")}, {key: []byte("b"), tsDelta: day},
		{key: []byte("c")}, {key: []byte("d"), tsDelta: -day}, {key: []byte("e"), tsDelta: day}})
	c := admDial(t, addr)
	p := admProducePartition(t, c.roundTrip(admProduceReq(ttopic, 0, 1, ahead), 9))
	if p.ErrorCode != kerr.InvalidTimestamp.Code {
		t.Errorf("records a day ahead: %v, want INVALID_TIMESTAMP", kerr.ErrorForCode(p.ErrorCode))
	}
	if got := recErrIndexes(p); !slices.Equal(got, []int32{1, 4}) {
		t.Errorf("records a day ahead: record errors at %v, want [1 4]", got)
	}
	if p.ErrorMessage == nil || *p.ErrorMessage != "One or more records have been rejected due to invalid timestamp" {
		t.Errorf("records a day ahead: error message %q", recErrStr(p.ErrorMessage))
	}
	for _, e := range p.ErrorRecords {
		if e.ErrorMessage == nil || !strings.Contains(*e.ErrorMessage, " is out of range. The timestamp should be within [") {
			t.Errorf("record %d: message %q", e.RelativeOffset, recErrStr(e.ErrorMessage))
		}
	}
}

func TestRecordErrors(t *testing.T) {
	t.Parallel()
	n := admBroker(t, nil)
	adm, _ := admAdmin(t, n.Addr())
	ctopic := admTopic("recerr-compact")
	admCreate(t, adm, ctopic, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	ttopic := admTopic("recerr-ts")
	admCreate(t, adm, ttopic, 1, 1, map[string]*string{"message.timestamp.after.max.ms": kmsg.StringPtr("60000")})
	recErrCheckRaw(t, n.Addr(), ctopic, ttopic)

	// franz-go: keyless records to a compacted topic fail INVALID_RECORD;
	// keyed ones then go through.
	cl := admClient(t, n.Addr(), kgo.DefaultProduceTopic(ctopic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := admCtx(t, admTimeout)
	res := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}, &kgo.Record{Value: []byte("no key either")})
	for _, r := range res {
		if !errors.Is(r.Err, kerr.InvalidRecord) {
			t.Errorf("franz-go keyless record to a compacted topic: %v, want INVALID_RECORD", r.Err)
		}
	}
	admProduce(t, cl, &kgo.Record{Key: []byte("k"), Value: []byte("keyed")})
	if got := admConsume(t, n.Addr(), ctopic, []int32{0}, 1); string(got[0].Key) != "k" || got[0].Offset != 0 {
		t.Errorf("the keyed record after the refused ones: %q at %d", got[0].Key, got[0].Offset)
	}
}

// TestRecordErrorsLibrdkafka: librdkafka reports INVALID_RECORD for each
// record named in RecordErrors and INVALID_DIFFERENT_RECORD for the
// others of the batch (needs make python-deps).
func TestRecordErrorsLibrdkafka(t *testing.T) {
	t.Parallel()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	py := venvPython(t, root)
	n := admBroker(t, nil)
	adm, _ := admAdmin(t, n.Addr())
	topic := admTopic("recerr-rdkafka")
	admCreate(t, adm, topic, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	recErrCheckLibrdkafka(t, py, filepath.Join(root, "compat", "python", "record_errors.py"), n.Addr(), topic)
}

func recErrCheckLibrdkafka(t *testing.T, py, script, addr, topic string) {
	t.Helper()
	ctx := admCtx(t, 2*time.Minute)
	out, err := exec.CommandContext(ctx, py, "-u", script, addr, topic).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("record_errors.py: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got struct {
		Errors   map[string]int
		Messages map[string]string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("record_errors.py said %q: %v", out, err)
	}
	// _INVALID_DIFFERENT_RECORD is librdkafka's local code for the records
	// of a failed batch that RecordErrors does not name.
	want := map[string]int{"INVALID_RECORD": 10, "_INVALID_DIFFERENT_RECORD": 90}
	if fmt.Sprint(got.Errors) != fmt.Sprint(want) {
		t.Errorf("librdkafka delivery reports %v, want %v", got.Errors, want)
	}
	t.Logf("librdkafka: %v; record 3: %q; record 0: %q", got.Errors, got.Messages["3"], got.Messages["0"])
}

// TestRecordErrorsKafkaReference runs the raw and librdkafka checks against
// Apache Kafka (internal/kafkaref: the jars make java-deps resolves and a
// JDK; about a minute), so that samsa's answers are Kafka's.
func TestRecordErrorsKafkaReference(t *testing.T) {
	t.Parallel()
	kb, root := startKafkaRef(t)
	adm, _ := admAdmin(t, kb.Addr)
	ctopic := admTopic("recerr-compact")
	admCreate(t, adm, ctopic, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	ttopic := admTopic("recerr-ts")
	admCreate(t, adm, ttopic, 1, 1, map[string]*string{"message.timestamp.after.max.ms": kmsg.StringPtr("60000")})
	recErrCheckRaw(t, kb.Addr, ctopic, ttopic)
	topic := admTopic("recerr-rdkafka")
	admCreate(t, adm, topic, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	recErrCheckLibrdkafka(t, venvPython(t, root), filepath.Join(root, "compat", "python", "record_errors.py"), kb.Addr, topic)
}

// startKafkaRef starts Apache Kafka (internal/kafkaref: the jars make
// java-deps resolves, and a JDK), stopped when the test ends, and returns
// it with the module root.
func startKafkaRef(t *testing.T) (*kafkaref.Broker, string) {
	t.Helper()
	return startKafkaRefWith(t, nil)
}

// startKafkaRefWith is startKafkaRef with extra server properties, and
// the jars that each of more resolves (kafkaref.TieredLibs) on the
// broker's class path.
func startKafkaRefWith(t *testing.T, props map[string]string, more ...func(context.Context, string) (string, error)) (*kafkaref.Broker, string) {
	t.Helper()
	root, err := kafkaref.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := admCtx(t, 5*time.Minute)
	libs, err := kafkaref.Libs(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	var cp []string
	for _, resolve := range more {
		dir, err := resolve(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		cp = append(cp, dir)
	}
	kb, err := kafkaref.Start(ctx, libs, kafkaref.Options{Dir: t.TempDir(), HeapMB: 512, Props: props, ClassPath: cp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kb.Stop(30 * time.Second) })
	t.Logf("Apache Kafka %s at %s", kafkaref.Version(libs), kb.Addr)
	return kb, root
}

// venvPython is the Python of the virtualenv make python-deps (part of
// make test) installs, with confluent-kafka; missing, the test fails.
func venvPython(t *testing.T, root string) string {
	t.Helper()
	py := filepath.Join(root, ".venv", "bin", "python")
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("no virtualenv: run make python-deps (make test does): %v", err)
	}
	return py
}
