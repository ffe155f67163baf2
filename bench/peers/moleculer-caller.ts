/**
 * The load generator of the Moleculer row: `broker.call('bench.echo', PAYLOAD)` through
 * nats-server to the callee process, measured like every other row. Prints one JSON line.
 */
import { ServiceBroker } from 'moleculer'
import { reportCaller } from '../measure.ts'
import { PAYLOAD } from '../payload.ts'
import { brokerOptions } from './moleculer.ts'

const broker = new ServiceBroker(brokerOptions('bench-caller', process.argv[2]!))
await broker.start()
// Discovery runs over NATS: the first call must wait until the callee's INFO packet has arrived.
await broker.waitForServices('bench', 10000)
await reportCaller('moleculer', { call: () => broker.call('bench.echo', PAYLOAD), close: () => broker.stop() })
