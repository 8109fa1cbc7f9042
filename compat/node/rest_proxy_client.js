'use strict'
// kafkajs beside samsa's REST proxy; run by compat/restproxy_clients_test.go.
//
// Usage: node rest_proxy_client.js BOOTSTRAP FROM_TOPIC TO_TOPIC N NAME
// Reads N records of FROM_TOPIC (produced over HTTP) from its start with
// a group, produces N records to TO_TOPIC (key NAME-i, value
// {"from":NAME,"i":i}, read over HTTP) and prints the records read as
// JSON, [[key, value], ...], last.

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const { Kafka, logLevel } = require('kafkajs')

async function main () {
  const [bootstrap, from, to, nArg, name] = process.argv.slice(2)
  const n = parseInt(nArg, 10)
  const kafka = new Kafka({ clientId: 'samsa-rest-proxy', brokers: [bootstrap], logLevel: logLevel.NOTHING })
  const consumer = kafka.consumer({ groupId: from + '-g' })
  await consumer.connect()
  await consumer.subscribe({ topic: from, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('read ' + JSON.stringify(got))), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push([message.key.toString(), message.value.toString()])
        if (got.length === n) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  const producer = kafka.producer()
  await producer.connect()
  const messages = []
  for (let i = 0; i < n; i++) messages.push({ key: `${name}-${i}`, value: JSON.stringify({ from: name, i }) })
  await producer.send({ topic: to, acks: -1, messages })
  await producer.disconnect()
  console.log(JSON.stringify(got))
}

main().catch(e => { console.error(e); process.exit(1) })
