'use strict'
// Confluent's Node schema registry client (@confluentinc/schemaregistry)
// and its Avro, Protobuf and JSON Schema serdes against samsa's registry,
// with kafkajs producing and consuming through samsa; run by
// compat/registry_test.go. (Confluent's own Kafka client for Node,
// @confluentinc/kafka-javascript, needs a native librdkafka build at
// install time; the serdes only hand it bytes, as they hand kafkajs here.)
//
// Usage: node schema_registry.js BOOTSTRAP REGISTRY_URL PREFIX
// Registers and evolves a subject per format (PREFIX-avro-value,
// PREFIX-proto-value, PREFIX-json-value), is refused what Confluent's
// rules refuse, produces through the serializers (to PREFIX-guid with the
// schema's GUID in a header), consumes everything back through the
// deserializers and prints ok last.

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const assert = require('assert')
const { Kafka, logLevel } = require('kafkajs')
const {
  SchemaRegistryClient, SerdeType, HeaderSchemaIdSerializer,
  AvroSerializer, AvroDeserializer,
  ProtobufSerializer, ProtobufDeserializer,
  JsonSerializer, JsonDeserializer
} = require('@confluentinc/schemaregistry')
const { create, toBinary } = require('@bufbuild/protobuf')
const { fileDesc, messageDesc } = require('@bufbuild/protobuf/codegenv1')
const { FileDescriptorProtoSchema } = require('@bufbuild/protobuf/wkt')

const [bootstrap, url, prefix] = process.argv.slice(2)
const client = new SchemaRegistryClient({ baseURLs: [url] })
const kafka = new Kafka({ clientId: 'samsa-sr', brokers: [bootstrap], logLevel: logLevel.NOTHING })
const VALUE = SerdeType.VALUE

// refused: registering schema under subject is answered 409 (incompatible).
async function refused (subject, schema) {
  try {
    await client.register(subject, schema)
  } catch (e) {
    return e.status === 409 && e.errorCode === 409
  }
  return false
}

// userMessage: a proto3 message samsa.test.User of [name, number, type]
// fields (type: 9 string, 5 int32), built at run time as protoc-gen-es
// would generate it.
function userMessage (fileName, fields) {
  const proto = create(FileDescriptorProtoSchema, {
    name: fileName,
    package: 'samsa.test',
    syntax: 'proto3',
    messageType: [{
      name: 'User',
      field: fields.map(([name, number, type]) => ({ name, jsonName: name, number, type, label: 1 }))
    }]
  })
  return messageDesc(fileDesc(Buffer.from(toBinary(FileDescriptorProtoSchema, proto)).toString('base64')), 0)
}

async function avro (send) {
  const topic = prefix + '-avro'
  const subject = topic + '-value'
  // Record1, no namespace: the name the serializer gives the schema it
  // derives from a plain record
  const user = fields => JSON.stringify({ type: 'record', name: 'Record1', fields })
  const V1 = [{ name: 'name', type: 'string' }, { name: 'age', type: 'int' }]
  const V2 = V1.concat([{ name: 'email', type: 'string', default: '' }])
  // the serializer registers the schema it derives from the record; the
  // same schema registered again keeps its id
  const auto = new AvroSerializer(client, VALUE, { autoRegisterSchemas: true })
  await send(topic, await auto.serialize(topic, { name: 'a0', age: 20 }))
  const id0 = (await client.getLatestSchemaMetadata(subject)).id
  const id1 = await client.register(subject, { schemaType: 'AVRO', schema: user(V1) })
  assert.strictEqual(id1, id0, 'the derived schema registered again got a new id')
  const latest = new AvroSerializer(client, VALUE, { useLatestVersion: true })
  await send(topic, await latest.serialize(topic, { name: 'a1', age: 21 }))
  const id2 = await client.register(subject, { schemaType: 'AVRO', schema: user(V2) })
  assert.notStrictEqual(id1, id2, 'v2 got v1\'s id')
  client.clearLatestCaches()
  const v2 = new AvroSerializer(client, VALUE, { useLatestVersion: true })
  await send(topic, await v2.serialize(topic, { name: 'a2', age: 22, email: 'a2@example.org' }))
  assert.ok(await refused(subject, { schemaType: 'AVRO', schema: user(V2.concat([{ name: 'phone', type: 'string' }])) }),
    'a field added without a default should be refused under BACKWARD')
  assert.deepStrictEqual(await client.getAllVersions(subject), [1, 2])
  return {
    topic,
    deser: new AvroDeserializer(client, VALUE, {}),
    check: got => assert.deepStrictEqual(got.map(u => ({ ...u })), [
      { name: 'a0', age: 20 }, { name: 'a1', age: 21 }, { name: 'a2', age: 22, email: 'a2@example.org' }])
  }
}

async function protobuf (send) {
  const topic = prefix + '-proto'
  const subject = topic + '-value'
  const V1 = userMessage('user_v1.proto', [['name', 1, 9], ['age', 2, 5]])
  const V2 = userMessage('user_v2.proto', [['name', 1, 9], ['age', 2, 5], ['email', 3, 9]])
  const BAD = userMessage('user_bad.proto', [['name', 1, 9], ['age', 2, 9]])
  const ser = desc => {
    const s = new ProtobufSerializer(client, VALUE, { autoRegisterSchemas: true })
    s.registry.add(desc)
    return s
  }
  await send(topic, await ser(V1).serialize(topic, create(V1, { name: 'p0', age: 30 })))
  await send(topic, await ser(V2).serialize(topic, create(V2, { name: 'p1', age: 31, email: 'p1@example.org' })))
  await assert.rejects(ser(BAD).serialize(topic, create(BAD, { name: 'x', age: 'y' })),
    e => /409|incompatible/i.test(String(e.message)), 'an int32 field turned string should be refused')
  assert.deepStrictEqual(await client.getAllVersions(subject), [1, 2])
  return {
    topic,
    deser: new ProtobufDeserializer(client, VALUE, {}),
    check: got => assert.deepStrictEqual(got.map(m => [m.name, m.age, m.email]),
      [['p0', 30, undefined], ['p1', 31, 'p1@example.org']])
  }
}

