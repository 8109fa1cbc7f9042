package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// catchUpTimeout bounds how long a produce waits for this broker's
// registry to read what was committed to _schemas before refusing a
// record (registry.CatchUp).
const catchUpTimeout = 2 * time.Second

// checkSchemaIDs checks the records of a produced batch of t against the
// topic's schema validation: a batch with a record refused is checked
// once more after the registry caught up (CatchUp). A malformed batch is
// left to the log's validation, which answers it as Kafka does.
func (b *Broker) checkSchemaIDs(ctx context.Context, t *topic, records []byte) error {
	if t.keySchemas == nil && t.valueSchemas == nil {
		return nil
	}
	unknown, err := b.checkSchemaIDsOnce(t, records)
	if unknown {
		if cerr := b.registry.CatchUp(ctx, catchUpTimeout); cerr != nil {
			b.log.Debug("schema registry: catching up before refusing records", "topic", t.name, "err", cerr)
		}
		_, err = b.checkSchemaIDsOnce(t, records)
	}
	return err
}

// checkSchemaIDsOnce checks the records once; unknown reports a record
// refused for its schema id (not its magic byte), which catching up may
// find.
func (b *Broker) checkSchemaIDsOnce(t *topic, records []byte) (unknown bool, err error) {
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
			unknown = unknown || errors.Is(err, registry.ErrUnknownSchemaID)
		}
		return err == nil
	}
	var bad []logstore.RecordError
	var i int32
	ferr := logstore.ForEachRecord(records, func(r logstore.Record) bool {
		if !ok(t.keySchemas, true, r.Key) || !ok(t.valueSchemas, false, r.Value) {
			bad = append(bad, logstore.RecordError{Index: i, Message: fmt.Sprintf(
				"Log record DefaultRecord(offset=%d, timestamp=%d, key=%d bytes, value=%d bytes) is rejected by the record interceptor %s",
				r.Offset, r.Timestamp, len(r.Key), len(r.Value), schemaValidator)})
		}
		i++
		return true
	})
	if ferr != nil || len(bad) == 0 {
		return false, nil
	}
	return unknown, &logstore.RecordErrors{Err: logstore.ErrInvalidRecord, Records: bad}
}
