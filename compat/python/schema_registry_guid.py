"""confluent-kafka's schema ids in headers (Confluent 8.x) against samsa's
registry: AvroSerializer, JSONSerializer and ProtobufSerializer with
schema.id.serializer = header_schema_id_serializer put the schema's GUID
in the record header __value_schema_id (__key_schema_id for a key): magic
byte 1, the GUID's 16 bytes, then for Protobuf the message indexes; the
payload carries no prefix. The default deserializer
(dual_schema_id_deserializer), given the record's headers, reads the GUID
and fetches the schema with GET /schemas/guids/{guid} (Protobuf's with
?format=serialized). The GUID is the MD5 of the schema's text (with no
references, metadata or rules), as Confluent derives it.

usage: schema_registry_guid.py BOOTSTRAP REGISTRY_URL TOPIC_PREFIX; prints
ok last.
"""
import hashlib
import io
import json
import sys
import uuid

import fastavro
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

bootstrap, url, prefix = sys.argv[1:4]
HEADER = {"schema.id.serializer": header_schema_id_serializer}


def check(cond, what):
    if not cond:
        print("FAILED: " + what)
        sys.exit(1)


def header(headers, name):
    found = [v for k, v in headers or [] if k == name]
    check(len(found) == 1, "headers %s: want one %s" % (headers, name))
    return found[0]


def guid_of(subject):
    """The GUID samsa answers for subject's latest version, checked against
    the MD5 of its text."""
    latest = client.get_latest_version(subject)
    check(latest.guid is not None, "%s has no guid" % subject)
    md5 = uuid.UUID(bytes=hashlib.md5(latest.schema.schema_str.encode()).digest())
    check(uuid.UUID(latest.guid) == md5, "%s: guid %s, md5 of its text %s" % (subject, latest.guid, md5))
    return uuid.UUID(latest.guid)


def produce(topic, records, value_ser, key_ser=None):
    for key, value in records:
        headers = []
        k = key_ser(key, SerializationContext(topic, MessageField.KEY, headers)) if key_ser else None
        v = value_ser(value, SerializationContext(topic, MessageField.VALUE, headers))
        producer.produce(topic, key=k, value=v, headers=headers)
    producer.flush(30)


def consume(topic, n):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic + "-g", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    while len(got) < n:
        msg = consumer.poll(30)
        check(msg is not None, "%s: no message after %d" % (topic, len(got)))
        check(not msg.error(), "%s: consume error %s" % (topic, msg.error()))
        got.append(msg)
    consumer.close()
    return got


client = SchemaRegistryClient({"url": url})
producer = Producer({"bootstrap.servers": bootstrap})

# Avro, key and value: each header holds its subject's GUID, and the
# payload is the bare Avro encoding.
topic = prefix + "-avro"
USER = {"type": "record", "name": "User", "namespace": "samsa.test",
        "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
# The Avro deserializer refuses a payload of 5 bytes or fewer even when
# the id is in a header: keys and names long enough.
users = [("key-%d" % i, {"name": "user-%d" % i, "age": 20 + i}) for i in range(3)]
produce(topic, users, AvroSerializer(client, json.dumps(USER), conf=HEADER),
        AvroSerializer(client, '"string"', conf=HEADER))
value_guid, key_guid = guid_of(topic + "-value"), guid_of(topic + "-key")
check(value_guid != key_guid, "key and value share guid %s" % value_guid)
# A new client, whose cache is empty: the deserializers ask the registry
# for each GUID.
reader = SchemaRegistryClient({"url": url})
value_deser, key_deser = AvroDeserializer(reader), AvroDeserializer(reader)
parsed = fastavro.parse_schema(USER)
for msg, (key, value) in zip(consume(topic, len(users)), users):
    check(header(msg.headers(), "__value_schema_id") == b"\x01" + value_guid.bytes,
          "value header %s, guid %s" % (msg.headers(), value_guid))
    check(header(msg.headers(), "__key_schema_id") == b"\x01" + key_guid.bytes,
          "key header %s, guid %s" % (msg.headers(), key_guid))
    bare = io.BytesIO()
    fastavro.schemaless_writer(bare, parsed, value)
    check(msg.value() == bare.getvalue(), "payload %r, want the bare encoding %r" % (msg.value(), bare.getvalue()))
    headers = msg.headers()
    got_value = value_deser(msg.value(), SerializationContext(topic, MessageField.VALUE, headers))
    got_key = key_deser(msg.key(), SerializationContext(topic, MessageField.KEY, headers))
    check(got_value == value and got_key == key, "read %s %s, wrote %s %s" % (got_key, got_value, key, value))

# JSON Schema.
topic = prefix + "-json"
DOC = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
docs = [(None, {"name": "j%d" % i}) for i in range(2)]
produce(topic, docs, JSONSerializer(json.dumps(DOC), client, conf=HEADER))
json_guid = guid_of(topic + "-value")
json_deser = JSONDeserializer(None, schema_registry_client=SchemaRegistryClient({"url": url}))
for msg, (_, doc) in zip(consume(topic, len(docs)), docs):
    check(header(msg.headers(), "__value_schema_id") == b"\x01" + json_guid.bytes, "json header %s" % msg.headers())
    got = json_deser(msg.value(), SerializationContext(topic, MessageField.VALUE, msg.headers()))
    check(got == doc, "json read %s, wrote %s" % (got, doc))

# Protobuf: the header ends with the message indexes (0: the first
# message); the deserializer asks for the GUID's schema serialized.
topic = prefix + "-proto"
fdp = descriptor_pb2.FileDescriptorProto(name="guid_user.proto", package="samsa.test", syntax="proto3")
m = fdp.message_type.add(name="User")
m.field.add(name="name", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
pool = descriptor_pool.DescriptorPool()
pool.Add(fdp)
User = message_factory.GetMessageClass(pool.FindMessageTypeByName("samsa.test.User"))
msgs = [(None, User(name="p%d" % i)) for i in range(2)]
produce(topic, msgs, ProtobufSerializer(User, client, dict(HEADER, **{"use.deprecated.format": False})))
proto_guid = guid_of(topic + "-value")
proto_deser = ProtobufDeserializer(User, {"use.deprecated.format": False}, SchemaRegistryClient({"url": url}))
for msg, (_, want) in zip(consume(topic, len(msgs)), msgs):
    check(header(msg.headers(), "__value_schema_id") == b"\x01" + proto_guid.bytes + b"\x00",
          "protobuf header %s" % msg.headers())
    got = proto_deser(msg.value(), SerializationContext(topic, MessageField.VALUE, msg.headers()))
    check(got.name == want.name, "protobuf read %s, wrote %s" % (got, want))
print("ok")
