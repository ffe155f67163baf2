/**
 * The invoked side of the Moleculer row: a broker on the NATS transporter serving the action
 * `bench.echo`, which answers with its params. Prints `{"ready":true}` once connected.
 */
import { ServiceBroker } from 'moleculer'
import { brokerOptions } from './moleculer.ts'

const broker = new ServiceBroker(brokerOptions('bench-callee', process.argv[2]!))
broker.createService({
  name: 'bench',
  actions: { echo: (ctx) => ctx.params },
})
await broker.start()
console.log(JSON.stringify({ ready: true }))
