"""confluent-kafka (librdkafka) beside samsa's REST proxy; run by
compat/restproxy_clients_test.go.

usage: rest_proxy_client.py BOOTSTRAP FROM_TOPIC TO_TOPIC N NAME
Reads N records of FROM_TOPIC (produced over HTTP) from the start of its
partition 0, produces N records to TO_TOPIC (key NAME-i, value
{"from":NAME,"i":i}, read over HTTP) and prints the records read as JSON,
[[key, value], ...], last.
"""
import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

bootstrap, src, dst, n, name = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": src + "-g", "enable.auto.commit": False})
c.assign([TopicPartition(src, 0, OFFSET_BEGINNING)])
got = []
deadline = time.time() + 60
while len(got) < n and time.time() < deadline:
    m = c.poll(0.5)
    if m is None or m.error():
        continue
    got.append([m.key().decode(), m.value().decode()])
c.close()
if len(got) != n:
    print("read %d of %d records" % (len(got), n))
    sys.exit(1)
p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
for i in range(n):
    p.produce(dst, key=("%s-%d" % (name, i)).encode(), value=json.dumps({"from": name, "i": i}, separators=(",", ":")).encode())
if p.flush(30) != 0:
    print("records left unsent")
    sys.exit(1)
print(json.dumps(got))
