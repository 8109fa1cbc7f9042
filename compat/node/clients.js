'use strict'
// The Node.js client of samsa's compatibility matrix (go run ./compat/matrix):
// kafkajs, with snappy from kafkajs-snappy (gzip is built in).
//
// Usage: node clients.js BOOTSTRAP PREFIX CLIENT:SCENARIO...
// Each scenario prints one JSON line: {client, scenario, ok, error, ms}.
// The records, checks and expected errors are those of compat/matrix/doc.go.

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const crypto = require('crypto')
const {
  Kafka, CompressionTypes, CompressionCodecs, logLevel, AssignerProtocol, ConfigResourceTypes
} = require('kafkajs')
CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')

const WAIT = 60000
const SECURE = ['sasl_ssl', 'mtls', 'sasl_plain']
const SECURE_RECORDS = 30
const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy }

// ---- the registry scenario: compat/matrix/registry.go has the same ----

const REG_RECORDS = 10
const REG_FIELDS = ['{"name":"name","type":"string"}', '{"name":"n","type":"int"}',
  '{"name":"email","type":"string","default":""}', '{"name":"phone","type":"string"}']
const REG_SCHEMAS = [2, 3, 4].map(k => `{"type":"record","name":"User","namespace":"samsa.matrix","fields":[${REG_FIELDS.slice(0, k).join(',')}]}`)
const regUser = (i, version) => version ? { name: `user-${i}`, n: i, email: `user-${i}@example.org` } : { name: `user-${i}`, n: i }

// ---- the records every client sends ----

const key = i => Buffer.from('key-' + (i % 37))
const value = i => {
  const b = Buffer.alloc(16 + (i % 64))
  for (let j = 0; j < b.length; j++) b[j] = (i * 31 + j * 7) & 0xff
  return b
}
const bin = i => Buffer.from([0, 0xff, i & 0xff])
const message = i => ({ key: key(i), value: value(i), headers: { i: Buffer.from(String(i)), bin: bin(i) } })

function check (where, m) {
  const hs = Object.entries(m.headers || {})
  if (hs.length !== 2 || hs[0][0] !== 'i' || hs[1][0] !== 'bin' || Array.isArray(hs[0][1])) {
    throw new Error(`${where}: headers ${JSON.stringify(Object.keys(m.headers || {}))}, want [i, bin]`)
  }
  const i = parseInt(hs[0][1].toString(), 10)
  if (!key(i).equals(m.key || Buffer.alloc(0)) || !value(i).equals(m.value || Buffer.alloc(0)) || !bin(i).equals(hs[1][1])) {
    throw new Error(`${where}: record ${i} differs from what was sent`)
  }
  return i
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

async function waitFor (what, probe) {
  const deadline = Date.now() + WAIT
  let last
  while (Date.now() < deadline) {
    try {
      if (await probe()) return
    } catch (e) {
      last = e
    }
    await sleep(100)
  }
  throw new Error(`timed out waiting for ${what}${last ? ': ' + describe(last) : ''}`)
}

// until resolves once cond() holds, polling, or rejects after WAIT with why().
async function until (cond, why) {
  const deadline = Date.now() + WAIT
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(why())
    await sleep(50)
  }
}

function describe (e) {
  if (!e) return 'no error'
  let s = `${e.name || 'Error'}: ${e.message}`
  if (e.originalError || e.cause) s += ` (${describe(e.originalError || e.cause)})`
  return s.slice(0, 400)
}

// errorType digs the Kafka error type out of kafkajs's retry wrappers.
function errorType (e) {
  while (e) {
    if (e.type) return e.type
    e = e.originalError || e.cause || (e.errors && e.errors[0])
  }
  return undefined
}

// security returns the denied topic and the listener and kafkajs settings
// ({ssl, sasl}) of a security scenario, from the file compat/matrix writes
// ($SAMSA_MATRIX_SECURITY/security.json).
function security (scenario) {
  const dir = process.env.SAMSA_MATRIX_SECURITY
  if (!dir) throw new Error('SAMSA_MATRIX_SECURITY is not set')
  const conf = JSON.parse(require('fs').readFileSync(require('path').join(dir, 'security.json'), 'utf8'))
  return { denied: conf.denied, sc: conf.scenarios[scenario] }
}

