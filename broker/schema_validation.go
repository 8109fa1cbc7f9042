package broker

import (
	"fmt"

	"github.com/samsa-io/samsa/internal/config"
	"github.com/samsa-io/samsa/logstore"
	"github.com/samsa-io/samsa/registry"
)

// Broker-side schema validation, as Confluent Server makes it: on a topic
// with confluent.value.schema.validation=true (or .key.), the leader
// refuses a batch with a record whose value (key) does not carry a schema
// id registered, in this broker's schema registry, under the subject of
// the topic's confluent.value.subject.name.strategy (registry.CheckRecord).
// The batch is refused whole with INVALID_RECORD and one record error per
// record at fault, worded as Confluent Server's. A broker that serves no
// registry (samsa.schema.registry.listener unset) refuses every record of
// such a topic: it cannot tell.

// schemaCheck is one side's (key or value) validation of a topic.
type schemaCheck struct {
	strategy registry.Strategy
}

// newSchemaCheck is the check of a side whose validation is on, else nil.
func newSchemaCheck(on bool, strategy string) *schemaCheck {
	if !on {
		return nil
	}
	c := &schemaCheck{strategy: registry.TopicNameStrategy}
	switch strategy {
	case config.RecordNameStrategy:
		c.strategy = registry.RecordNameStrategy
	case config.TopicRecordNameStrategy:
		c.strategy = registry.TopicRecordNameStrategy
	}
	return c
}

// schemaValidator names Confluent Server's record interceptor in its
// record errors.
const schemaValidator = "io.confluent.kafka.schemaregistry.validator.RecordSchemaValidator"

// checkSchemaIDs checks the records of a produced batch of t against the
// topic's schema validation; a malformed batch is left to the log's
// validation, which answers it as Kafka does.
func (b *Broker) checkSchemaIDs(t *topic, records []byte) error {
	if t.keySchemas == nil && t.valueSchemas == nil {
		return nil
	}
	ok := func(c *schemaCheck, key bool, data []byte) bool {
		if c == nil {
			return true
		}
		if b.registry == nil {
			return false
		}
		err := b.registry.CheckRecord(t.name, key, c.strategy, data)
		if err != nil {
			b.log.Debug("record refused by schema validation", "topic", t.name, "key", key, "err", err)
		}
		return err == nil
	}
	var bad []logstore.RecordError
	var i int32
	err := logstore.ForEachRecord(records, func(r logstore.Record) bool {
		if !ok(t.keySchemas, true, r.Key) || !ok(t.valueSchemas, false, r.Value) {
			bad = append(bad, logstore.RecordError{Index: i, Message: fmt.Sprintf(
				"Log record DefaultRecord(offset=%d, timestamp=%d, key=%d bytes, value=%d bytes) is rejected by the record interceptor %s",
				r.Offset, r.Timestamp, len(r.Key), len(r.Value), schemaValidator)})
		}
		i++
		return true
	})
	if err != nil || len(bad) == 0 {
		return nil
	}
	return &logstore.RecordErrors{Err: logstore.ErrInvalidRecord, Records: bad}
}
