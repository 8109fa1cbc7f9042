"""The REST proxy's protobuf format against confluent-kafka's Protobuf
serdes: records produced over HTTP (the schema as .proto text) are read
by ProtobufDeserializer from the Kafka port, and records written by
ProtobufSerializer (the schema as its base64 file descriptor) are read
over HTTP by a consumer instance in protobuf format.

usage: rest_proxy_protobuf.py BOOTSTRAP REGISTRY_URL PROXY_URL; prints ok
last.
"""
import sys
import time

import requests
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from proxy_http import V2, check, read_instance

bootstrap, registry_url, url = sys.argv[1:4]
PROTOBUF = "application/vnd.kafka.protobuf.v2+json"
FD = descriptor_pb2.FieldDescriptorProto
PROTO = """syntax = "proto3";
package samsa.test;
message User {
  string name = 1;
  int64 id = 2;
  repeated string tags = 3;
}
"""


def user_class():
    """samsa.test.User of PROTO, as generated code would have it."""
    fdp = descriptor_pb2.FileDescriptorProto(name="user_py.proto", package="samsa.test", syntax="proto3")
    m = fdp.message_type.add(name="User")
    m.field.add(name="name", number=1, type=FD.TYPE_STRING, label=FD.LABEL_OPTIONAL)
    m.field.add(name="id", number=2, type=FD.TYPE_INT64, label=FD.LABEL_OPTIONAL)
    m.field.add(name="tags", number=3, type=FD.TYPE_STRING, label=FD.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("samsa.test.User"))


User = user_class()
client = SchemaRegistryClient({"url": registry_url})
conf = {"use.deprecated.format": False}

# Over HTTP, by schema text then by id; read with ProtobufDeserializer.
records = [{"value": {"name": "u%d" % i, "id": str(1 << 40 | i), "tags": ["t%d" % i]}} for i in range(3)]
deadline = time.time() + 30
while True:  # until the registry takes writes
    r = requests.post(url + "/topics/py-pb-http", headers={"Content-Type": PROTOBUF, "Accept": V2},
                      json={"value_schema": PROTO, "records": records})
    if r.status_code == 200 or time.time() > deadline:
        break
    time.sleep(0.2)
check(r.status_code == 200, "produce protobuf: %d %s" % (r.status_code, r.text))
sid = r.json()["value_schema_id"]
r = requests.post(url + "/topics/py-pb-http", headers={"Content-Type": PROTOBUF},
                  json={"value_schema_id": sid, "records": [{"value": {"name": "by-id"}}]})
check(r.status_code == 200 and r.json()["value_schema_id"] == sid, "produce by id: %d %s" % (r.status_code, r.text))

deser = ProtobufDeserializer(User, conf, client)
ctx = SerializationContext("py-pb-http", MessageField.VALUE)
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "py-pb-reader", "auto.offset.reset": "earliest"})
c.subscribe(["py-pb-http"])
got = []
deadline = time.time() + 60
while len(got) < 4 and time.time() < deadline:
    m = c.poll(1.0)
    if m is None or m.error():
        continue
    got.append(deser(m.value(), ctx))
c.close()
check(len(got) == 4, "ProtobufDeserializer read %d of 4" % len(got))
check([(u.name, u.id, list(u.tags)) for u in got] ==
      [("u%d" % i, 1 << 40 | i, ["t%d" % i]) for i in range(3)] + [("by-id", 0, [])], "deserialized %s" % got)

# ProtobufSerializer on the Kafka port; read over HTTP in protobuf.
p = Producer({"bootstrap.servers": bootstrap})
ser = ProtobufSerializer(User, client, conf)
ctx = SerializationContext("py-pb-kafka", MessageField.VALUE)
for i in range(2):
    p.produce("py-pb-kafka", value=ser(User(name="k%d" % i, id=-i, tags=["x"] * i), ctx))
p.flush(30)
s, base, recs = read_instance(url, "py-pb", "protobuf", ["py-pb-kafka"], 2)
check([x["value"] for x in recs] == [{"name": "k0", "id": "0", "tags": []}, {"name": "k1", "id": "-1", "tags": ["x"]}],
      "read over HTTP: %s" % recs)
s.delete(base)
print("ok")
