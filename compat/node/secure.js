'use strict'
// kafkajs over a secured listener; run by compat/security_librdkafka_kafkajs_test.go.
//
// Usage: node secure.js BOOTSTRAP TOPIC CONFIG_JSON
// CONFIG_JSON: {ssl: {ca, cert, key} | undefined, sasl: {mechanism, username, password} | undefined}
// (PEM strings). Produces three records to TOPIC, consumes them back with
// a group and prints {"ok":true} or {"ok":false,"error":"..."}.

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, logLevel } = require('kafkajs')

async function main () {
  const [bootstrap, topic, confJSON] = process.argv.slice(2)
  const conf = JSON.parse(confJSON)
  const kafka = new Kafka({
    clientId: 'samsa-secure', brokers: [bootstrap], logLevel: logLevel.NOTHING,
    ssl: conf.ssl, sasl: conf.sasl, retry: { retries: 5 }
  })
  const producer = kafka.producer({ allowAutoTopicCreation: true })
  await producer.connect()
  await producer.send({ topic, acks: -1, messages: [0, 1, 2].map(i => ({ value: 'secure-' + i })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: 'secure-' + Date.now() })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('consumed ' + JSON.stringify(got))), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value.toString())
        if (got.length === 3) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  if (JSON.stringify(got.sort()) !== JSON.stringify(['secure-0', 'secure-1', 'secure-2'])) {
    throw new Error('consumed ' + JSON.stringify(got))
  }
}

main().then(
  () => { console.log(JSON.stringify({ ok: true })); process.exit(0) },
  e => { console.log(JSON.stringify({ ok: false, error: String(e && e.stack || e) })); process.exit(0) }
)
