"""confluent-kafka's Schema Registry client and Avro serdes against samsa's
registry: register through AvroSerializer, evolve, be refused an
incompatible change, produce and consume through samsa.

usage: schema_registry.py BOOTSTRAP REGISTRY_URL TOPIC; prints ok last.
"""
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

bootstrap, url, topic = sys.argv[1:4]
subject = topic + "-value"

V1 = """{"type": "record", "name": "User", "namespace": "samsa.test",
 "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}"""
V2 = """{"type": "record", "name": "User", "namespace": "samsa.test",
 "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"},
            {"name": "email", "type": "string", "default": ""}]}"""
BAD = """{"type": "record", "name": "User", "namespace": "samsa.test",
 "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "string"}]}"""


def check(cond, what):
    if not cond:
        print("FAILED: " + what)
        sys.exit(1)


client = SchemaRegistryClient({"url": url})
producer = Producer({"bootstrap.servers": bootstrap})
ctx = SerializationContext(topic, MessageField.VALUE)

ser1 = AvroSerializer(client, V1)
for i in range(3):
    producer.produce(topic, value=ser1({"name": "u%d" % i, "age": 20 + i}, ctx))
producer.flush(30)

check(client.test_compatibility(subject, Schema(V2, "AVRO")), "v2 should be compatible")
check(not client.test_compatibility(subject, Schema(BAD, "AVRO")), "BAD should be incompatible")
try:
    client.register_schema(subject, Schema(BAD, "AVRO"))
    check(False, "registering BAD should fail")
except SchemaRegistryError as e:
    check(e.http_status_code == 409 and e.error_code == 409, "BAD refused with %s %s" % (e.http_status_code, e.error_code))

ser2 = AvroSerializer(client, V2)
producer.produce(topic, value=ser2({"name": "u3", "age": 23, "email": "u3@example.org"}, ctx))
producer.flush(30)

latest = client.get_latest_version(subject)
check(latest.version == 2, "latest version %s" % latest.version)
check(client.get_versions(subject) == [1, 2], "versions %s" % client.get_versions(subject))
found = client.lookup_schema(subject, Schema(V1, "AVRO"))
check(found.version == 1, "lookup of v1 found version %s" % found.version)
check(subject in client.get_subjects(), "subjects %s" % client.get_subjects())
by_id = client.get_schema(latest.schema_id)
check("email" in by_id.schema_str, "schema by id %s" % by_id.schema_str)

deser = AvroDeserializer(client, V2)
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-g", "auto.offset.reset": "earliest"})
consumer.subscribe([topic])
got = []
while len(got) < 4:
    msg = consumer.poll(30)
    check(msg is not None, "no message after %d" % len(got))
    if msg.error():
        check(False, "consume error %s" % msg.error())
    got.append(deser(msg.value(), ctx))
consumer.close()
check([u["name"] for u in got] == ["u0", "u1", "u2", "u3"], "names %s" % got)
check(got[0]["email"] == "" and got[3]["email"] == "u3@example.org", "emails %s" % got)
print("ok")
