package compat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
)

// schemaWire is data in the wire format of Confluent's serializers:
// magic byte 0, the schema id, the payload.
func schemaWire(id int, payload string) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), payload...)
}

// kvBatch is a record batch of records with these keys and values (nil:
// null), timestamps ts.
func kvBatch(ts int64, kvs ...[2][]byte) []byte {
	recs := make([]kmsg.Record, len(kvs))
	for i, kv := range kvs {
		recs[i] = kmsg.Record{Key: kv[0], Value: kv[1]}
	}
	return recordsBatch(ts, recs)
}

// TestSchemaRegistryBrokerValidation: a topic with Confluent Server's
// confluent.value.schema.validation (or .key.) takes a batch only when
// each record carries the wire format's magic byte and a schema id
// registered under the subject of its subject name strategy
// (confluent.value.subject.name.strategy: TopicNameStrategy,
// RecordNameStrategy); else the batch is refused whole with
// INVALID_RECORD and a record error per record at fault, worded as
// Confluent Server's ("Log record DefaultRecord(...) is rejected by the
// record interceptor ...RecordSchemaValidator"). A null value (a
// tombstone) passes. An unknown strategy is INVALID_CONFIG.
func TestSchemaRegistryBrokerValidation(t *testing.T) {
	b, cl := startRegistryBroker(t, nil)
	waitWriter(t, cl)
	ctx := testCtx(t, time.Minute)
	order := `{"type":"record","name":"Order","namespace":"samsa.test","fields":[{"name":"id","type":"long"}]}`
	register := func(subject, schema string) int {
		t.Helper()
		s, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: schema})
		if err != nil {
			t.Fatalf("registering under %s: %v", subject, err)
		}
		return s.ID
	}
	orderID := register("orders-value", order)
	stringID := register("strings-value", `"string"`)
	register("keyed-key", `"string"`)
	if id := register("samsa.test.Order", order); id != orderID {
		t.Fatalf("samsa.test.Order: id %d, want %d", id, orderID)
	}
	adm := newAdmin(t, b.Addr())
	create := func(topic string, configs map[string]string) error {
		t.Helper()
		cs := map[string]*string{}
		for k, v := range configs {
			cs[k] = kadm.StringPtr(v)
		}
		r, err := adm.CreateTopic(ctx, 1, 1, cs, topic)
		if err == nil {
			err = r.Err
		}
		return err
	}
	for topic, configs := range map[string]map[string]string{
		"orders": {"confluent.value.schema.validation": "true"},
		"keyed":  {"confluent.key.schema.validation": "true"},
		"named": {"confluent.value.schema.validation": "true",
			"confluent.value.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"},
	} {
		if err := create(topic, configs); err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	if err := create("badstrategy", map[string]string{"confluent.value.subject.name.strategy": "com.example.Mine"}); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("an unknown subject name strategy: %v, want INVALID_CONFIG", err)
	}
	if rc, err := adm.DescribeTopicConfigs(ctx, "orders"); err != nil {
		t.Fatal(err)
	} else if c, err := rc.On("orders", nil); err != nil {
		t.Fatal(err)
	} else if !slices.ContainsFunc(c.Configs, func(c kadm.Config) bool {
		return c.Key == "confluent.value.schema.validation" && c.MaybeValue() == "true"
	}) {
		t.Errorf("orders' configs do not show confluent.value.schema.validation=true: %+v", c.Configs)
	}

	kc := newKgo(t, b.Addr())
	const ts = 1700000000000
	conn := admDial(t, b.Addr())
	produce := func(topic string, kvs ...[2][]byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		return admProducePartition(t, conn.roundTrip(admProduceReq(topic, 0, -1, kvBatch(ts, kvs...)), 12))
	}
	kv := func(k, v []byte) [2][]byte { return [2][]byte{k, v} }
	accepted := func(topic string, wantOffset int64, kvs ...[2][]byte) {
		t.Helper()
		if p := produce(topic, kvs...); p.ErrorCode != 0 || p.BaseOffset != wantOffset {
			t.Errorf("%s: error %v, base offset %d (%v); want accepted at %d", topic, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, recErrStr(p.ErrorMessage), wantOffset)
		}
	}
	rejected := func(topic string, kvs ...[2][]byte) []string {
		t.Helper()
		p := produce(topic, kvs...)
		if p.ErrorCode != kerr.InvalidRecord.Code {
			t.Errorf("%s: error %v, want INVALID_RECORD", topic, kerr.ErrorForCode(p.ErrorCode))
		}
		var out []string
		for _, e := range p.ErrorRecords {
			out = append(out, fmt.Sprintf("%d: %s", e.RelativeOffset, recErrStr(e.ErrorMessage)))
		}
		return out
	}
	rejectedMsg := func(i, key, value int) string {
		return fmt.Sprintf("%d: Log record DefaultRecord(offset=%d, timestamp=%d, key=%d bytes, value=%d bytes) is rejected by the record interceptor io.confluent.kafka.schemaregistry.validator.RecordSchemaValidator", i, i, ts, key, value)
	}

	good := schemaWire(orderID, "\x02")
	accepted("orders", 0, kv(nil, good), kv([]byte("k"), nil))
	got := rejected("orders", kv(nil, good), kv(nil, []byte("plain")), kv([]byte("k"), schemaWire(stringID, "\x02a")), kv(nil, schemaWire(9999, "")))
	want := []string{rejectedMsg(1, 0, 5), rejectedMsg(2, 1, 7), rejectedMsg(3, 0, 5)}
	if !slices.Equal(got, want) {
		t.Errorf("orders' record errors:\n%q\nwant\n%q", got, want)
	}
	// The batch was refused whole: the next one follows the first.
	accepted("orders", 2, kv(nil, good))

	accepted("keyed", 0, kv(schemaWire(stringID, "\x02a"), []byte("anything")))
	if got := rejected("keyed", kv([]byte("plain"), good)); !slices.Equal(got, []string{rejectedMsg(0, 5, 6)}) {
		t.Errorf("keyed's record errors: %q", got)
	}

	accepted("named", 0, kv(nil, good))
	if got := rejected("named", kv(nil, schemaWire(stringID, "\x02a"))); len(got) != 1 {
		t.Errorf("named: a schema without a record name: record errors %q", got)
	}

	// franz-go's producer gets INVALID_RECORD.
	err := kc.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("plain")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Errorf("franz-go producing a plain record: %v, want INVALID_RECORD", err)
	}
	if err := kc.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: good}).FirstErr(); err != nil {
		t.Errorf("franz-go producing in the wire format: %v", err)
	}
}