async function json (send) {
  const topic = prefix + '-json'
  const subject = topic + '-value'
  const V1 = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false }
  const V2 = { ...V1, properties: { ...V1.properties, age: { type: 'integer' } } }
  await client.register(subject, { schemaType: 'JSON', schema: JSON.stringify(V1) })
  const ser = () => new JsonSerializer(client, VALUE, { useLatestVersion: true, validate: true })
  await send(topic, await ser().serialize(topic, { name: 'j0' }))
  await assert.rejects(ser().serialize(topic, { name: 'j1', age: 7 }), /Invalid message|validat/i,
    'v1 closes the content model: age should not validate')
  await client.register(subject, { schemaType: 'JSON', schema: JSON.stringify(V2) })
  client.clearLatestCaches()
  await send(topic, await ser().serialize(topic, { name: 'j1', age: 7 }))
  // an open content model: a property added is refused under BACKWARD
  const open = prefix + '-open-value'
  const { additionalProperties, ...OPEN1 } = V1
  await client.register(open, { schemaType: 'JSON', schema: JSON.stringify(OPEN1) })
  assert.ok(await refused(open, { schemaType: 'JSON', schema: JSON.stringify({ ...V2, additionalProperties: true }) }),
    'a property added to an open content model should be refused under BACKWARD')
  assert.deepStrictEqual(await client.getAllVersions(subject), [1, 2])
  return {
    topic,
    deser: new JsonDeserializer(client, VALUE, { validate: true }),
    check: got => assert.deepStrictEqual(got, [{ name: 'j0' }, { name: 'j1', age: 7 }])
  }
}

// guids: with HeaderSchemaIdSerializer (Confluent 8.x), the Avro
// serializer registering its schema and the JSON Schema one serializing
// with the latest version put the GUID samsa answered in the header
// __value_schema_id (magic byte 1, its 16 bytes) and nothing before the
// payload; the default deserializer (DualSchemaIdDeserializer) of a new
// client, whose caches are empty, asks GET /schemas/guids/{guid}. Two
// formats, one a topic.
async function guids (send) {
  const header = { schemaIdSerializer: HeaderSchemaIdSerializer }
  const reader = new SchemaRegistryClient({ baseURLs: [url] })
  const jsonTopic = prefix + '-guid-json'
  await client.register(jsonTopic + '-value', { schemaType: 'JSON', schema: '{"type":"object","properties":{"name":{"type":"string"}}}' })
  const formats = [
    [prefix + '-guid-avro', new AvroSerializer(client, VALUE, { ...header, autoRegisterSchemas: true }), new AvroDeserializer(reader, VALUE, {}),
      [{ name: 'g0', age: 40 }, { name: 'g1', age: 41 }]],
    [jsonTopic, new JsonSerializer(client, VALUE, { ...header, useLatestVersion: true }), new JsonDeserializer(reader, VALUE, {}),
      [{ name: 'g2' }, { name: 'g3' }]]
  ]
  const out = []
  for (const [topic, ser, deser, records] of formats) {
    for (const r of records) {
      const headers = {}
      const value = await ser.serialize(topic, r, headers)
      assert.notStrictEqual(value[0], 0, 'the payload carries a schema id prefix')
      await send(topic, value, headers)
    }
    const { guid } = await client.getLatestSchemaMetadata(topic + '-value')
    assert.ok(guid, topic + ': no guid')
    const want = Buffer.concat([Buffer.from([1]), Buffer.from(guid.replace(/-/g, ''), 'hex')])
    out.push({
      topic,
      deser: {
        deserialize: (topic, value, headers) => {
          assert.ok(want.equals(headers.__value_schema_id), `${topic}: header ${headers.__value_schema_id?.toString('hex')}, want ${want.toString('hex')}`)
          return deser.deserialize(topic, value, headers)
        }
      },
      check: got => assert.deepStrictEqual(got.map(r => ({ ...r })), records)
    })
  }
  return out
}

async function main () {
  const producer = kafka.producer({ allowAutoTopicCreation: true })
  await producer.connect()
  const send = (topic, value, headers) => producer.send({ topic, acks: -1, messages: [{ value, headers }] })
  const formats = []
  for (const f of [avro, protobuf, json, guids]) formats.push(...[await f(send)].flat())
  await producer.disconnect()

  // one consumer reads every topic back through its deserializer
  const want = Object.fromEntries(formats.map(f => [f.topic, 2]))
  want[formats[0].topic] = 3 // avro: three records, the others two
  const got = Object.fromEntries(formats.map(f => [f.topic, []]))
  const consumer = kafka.consumer({ groupId: prefix + '-g' })
  await consumer.connect()
  await consumer.subscribe({ topics: formats.map(f => f.topic), fromBeginning: true })
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('consumed only ' + JSON.stringify(got))), 60000)
    consumer.run({
      eachMessage: async ({ topic, message }) => {
        const f = formats.find(f => f.topic === topic)
        got[topic].push(await f.deser.deserialize(topic, message.value, message.headers))
        if (Object.keys(want).every(t => got[t].length >= want[t])) {
          clearTimeout(timer)
          resolve()
        }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  for (const f of formats) f.check(got[f.topic])
  await client.close()
  console.log('ok')
}

main().catch(e => {
  console.error(e && e.stack ? e.stack : e)
  process.exit(1)
})