class KafkaJS {
  constructor (bootstrap, prefix, sec) {
    this.prefix = prefix
    this.kafka = new Kafka({
      clientId: 'samsa-compat', brokers: [bootstrap], logLevel: logLevel.NOTHING,
      ssl: sec && sec.ssl, sasl: sec && sec.sasl
    })
  }

  async withAdmin (f) {
    const admin = this.kafka.admin()
    await admin.connect()
    try {
      return await f(admin)
    } finally {
      await admin.disconnect()
    }
  }

  async createTopic (topic, partitions, configs) {
    await this.withAdmin(a => a.createTopics({
      topics: [{
        topic,
        numPartitions: partitions,
        replicationFactor: 1,
        configEntries: Object.entries(configs || {}).map(([name, value]) => ({ name, value }))
      }],
      waitForLeaders: true
    }))
  }

  async produce (topic, from, to, compression = CompressionTypes.None) {
    const p = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false })
    await p.connect()
    try {
      const messages = []
      for (let i = from; i < to; i++) messages.push(message(i))
      for (let k = 0; k < messages.length; k += 250) {
        await p.send({ topic, acks: -1, compression, messages: messages.slice(k, k + 250) })
      }
    } finally {
      await p.disconnect()
    }
  }

  async create () {
    const topic = this.prefix + '-create'
    await this.createTopic(topic, 3)
    await this.withAdmin(a => waitFor(`${topic} with 3 partitions`, async () => {
      const md = await a.fetchTopicMetadata({ topics: [topic] })
      return md.topics[0].partitions.length === 3
    }))
  }

  async produceScenario () {
    const failed = []
    for (const [name, codec] of Object.entries(CODECS)) {
      const topic = `${this.prefix}-produce-${name}`
      try {
        await this.createTopic(topic, 3)
        await this.produce(topic, 0, 1000, codec)
        await this.readBack(topic, 1000)
      } catch (e) {
        failed.push(`${name}: ${describe(e)}`)
      }
    }
    if (failed.length) throw new Error(failed.join('; '))
  }

  async readBack (topic, n) {
    // kafkajs consumes through groups only: a group of one, from the beginning.
    const c = this.kafka.consumer({ groupId: topic + '-readback' })
    await c.connect()
    const seen = new Set()
    const last = new Map()
    let failure
    try {
      await c.subscribe({ topics: [topic], fromBeginning: true })
      await c.run({
        autoCommit: false,
        eachMessage: async ({ partition, message: m }) => {
          if (failure) return
          try {
            const i = check(`partition ${partition} offset ${m.offset}`, m)
            const prev = last.get(partition)
            if (prev !== undefined && prev >= i) throw new Error(`partition ${partition}: record ${i} after ${prev}`)
            last.set(partition, i)
            if (seen.has(i)) throw new Error(`record ${i} read twice`)
            seen.add(i)
          } catch (e) {
            failure = e
          }
        }
      })
      await until(() => failure || seen.size === n, () => `read ${seen.size} of ${n} records in ${WAIT} ms`)
      if (failure) throw failure
    } finally {
      await c.disconnect()
    }
  }

  member (group, topic, onMessage) {
    const c = this.kafka.consumer({ groupId: group })
    const m = { c, assigned: 0, failure: undefined }
    c.on(c.events.GROUP_JOIN, e => {
      m.assigned = (e.payload.memberAssignment[topic] || []).length
    })
    m.start = async () => {
      await c.connect()
      await c.subscribe({ topics: [topic], fromBeginning: true })
      await c.run({
        autoCommit: false,
        eachMessage: async ({ partition, message: msg }) => {
          if (m.failure) return
          try {
            onMessage(partition, msg)
            await c.commitOffsets([{ topic, partition, offset: (BigInt(msg.offset) + 1n).toString() }])
          } catch (e) {
            m.failure = e
          }
        }
      })
    }
    return m
  }

  async group () {
    const topic = this.prefix + '-group'
    const group = topic + '-g'
    await this.createTopic(topic, 3)
    await this.produce(topic, 0, 300)
    const seen = new Set()
    const collect = (p, msg) => seen.add(check(`partition ${p} offset ${msg.offset}`, msg))
    const ms = [this.member(group, topic, collect), this.member(group, topic, collect)]
    try {
      await Promise.all(ms.map(m => m.start()))
      await until(() => ms.some(m => m.failure) ||
        (seen.size === 300 && ms[0].assigned > 0 && ms[1].assigned > 0 && ms[0].assigned + ms[1].assigned === 3),
      () => `two members: read ${seen.size} of 300 records, assigned ${ms[0].assigned} and ${ms[1].assigned} partitions`)
      for (const m of ms) if (m.failure) throw m.failure
    } finally {
      await Promise.all(ms.map(m => m.c.disconnect()))
    }
    await this.produce(topic, 300, 400)
    const again = new Set()
    const m = this.member(group, topic, (p, msg) => {
      const i = check(`partition ${p} offset ${msg.offset}`, msg)
      if (i < 300) throw new Error(`new member read committed record ${i} again (partition ${p} offset ${msg.offset})`)
      again.add(i)
    })
    try {
      await m.start()
      await until(() => m.failure || again.size === 100, () => `new member: read ${again.size} of the 100 new records`)
      if (m.failure) throw m.failure
    } finally {
      await m.c.disconnect()
    }
  }

  async adminScenario () {
    const topic = this.prefix + '-admin'
    const group = topic + '-g'
    await this.createTopic(topic, 3)
    const base = (Math.floor(Date.now() / 1000) - 3600) * 1000
    const p = this.kafka.producer({ allowAutoTopicCreation: false })
    await p.connect()
    try {
      for (let i = 0; i < 30; i++) {
        await p.send({ topic, acks: -1, messages: [{ key: key(i), value: value(i), partition: 0, timestamp: String(base + i * 1000) }] })
      }
    } finally {
      await p.disconnect()
    }
    await this.withAdmin(async a => {
      const offs = await a.fetchTopicOffsets(topic)
      const byTime = await a.fetchTopicOffsetsByTimestamp(topic, base + 10500)
      const p0 = offs.find(o => o.partition === 0)
      const p1 = offs.find(o => o.partition === 1)
      const t0 = byTime.find(o => o.partition === 0)
      const got = [p0.low, p0.high, t0.offset, p1.high].map(Number)
      if (got.join() !== '0,30,11,0') {
        throw new Error(`list offsets: earliest, latest, by time, empty partition latest = ${got}, want 0,30,11,0`)
      }

      let n = 0
      const m = this.member(group, topic, () => { n++ })
      try {
        await m.start()
        await until(() => m.failure || n === 30, () => `group member read ${n} of 30 records`)
        if (m.failure) throw m.failure
        const d = await a.describeGroups([group])
        const g = d.groups[0]
        const parts = g.members.length === 1
          ? (AssignerProtocol.MemberAssignment.decode(g.members[0].memberAssignment).assignment[topic] || [])
          : []
        if (g.members.length !== 1 || parts.length !== 3) {
          throw new Error(`describe group: ${g.members.length} members, partitions ${JSON.stringify(parts)}, want one member with 3`)
        }
        const fo = await a.fetchOffsets({ groupId: group, topics: [topic] })
        const o0 = fo[0].partitions.find(x => x.partition === 0)
        if (!o0 || o0.offset !== '30') throw new Error(`group offsets ${JSON.stringify(fo)}, want partition 0 at 30`)
      } finally {
        await m.c.disconnect()
      }

      const configs = async () => {
        const r = await a.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }], includeSynonyms: false })
        const out = {}
        for (const e of r.resources[0].configEntries) out[e.configName] = e
        return out
      }
      const cfg = await configs()
      const cp = cfg['cleanup.policy']
      const rm = cfg['retention.ms']
      if (!cp || cp.configValue !== 'delete' || !rm || rm.configValue !== '604800000') {
        throw new Error(`describe configs: cleanup.policy ${JSON.stringify(cp)}, retention.ms ${JSON.stringify(rm)}`)
      }
      await a.alterConfigs({
        validateOnly: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '3600000' }] }]
      })
      await waitFor('retention.ms altered', async () => {
        const e = (await configs())['retention.ms']
        return e && e.configValue === '3600000' && e.configSource === 1 // DYNAMIC_TOPIC_CONFIG
      })
      await a.deleteTopics({ topics: [topic] })
      await waitFor(`${topic} gone`, async () => !(await a.listTopics()).includes(topic))
    })
  }

  async sendError (topic, val) {
    const p = this.kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 2 } })
    await p.connect()
    try {
      await p.send({ topic, acks: -1, messages: [{ value: val }] })
      return undefined
    } catch (e) {
      return e
    } finally {
      await p.disconnect()
    }
  }

  async errors () {
    const missing = this.prefix + '-errors-missing'
    const big = this.prefix + '-errors-big'
    let e = await this.sendError(missing, crypto.randomBytes(16))
    if (errorType(e) !== 'UNKNOWN_TOPIC_OR_PARTITION') {
      throw new Error(`produce to a missing topic: got ${describe(e)}, want UNKNOWN_TOPIC_OR_PARTITION`)
    }
    if (await this.withAdmin(a => a.listTopics()).then(ts => ts.includes(missing))) {
      throw new Error(`a produce created ${missing} with auto-creation off`)
    }
    await this.createTopic(big, 1, { 'max.message.bytes': '2048' })
    e = await this.sendError(big, Buffer.alloc(100))
    if (e) throw new Error(`a 100-byte record: ${describe(e)}`)
    e = await this.sendError(big, crypto.randomBytes(4096))
    if (errorType(e) !== 'MESSAGE_TOO_LARGE') {
      throw new Error(`produce 4096 bytes to a topic with max.message.bytes=2048: got ${describe(e)}, want MESSAGE_TOO_LARGE`)
    }
  }

  // Scenario 7: commit 30, abort 30, commit 30; the reader (kafkajs reads
  // read_committed by default) gets the 60; a second producer of the id
  // fences the first.
  async txn () {
    const topic = this.prefix + '-txn'
    const tid = this.prefix + '-txn-id'
    await this.createTopic(topic, 3)
    const p = this.kafka.producer({ transactionalId: tid, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 30000 })
    await p.connect()
    const txn = async (from, to, commit) => {
      const t = await p.transaction()
      const messages = []
      for (let i = from; i < to; i++) {
        const m = message(i)
        if (!commit) m.value = Buffer.from('aborted')
        m.partition = i % 3
        messages.push(m)
      }
      await t.send({ topic, acks: -1, messages })
      if (commit) await t.commit()
      else await t.abort()
    }
    try {
      await txn(0, 30, true)
      await txn(0, 30, false)
      await txn(30, 60, true)
      await this.readBack(topic, 60)
      const p2 = this.kafka.producer({ transactionalId: tid, idempotent: true, maxInFlightRequests: 1 })
      await p2.connect()
      try {
        const t2 = await p2.transaction() // InitProducerId: the epoch moves on
        await t2.abort()
      } finally {
        await p2.disconnect()
      }
      let e
      try {
        await txn(60, 61, true)
      } catch (err) {
        e = err
      }
      if (!e || !['PRODUCER_FENCED', 'INVALID_PRODUCER_EPOCH'].includes(errorType(e))) {
        throw new Error(`the fenced producer's transaction: ${describe(e)}, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH`)
      }
    } finally {
      await p.disconnect()
    }
  }

  // Over the scenario's listener: 30 records, read back by a group member;
  // a produce to the denied topic fails with TOPIC_AUTHORIZATION_FAILED.
  async secure (scenario) {
    const { denied, sc } = security(scenario)
    const k = new KafkaJS(sc.bootstrap, this.prefix, sc.kafkajs)
    const topic = `sec-${this.prefix}-${scenario}`
    await k.produce(topic, 0, SECURE_RECORDS)
    await k.readBack(topic, SECURE_RECORDS)
    const p = k.kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 2 } })
    await p.connect()
    let e
    try {
      await p.send({ topic: denied, acks: -1, messages: [message(0)] })
    } catch (err) {
      e = err
    } finally {
      await p.disconnect()
    }
    if (!e || errorType(e) !== 'TOPIC_AUTHORIZATION_FAILED') {
      throw new Error(`produce to ${denied} without an ACL: ${describe(e)}, want TOPIC_AUTHORIZATION_FAILED`)
    }
  }

  // Confluent's @confluentinc/schemaregistry client and Avro serdes, with
  // kafkajs moving the bytes, against the registry the brokers serve.
  async registry () {
    const url = process.env.SAMSA_MATRIX_REGISTRY
    if (!url) throw new Error('SAMSA_MATRIX_REGISTRY is not set')
    const { SchemaRegistryClient, SerdeType, AvroSerializer, AvroDeserializer } = require('@confluentinc/schemaregistry')
    const topic = this.prefix + '-registry'
    const subject = topic + '-value'
    const client = new SchemaRegistryClient({ baseURLs: [url] })
    await this.createTopic(topic, 1)
    const p = this.kafka.producer({ allowAutoTopicCreation: false })
    await p.connect()
    const ids = []
    try {
      for (const v of [0, 1]) {
        ids.push(await client.register(subject, { schemaType: 'AVRO', schema: REG_SCHEMAS[v] }))
        client.clearLatestCaches()
        const ser = new AvroSerializer(client, SerdeType.VALUE, { useLatestVersion: true })
        const messages = []
        for (let i = v * REG_RECORDS; i < (v + 1) * REG_RECORDS; i++) messages.push({ value: await ser.serialize(topic, regUser(i, v)) })
        await p.send({ topic, acks: -1, messages })
      }
    } finally {
      await p.disconnect()
    }
    let refused
    try {
      await client.register(subject, { schemaType: 'AVRO', schema: REG_SCHEMAS[2] })
    } catch (e) {
      refused = e
    }
    if (!refused || refused.status !== 409) throw new Error(`version 3 (a field without a default): ${describe(refused)}, want a 409`)
    const versions = await client.getAllVersions(subject)
    if (JSON.stringify(versions) !== '[1,2]') throw new Error(`versions of ${subject}: ${JSON.stringify(versions)}, want [1,2]`)
    const deser = new AvroDeserializer(client, SerdeType.VALUE, {})
    const c = this.kafka.consumer({ groupId: topic + '-g' })
    await c.connect()
    const got = []
    let failure
    try {
      await c.subscribe({ topics: [topic], fromBeginning: true })
      await c.run({
        autoCommit: false,
        eachMessage: async ({ message: m }) => {
          try {
            const i = got.length
            if (m.value[0] !== 0 || m.value.readUInt32BE(1) !== ids[Math.floor(i / REG_RECORDS)]) {
              throw new Error(`record ${i}: header ${m.value.subarray(0, 5).toString('hex')}, want magic 0 and id ${ids[Math.floor(i / REG_RECORDS)]}`)
            }
            got.push({ ...await deser.deserialize(topic, m.value) })
          } catch (e) {
            failure = failure || e
          }
        }
      })
      await until(() => failure || got.length >= 2 * REG_RECORDS, () => `read ${got.length} of ${2 * REG_RECORDS} records in ${WAIT} ms`)
      if (failure) throw failure
    } finally {
      await c.disconnect()
    }
    const want = got.map((_, i) => regUser(i, Math.floor(i / REG_RECORDS)))
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`read ${JSON.stringify(got.slice(0, 3))}, want ${JSON.stringify(want.slice(0, 3))}`)
  }

  run (scenario) {
    if (SECURE.includes(scenario)) return this.secure(scenario)
    const f = { create: this.create, produce: this.produceScenario, group: this.group, admin: this.adminScenario, errors: this.errors, txn: this.txn, registry: this.registry }[scenario]
    if (!f) throw new Error('unknown scenario ' + scenario)
    return f.call(this)
  }
}

async function main () {
  const [bootstrap, prefix, ...cells] = process.argv.slice(2)
  if (!cells.length) {
    console.error('usage: node clients.js BOOTSTRAP PREFIX CLIENT:SCENARIO...')
    process.exit(2)
  }
  const k = new KafkaJS(bootstrap, prefix)
  for (const cell of cells) {
    const at = cell.lastIndexOf(':')
    const client = cell.slice(0, at)
    const scenario = cell.slice(at + 1)
    const start = Date.now()
    let error = ''
    try {
      await k.run(scenario)
    } catch (e) {
      error = describe(e)
      console.error(e)
    }
    console.log(JSON.stringify({ client, scenario, ok: !error, error, ms: Date.now() - start }))
  }
  process.exit(0)
}

main()
