"""confluent-kafka's ProtobufSerializer and JSONSerializer (and their
deserializers) against samsa's registry: register through the
serializers, evolve, be refused what Confluent's rules refuse, produce and
consume through samsa.

usage: schema_registry_formats.py BOOTSTRAP REGISTRY_URL TOPIC_PREFIX;
prints ok last.
"""
import json
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

bootstrap, url, prefix = sys.argv[1:4]
FD = descriptor_pb2.FieldDescriptorProto


def check(cond, what):
    if not cond:
        print("FAILED: " + what)
        sys.exit(1)


def user_class(file_name, fields):
    """A proto3 message samsa.test.User of (name, number, type) fields."""
    fdp = descriptor_pb2.FileDescriptorProto(name=file_name, package="samsa.test", syntax="proto3")
    m = fdp.message_type.add(name="User")
    for name, number, typ in fields:
        m.field.add(name=name, number=number, type=typ, label=FD.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("samsa.test.User"))


def refused(subject, schema):
    try:
        client.register_schema(subject, schema)
    except SchemaRegistryError as e:
        return e.http_status_code == 409 and e.error_code == 409
    return False


def consume(topic, deser, n):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-g", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    ctx = SerializationContext(topic, MessageField.VALUE)
    while len(got) < n:
        msg = consumer.poll(30)
        check(msg is not None, "%s: no message after %d" % (topic, len(got)))
        check(not msg.error(), "%s: consume error %s" % (topic, msg.error()))
        got.append(deser(msg.value(), ctx))
    consumer.close()
    return got


client = SchemaRegistryClient({"url": url})
producer = Producer({"bootstrap.servers": bootstrap})

# Protobuf: the serializer registers the file descriptor (base64); a
# field added is compatible, a field's scalar kind changed is not.
topic = prefix + "-proto"
subject = topic + "-value"
ctx = SerializationContext(topic, MessageField.VALUE)
V1 = user_class("user_v1.proto", [("name", 1, FD.TYPE_STRING), ("age", 2, FD.TYPE_INT32)])
V2 = user_class("user_v2.proto", [("name", 1, FD.TYPE_STRING), ("age", 2, FD.TYPE_INT32), ("email", 3, FD.TYPE_STRING)])
BAD = user_class("user_bad.proto", [("name", 1, FD.TYPE_STRING), ("age", 2, FD.TYPE_STRING)])
conf = {"use.deprecated.format": False}
ser1 = ProtobufSerializer(V1, client, conf)
producer.produce(topic, value=ser1(V1(name="u0", age=20), ctx))
producer.flush(30)
ser2 = ProtobufSerializer(V2, client, conf)
producer.produce(topic, value=ser2(V2(name="u1", age=21, email="u1@example.org"), ctx))
producer.flush(30)
check(client.get_versions(subject) == [1, 2], "protobuf versions %s" % client.get_versions(subject))
bad = ProtobufSerializer(BAD, client, conf)
try:
    bad(BAD(name="x", age="y"), ctx)
    check(False, "the serializer registered an incompatible Protobuf schema")
except Exception as e:  # the serializer wraps the registry's 409
    check("409" in str(e) or "incompatible" in str(e), "protobuf BAD refused with %s" % e)
TEXT = 'syntax = "proto3"; package samsa.test; message User { string name = 1; %s age = 2; }'
check(client.test_compatibility(subject, Schema(TEXT % "int64", "PROTOBUF")), "int32 to int64 compatible")
check(not client.test_compatibility(subject, Schema(TEXT % "string", "PROTOBUF")), "int32 to string incompatible")
deser = ProtobufDeserializer(V2, {"use.deprecated.format": False}, client)
got = consume(topic, deser, 2)
check([u.name for u in got] == ["u0", "u1"] and got[1].email == "u1@example.org", "protobuf got %s" % got)

# JSON Schema: an optional property added to an open content model is
# refused (old data may hold anything there); to a closed one it is not.
topic = prefix + "-json"
subject = topic + "-value"
ctx = SerializationContext(topic, MessageField.VALUE)
OPEN1 = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
OPEN2 = dict(OPEN1, properties={"name": {"type": "string"}, "age": {"type": "integer"}})
CLOSED1 = dict(OPEN1, additionalProperties=False)
CLOSED2 = dict(OPEN2, additionalProperties=False)
jser1 = JSONSerializer(json.dumps(CLOSED1), client)
producer.produce(topic, value=jser1({"name": "j0"}, ctx))
producer.flush(30)
check(client.test_compatibility(subject, Schema(json.dumps(CLOSED2), "JSON")), "closed model + optional property compatible")
jser2 = JSONSerializer(json.dumps(CLOSED2), client)
producer.produce(topic, value=jser2({"name": "j1", "age": 7}, ctx))
producer.flush(30)
check(client.get_versions(subject) == [1, 2], "json versions %s" % client.get_versions(subject))
open_subject = prefix + "-open-value"
client.register_schema(open_subject, Schema(json.dumps(OPEN1), "JSON"))
check(refused(open_subject, Schema(json.dumps(OPEN2), "JSON")), "open model + optional property should be refused")
client.set_compatibility(open_subject, "FORWARD")
client.register_schema(open_subject, Schema(json.dumps(OPEN2), "JSON"))
jdeser = JSONDeserializer(None, schema_registry_client=client)
got = consume(topic, jdeser, 2)
check(got == [{"name": "j0"}, {"name": "j1", "age": 7}], "json got %s" % got)
print("ok")
