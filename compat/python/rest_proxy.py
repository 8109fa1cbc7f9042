"""Python's requests against samsa's REST proxy (Confluent's v2 API), with
confluent-kafka on the Kafka port reading what was produced over HTTP and
producing what a consumer instance reads over HTTP.

usage: rest_proxy.py BOOTSTRAP PROXY_URL; prints ok last.
"""
import base64
import sys
import time

import requests
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from proxy_http import V2, check, read_instance

bootstrap, url = sys.argv[1:3]
JSON = "application/vnd.kafka.json.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"

admin = AdminClient({"bootstrap.servers": bootstrap})
for f in admin.create_topics([NewTopic("py-json", 2, 1), NewTopic("py-bin", 1, 1)]).values():
    f.result(30)

# Produce over HTTP, JSON and binary; read with librdkafka.
r = requests.post(url + "/topics/py-json", headers={"Content-Type": JSON, "Accept": V2},
                  json={"records": [{"key": "user-%d" % i, "value": {"n": i, "name": "ü"}} for i in range(10)]})
check(r.status_code == 200, "produce json: %d %s" % (r.status_code, r.text))
body = r.json()
check(len(body["offsets"]) == 10 and all(o["error_code"] is None for o in body["offsets"]), "json offsets: " + r.text)
check(body["key_schema_id"] is None and body["value_schema_id"] is None, "schema ids: " + r.text)
r = requests.post(url + "/topics/py-bin/partitions/0", headers={"Content-Type": BINARY},
                  json={"records": [{"key": base64.b64encode(b"\x00\x01").decode(), "value": base64.b64encode(b"\xff\xfe bytes").decode()}]})
check(r.status_code == 200 and r.json()["offsets"][0]["partition"] == 0, "produce binary: %d %s" % (r.status_code, r.text))

c = Consumer({"bootstrap.servers": bootstrap, "group.id": "py-reader", "auto.offset.reset": "earliest"})
c.subscribe(["py-json", "py-bin"])
got = {}
deadline = time.time() + 60
while len(got) < 11 and time.time() < deadline:
    m = c.poll(1.0)
    if m is None or m.error():
        continue
    got[(m.topic(), m.key())] = m.value()
c.close()
check(len(got) == 11, "librdkafka read %d of 11 records" % len(got))
check(got[("py-json", b'"user-3"')] == '{"n":3,"name":"ü"}'.encode(), "json record: %r" % got[("py-json", b'"user-3"')])
check(got[("py-bin", b"\x00\x01")] == b"\xff\xfe bytes", "binary record")
# A keyed record lands where librdkafka's murmur2 partitioner (the Java
# client's) puts it.
p = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
where = {}
for o, i in zip(body["offsets"], range(10)):
    where['"user-%d"' % i] = o["partition"]
delivered = {}
for k in where:
    p.produce("py-json", key=k.encode(), value=b"{}", on_delivery=lambda err, m: delivered.__setitem__(m.key().decode(), m.partition()))
p.flush(30)
check(delivered == where, "partitions: proxy %r, librdkafka murmur2 %r" % (where, delivered))

# Produce with librdkafka; read with a consumer instance over HTTP.
for i in range(5):
    p.produce("py-bin", key=b"k%d" % i, value=b"from librdkafka %d" % i)
p.flush(30)
s, base, recs = read_instance(url, "py-http", "binary", ["py-bin"], 6)
values = [base64.b64decode(x["value"]) for x in recs]
check(values[0] == b"\xff\xfe bytes" and values[5] == b"from librdkafka 4", "values %r" % values)
r = s.post(base + "/offsets")
check(r.status_code == 200 and r.json() == [], "commit: %d %s" % (r.status_code, r.text))
r = s.get(base + "/offsets", json={"partitions": [{"topic": "py-bin", "partition": 0}]})
check(r.json() == {"offsets": [{"topic": "py-bin", "partition": 0, "offset": 6, "metadata": ""}]}, "committed: " + r.text)
r = s.delete(base)
check(r.status_code == 204, "delete: %d" % r.status_code)
r = s.get(base + "/records", headers={"Accept": BINARY})
check(r.status_code == 404 and r.json() == {"error_code": 40403, "message": "Consumer instance not found."}, "deleted: " + r.text)
print("ok")
