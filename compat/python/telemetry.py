"""A librdkafka (confluent-kafka) producer and consumer that run until they
are stopped, for samsa's client metrics test (KIP-714): librdkafka pushes
its metrics when the broker advertises the telemetry APIs and a
subscription asks for them (enable.metrics.push, on by default).

Usage: telemetry.py BOOTSTRAP TOPIC SECONDS

Produces a record every 10 ms as client id rdkafka-producer and consumes
them as rdkafka-consumer (group rdkafka-group) until SECONDS pass or the
process is stopped.
"""

import sys
import threading
import time

from confluent_kafka import Consumer, Producer


def main():
    bootstrap, topic, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    deadline = time.time() + seconds
    common = {"bootstrap.servers": bootstrap, "enable.metrics.push": True}

    def consume():
        c = Consumer(dict(common, **{"client.id": "rdkafka-consumer", "group.id": "rdkafka-group",
                                     "auto.offset.reset": "earliest"}))
        c.subscribe([topic])
        while time.time() < deadline:
            c.poll(0.2)
        c.close()

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    p = Producer(dict(common, **{"client.id": "rdkafka-producer", "linger.ms": 5}))
    i = 0
    while time.time() < deadline:
        p.produce(topic, value=b"v%d" % i)
        p.poll(0.01)
        i += 1
    p.flush(10)
    t.join(15)


if __name__ == "__main__":
    main()
