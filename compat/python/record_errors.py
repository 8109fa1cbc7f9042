"""librdkafka (confluent-kafka) and Produce v8+ RecordErrors; run by
compat/00_produce_record_errors_test.go.

Usage: record_errors.py BOOTSTRAP TOPIC

Produces 100 records in one batch to partition 0 of TOPIC (a compacted
topic that exists), records 3, 13, ..., 93 without a key, and prints one
JSON line: {"errors": {error name: count}, "messages": {index: error string}}
for the records whose delivery failed. Kafka answers one RecordError per
keyless record, so librdkafka reports those INVALID_RECORD and the other 90
INVALID_DIFFERENT_RECORD.
"""

import json
import sys

import confluent_kafka as ck

WAIT = 60.0


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    # One batch: a linger far longer than the loop below takes even on a
    # loaded machine (flush sends at once), room for all 100, no retries
    # to split it. With 1 s the first record sometimes left alone.
    p = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 30000,
                     "batch.num.messages": 1000, "compression.type": "lz4",
                     "message.send.max.retries": 0})
    counts, messages = {}, {}

    def report(i):
        def cb(err, _msg):
            name = "OK" if err is None else err.name()
            counts[name] = counts.get(name, 0) + 1
            if err is not None:
                messages[i] = err.str()
        return cb

    for i in range(100):
        key = None if i % 10 == 3 else ("key-%d" % i).encode()
        p.produce(topic, value=("value-%d" % i).encode(), key=key, partition=0, on_delivery=report(i))
    left = p.flush(WAIT)
    if left:
        raise SystemExit("%d records undelivered after %ds" % (left, WAIT))
    print(json.dumps({"errors": counts, "messages": messages}, sort_keys=True))


if __name__ == "__main__":
    main()
