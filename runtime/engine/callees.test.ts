/**
 * Legs to remote sessions (callees.ts): a routed call's objects die young once it is answered,
 * and a cancel of its flight still reaches the worker.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { RawJson, type Transport } from 'svc-protocol'
import { LegTable } from './callees.ts'
import { LISTENER_DEFAULTS } from './config.ts'
import { Flight, FlightTable } from './flights.ts'
import type { FunctionEntry, Replica } from './functions.ts'
import type { Invocation, Reply } from './invocation.ts'
import { Session } from './session.ts'
import { oldGenerationGrowth } from '../../test/support/old-generation.ts'

/** A transport that keeps the last `keep` frames sent. */
function sink(keep = 10): Transport & { sent: string[] } {
  const sent: string[] = []
  return {
    sent,
    send: (text: string) => {
      sent.push(text)
      if (sent.length > keep) sent.shift()
    },
    sendBinary() {},
    bufferedAmount: 0,
    writtenBytes: 0,
    isOpen: true,
    close() {},
    terminate() {},
    ping() {},
    setHandlers() {},
  } as unknown as Transport & { sent: string[] }
}

function openSession(transport: Transport): Session {
  const session = new Session(transport, LISTENER_DEFAULTS, { ip: '127.0.0.1', headers: {}, query: {} })
  session.state = 'open'
  return session
}

const EMPTY = new RawJson('{}')
const target = { id: 'bench::echo', baggageJson: undefined } as unknown as FunctionEntry
const replica = { wireId: 'bench::echo', wireIdJson: '"bench::echo"' } as unknown as Replica

function routed(caller: Session, flights: FlightTable, n: number, reply: Reply): { flight: Flight; invocation: Invocation } {
  const flight = new Flight(flights, 'bench::echo', 'default', caller, reply, caller.requested, `call-${n}`)
  const invocation = { requestedId: 'bench::echo', functionId: 'bench::echo', namespace: 'default', data: new RawJson('{"n":1}'), caller, access: undefined, reply: flight, flight } as unknown as Invocation
  return { flight, invocation }
}

describe('LegTable', () => {
  it("lets an answered call's objects die young: routing calls does not fill the old generation", () => {
    // Scavenges only (`gc({ type: 'minor' })`). With a closure stored on every flight as its stop
    // hook, every call reached the old generation (~20 MiB here; in the engine ~570 bytes per
    // routed call and a full collection every ~13 MB); with the leg as the hook, a few hundred KB.
    const callee = openSession(sink())
    const caller = openSession(sink())
    const legs = new LegTable()
    const flights = new FlightTable()
    const open: string[] = []
    let n = 0
    const call = () => {
      // A call's own objects: a payload of about 1 KB that its reply holds.
      const payload = { data: new Array<number>(120).fill(n) }
      const { flight, invocation } = routed(caller, flights, n++, { result: () => void payload, error: () => void payload })
      legs.open(callee, invocation, target, replica)
      open.push(flight.id)
      if (open.length > 64) legs.complete(callee, open.shift()!, EMPTY, undefined)
    }
    const grown = oldGenerationGrowth(call)
    while (open.length > 0) legs.complete(callee, open.shift()!, EMPTY, undefined)
    assert.equal(legs.size, 0)
    assert.equal(flights.size, 0)
    assert.equal(caller.requested.size, 0)
    assert.ok(grown < 8 * 1024 * 1024, `old generation grew by ${(grown / 1048576).toFixed(1)} MiB over 40,000 routed calls`)
  })

  it("a cancelled flight closes its leg, tells the worker, and ignores the worker's late result", () => {
    const calleeTransport = sink()
    const callee = openSession(calleeTransport)
    const caller = openSession(sink())
    const legs = new LegTable()
    const answers: unknown[] = []
    const { flight, invocation } = routed(caller, new FlightTable(), 1, { result: (v) => void answers.push(['result', v]), error: (e) => void answers.push(['error', e.code]) })
    legs.open(callee, invocation, target, replica)
    assert.equal(callee.executing.size, 1)
    assert.equal(flight.cancel('enough'), true)
    assert.equal(callee.executing.size, 0)
    assert.equal(caller.calling.size, 0)
    const cancel = JSON.parse(calleeTransport.sent.at(-1)!) as { type: string; invocation_id: string; reason?: string }
    assert.equal(cancel.type, 'cancelinvocation')
    assert.equal(cancel.invocation_id, flight.id)
    assert.equal(cancel.reason, 'enough')
    legs.complete(callee, flight.id, new RawJson('{"late":true}'), undefined)
    assert.deepEqual(answers, [['error', 'cancelled']])
  })
})
